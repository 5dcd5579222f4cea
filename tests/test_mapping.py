"""Issue 21 §1: reports land on the right task, by each benchmark's declared naming rules, or the run stops.

Unit tests of the naming rules (every benchmark), the folder kind's guard and mapping table, and the authors'
layouts (DEER task folders, LRB per-model parents, ResearchQA answer files). The end-to-end score equalities
are in tests/test_mapping_scores.py.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from reportbench.benchmarks import get_benchmark
from reportbench.reports.discover import discover_reports
from reportbench.reports.task_names import NameIndex
from reportbench.systems import SystemError_, read_reports, run_system
from reportbench.systems.folder import MAPPING_FILE, expand_per_model, read_mapping
from reportbench.types import Task

pytestmark = pytest.mark.core

GOOD = "## Answer\n\nDense retrieval beats BM25 on open-domain QA [1].\n\n## References\n\n[1] DPR. arXiv:2004.04906\n"


def _tasks(ids: list[str]) -> list[Task]:
    return [Task(task_id=t, title=f"Question {t}", task_prompt=f"What about {t}?") for t in ids]


def _write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return folder


def _index(benchmark: str, ids: list[str]) -> NameIndex:
    return NameIndex(ids, get_benchmark(benchmark).task_naming)


# ----------------------------------------------------------------------------------------- naming rules


def test_researcherbench_numbers_are_the_authors_ids_never_rows() -> None:
    idx = _index("researcherbench", [f"q{i}" for i in range(1, 66)])
    assert idx.match("1").task_id == "q1" and idx.match("65").task_id == "q65"
    assert idx.match("01").task_id == "q1"
    assert idx.match("q7").task_id == "q7" and idx.match("q7").rule == "task id"
    zero = idx.match("0")
    assert zero.task_id is None and "q0" in zero.note
    assert idx.match("66").task_id is None


@pytest.mark.parametrize("stem", ["٠", "０", "１", "٣"])
@pytest.mark.parametrize("benchmark", ["researcherbench", "deepscholar"])
def test_non_ascii_digits_are_never_a_task_number(benchmark: str, stem: str) -> None:
    """Issue 26 §8: `٠.md` and `０.md` mapped to task 0."""
    ids = ["q1", "q2", "q3"] if benchmark == "researcherbench" else ["2501.00001v1", "2501.00002v1"]
    m = _index(benchmark, ids).match(stem)
    assert m.task_id is None and "non-ASCII digits" in m.note


def test_deepscholar_numbers_are_0_based_rows_and_ids_match_any_version() -> None:
    idx = _index("deepscholar", ["2506.02838v1", "2506.02634v1", "math/0511322v1"])
    assert idx.match("0").task_id == "2506.02838v1" and "0-based" in idx.match("0").rule
    assert idx.match("3").task_id is None
    assert idx.match("2506.02634").task_id == "2506.02634v1"
    assert idx.match("2506.02634v3").note.startswith("version differs")
    assert idx.match("math_0511322").task_id == "math/0511322v1"


def test_deer_lrb_researchqa_read_no_bare_numbers() -> None:
    deer = _index("deer", ["ai-1", "ai-2", "cs-7"])
    assert deer.match("1").task_id is None and "not read" in deer.match("1").note
    assert deer.match("ai-2").task_id == "ai-2" and deer.match("ai_2").task_id == "ai-2"
    assert deer.match_group("csai", 7).task_id == "cs-7"  # the authors' csai folder splits into ai 1-5, cs 6-10
    lrb = _index("liveresearchbench", ["market6VWmPyxptfK47civ"])
    assert lrb.match("qid_market6VWmPyxptfK47civ_report").task_id == "market6VWmPyxptfK47civ"
    assert lrb.match("qid_market6VWmPyxptfK47civ").task_id == "market6VWmPyxptfK47civ"
    assert lrb.match("0").task_id is None
    rqa = _index("researchqa", ["174539434903306044-s15"])
    assert rqa.match("174539434903306044_s15").task_id == "174539434903306044-s15"
    assert rqa.match("0").task_id is None


def test_csai_group_number_maps_through_the_split() -> None:
    deer = _index("deer", ["ai-2", "cs-7"])
    assert deer.match_group("csai", 2).task_id == "ai-2"
    assert deer.match_group("csai", 7).task_id == "cs-7"
    assert deer.match_group("history", 1).task_id is None


# ------------------------------------------------------------------------------------- the folder guard


def _rb(tmp_path: Path, files: dict[str, str], n: int = 4, **spec: object) -> list:
    folder = _write(tmp_path / "reports", files)
    tasks = _tasks([f"q{i}" for i in range(1, n + 1)])
    return run_system("sys", {"kind": "folder", "path": str(folder), "benchmark": "researcherbench", **spec},
                      tasks, tmp_path / "out")


def test_numbered_folder_maps_to_the_authors_ids_and_writes_the_mapping_table(tmp_path: Path) -> None:
    outcomes = _rb(tmp_path, {f"{i}.md": GOOD for i in range(1, 5)})
    assert [(o.task_id, o.status, Path(o.path or "").name) for o in outcomes] == [
        ("q1", "ok", "1.md"), ("q2", "ok", "2.md"), ("q3", "ok", "3.md"), ("q4", "ok", "4.md")
    ]
    table = read_mapping(tmp_path / "out")
    assert (tmp_path / "out" / MAPPING_FILE).is_file()
    assert [(Path(r["file"]).name, r["task_id"], r["rule"]) for r in table][:1] == [
        ("1.md", "q1", "number n = task q{n}")
    ]
    assert json.loads((tmp_path / "out" / "check.json").read_text())["mapped"] == 4


def test_a_folder_shifted_by_one_stops_the_system_stage(tmp_path: Path) -> None:
    """0.md..3.md for q1..q4: 0.md maps to no task and q4 has no report -> one message naming both."""
    with pytest.raises(SystemError_) as err:
        _rb(tmp_path, {f"{i}.md": GOOD for i in range(0, 4)})
    msg = str(err.value)
    assert "0.md" in msg and "q4" in msg and "q{n}" in msg
    assert not (tmp_path / "out" / "reports.jsonl").exists()


def test_too_many_missing_tasks_stop_unless_allowed(tmp_path: Path) -> None:
    with pytest.raises(SystemError_, match=r"3 task\(s\) have no report.*allow_missing=0.5"):
        _rb(tmp_path / "a", {"1.md": GOOD})
    outcomes = _rb(tmp_path / "b", {"1.md": GOOD}, allow_missing=True)
    assert [o.status for o in outcomes] == ["ok", "missing", "missing", "missing"]
    outcomes = _rb(tmp_path / "c", {"1.md": GOOD, "2.md": GOOD}, allow_missing=0.5)
    assert [o.status for o in outcomes].count("missing") == 2
    with pytest.raises(SystemError_, match="allow_missing"):
        _rb(tmp_path / "d", {"1.md": GOOD}, allow_missing="lots")


def test_an_unmapped_file_next_to_a_complete_set_is_listed_not_fatal(tmp_path: Path) -> None:
    outcomes = _rb(tmp_path, {**{f"q{i}.md": GOOD for i in range(1, 5)}, "٠.md": GOOD, "notes.md": "x"})
    unmapped = {Path(o.path or "").name: o.reason for o in outcomes if o.status == "unmapped"}
    assert set(unmapped) == {"٠.md", "notes.md"} and "non-ASCII" in unmapped["٠.md"]


def test_the_unmapped_log_line_names_the_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 26 §8: the system stage's log line for an unmapped file omitted its name."""
    from reportbench import pipeline
    from reportbench.release.format import write_release

    release = get_benchmark("researcherbench").build_release(
        {"name": "demo", "kind": "demo", "source": "data/demo/researcherbench", "max_tasks": None}
    ) if Path("data/demo/researcherbench").is_dir() else None
    if release is None:
        pytest.skip("run from the repository root")
    rdir = tmp_path / "release"
    write_release(release, rdir)
    folder = _write(tmp_path / "f", {**{f"{t.task_id}.md": GOOD for t in release.tasks}, "stray.md": GOOD})
    params = {"benchmarks": {"researcherbench": {"systems": {"s": {"kind": "folder", "path": str(folder)}}}}}
    with caplog.at_level(logging.WARNING, logger="reportbench.pipeline"):
        pipeline.run_system(params, "researcherbench", "s", rdir, tmp_path / "out")
    assert any("stray.md" in r.getMessage() and "unmapped" in r.getMessage() for r in caplog.records)


