"""Gradescope 的自动评分器：zip 里没有密钥、一个 zip 一章；容器里学生的代码读不到答案、碰不到结果；选文件、小组、试运行

在一个伪造的 /autograder 目录里运行 zip 里的 run_autograder（``gradescope.dry_run``，与 ``shardlab-grade gradescope-dry-run`` 同一条路），
按 Gradescope 文档里 results.json 的格式检查结果。容器里的两种隔离都测：bubblewrap（容器允许时）与只换 uid（不允许时）。
"""

import json
import os
import shutil
import stat
import sys
import time
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest
from grading import SANDBOXED

from shardlab.exercise import answers, variants
from shardlab.grade import cli, gradescope, personal
from shardlab.grade.key import AnswerKey

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import assign_bench  # noqa: E402

# Gradescope 文档（Autograder Specifications）里 results.json 的格式：我们写出的字段
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
RESULTS_SCHEMA = {
    "type": "object",
    "required": ["tests"],
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "score", "max_score"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "output": {"type": "string"},
                    "visibility": VISIBILITY,
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}
N5 = len(answers.chapter_answers("ch05"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("gradescope")
    roster_path, secret, own, pub, _ = assign_bench.make_class(work, 3, "ch05")
    weights = work / "weights.csv"
    weights.write_text("problem,weight\nch05-p2,3\n", encoding="utf-8")
    zip_path = work / "autograder.zip"
    rc = gradescope.main(["--secret-file", str(secret), "--out", str(zip_path), "--chapter", "5",
                          "--roster", str(roster_path), "--course", str(ROOT), "--weights", str(weights)])  # fmt: skip
    assert rc == 0
    return work, zip_path, secret, own, pub


def _dry(zip_path, notebooks, *sids, keep=None, sandbox=None) -> dict:
    res = gradescope.dry_run(zip_path, notebooks, [{"sid": s, "email": ""} for s in sids], keep, sandbox)
    jsonschema.validate(res, RESULTS_SCHEMA)
    return res


def test_zip_carries_no_key_no_names_and_is_private_and_reproducible(built, tmp_path):
    work, zip_path, secret, _, _ = built
    with zipfile.ZipFile(zip_path) as z:
        names = set(z.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
        blob = b"".join(z.read(n) for n in names)
    assert secret.read_bytes() not in blob and not any("secret" in n or n.startswith("key/") for n in names)
    assert "学生1" not in blob.decode("utf-8", "replace")  # 容器里用不到姓名
    assert {"setup.sh", "run_autograder", "grader/variants.json", "grader/config.json"} <= names
    assert all(modes[n] == 0o600 for n in names if n.startswith("grader/"))
    assert stat.S_IMODE(zip_path.stat().st_mode) == 0o600  # 以前：0644，里面还有密钥
    assert "useradd" in zipfile.ZipFile(zip_path).read("setup.sh").decode()
    again = tmp_path / "again.zip"
    assert gradescope.main(["--secret-file", str(secret), "--out", str(again), "--chapter", "5", "--roster",
                            str(work / "roster.csv"), "--course", str(ROOT), "--weights",
                            str(work / "weights.csv")]) == 0  # fmt: skip
    assert again.read_bytes() == zip_path.read_bytes()


def test_zip_requires_a_chapter_and_a_roster(built, tmp_path, capsys):
    work, _, secret, _, _ = built
    for missing in ("--chapter", "--roster"):
        args = {"--secret-file": str(secret), "--out": str(tmp_path / "z.zip"), "--chapter": "5",
                "--roster": str(work / "roster.csv"), "--course": str(ROOT)}  # fmt: skip
        args.pop(missing)
        with pytest.raises(SystemExit):
            gradescope.main([x for kv in args.items() for x in kv])
        assert missing in capsys.readouterr().err
    assert not (tmp_path / "z.zip").exists()


def test_zip_is_refused_when_the_solutions_disagree_with_the_reference(built, tmp_path, capsys, monkeypatch):
    """本机评分核对解答笔记本的答案与参考算法（PersonalKey.build）；写 zip 时同样核对、同样的话、退出码 2
    （以前照样写出 zip，容器里才出错：全班每份提交都是“评分器出错”）"""
    work, _, secret, _, _ = built
    real = gradescope.load_key

    def wrong(*a, **k):
        key = real(*a, **k)
        entries = {aid: dict(e) for aid, e in key.entries.items()}
        entries["ch05-p1a"]["value"] = float(entries["ch05-p1a"]["value"]) * (1 + 1e-6)
        return type(key).from_entries(entries)

    monkeypatch.setattr(gradescope, "load_key", wrong)
    out = tmp_path / "z.zip"
    rc = gradescope.main(["--secret-file", str(secret), "--out", str(out), "--chapter", "5",
                          "--roster", str(work / "roster.csv"), "--course", str(ROOT)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    assert "ch05-p1a：解答笔记本得" in err and "参考算法得" in err


def test_grader_help_lists_the_gradescope_commands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "gradescope " in out and "gradescope-dry-run" in out


def test_file_choice_skips_checkpoints_and_macos_copies(tmp_path):
    good = ROOT / "exercises" / "ch05_exercises.ipynb"
    sub = tmp_path / "submission"
    (sub / ".ipynb_checkpoints").mkdir(parents=True)
    (sub / "__MACOSX").mkdir()
    shutil.copy(good, sub / ".ipynb_checkpoints" / "a-checkpoint.ipynb")
    shutil.copy(good, sub / "__MACOSX" / "._ch05_exercises.ipynb")
    shutil.copy(good, sub / "._ch05_exercises.ipynb")
    shutil.copy(ROOT / "exercises" / "ch06_exercises.ipynb", sub / "a_ch06.ipynb")
    shutil.copy(good, sub / "z_mine.ipynb")
    path, _, note = gradescope.choose_notebook(sub, 5, ["s1"])
    assert path.name == "z_mine.ipynb" and "a_ch06.ipynb" in note  # 以前：排序后的第一个，即检查点
    nb = nbformat.read(good, 4)
    nb.metadata["shardlab"] = {"assignment": "ch05", "student": "s1", "kind": "exercises"}
    nbformat.write(nb, sub / "y_personal.ipynb")
    path, _, note = gradescope.choose_notebook(sub, 5, ["s1"])
    assert path.name == "y_personal.ipynb" and "学号" in note
    # 一起传上来的空白副本排在路径前面：取作答了的那份（以前按路径取了空白的，得 0 分）
    blank = gradescope.inject.answer_digests(json.loads(good.read_text(encoding="utf-8")))
    shutil.copy(sub / "y_personal.ipynb", sub / "y_personal (1).ipynb")
    cell = next(c for c in nb.cells if "ch05-p1a" in c.metadata.get("tags", []))
    cell.source = "p1a = 1.0"
    nbformat.write(nb, sub / "y_personal.ipynb")
    path, _, note = gradescope.choose_notebook(sub, 5, ["s1"], blank)
    assert path.name == "y_personal.ipynb" and "作答的题最多" in note
    assert gradescope.choose_notebook(sub, 5, ["s1"])[0].name == "y_personal (1).ipynb"  # 不给 blank 时按路径


def _unscored(res: dict) -> None:
    """评分器出错：results.json 里没有分数，也没有可加的测试分（Gradescope 记不下 0），学生看到原因与该找谁"""
    jsonschema.validate(res, RESULTS_SCHEMA)
    assert "score" not in res and res["tests"] == [], res
    assert "autograder error" in res["output"] and "contact course staff" in res["output"]
    assert "分数不是 0" in res["output"] and res["visibility"] == "visible"


def test_missing_metadata_or_unknown_student_or_no_notebook_still_writes_results(built, tmp_path):
    _, zip_path, _, own, _ = built
    notebook = own / "s001" / "ch05_exercises.ipynb"
    for name, nbs, users, words in [
        ("nosid", [notebook], [{"name": "x"}], "学号"),
        ("stranger", [notebook], [{"sid": "nobody"}], "不在 zip 的花名册"),
    ]:  # 以前：0 分记进 Gradescope，像是学生什么也没做
        res = gradescope.dry_run(zip_path, nbs, users)
        _unscored(res)
        assert words in res["output"], (name, res["output"])
    res = gradescope.dry_run(zip_path, [], [{"sid": "s001"}])  # 没交笔记本是学生的事：0 分
    jsonschema.validate(res, RESULTS_SCHEMA)
    assert res["score"] == 0 and "没有 .ipynb" in res["output"]
    assert sum(t["max_score"] for t in res["tests"]) == N5 + 2  # 以前：Gradescope 上显示 0 / 0


def test_a_grader_that_fails_in_the_container_records_no_score(built, tmp_path, capsys):
    """以前：评分器自己出错（配置读不了、抛异常）时 results.json 写 0 分"""
    _, zip_path, _, _, _ = built
    root = tmp_path / "autograder"
    gradescope._safe_extract(zip_path, root / "source")
    (root / "submission").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": "s001"}]}), encoding="utf-8")
    (root / "source" / "grader" / "roster.json").unlink()  # run() 里读花名册时抛出 FileNotFoundError
    assert gradescope.main(["run", "--root", str(root)]) == 0
    res = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    _unscored(res)
    assert "FileNotFoundError" in res["output"]
    assert "autograder error" in capsys.readouterr().out  # 教师在 Autograder Output 里看得到
    (root / "source" / "grader" / "config.json").write_text("{", encoding="utf-8")
    assert gradescope.main(["run", "--root", str(root)]) == 0
    res = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    _unscored(res)
    assert "配置读不了" in res["output"]


@pytest.mark.parametrize("broken", ["grader-error", "crashed"])
def test_a_grader_error_or_a_crash_in_the_container_records_no_score(built, tmp_path, monkeypatch, broken):
    """评分器出错、评分进程崩溃（没有给出报告）时：以前 results.json 里是 0 分和每道题 0 分的测试；0 不是评出来的分数，
    不记分（与本机评分的“待核对”相同），学生看到请联系教师"""
    _, zip_path, _, own, _ = built
    root = tmp_path / "autograder"
    gradescope._safe_extract(zip_path, root / "source")
    (root / "submission").mkdir()
    shutil.copy(own / "s001" / "ch05_exercises.ipynb", root / "submission")
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": "s001"}]}), encoding="utf-8")
    failed = {"status": broken, "message": "评分进程没有给出报告", "points": 0.0, "max_points": N5 + 2,
              "problems": [], "notes": [], "errors": []}  # fmt: skip
    monkeypatch.setattr(gradescope, "choose_isolation", lambda config: ("rlimit", None, "只有资源限制"))
    monkeypatch.setattr(gradescope, "_grade", lambda *a, **k: failed)
    res = gradescope.run(root)
    jsonschema.validate(res, RESULTS_SCHEMA)
    _unscored(res)
    assert "评分进程没有给出报告" in res["output"]


def test_student_id_comes_from_sid_then_email():
    assert gradescope.student_of({"users": [{"sid": " 2024001 ", "email": "a@b"}]}) == "2024001"
    assert gradescope.student_of({"users": [{"sid": "", "email": "a@b"}]}) == "a@b"
    assert gradescope.student_of({"users": []}) is None and gradescope.student_of([]) is None
    assert gradescope.members({"users": [{"sid": "a"}, {"email": "b@c"}]}) == [("a",), ("b@c",)]
    assert gradescope.members({"users": [{"sid": "U9", "email": "b@c"}]}) == [("U9", "b@c")]
    people = [{"id": "2024001", "email": "a@b"}, {"id": "2024002", "email": "B@c"}]
    # 学号不在花名册里而邮箱在：按邮箱（以前：只看学号，“不在花名册里”，0 分）
    assert gradescope.on_roster([("U99887766", "b@C")], people) == ["2024002"]
    assert gradescope.on_roster([("2024001", "b@c"), ("x", "a@b")], people) == ["2024001"]
    assert gradescope.on_roster([("nobody",)], people) == []


def test_a_group_notebook_is_graded_as_the_member_whose_signature_it_carries(tmp_path):
    """小组提交：s002 的个人版，元数据里的学生 id 被改成了组员 s001（没有验证的说法）。以前按 s001 评，
    学生看到“你交的笔记本是发给另一位同学的个人版”；签名说明它是 s002 的，就按 s002 评。没有签名时才看写的 id"""
    from shardlab.exercise import roster
    from shardlab.grade import inject
    from shardlab.grade.key import registry_key

    roster_path, secret, own, _, _ = assign_bench.make_class(tmp_path, 3, "ch05", published=False)
    students = roster.read(roster_path)
    key = personal.PersonalKey.build(
        AnswerKey.from_entries(registry_key()), students, variants.read_secret(secret), ("ch05",)
    )
    nb = json.loads((own / "s002" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    nb["metadata"]["shardlab"]["student"] = "s001"
    peek = inject.peek(nb)
    sid, note = gradescope.group_member(["s001", "s002"], peek, key, "ch05", 2)
    assert sid == "s002" and "签名" in note and "s002" in note
    nb["metadata"]["shardlab"].pop("tag", None)  # 没有签名：按写的 id
    unsigned = inject.peek(nb)
    assert not unsigned.tag
    assert gradescope.group_member(["s002", "s001"], unsigned, key, "ch05", 2)[0] == "s001"


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap（.ci/run 会安装）")
def test_groups_hold_zip_gives_a_group_submission_no_score(built, tmp_path):
    """--groups hold：小组提交一律不给分、待核对（以前：全组拿签名所属组员的分，拿了同学的笔记本、把他加进小组就行）"""
    work, _, secret, own, _ = built
    zip_path = tmp_path / "hold.zip"
    rc = gradescope.main(["--secret-file", str(secret), "--out", str(zip_path), "--chapter", "5", "--groups", "hold",
                          "--roster", str(work / "roster.csv"), "--course", str(ROOT)])  # fmt: skip
    assert rc == 0
    res = _dry(zip_path, [own / "s002" / "ch05_exercises.ipynb"], "s001", "s002")
    assert "score" not in res and gradescope.HELD_MARK in res["output"] and not res["tests"]
    assert "s002" not in res["output"] and "s001" not in res["output"]  # 学生看到的话不点名
    with pytest.raises(gradescope.GradescopeError, match="--groups"):
        gradescope.build_zip(None, secret, tmp_path / "x.zip", work / "roster.csv", 5, groups="maybe")


def test_dry_run_refuses_two_notebooks_with_one_name(tmp_path):
    a, b = tmp_path / "a" / "x.ipynb", tmp_path / "b" / "x.ipynb"
    for nb in (a, b):
        nb.parent.mkdir()
        nb.write_text("{}", encoding="utf-8")
    with pytest.raises(gradescope.GradescopeError, match="同名"):  # 以前：后一个悄悄盖掉前一个
        gradescope.dry_run(tmp_path / "missing.zip", [a, b], [{"sid": "s1"}])


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap（.ci/run 会安装）")
def test_run_autograder_grades_the_students_variant_with_weights(built):
    _, zip_path, secret, own, pub = built
    ids = [a.id for a in answers.chapter_answers("ch05")]
    res = _dry(zip_path, [own / "s001" / "ch05_exercises.ipynb"], "s001")
    assert [t["name"].split("：")[0] for t in res["tests"]] == ids
    assert all(t["status"] == "passed" for t in res["tests"]) and res["score"] == N5 + 2  # ch05-p2 的权重是 3
    assert {t["max_score"] for t in res["tests"] if t["name"].startswith("ch05-p2：")} == {3}
    assert "s001" in res["output"] and "bubblewrap" in res["output"]
    assert "正确。正确" not in json.dumps(res, ensure_ascii=False)

    copied = _dry(zip_path, [pub / "s001_ch05.ipynb"], "s001")
    varies = {a.id for a in variants.varying("ch05")}
    assert {t["score"] for t in copied["tests"] if t["name"].split("：")[0] in varies} == {0}
    other = _dry(zip_path, [own / "s000" / "ch05_exercises.ipynb"], "s001")  # 拿了同学的笔记本
    text = json.dumps(other, ensure_ascii=False)
    assert "抄" not in text  # 证据只给助教
    assert "发给另一位同学的个人版" in other["output"]  # 签名说明了这是谁的笔记本：不怪评分器的配置

    group = _dry(zip_path, [own / "s002" / "ch05_exercises.ipynb"], "s001", "s002")  # 小组：笔记本是 s002 的
    assert group["score"] == N5 + 2 and "组员 s002" in group["output"]  # 以前：按 users[0] 评，几乎全错
    # 小组是提交者自己填的：给教师一项学生看不到的核对说明，点出 s001 自己的个人版没有评（以前什么也没有）
    staff = [t for t in group["tests"] if t.get("visibility") == "hidden"]
    assert len(staff) == 1 and staff[0]["max_score"] == 0 and "其余组员（s001）" in staff[0]["output"]
    assert sum(t["max_score"] for t in group["tests"]) == N5 + 2
    assert "其余组员" not in group["output"]
    relabelled = json.loads((own / "s002" / "ch05_exercises.ipynb").read_text(encoding="utf-8"))
    relabelled["metadata"]["shardlab"]["student"] = "s001"  # 元数据里的 id 是没有验证的说法，签名才说明是谁的
    (tmp := own.parent / "relabelled").mkdir(exist_ok=True)
    (tmp / "ch05_exercises.ipynb").write_text(json.dumps(relabelled), encoding="utf-8")
    signed = _dry(zip_path, [tmp / "ch05_exercises.ipynb"], "s001", "s002")
    assert signed["score"] == N5 + 2 and "组员 s002" in signed["output"]
    assert "另一位同学" not in json.dumps(signed, ensure_ascii=False)

    ch06 = _dry(zip_path, [ROOT / "exercises" / "ch06_exercises.ipynb"], "s001")  # 一个 zip 一章
    assert ch06["score"] == 0 and sum(t["max_score"] for t in ch06["tests"]) == N5 + 2  # 以前：18/17
    assert "别的章" in json.dumps(ch06, ensure_ascii=False)


HOSTILE = '''\
import os, subprocess, sys
ROOT = {root!r}
leaked = []
for name in ("config.json", "variants.json", "roster.json", "answer_key.json"):
    try:
        leaked.append(open(os.path.join(ROOT, "source", "grader", name)).read()[:300])
    except Exception as exc:
        leaked.append(type(exc).__name__)
for name in ("submission_metadata.json",):
    try:
        leaked.append(open(os.path.join(ROOT, name)).read()[:300])
    except Exception as exc:
        leaked.append(type(exc).__name__)
try:
    open(os.path.join(ROOT, "results", "results.json"), "w").write('{{"score": 999, "tests": []}}')
except Exception as exc:
    leaked.append("write:" + type(exc).__name__)
for shared in ("/tmp", "/dev/shm"):  # 在公共目录里留东西（uid 模式没有私有的 /tmp）
    try:
        os.makedirs(os.path.join(shared, {marker!r}), exist_ok=True)
    except OSError:
        pass
daemon = """
import os, sys, time
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): sys.exit(0)
time.sleep(2.5)  # {marker}
open(os.path.join({root!r}, "results", "results.json"), "w").write('{{"score": 999, "tests": []}}')
"""
subprocess.Popen([sys.executable, "-c", daemon], start_new_session=True).wait()
raise RuntimeError("LEAK:" + "|".join(leaked))
'''


@pytest.fixture
def traversable_python():
    """只换 uid 的隔离里，学生的 uid 要能运行这个 Python：临时给它和虚拟环境的上级目录加上 o+x（测试结束还原）。

    Gradescope 的容器里 /autograder/venv 与系统的 Python 本来就是所有人都能进入的；这台机器上 Python 装在 /root 下。
    """
    changed = {}
    for target in {os.path.realpath(sys.executable), sys.prefix, str(ROOT)}:
        for parent in Path(target).parents:
            mode = stat.S_IMODE(parent.stat().st_mode)
            if not mode & 0o001 and str(parent) not in changed:
                changed[str(parent)] = mode
                parent.chmod(mode | 0o001)
    yield
    for path, mode in changed.items():
        os.chmod(path, mode)


def _marker_processes(marker: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmd:
            found.append(pid)
    return found


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not SANDBOXED, reason="需要 root（换 uid）与 bubblewrap")
@pytest.mark.parametrize("mode", ["bwrap", "uid"])
def test_student_code_reads_nothing_private_and_cannot_touch_the_result(built, tmp_path, mode, request):
    """以前（rlimit、以评分器自己的 uid 运行）：笔记本能读出密钥、花名册和全班的参数；脱离的守护进程事后改写了 results.json"""
    if mode == "uid":
        request.getfixturevalue("traversable_python")
    _, zip_path, _, own, _ = built
    root = tmp_path / "autograder"
    marker = f"shardlab-daemon-{mode}-{os.getpid()}"
    nb = nbformat.read(own / "s001" / "ch05_exercises.ipynb", 4)
    cell = nbformat.v4.new_code_cell(HOSTILE.format(root=str(root), marker=marker))
    cell.pop("id", None)  # 练习笔记本是 nbformat 4.4
    nb.cells.insert(2, cell)
    hostile = tmp_path / "ch05_exercises.ipynb"
    nbformat.write(nb, hostile)
    res = _dry(zip_path, [hostile], "s001", keep=root, sandbox="uid" if mode == "uid" else None)
    assert res["score"] == N5 + 2  # 学生的代码改不了分数
    leak = next(line for line in res["output"].splitlines() if "LEAK:" in line).split("LEAK:")[1].split("|")
    expected = {"bwrap": "FileNotFoundError", "uid": "PermissionError"}[mode]  # 看不见，或者读不了
    assert leak == [expected] * 5 + [f"write:{expected}"], leak
    assert ("隔离：bubblewrap" if mode == "bwrap" else "资源限制（没有命名空间）") in res["output"]
    assert not _marker_processes(marker)  # 守护进程在评分器写结果之前就没了
    assert not (Path("/tmp") / marker).exists() and not (Path("/dev/shm") / marker).exists()  # 也没留下文件
    time.sleep(3)
    assert json.loads((root / "results" / "results.json").read_text(encoding="utf-8")) == res
    assert stat.S_IMODE((root / "source" / "grader").stat().st_mode) == 0o700


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap")
def test_dry_run_command_prints_what_the_student_will_see(built, capsys):
    _, zip_path, _, own, _ = built
    rc = cli.main(["gradescope-dry-run", str(zip_path), str(own / "s000" / "ch05_exercises.ipynb"), "--sid", "s000"])
    out = capsys.readouterr().out
    assert rc == 0 and f"得分 {N5 + 2:g} / {N5 + 2:g}" in out and "✓ ch05-p1a" in out


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap")
def test_a_zip_built_with_the_wrong_key_is_caught_by_the_dry_run_and_never_blames_the_student(built, tmp_path, capsys):
    work, _, _, own, _ = built
    wrong = tmp_path / "wrong.key"
    variants.new_secret(wrong)
    zip_path = tmp_path / "wrong.zip"
    assert gradescope.main(["--secret-file", str(wrong), "--out", str(zip_path), "--chapter", "5",
                            "--roster", str(work / "roster.csv"), "--course", str(ROOT)]) == 0  # fmt: skip
    nb = own / "s001" / "ch05_exercises.ipynb"
    rc = cli.main(["gradescope-dry-run", str(zip_path), str(nb), "--sid", "s001"])
    captured = capsys.readouterr()
    assert rc == 1 and "签名与这个 zip 对不上" in captured.err  # 以前：rc 0，没有任何提示
    assert "如果你没有改过参数单元" in captured.out and "被改过" not in captured.out  # 以前：告诉学生是他改了数


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap")
def test_dry_run_names_a_wrong_chapter_or_roster_instead_of_a_wrong_key(built, tmp_path, capsys):
    work, _, secret, own, _ = built
    nb = own / "s001" / "ch05_exercises.ipynb"
    ch6 = tmp_path / "ch6.zip"
    assert gradescope.main(["--secret-file", str(secret), "--out", str(ch6), "--chapter", "6", "--roster",
                            str(work / "roster.csv"), "--course", str(ROOT)]) == 0  # fmt: skip
    assert cli.main(["gradescope-dry-run", str(ch6), str(nb), "--sid", "s001"]) == 1
    err = capsys.readouterr().err
    assert "是第 5 章的练习，这个 zip 评第 6 章" in err and "密钥" not in err  # 以前：说是密钥或花名册错了
    other = tmp_path / "other.csv"
    other.write_text("id,name\nt001,X\n", encoding="utf-8")
    wrong = tmp_path / "roster.zip"
    assert gradescope.main(["--secret-file", str(secret), "--out", str(wrong), "--chapter", "5", "--roster",
                            str(other), "--course", str(ROOT)]) == 0  # fmt: skip
    assert cli.main(["gradescope-dry-run", str(wrong), str(nb), "--sid", "s001"]) == 1  # 以前：退出码 0
    assert "不在 zip 的花名册里" in capsys.readouterr().err


def test_dry_run_keep_wants_a_new_folder(tmp_path):
    """以前：--keep 沿用上一次留下的笔记本（评的是上一次的空白笔记本），还把教师给的目录改成 0755"""
    nb = tmp_path / "x.ipynb"
    nb.write_text("{}", encoding="utf-8")
    kept = tmp_path / "admin"
    kept.mkdir(mode=0o700)
    with pytest.raises(gradescope.GradescopeError, match="已经存在"):
        gradescope.dry_run(tmp_path / "missing.zip", [nb], [{"sid": "s1"}], keep=kept)
    assert kept.stat().st_mode & 0o777 == 0o700


@pytest.mark.slow
def test_dry_run_warns_when_the_notebook_belongs_to_another_sid(built, tmp_path):
    """以前：--sid 打错（s001 的笔记本写成 --sid s000）只在结果里有一句说明，退出码 0"""
    _, zip_path, _, own, _ = built
    nb = own / "s001" / "ch05_exercises.ipynb"
    assert any(
        "是发给 s001 的个人版，--sid 给的是 s000" in w for w in gradescope.signature_warnings(zip_path, [nb], ["s000"])
    )
    assert gradescope.signature_warnings(zip_path, [nb], ["s001"]) == []
    # 小组上传：笔记本里写的 id 改成了 s000，签名却是组员 s001 的，容器按 s001 评（group_member）：以前照样警告“是发给 s000 的”
    edited = json.loads(nb.read_text(encoding="utf-8"))
    edited["metadata"]["shardlab"]["student"] = "s000"
    renamed = tmp_path / "edited.ipynb"
    renamed.write_text(json.dumps(edited), encoding="utf-8")
    assert gradescope.signature_warnings(zip_path, [renamed], ["s002", "s001"]) == []
    assert gradescope.signature_warnings(zip_path, [renamed], ["s002"])  # 哪位 --sid 的签名都不是：照样警告


def test_a_gradescope_roster_that_lost_leading_zeros_still_matches():
    """以前：Gradescope 那边的花名册经过 Excel，学号 0101 成了 101，学生得 0 分（“学号不在花名册里”）"""
    assert gradescope.on_roster([("101", "")], [{"id": "0101", "email": ""}]) == ["0101"]
    both = [{"id": "0101", "email": ""}, {"id": "00101", "email": ""}]
    assert gradescope.on_roster([("101", "")], both) == []  # 去掉 0 之后对上两个人：不猜


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOXED, reason="需要 root 与 bubblewrap")
def test_a_classmates_signed_notebook_is_held_not_scored(built):
    """以前：交了发给同学的个人版，按自己的参数评分，与参数无关的几道题拿到分数（那是同学的答案）。
    现在与本机评分一样：不给分、待助教核对，学生看到的话不点名"""
    _, zip_path, _, own, _ = built
    res = _dry(zip_path, [own / "s001" / "ch05_exercises.ipynb"], "s000")
    jsonschema.validate(res, RESULTS_SCHEMA)
    assert "score" not in res and res["tests"] == [], res
    assert "待助教核对" in res["output"] and "s001" not in res["output"]
