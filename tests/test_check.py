"""`reportbench check` (issue 21 §1): the mapping table, per-report facts, shifted-mapping detection, refusals;
exit 1 on errors, 0 with warnings, `--json`. The same check stops a system stage whose reports are shifted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reportbench.cli import main
from reportbench.reports.check import shift_check
from reportbench.systems import SystemError_, run_system
from reportbench.types import Report, Task

DEMO = Path("data/demo/researcherbench/systems/footnote_writer")

# four self-authored tasks on unrelated topics, and a report answering each
TOPICS = {
    "t1": ("Coral reef bleaching", "How do marine heatwaves drive coral reef bleaching and algae loss?",
           "Marine heatwaves push reef water above the bleaching threshold; corals expel their symbiotic algae."),
    "t2": ("Rust borrow checker", "How does the Rust borrow checker prevent data races in concurrent programs?",
           "The borrow checker enforces one mutable reference or many shared references, so threads cannot race."),
    "t3": ("Sourdough fermentation", "Which yeasts and lactobacilli drive sourdough fermentation and flavour?",
           "Wild yeasts leaven the dough while lactobacilli produce lactic and acetic acid that flavour sourdough."),
    "t4": ("Exoplanet transits", "How do transit photometry surveys detect exoplanets around distant stars?",
           "Transit photometry watches a star dim when an exoplanet crosses it; surveys fit the light curves."),
}


def _tasks() -> list[Task]:
    return [Task(task_id=t, title=title, task_prompt=q) for t, (title, q, _) in TOPICS.items()]


def _report(task_id: str, answer_of: str) -> Report:
    return Report(task_id=task_id, system="s", report_id=f"r-{task_id}", format="markdown", body=TOPICS[answer_of][2])


@pytest.mark.core
def test_reports_on_their_own_tasks_pass_and_a_shift_by_one_is_an_error() -> None:
    ids = list(TOPICS)
    ok = shift_check(_tasks(), [_report(t, t) for t in ids])
    assert ok.checked == 4 and ok.error is None and not ok.mismatched
    shifted = shift_check(_tasks(), [_report(ids[i], ids[i - 1]) for i in range(1, 4)] + [_report("t1", "t4")])
    assert shifted.error and "shifted mapping" in shifted.error and shifted.offset == -1
    one_off = shift_check(_tasks(), [_report("t1", "t3"), *(_report(t, t) for t in ids[1:])])
    assert one_off.error is None  # one report on the wrong task is at most a warning, never a shifted run


@pytest.mark.core
def test_a_content_shifted_folder_stops_the_system_stage(tmp_path: Path) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    ids = list(TOPICS)
    for i, t in enumerate(ids):  # names right, contents of the previous task: no name rule can see it
        (folder / f"{t}.md").write_text(f"# Answer\n\n{TOPICS[ids[i - 1]][2]}\n", encoding="utf-8")
    with pytest.raises(SystemError_, match="shifted mapping"):
        run_system("s", {"kind": "folder", "path": str(folder)}, _tasks(), tmp_path / "out")
    run_system("s", {"kind": "folder", "path": str(folder), "shift_check": "warn"}, _tasks(), tmp_path / "out2")
    check = json.loads((tmp_path / "out2" / "check.json").read_text())
    assert check["errors"] and check["shift"]["offset"] == -1
    from reportbench.systems import read_outcomes

    assert all("mapping_suspect" in o.flags for o in read_outcomes(tmp_path / "out2"))


@pytest.fixture()
def in_repo(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(repo_root)
    return repo_root


@pytest.mark.core
def test_check_cli_prints_the_mapping_and_exits_0(in_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(DEMO), "-b", "researcherbench", "--release", "demo"]) == 0
    out = capsys.readouterr().out
    assert "mapped    q1.md -> q1  [task id]" in out
    assert "q1: markdown, 4 sources, reference list yes, 0 unresolved markers" in out
    assert out.rstrip().endswith("ok: 0 error(s), 0 warning(s)")


@pytest.mark.core
def test_check_cli_refuses_a_folder_shifted_by_one(
    in_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = tmp_path / "names"  # 0.md, 1.md, 2.md for q1..q3: 0.md maps to nothing, q3 has no report
    contents = tmp_path / "contents"  # q1.md holds q3's answer, q2.md q1's, q3.md q2's
    names.mkdir()
    contents.mkdir()
    for n in (1, 2, 3):
        shutil.copy(DEMO / f"q{n}.md", names / f"{n - 1}.md")
        shutil.copy(DEMO / f"q{n}.md", contents / f"q{n % 3 + 1}.md")
    assert main(["check", str(names), "-b", "researcherbench", "--release", "demo"]) == 1
    out = capsys.readouterr().out
    assert "0.md" in out and "q3" in out and "FAIL" in out
    assert main(["check", str(contents), "-b", "researcherbench", "--release", "demo", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["shift"]["offset"] == -1 and any("shifted mapping" in e for e in result["errors"])
    assert {m["task_id"] for m in result["mapping"]} == {"q1", "q2", "q3"}


@pytest.mark.core
def test_check_cli_warns_on_refusals_with_exit_0(
    in_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "f"
    shutil.copytree(DEMO, folder)
    refusal = Path(__file__).parent / "fixtures" / "refusal" / "refusal.md"
    (folder / "q2.md").write_text(refusal.read_text(), encoding="utf-8")
    code = main(["check", str(folder), "-b", "researcherbench", "--release", "demo", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and not result["errors"]
    q2 = next(r for r in result["reports"] if r["task_id"] == "q2")
    assert "refusal" in q2["flags"] and any(w.startswith("q2: refusal:") for w in result["warnings"])


@pytest.mark.core
def test_check_cli_names_what_is_wrong(in_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "nope/", "-b", "researcherbench", "--release", "demo"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["check", str(DEMO), "-b", "researcherbench", "--release", "no-such-release"]) == 2
    assert "no-such-release" in capsys.readouterr().err


@pytest.mark.integration
def test_check_on_the_shared_data(shared_dir: Path, in_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The authors' real outputs pass (ResearcherBench user_data, LRB reference reports, DeepScholar baselines)."""
    rb = shared_dir / "data" / "researcherbench" / "user_data" / "Perplexity.json"
    assert main(["check", str(rb), "-b", "researcherbench", "--release", "researcherbench"]) == 0
    capsys.readouterr()
    lrb = shared_dir / "data" / "liveresearchbench" / "reference_reports"
    args = ["check", str(lrb), "-b", "liveresearchbench", "--release", "public80", "--allow-missing", "true", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    review = next(r for r in result["reports"] if r["task_id"] == "review5q6iS0uJfnrUKg5h")
    assert "refusal" in review["flags"]  # the spec's "I cannot satisfy your requirements" reference report


@pytest.mark.core
def test_check_cli_checks_each_model_of_a_per_model_parent(
    in_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = Path("data/demo/liveresearchbench/systems")
    for m in ("careful_analyst", "open_deep_research"):
        shutil.copytree(demo / m, tmp_path / "models" / m)
    args = ["check", str(tmp_path / "models"), "-b", "liveresearchbench", "--release", "demo", "--layout", "per_model"]
    assert main([*args, "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [Path(r["path"]).name for r in results] == ["careful_analyst", "open_deep_research"]
    odr = results[1]
    assert any("refusal" in r["flags"] for r in odr["reports"])  # the demo's deliberately degenerate reference


@pytest.mark.core
def test_check_finds_the_planned_release(in_repo: Path, tmp_path: Path) -> None:
    """Without --release, `check` reads the release params.yaml plans (data/releases/<b>/<R>), or says how to
    build it."""
    import yaml

    from reportbench.release.format import write_release
    from reportbench.systems.check import load_release_for_check

    release = load_release_for_check("researcherbench", "demo")
    with pytest.raises(SystemError_, match=r"dvc repro release@researcherbench"):
        load_release_for_check("researcherbench", None, tmp_path)
    plan = {"plan": {"benchmarks": {"researcherbench": {"release": "demo"}}}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(plan))
    write_release(release, tmp_path / "data" / "releases" / "researcherbench" / "demo")
    assert [t.task_id for t in load_release_for_check("researcherbench", None, tmp_path).tasks] == ["q1", "q2", "q3"]


@pytest.mark.core

def test_check_escapes_control_characters_in_file_names(
    in_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33: an ESC sequence in a file name was printed raw by `reportbench check` (it can clear the screen,
    retitle the terminal or hide lines). Every control character in the text output is escaped."""
    demo = DEMO
    folder = tmp_path / "f"
    shutil.copytree(demo, folder)
    (folder / "q1.md").rename(folder / "q1\n.md")
    shutil.copy(demo / "q2.md", folder / "q2\x1b[2J\x1b]0;owned\x07.md")
    main(["check", str(folder), "-b", "researcherbench", "--release", "demo", "--allow-missing", "1"])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "q2\\x1b[2J\\x1b]0;owned\\x07.md" in out
    assert "q1\\n.md -> —" in out  # the newline name maps to nothing
    (folder / "q3.md").rename(folder / "q3\u202e\U000e0041.md")  # a bidi override and a tag character
    main(["check", str(folder), "-b", "researcherbench", "--release", "demo", "--allow-missing", "1", "--json"])
    raw = capsys.readouterr().out
    assert "\x1b" not in raw and "\u202e" not in raw and "\U000e0041" not in raw
    assert any(m["file"].endswith("q3\u202e\U000e0041.md") for m in json.loads(raw)["mapping"])


@pytest.mark.core
def test_check_text_says_what_a_closer_task_score_is() -> None:
    """A report scoring higher on another task is printed with the scores' basis (the shift check's method) and
    whether it was flagged — the real LRB reference reports printed a bare "best match X (3.082 vs own 2.533)"."""
    from reportbench.systems.check import CheckResult, render_text

    row = {"task_id": "t1", "adapter": "markdown", "sources": 3, "reference_list": True, "unresolved_markers": 0,
           "flags": [], "best_task": "t2", "best_score": 3.082, "own_score": 2.533}  # fmt: skip
    result = CheckResult("liveresearchbench", "f", "qid", reports=[row],
                         shift={"method": "bm25 (sparse), column z-scores"})  # fmt: skip
    text = render_text(result)
    assert ("closer to t2 (bm25 (sparse), column z-scores: 3.082 vs 2.533 for its own task; under the margin, not "
            "flagged)") in text  # fmt: skip
    row["flags"] = ["mapping_suspect"]
    assert "3.082 vs 2.533 for its own task)" in render_text(result)