# --------------------------------------------------------------------------------------- authors' layouts


def test_deer_task_folder_layout_is_detected_and_prefix_picks_a_system(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "data",
        {
            "csai/1/query.md": "q", "csai/1/core_criteria.md": "eg", "csai/1/mine_1.md": GOOD,
            "csai/7/query.md": "q", "csai/7/mine_7.md": GOOD,
            "history/1/query.md": "q", "history/1/mine_1.md": GOOD, "history/1/other_1.md": GOOD,
            "csai/temp/placeholder.md": "x",
        },
    )
    naming = get_benchmark("deer").task_naming
    ids = ["ai-1", "cs-7", "history-1"]
    found = discover_reports(root, ids, naming=naming, prefix="mine")
    assert found.layout == "task_folders"
    assert [(t, p.name) for t, p in found] == [("ai-1", "mine_1.md"), ("cs-7", "mine_7.md"), ("history-1", "mine_1.md")]
    assert not found.name_unmapped()  # query.md / core_criteria.md are never reports; other_1 is another system
    ambiguous = discover_reports(root, ids, naming=naming)
    assert "history-1" not in dict(ambiguous)
    assert any("set the folder system's prefix" in w for w in ambiguous.warnings)


def test_lrb_per_model_parent_becomes_one_system_per_subfolder(tmp_path: Path) -> None:
    parent = _write(tmp_path / "reports", {"gpt5/qid_a_report.md": GOOD, "o3 dr/qid_a_report.md": GOOD})
    spec = {"kind": "folder", "path": str(parent), "layout": "per_model"}
    expanded = expand_per_model({"lrb": spec, "other": {"kind": "command"}})
    assert sorted(expanded) == ["lrb__gpt5", "lrb__o3_dr", "other"]
    assert expanded["lrb__o3_dr"]["subfolder"] == "o3 dr" and expanded["lrb__o3_dr"]["parent_entry"] == "lrb"
    outcomes = run_system("lrb__o3_dr", {**expanded["lrb__o3_dr"], "benchmark": "liveresearchbench"},
                          _tasks(["a"]), tmp_path / "out")
    assert [(o.task_id, o.status) for o in outcomes] == [("a", "ok")]


