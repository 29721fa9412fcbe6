"""题目参数与个人版：发布版就是书里的数；抽出的每个变体都有效；参考答案与在这个变体上运行的解答笔记本一致"""

import copy
import itertools
import os
import random
import sys
import uuid
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from shardlab.assign import personalize
from shardlab.exercise import answers, problems, variants
from shardlab.grade.export import ExportItem, export_source, parse_exports

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = {"ch05": 5, "ch06": 6}


def _notebook(kind: str, assignment: str):
    return jupytext.read(ROOT / f"{kind}s" / f"{assignment}_{kind}s.md")


@pytest.mark.parametrize("assignment", problems.ASSIGNMENTS)
def test_published_variant_is_the_books_numbers_and_is_valid(assignment):
    """参数单元里写的就是发布版；发布版满足本章的规则"""
    nb = _notebook("solution", assignment)
    found = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and personalize.PARAM_TAG in cell.metadata.get("tags", []):
            found.update(problems.cell_values(cell.source))
    pub = problems.published(assignment)
    assert {k: found.get(k) for k in pub} == pub
    assert problems.violations(assignment, pub) == []


def test_published_answers_are_unchanged():
    """发布版的参考值（回归）：与原书公开答案一致的部分"""
    assert answers.expected_value("ch05-p1a") == pytest.approx(2.097152e6 / 9e10)
    assert answers.expected_value("ch05-p2") == pytest.approx(2e-6)
    assert answers.expected_value("ch06-p1") == 16
    assert answers.expected_value("ch05-p7-prefill-bytes") == 2048 * 8192 * 2
    assert answers.expected_value("ch06-p8a-bytes") == 2 * 1024 * 4096


@pytest.mark.parametrize("assignment", problems.ASSIGNMENTS)
def test_many_drawn_variants_are_valid_and_differ_from_the_published_answers(assignment):
    base = problems.published(assignment)
    specs = [a for a in answers.chapter_answers(assignment) if a.kind == "value"]
    seen = set()
    for k in range(150):
        params = variants.for_student(b"course secret", assignment, f"s{k:03d}")
        assert variants.valid(assignment, params) == [], params
        for p in problems.params_of(assignment):
            assert params[p.name] in p.choices
        for spec in specs:
            right, pub = spec.value(params), spec.value(base)
            if spec.varies:
                assert abs(right - pub) > 2 * spec.rtol * abs(pub), (spec.id, params)
            else:
                assert right == pub, spec.id
        seen.add(repr(params))
    assert len(seen) > 100  # 变体够多：同学之间很少撞车


def test_variant_is_a_deterministic_keyed_function_of_secret_assignment_and_student():
    a = variants.for_student(b"k1", "ch05", "2024001")
    assert a == variants.for_student(b"k1", "ch05", "2024001")
    others = [variants.for_student(b"k2", "ch05", "2024001"), variants.for_student(b"k1", "ch05", "2024002")]
    assert any(o != a for o in others)
    assert variants.seed(b"k", "ch05", "a\0b") != variants.seed(b"k", "ch05\0a", "b")
    assert len({variants.seed(b"k", "ch05", f"s{i}") for i in range(100)}) == 100


def test_a_rule_that_cannot_be_met_is_reported(monkeypatch):
    monkeypatch.setattr(variants, "MAX_TRIES", 20)
    monkeypatch.setitem(problems.RULES, "ch05", lambda p: [(1, "P1：永远不满足")])
    with pytest.raises(RuntimeError, match="有效的参数"):
        variants.for_student(b"k", "ch05", "x")


@pytest.mark.parametrize("assignment", problems.ASSIGNMENTS)
@pytest.mark.parametrize("kind", ["exercise", "solution"])
def test_personalize_rewrites_every_number_of_the_problem(assignment, kind):
    nb = _notebook(kind, assignment)
    params = variants.for_student(b"k", assignment, "stu")
    out = personalize.personalize(nb, assignment, params)
    found = {}
    for cell in out.cells:
        if cell.cell_type == "code" and personalize.PARAM_TAG in cell.metadata.get("tags", []):
            found.update(problems.cell_values(cell.source))
    assert {k: found[k] for k in params} == params
    where = personalize.sections(out)
    for sub in problems.TEXT[assignment]:
        text = "\n".join(c.source for c, k in zip(out.cells, where) if k == sub.problem)
        assert sub.render(params) in text
        if sub.render(params) != sub.published and kind == "exercise":
            assert sub.published not in text, sub.published
    assert nb.cells[0].source == out.cells[0].source  # 输入没有被修改


