"""个人版练习：花名册的检查、shardlab-assign 写出的笔记本、不覆盖、可复现"""

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from grading import render_tokens  # tests/grading.py
from nbclient import NotebookClient

from shardlab.assign import cli, personalize
from shardlab.exercise import answers, problems, roster, variants

ROOT = Path(__file__).resolve().parent.parent


def _roster(tmp_path, text, name="roster.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


@pytest.fixture
def course(tmp_path):
    roster_path = _roster(tmp_path, "id,name,email\n2024001,张三,a@x\n2024002,李四,b@x\nstu_3,Wang Wu,\n")
    secret = tmp_path / "secret"
    secret.write_bytes(os.urandom(32))
    return roster_path, secret, tmp_path / "out"


def _run(roster_path, secret, out, *extra):
    return cli.main([str(roster_path), "--secret-file", str(secret), "--out", str(out), "--course", str(ROOT), *extra])


def test_roster_reads_ids_and_names_with_bom_and_extra_columns(tmp_path):
    path = _roster(tmp_path, "\ufeffName,ID,备注\n张三,2024001,x\n\n李四,2024002,\n")
    assert [(s.id, s.name, s.row) for s in roster.read(path)] == [("2024001", "张三", 2), ("2024002", "李四", 4)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("学号,姓名\n1,a\n", "缺少列（column）id、name"),
        ("id\n1\n", "缺少列（column）name"),
        ("", "是空的"),
        ("id,name\n", "没有学生"),
        ("id,name\n7,a\n7,b\n", "重复（duplicate id）'7'，与第 2 行相同"),
        ("id,name\nAb1,a\nab1,b\n", "只差大小写"),
        ("id,name\n../x,a\n", "文件夹名（folder name）"),
        ("id,name\na b,a\n", "文件夹名"),
        ("id,name\n.hidden,a\n", "文件夹名"),
        ("id,name\na/b,a\n", "文件夹名"),
        ("id,name\nCON,a\n", "保留文件名（reserved name）"),
        ("id,name\n,a\n", "是空的"),
        ("id,name\n" + "x" * 65 + ",a\n", "超过 64"),
        ("id,name\n" + "\U0001d49c" * 17 + ",a\n", "超过 64 个字节"),  # 17 个 4 字节的字 = 68 字节（以前按字符数放行）
        ("id,name\n5\n", "列数不够"),
        ("id,name\n5,\n", "姓名（name）是空的"),
    ],
)
def test_bad_roster_rows_get_clear_messages(tmp_path, text, message):
    with pytest.raises(roster.RosterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        roster.read(_roster(tmp_path, text))


def test_every_bad_row_is_reported_at_once(tmp_path):
    with pytest.raises(roster.RosterError) as err:
        roster.read(_roster(tmp_path, "id,name\n../a,x\nok,y\nok,z\nb c,w\n"))
    text = str(err.value)
    assert "3 处问题" in text and "第 2 行" in text and "第 4 行" in text and "第 5 行" in text


def test_roster_that_is_not_utf8_is_rejected(tmp_path):
    with pytest.raises(roster.RosterError, match="UTF-8"):
        roster.read(_roster(tmp_path, "id,name\n1,张三\n", encoding="gbk"))


def test_chinese_ids_are_allowed():
    assert roster.id_problem("张三_01") is None


def test_assign_writes_personal_notebooks_with_plain_numbers(course, capsys):
    roster_path, secret, out = course
    assert _run(roster_path, secret, out) == 0
    assert "3 名学生写出了 6 个笔记本" in capsys.readouterr().out
    assert not (out / "2024001" / "ch05_solutions.ipynb").exists()
    key = secret.read_bytes()
    record = json.loads((out / "variants.json").read_text(encoding="utf-8"))
    for sid in ("2024001", "2024002", "stu_3"):
        for assignment in problems.ASSIGNMENTS:
            params = variants.for_class(key, assignment, ["2024001", "2024002", "stu_3"])[sid]
            assert record[sid][assignment] == json.loads(json.dumps(params))
            nb = nbformat.read(out / sid / f"{assignment}_exercises.ipynb", as_version=4)
            nbformat.validate(nb)
            tag = variants.sign(key, assignment, sid, params)  # 参数的签名：评分器据此认出发给他的数
            assert nb.metadata["shardlab"] == {
                "assignment": assignment,
                "student": sid,
                "kind": "exercises",
                "tag": tag,
            }
            found = {}
            for cell in nb.cells:
                if personalize.PARAM_TAG in cell.metadata.get("tags", []):
                    found.update(problems.cell_values(cell.source))
                assert "shardlab.variants" not in cell.source and "for_student" not in cell.source  # 没有查表
                assert not cell.get("outputs")
            assert {k: found[k] for k in params} == params
            text = "\n".join(c.source for c in nb.cells)
            for sub in problems.TEXT[assignment]:
                assert sub.render(params) in text
    a = nbformat.read(out / "2024001" / "ch05_exercises.ipynb", as_version=4)
    b = nbformat.read(out / "2024002" / "ch05_exercises.ipynb", as_version=4)
    assert a.cells[1].source != b.cells[1].source and "张三" in a.cells[1].source


def test_assign_never_overwrites_without_force_and_force_is_reproducible(course, capsys):
    roster_path, secret, out = course
    assert _run(roster_path, secret, out, "--solutions") == 0
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert len(files) == 3 * 4 + 1
    first = {p: p.read_bytes() for p in files}
    (out / "2024001" / "ch05_exercises.ipynb").write_text("学生的作答", encoding="utf-8")
    assert _run(roster_path, secret, out) == 2
    err = capsys.readouterr().err
    assert "--force" in err and "不会覆盖（overwrite）" in err
    assert (out / "2024001" / "ch05_exercises.ipynb").read_text(encoding="utf-8") == "学生的作答"
    assert _run(roster_path, secret, out, "--solutions", "--force") == 0
    assert {p: p.read_bytes() for p in files} == first  # 两次运行逐字节相同
    assert not list(out.rglob("*.tmp"))


def test_bad_roster_or_secret_writes_nothing(tmp_path, capsys):
    secret = tmp_path / "secret"
    secret.write_bytes(b"k")
    bad = _roster(tmp_path, "id,name\n../evil,x\n")
    assert _run(bad, secret, tmp_path / "out") == 2
    assert "文件夹名" in capsys.readouterr().err and not (tmp_path / "out").exists()
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    good = _roster(tmp_path, "id,name\n1,x\n", name="good.csv")
    assert _run(good, empty, tmp_path / "out") == 2
    assert "密钥文件（secret file）" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_missing_course_notebooks_are_reported(course, capsys, tmp_path):
    roster_path, secret, out = course
    assert cli.main([str(roster_path), "--secret-file", str(secret), "--out", str(out), "--course", str(tmp_path)]) == 2
    assert "--course" in capsys.readouterr().err


# ---- 个人版作答之后 ----
def _fill_and_run(nb, fill) -> str:
    solution = nbformat.read(ROOT / "solutions" / f"{nb.metadata['shardlab']['assignment']}_solutions.ipynb", 4)
    sol_cells = {t: c for c in solution.cells for t in c.metadata.get("tags", []) if t in answers.ANSWERS}
    for cell in nb.cells:
        for tag in cell.metadata.get("tags", []):
            if tag in answers.ANSWERS:
                cell.source = fill(answers.get(tag), sol_cells[tag].source)
    os.environ.setdefault("JUPYTER_PATH", str(Path(sys.prefix) / "share" / "jupyter"))
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", problems.ASSIGNMENTS)
def test_personal_notebook_self_check_accepts_own_answers_and_rejects_the_books(course, assignment):
    roster_path, secret, out = course
    assert _run(roster_path, secret, out, "--assignment", assignment) == 0
    # 全班一起抽（碰撞时重抽）：单独为 stu_3 抽的参数约 2% 的密钥下不是发给他的（以前这个测试因此偶尔失败）
    ids = [s.id for s in roster.read(roster_path)]
    params = variants.for_class(secret.read_bytes(), assignment, ids)["stu_3"]
    path = out / "stu_3" / f"{assignment}_exercises.ipynb"

    def own(spec, solution_source):
        return solution_source if spec.kind == "function" else f"{spec.var} = {spec.value(params)!r}"

    def book(spec, solution_source):
        return solution_source if spec.kind == "function" else f"{spec.var} = {spec.value()!r}"

    text = _fill_and_run(nbformat.read(path, 4), own)
    assert "✗" not in text
    for spec in answers.chapter_answers(assignment):
        assert f"✓ {spec.id}：正确" in text
    text = _fill_and_run(nbformat.read(path, 4), book)
    for spec in answers.chapter_answers(assignment):
        if spec.kind == "value" and spec.varies:
            assert f"✗ {spec.id}" in text, spec.id


def test_names_are_escaped_files_are_private_and_planted_links_are_not_followed(tmp_path, capsys):
    roster_path = _roster(tmp_path, 'id,name\ns1,"<img src=x onerror=alert(1)> [x](http://e.x)"\ns2,李四\n')
    secret = tmp_path / "secret.key"
    assert cli.main(["--new-secret", str(secret)]) == 0
    assert oct(secret.stat().st_mode & 0o777) == "0o600"
    assert cli.main(["--new-secret", str(secret)]) == 2 and "不会覆盖" in capsys.readouterr().err
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("不能被改写", encoding="utf-8")
    (out / "s2").mkdir()
    (out / "s2" / ".ch05_exercises.ipynb.tmp").symlink_to(victim)  # 以前：固定的临时文件名，跟着链接写到了别处
    assert _run(roster_path, secret, out, "--solutions") == 0
    assert victim.read_text(encoding="utf-8") == "不能被改写"
    note = nbformat.read(out / "s1" / "ch05_exercises.ipynb", 4).cells[1].source
    assert not render_tokens(note) & {"html_inline", "html_block", "link_open", "image"}  # 名字里的 HTML 与链接被转义
    assert "onerror" in note  # 名字还在，只是成了文字
    modes = {p.relative_to(out).as_posix(): oct(p.stat().st_mode & 0o777) for p in out.rglob("*.ip*")}
    assert modes["s1/ch05_exercises.ipynb"] == "0o640" and modes["s1/ch05_solutions.ipynb"] == "0o600"
    assert oct((out / "variants.json").stat().st_mode & 0o777) == "0o600"
    (out / "s2").rename(tmp_path / "moved")
    (out / "s2").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert _run(roster_path, secret, out, "--force") == 2
    assert "符号链接" in capsys.readouterr().err and not (tmp_path / "elsewhere").exists()


def test_weak_secret_is_refused(tmp_path, capsys):
    roster_path = _roster(tmp_path, "id,name\n1,x\n")
    weak = tmp_path / "weak"
    weak.write_text("2024-09-01")
    assert _run(roster_path, weak, tmp_path / "out") == 2
    assert "至少要 16 个" in capsys.readouterr().err and not (tmp_path / "out").exists()