def test_the_plan_fans_a_per_model_parent_out(tmp_path: Path) -> None:
    from reportbench.plan import build_plan

    parent = _write(tmp_path / "reports", {"m1/qid_a_report.md": GOOD, "m2/qid_a_report.md": GOOD})
    benchmarks = {"liveresearchbench": {"release": {"name": "demo"}, "systems": {
        "models": {"kind": "folder", "path": str(parent), "layout": "per_model"}}}}
    plan = build_plan(benchmarks, {})
    assert plan["benchmarks"]["liveresearchbench"]["systems"] == ["models__m1", "models__m2"]
    run = plan["runs"]["liveresearchbench.models__m2"]
    assert run["params"] == "benchmarks.liveresearchbench.systems.models" and run["path"].endswith("reports/m2")


@pytest.mark.parametrize(
    "payload",
    [
        {"174539434903306044-s15": {"answer": GOOD}, "2-s1": {"answer": GOOD}},  # compute_coverage.py --responses
        [{"corpusid_sectionid": "174539434903306044-s15", "answer": GOOD, "mode": "agentic"},
         {"corpusid_sectionid": "2-s1", "answer": GOOD}],  # the released per-system outputs
    ],
    ids=["answer-map", "released-outputs"],
)
def test_researchqa_answer_files_load(tmp_path: Path, payload: object) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    tasks = _tasks(["174539434903306044-s15", "2-s1"])
    outcomes = run_system("rqa", {"kind": "folder", "path": str(path), "benchmark": "researchqa"}, tasks,
                          tmp_path / "out")
    assert [o.status for o in outcomes] == ["ok", "ok"]
    reports = read_reports(tmp_path / "out")
    assert [r.task_id for r in reports] == ["174539434903306044-s15", "2-s1"] and reports[0].sources
    assert [Path(r["file"]).name for r in read_mapping(tmp_path / "out")][0].startswith("answers.json#")