def test_personalize_refuses_when_the_problem_text_changed():
    nb = _notebook("exercise", "ch05")
    for cell in nb.cells:
        cell.source = cell.source.replace("B 只有 128", "B 只有一百二十八")
    with pytest.raises(personalize.PersonalizeError, match="B 只有 128"):
        personalize.personalize(nb, "ch05", variants.for_student(b"k", "ch05", "x"))


def test_set_parameters_keeps_comments_and_other_names():
    src = 'D7, TP, PROMPT = 8192, 8, 2048  # 注释：保留\nN_LAYERS = 80\nmesh = {"X": 4, "Y": 4, "Z": 4}  # 切片'
    out, done = personalize.set_parameters(src, {"D7": 5120, "PROMPT": 512, "mesh": {"X": 8, "Y": 4, "Z": 4}})
    assert out == 'D7, TP, PROMPT = 5120, 8, 512  # 注释：保留\nN_LAYERS = 80\nmesh = {"X": 8, "Y": 4, "Z": 4}  # 切片'
    assert done == {"D7", "PROMPT", "mesh"}
    assert personalize.literal(13e9) == "13e9" and personalize.literal(1.5e9) == "1.5e9"
    cases = {"a": ("A[I_X, J]", "B[J, K_Y]"), "b": ("A[I_X, J_Y]", "B[J_Y, K]")}
    out, _ = personalize.set_parameters('# 题目参数\ncases8 = {"a": 1}\n', {"cases8": cases})
    assert problems.cell_values(out) == {"cases8": cases}  # 非数值的参数也能写进去、读回来


def test_self_check_judges_against_the_notebooks_own_parameters(capsys):
    from shardlab.check import check

    params = variants.for_student(b"k", "ch06", "stu")
    namespace = {"check": check, **params, "p8a_bytes": answers.expected_value("ch06-p8a-bytes", params)}
    exec('check("ch06-p8a-bytes", p8a_bytes)', namespace)
    assert "✓" in capsys.readouterr().out
    exec('check("ch06-p8a-bytes", p8a_bytes)', {"check": check, "p8a_bytes": namespace["p8a_bytes"]})
    assert "✗" in capsys.readouterr().out  # 没有参数变量时按发布版判定


class _Shell:
    """假的 IPython：只有运行记录"""

    def __init__(self, history):
        self.history_manager = type("H", (), {"input_hist_raw": history})()


def test_self_check_reads_the_parameter_cell_not_the_live_variables(monkeypatch, capsys):
    """学生在答案单元里改写了 D（D = D // mesh['Y']）：自检仍按参数单元里的 D 判定，与评分器一致"""
    import builtins

    from shardlab.check import check

    params = variants.for_student(b"k" * 16, "ch05", "stu")
    cell = f"# 题目参数\nB, D = {params['B']}, {params['D']}\nmesh = {params['mesh']!r}"
    answer = "D = D // mesh['Y']\np1a = 2 * B * D / 90e9"
    ns = {"check": check}
    exec(cell, ns)
    exec(answer, ns)
    monkeypatch.setattr(
        builtins, "get_ipython", lambda: _Shell(["", cell, answer, 'check("ch05-p1a", p1a)']), raising=False
    )
    exec('check("ch05-p1a", p1a)', ns)
    assert "✓ ch05-p1a" in capsys.readouterr().out  # 以前：按改写后的 D 判定，✗
    monkeypatch.setattr(builtins, "get_ipython", lambda: _Shell(["", answer]), raising=False)
    exec('check("ch05-p1a", p1a)', ns)
    assert "✗ ch05-p1a" in capsys.readouterr().out  # 没有运行过参数单元：退而用变量的当前值（D 已被改写）


def test_parameter_cells_are_marked_and_read_by_the_same_function():
    for assignment in problems.ASSIGNMENTS:
        for kind in ("exercise", "solution"):
            nb = _notebook(kind, assignment)
            cells = [c.source for c in nb.cells if problems.PARAM_TAG in c.metadata.get("tags", [])]
            assert cells and all(problems.is_param_cell(src) for src in cells), (kind, assignment)
            assert problems.from_cells(assignment, cells) == problems.published(assignment)
    assert not problems.is_param_cell("p1a = 1  # 题目参数")
    assert problems.cell_values("B = (") == {}  # 语法错误：什么也读不到，不抛出