def test_an_answer_file_with_an_unknown_id_and_a_missing_task_stops(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"1-s1": {"answer": GOOD}, "9-s9": {"answer": GOOD}}), encoding="utf-8")
    with pytest.raises(SystemError_, match=r"9-s9.*2-s1"):
        run_system("rqa", {"kind": "folder", "path": str(path), "benchmark": "researchqa"}, _tasks(["1-s1", "2-s1"]),
                   tmp_path / "out")
    assert not (tmp_path / "out" / "outcomes.jsonl").exists()


def test_the_viewer_shows_the_mapping_table(tmp_path: Path) -> None:
    from reportbench.site.samples import load_system, render_sample_page, render_system_page

    run_dir = tmp_path / "data" / "runs" / "researcherbench" / "demo" / "sys"
    folder = _write(tmp_path / "reports", {**{f"{i}.md": GOOD for i in range(1, 4)}, "4.md": "I cannot provide this.",
                                           "notes.md": "x"})
    run_system("sys", {"kind": "folder", "path": str(folder), "benchmark": "researcherbench"},
               _tasks([f"q{i}" for i in range(1, 5)]), run_dir)
    sd = load_system(tmp_path, "researcherbench", "demo", "sys")
    html = render_system_page(sd, [], {})
    assert "Files → tasks (5 files, 1 not mapped)" in html and "notes.md" in html and "number n = task q{n}" in html
    assert "rule: number n = task q{n}" in render_sample_page(sd, "q2")
    assert "<b>refusal</b>: q4" in html  # the stage's check.json: flagged reports


def test_a_per_task_rerun_after_a_crash_keeps_the_mapping_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a whole-batch crash each task is rerun alone; it is still mapped against every task, so the other
    tasks' files are not reported as unmapped and the mapping table stays complete."""
    from reportbench.systems import folder as folder_kind

    real = folder_kind.isolated_load

    def flaky(path: Path, **kw: object):  # noqa: ANN202
        if kw.get("task_id") == "q2":
            raise RuntimeError("adapter bug")
        return real(path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(folder_kind, "isolated_load", flaky)
    outcomes = _rb(tmp_path, {**{f"{i}.md": GOOD for i in range(1, 5)}, "notes.md": "x"})
    assert [o.status for o in outcomes if o.task_id] == ["ok", "parse_error", "ok", "ok"]
    assert [Path(o.path or "").name for o in outcomes if o.status == "unmapped"] == ["notes.md"]
    assert len(read_mapping(tmp_path / "out")) == 5


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("layout", "nested", "layout: 'nested' is not valid"), ("allow_missing", 2, "allow_missing: 2 is out of range"),
     ("shift_check", "maybe", "shift_check: 'maybe' is not valid")],
)
def test_folder_options_are_checked_when_the_config_is_composed(option: str, value: object, message: str) -> None:
    from reportbench.config import ConfigError
    from reportbench.validate import validate_system

    with pytest.raises(ConfigError, match=message):
        validate_system("benchmarks.deer.systems.s", {"kind": "folder", "path": "p", option: value})
    validate_system("benchmarks.deer.systems.s", {"kind": "folder", "path": "p", "allow_missing": True})


def test_deer_domain_folders_of_numbered_files(tmp_path: Path) -> None:
    """`<domain folder>/<n>.md` (the task-folder layout without the task inputs) maps the same way."""
    root = _write(tmp_path / "r", {"csai/2.md": GOOD, "csai/7.md": GOOD, "history/1.md": GOOD, "history/x.md": GOOD})
    found = discover_reports(root, ["ai-2", "cs-7", "history-1"], naming=get_benchmark("deer").task_naming)
    assert found.layout == "task_folders"
    assert [(t, f"{p.parent.name}/{p.name}") for t, p in found] == [
        ("ai-2", "csai/2.md"), ("cs-7", "csai/7.md"), ("history-1", "history/1.md")
    ]
    assert [Path(r.file).name for r in found.name_unmapped()] == ["x.md"]


def test_deer_numbered_flat_folder_stops_instead_of_guessing(tmp_path: Path) -> None:
    """The issue's DEER trap: 1.md, 2.md, 3.md were read as rows (2 of 3 on the wrong task, one dropped)."""
    folder = _write(tmp_path / "f", {"1.md": GOOD, "2.md": GOOD, "3.md": GOOD})
    with pytest.raises(SystemError_, match=r"3 file\(s\) map to no task: 1\.md .*ai-1, history-1, physics-1"):
        run_system("s", {"kind": "folder", "path": str(folder), "benchmark": "deer"},
                   _tasks(["ai-1", "history-1", "physics-1"]), tmp_path / "out")


def test_researcherbench_response_file_ids_follow_the_same_rule(tmp_path: Path) -> None:
    from reportbench.protocols.researcherbench import responses  # noqa: F401  (registers the kind)

    tasks = _tasks(["q1", "q2", "q3"])
    path = tmp_path / "System.json"
    path.write_text(json.dumps([{"id": i, "question": "", "response": GOOD} for i in (1, 2, 3)]), encoding="utf-8")
    run_system("sys", {"kind": "researcherbench_responses", "path": str(path)}, tasks, tmp_path / "ok")
    assert [(r["task_id"], r["rule"]) for r in read_mapping(tmp_path / "ok")][0] == ("q1", "id: number n = task q{n}")
    shifted = tmp_path / "Shifted.json"  # 0-based ids: 0 maps to no task and q3 has no answer
    shifted.write_text(json.dumps([{"id": i, "question": "", "response": GOOD} for i in (0, 1, 2)]), encoding="utf-8")
    with pytest.raises(SystemError_, match=r"Shifted\.json#0 .*q3"):
        run_system("sys", {"kind": "researcherbench_responses", "path": str(shifted)}, tasks, tmp_path / "bad")


def test_a_subset_release_reads_a_full_folder(tmp_path: Path) -> None:
    """A release of some tasks (max_tasks) with the full 1..65 folder: the other numbers are valid tasks of the
    benchmark outside this release (listed, not a mapping failure); 0 and 66 are never ResearcherBench ids."""
    outcomes = _rb(tmp_path, {f"{i}.md": GOOD for i in (1, 2, 3, 4, 5, 40)}, n=4)
    assert [o.status for o in outcomes if o.task_id] == ["ok"] * 4
    table = {Path(r["file"]).name: r["status"] for r in read_mapping(tmp_path / "out")}
    assert table["5.md"] == table["40.md"] == "outside_release"
    with pytest.raises(SystemError_, match=r"66\.md"):
        _rb(tmp_path / "b", {f"{i}.md": GOOD for i in (2, 3, 4, 66)}, n=4)