# ---- 全班的分配：撞车 ----
def test_class_assignment_bounds_what_two_students_share_and_appending_keeps_everyone():
    ids = [f"s{k:03d}" for k in range(40)]
    for assignment in problems.ASSIGNMENTS:
        drawn = variants.for_class(b"class secret 0001", assignment, ids)
        vecs = {sid: variants.answer_vector(assignment, p) for sid, p in drawn.items()}
        worst = max(variants.shared(assignment, vecs[a], vecs[b]) for a, b in itertools.combinations(ids, 2))
        assert worst <= variants.MAX_SHARED[assignment]
        first = {sid: variants.for_student(b"class secret 0001", assignment, sid) for sid in ids}
        raw = {sid: variants.answer_vector(assignment, p) for sid, p in first.items()}
        worst_raw = max(variants.shared(assignment, raw[a], raw[b]) for a, b in itertools.combinations(ids, 2))
        assert worst_raw > variants.MAX_SHARED[assignment]  # 不检查撞车时（以前的做法）确实会超
        more = variants.for_class(b"class secret 0001", assignment, [*ids, "late1", "late2"])
        assert {sid: more[sid] for sid in ids} == drawn  # 末尾加人不改变已有学生的数
    with pytest.raises(variants.VariantError, match="共有超过"):
        variants.for_class(b"class secret 0001", "ch05", ids[:12], max_shared=-1)


def test_short_secrets_are_refused_and_new_secrets_are_private(tmp_path):
    weak = tmp_path / "date.key"
    weak.write_text("2024-09-01\n")
    with pytest.raises(ValueError, match="至少要 16 个"):
        variants.read_secret(weak)
    key = variants.new_secret(tmp_path / "secret.key")
    assert oct(key.stat().st_mode & 0o777) == "0o600" and len(variants.read_secret(key)) == 32
    with pytest.raises(ValueError, match="不会覆盖"):
        variants.new_secret(key)
    (tmp_path / "link.key").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError):
        variants.new_secret(tmp_path / "link.key")
    assert not (tmp_path / "elsewhere").exists()


# ---- 在变体上运行解答笔记本 ----
N_RUN = 2


def _fresh(cell):
    out = copy.deepcopy(cell)
    out["id"] = uuid.uuid4().hex[:8]  # 同一个单元在几个变体里各出现一次
    return out


def _run_variants(assignment: str, variant_list: list[dict]) -> list[tuple[dict, str]]:
    """在一个内核里依次运行解答笔记本的每个变体（设置单元只运行一次），返回每个变体的（导出的答案, 输出文本）"""
    nb = _notebook("solution", assignment)
    items = [ExportItem(a.id, a.var, a.kind, a.examples) for a in answers.chapter_answers(assignment)]
    first_code = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code")
    cells, bounds = list(nb.cells[: first_code + 1]), []
    for params in variant_list:
        body = personalize.personalize(nb, assignment, params).cells[first_code + 1 :]
        start = len(cells)
        cells += [_fresh(c) for c in body] + [nbformat.v4.new_code_cell(export_source(items))]
        bounds.append((start, len(cells)))
    run = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
    os.environ.setdefault("JUPYTER_PATH", str(Path(sys.prefix) / "share" / "jupyter"))
    NotebookClient(
        run, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "solutions")}}
    ).execute()

    def text(c):
        return "".join(o.get("text", "") for o in c.get("outputs", []) if o.get("output_type") == "stream")

    return [
        (parse_exports(text(run.cells[b - 1])), "\n".join(text(c) for c in run.cells[a : b - 1])) for a, b in bounds
    ]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", problems.ASSIGNMENTS)
def test_references_agree_with_the_solutions_notebook_run_on_drawn_variants(assignment):
    rng = random.Random(f"solutions-{assignment}")
    chosen = [variants.draw(assignment, rng) for _ in range(N_RUN)]
    for params, (exported, text) in zip(chosen, _run_variants(assignment, chosen)):
        for spec in answers.chapter_answers(assignment):
            rec = exported[spec.id]
            if spec.kind == "function":
                for args, case in zip(spec.examples, rec["cases"]):
                    assert case["value"] == pytest.approx(spec.reference(*args), rel=1e-9), spec.id
            else:
                assert rec["value"] == pytest.approx(spec.value(params), rel=1e-9, abs=1e-15), (spec.id, params)
            assert f"✓ {spec.id}：正确" in text, (spec.id, params)  # 自检按笔记本里的参数判定
        assert "✗" not in text
