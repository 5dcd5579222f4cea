"""Real-size runs (issue 36) for LiveResearchBench and the site's flagged tasks, by counts, not timings (the
timings: bench/scale.py --shapes liveresearchbench): `cross@` and `score@` derive what they need report by report
(partial_reuse), reuse the partials of unchanged systems, and look a task's judgments up instead of scanning every
judgment per task; the site indexes the shift check's verdicts once and parses no flagged report for a system page
when the records hold every flag's excerpt."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reportbench.config import composed_params

pytestmark = pytest.mark.integration

B = "liveresearchbench"


@pytest.fixture(scope="module")
def lrb_run(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from spine_helpers import run_benchmark

    params = composed_params([f"benchmarks=[deepscholar,{B}]"], conf_dir=repo_root / "conf", remembered=False)
    params["judge"]["runtime"]["progress"] = False
    return run_benchmark(params, B, tmp_path_factory.mktemp("lrb")), params


class _Counted(list):  # type: ignore[type-arg]
    """A list that counts the passes over it."""

    passes = 0

    def __iter__(self) -> Iterator[Any]:
        self.passes += 1
        return super().__iter__()


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _change_reports(run_dir: Path) -> None:
    """Every report of one system gets one more closing sentence (still valid Reports)."""
    from reportbench.systems import read_reports

    reports = read_reports(run_dir)
    with open(run_dir / "reports.jsonl", "w", encoding="utf-8") as f:
        for r in reports:
            f.write(r.model_copy(update={"body": r.body + "\n\nA revised closing sentence."}).model_dump_json() + "\n")


def test_lrb_cross_and_score_stream_reports_and_reuse_unchanged_systems(
    lrb_run: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No system's reports are read whole; a changed system's reports are the only ones parsed again; the bytes
    equal the fixture's own run (reuse off, `ctx.reports`) and a rebuild with every reuse off."""
    from reportbench import partial_reuse, pipeline
    from reportbench.reports import stored

    root, params = lrb_run
    work = tmp_path / "w"
    shutil.copytree(root, work, symlinks=True)
    monkeypatch.chdir(tmp_path)  # the partial cache lives under the working directory
    monkeypatch.delenv("REPORTBENCH_UNIT_REUSE", raising=False)
    whole: list[str] = []
    real_read = stored.read_stored_reports
    monkeypatch.setattr(stored, "read_stored_reports", lambda d: whole.append(Path(d).name) or real_read(d))
    parsed: list[str] = []
    real_iter = partial_reuse.iter_reports
    monkeypatch.setattr(partial_reuse, "iter_reports", lambda d: parsed.append(Path(d).name) or real_iter(d))
    names = sorted(params["plan"]["benchmarks"][B]["systems"])
    release, runs = work / "releases", work / "runs"

    def cross_and_score(tag: str) -> None:
        pipeline.cross_stage(params, B, release, runs, Path(f"c-{tag}"), reuse=True)
        pipeline.score_stage(params, B, release, runs, work / "judgments", Path(f"s-{tag}"), Path(f"m-{tag}"),
                             cross_dir=Path(f"c-{tag}"), reuse=True)

    cross_and_score("first")
    assert whole == []  # before: every system's reports parsed whole, in both stages
    assert sorted(set(parsed)) == names
    assert _tree(Path("c-first")) == _tree(root / "cross")
    for name in ("leaderboard.json", "systems.json", "extra.json"):
        assert (Path("m-first") / name).read_bytes() == (root / "metrics" / name).read_bytes(), name
    changed = "careful_analyst"
    _change_reports(runs / changed)
    for member in params["plan"]["benchmarks"][B]["members"]:
        pipeline.run_judge_stage(params, B, changed, member, release, runs / changed,
                                 work / "judgments" / changed / member,
                                 work / "metrics" / "usage" / f"{changed}.{member}.json", pages_dir=work / "pages")
    parsed.clear()
    whole.clear()  # the judge stage reads its system's reports (not these stages' business)
    cross_and_score("reused")
    assert set(parsed) == {changed} and whole == []  # the other systems' texts and flags come from the partial cache
    monkeypatch.setenv("REPORTBENCH_UNIT_REUSE", "0")
    parsed.clear()
    cross_and_score("full")
    assert sorted(set(parsed)) == names and whole == []
    for part in ("c", "s", "m"):
        assert _tree(Path(f"{part}-reused")) == _tree(Path(f"{part}-full")), part
    assert _tree(Path("c-first")) != _tree(Path("c-full"))  # the change reached the depth comparisons


def test_lrb_score_passes_over_each_judgment_list_a_bounded_number_of_times(
    lrb_run: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task's judgments and coverage items are looked up, not found by scanning the step's judgments (or the
    release's rubric table) once per task (N tasks × N rows): the passes do not grow with the tasks."""
    from reportbench import pipeline
    from reportbench.judges import runner
    from reportbench.release.format import Release

    root, params = lrb_run
    lists: list[Any] = []
    real = runner.read_judgment_records  # LiveResearchBench's score reads the records as columns

    class Counted(runner.JudgmentRecords):  # counts the passes over all its records
        passes = 0

        def __iter__(self) -> Any:
            self.passes += 1
            return super().__iter__()

    def counting(path: Path) -> Any:
        out = Counted(real(path).frame)
        lists.append(out)
        return out

    monkeypatch.setattr(runner, "read_judgment_records", counting)
    rubric_scans: list[str] = []  # Release.rubric scans every rubric item of the release
    real_rubric = Release.rubric
    monkeypatch.setattr(Release, "rubric", lambda self, t: rubric_scans.append(t) or real_rubric(self, t))
    pipeline.score_stage(params, B, root / "releases", root / "runs", root / "judgments", tmp_path / "s",
                         tmp_path / "m", cross_dir=root / "cross")
    n_tasks = len(pipeline.read_release(root / "releases", B).tasks)
    assert n_tasks >= 3 and lists and all(x for x in lists)
    assert max(x.passes for x in lists) <= 3 < n_tasks + 1  # before: one pass per task and criterion (≥ n_tasks + 1)
    assert len(rubric_scans) <= 1  # the presentation criteria; before: several scans per task and system
    assert (tmp_path / "m" / "leaderboard.json").read_bytes() == (root / "metrics" / "leaderboard.json").read_bytes()


def test_system_page_indexes_the_shift_verdicts_once_and_parses_no_flagged_report_it_has_records_for() -> None:
    """Most tasks flagged `mapping_suspect` (a release whose reports match other tasks' questions): the system page
    looked each task up by scanning every verdict (N²) and parsed each flagged task's report, though the
    records (the shift check's verdicts, check.json's evidence) already hold every excerpt it shows."""
    from reportbench.site import samples

    n = 40
    tids = [f"t{i:03d}" for i in range(n)]
    verdicts = _Counted({"task_id": t, "best_task": tids[(i + 1) % n], "best": 9.0, "own": 1.0}
                        for i, t in enumerate(tids))
    parsed: list[str] = []

    class Reports(dict):  # type: ignore[type-arg]
        def get(self, key: str, default: Any = None) -> Any:
            parsed.append(key)
            return super().get(key, default)

    sd = samples.SystemData(
        benchmark="b", release="r", system="s",
        reports=Reports({t: None for t in tids}),
        outcomes={t: {"status": "ok", "flags": ["mapping_suspect"] + (["refusal"] if t == "t000" else [])}
                  for t in tids},
        check={"shift": {"mismatched": verdicts}, "evidence": {"t000": {"refusal": "I cannot help"}}},
    )
    html = samples.render_system_page(sd, [], {})
    assert verdicts.passes <= 1  # before: one pass per flagged task (40)
    assert parsed == []  # before: each flagged task's report (40)
    assert html.count("matches task") == n and "I cannot help" in html
    # a flag the records leave without an excerpt still reads the report (re-detection, parser warnings)
    sd.outcomes["t001"]["flags"].append("no_references")
    samples.render_system_page(sd, [], {})
    assert parsed == ["t001"]


def test_fetch_stage_collects_urls_report_by_report(
    lrb_run: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fetch stage read every system's reports whole before collecting their URLs (~1 GB at 1,000 tasks × 3
    systems): it streams them, one parsed report at a time, and writes the same snapshot table."""
    import reportbench.systems as systems_mod
    from reportbench import partial_reuse, pipeline

    root, params = lrb_run
    whole: list[str] = []
    real_read = systems_mod.read_reports
    monkeypatch.setattr(systems_mod, "read_reports", lambda d: whole.append(Path(d).name) or real_read(d))
    streamed: list[str] = []
    real_iter = partial_reuse.iter_reports
    monkeypatch.setattr(partial_reuse, "iter_reports", lambda d: streamed.append(Path(d).name) or real_iter(d))
    pipeline.fetch_stage(params, B, root / "runs", root / "releases", tmp_path / "pages.parquet")
    assert whole == []  # before: every system's reports, all held at once
    assert sorted(streamed) == sorted(params["plan"]["benchmarks"][B]["systems"])
    assert (tmp_path / "pages.parquet").read_bytes() == (root / "pages" / "pages.parquet").read_bytes()


def test_lrb_depth_judges_again_only_the_pairs_of_a_changed_system(
    lrb_run: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cross@` judged every system's depth pairs against the reference on every run: a change to one evaluated
    system's reports judges only its pairs again (the others' rows come from the partial cache), a change to the
    reference judges every pair again, and the tables equal a rebuild with every reuse off."""
    from reportbench import pipeline
    from reportbench.protocols.liveresearchbench import benchmark as lrb

    root, params = lrb_run
    work = tmp_path / "w"
    shutil.copytree(root, work, symlinks=True)
    monkeypatch.chdir(tmp_path)  # the partial cache lives under the working directory
    monkeypatch.delenv("REPORTBENCH_UNIT_REUSE", raising=False)
    judged: list[str] = []  # the system of every depth item sent to a judge
    real_run = lrb.run_judgments_sync

    def counting(judge: Any, items: Any, *a: Any, **kw: Any) -> Any:
        items = list(items)
        judged.extend(meta["system"] for _, _, meta in items)
        return real_run(judge, items, *a, **kw)

    monkeypatch.setattr(lrb, "run_judgments_sync", counting)
    release, runs = work / "releases", work / "runs"
    ref = params["benchmarks"][B]["judging"]["depth"]["reference"]
    evaluated = sorted(s for s in params["plan"]["benchmarks"][B]["systems"] if s != ref)

    def cross(tag: str) -> dict[str, bytes]:
        judged.clear()
        pipeline.cross_stage(params, B, release, runs, Path(f"c-{tag}"), reuse=True)
        return _tree(Path(f"c-{tag}"))

    first = cross("first")
    assert first == _tree(root / "cross")
    assert sorted(set(judged)) == evaluated
    pairs = {s: judged.count(s) for s in evaluated}  # per system: its tasks with both reports × orders × members
    assert cross("again") == first and judged == []  # before: every pair of every system, each run
    changed = evaluated[0]
    _change_reports(runs / changed)
    reused = cross("reused")
    assert judged == [changed] * pairs[changed]  # before: the pairs of every evaluated system
    monkeypatch.setenv("REPORTBENCH_UNIT_REUSE", "0")
    assert reused == cross("full") != first
    monkeypatch.delenv("REPORTBENCH_UNIT_REUSE")
    _change_reports(runs / ref)
    cross("ref-changed")
    assert {s: judged.count(s) for s in evaluated} == pairs


@pytest.fixture(scope="module")
def lrb_site_root(lrb_run: tuple[Path, dict[str, Any]], repo_root: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> Path:
    """The fixture's run in the layout the site reads (data/<kind>/<b>/<R>, metrics/<b>/<R>), by symlinks."""
    root, params = lrb_run
    rel = params["plan"]["benchmarks"][B]["release"]
    site_root = tmp_path_factory.mktemp("lrb-site")
    for kind, src in (("releases", "releases"), ("runs", "runs"), ("judgments", "judgments"), ("pages", "pages"),
                      ("scores", "scores"), ("cross", "cross")):
        (site_root / "data" / kind / B).mkdir(parents=True)
        (site_root / "data" / kind / B / rel).symlink_to(root / src)
    (site_root / "data" / "demo").symlink_to(repo_root / "data" / "demo")
    (site_root / "metrics" / B).mkdir(parents=True)
    (site_root / "metrics" / B / rel).symlink_to(root / "metrics")
    (site_root / "prompts").symlink_to(repo_root / "prompts")
    return site_root


def test_lrb_site_replans_messages_and_claims_only_for_the_pages_it_writes(
    lrb_run: tuple[Path, dict[str, Any]], lrb_site_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LiveResearchBench's judge items are task-local: the site re-planned every report's items (claims extracted
    from every report of the run, every report parsed, per member) to render the messages of the pages it writes,
    and built every task's claim ledger. Now only the pages' tasks are re-planned and get a ledger, and their
    messages equal those of a re-plan over every task."""
    from reportbench.protocols.liveresearchbench import benchmark as lrb
    from reportbench.reports import stored
    from reportbench.site import samples
    from reportbench.site.build import build_benchmark_site

    _, params = lrb_run
    root = lrb_site_root
    entry = params["plan"]["benchmarks"][B]
    whole: list[str] = []
    real_read = stored.read_stored_reports
    monkeypatch.setattr(stored, "read_stored_reports", lambda d: whole.append(Path(d).name) or real_read(d))
    extracted: list[str] = []
    real_extract = lrb.extract_claims
    monkeypatch.setattr(lrb, "extract_claims", lambda r: extracted.append(r.task_id) or real_extract(r))
    build_benchmark_site(params, B, root, tmp_path / "site", max_samples=1)
    assert whole == []  # before: every report of the run, once per (system, member)
    first = {s: samples.load_system(root, B, entry["release"], s, entry["members"]).task_ids[0]
             for s in entry["systems"]}
    n_tasks = len(samples.load_system(root, B, entry["release"], entry["systems"][0]).task_ids)
    assert n_tasks > 1
    assert extracted and set(extracted) <= set(first.values())  # before: every task's report
    assert len(extracted) <= len(entry["systems"]) * len(entry["members"])
    for s, tid in first.items():
        some = samples.load_system(root, B, entry["release"], s, entry["members"], ledger_tasks=1)
        assert set(some.ledger.claims) <= {tid}  # before: every task's claims
        every = samples.load_system(root, B, entry["release"], s, entry["members"])
        assert set(some.ledger.claims) == set(every.ledger.claims) & {tid}
        assert all(some.ledger.claims[t] == every.ledger.claims[t] for t in some.ledger.claims)
        samples.attach_messages(some, params, root, tasks=[tid])
        samples.attach_messages(every, params, root)  # every task's items planned over every report
        keys = {(str(r["_member"]), str(r["_step"]), str(r.get("item_id"))) for r in every.judgments.get(tid, [])}
        assert some.messages and set(some.messages) <= keys
        assert some.messages == {k: v for k, v in every.messages.items() if k in keys}


def test_lrb_coverage_items_read_the_rubric_once_per_release(lrb_run: tuple[Path, dict[str, Any]]) -> None:
    """`Release.rubric` scanned every rubric row of the release per call (N tasks × N·~10 rows in the judge stage,
    the site and the viewer); it reads an index built once per release and gives the same items."""
    from reportbench import pipeline
    from reportbench.protocols.liveresearchbench import benchmark as lrb

    root, params = lrb_run
    system = params["plan"]["benchmarks"][B]["systems"][0]
    member = params["plan"]["benchmarks"][B]["members"][0]
    ctx = pipeline.judge_context(params, B, system, member, root / "releases", root / "runs" / system, root / "pages")
    release = ctx.release
    rows = _Iterations(release.extra["rubric_items"])
    release.extra["rubric_items"] = rows
    release.__dict__.pop("_rubric_by_task", None)  # the index is built from the counted rows
    items = lrb.coverage_items_for(ctx)
    assert len(ctx.reports) > 1 and items
    assert rows.iterations == 1  # before: one scan of the rubric table per report

    def scanned(task_id: str) -> list[Any]:  # what `rubric` gave before: every row looked at
        picked = [r for r in list.__iter__(rows) if r.task_id in (task_id, "*")]
        return sorted(picked, key=lambda r: (r.task_id == "*", r.index, r.item_id))

    for task in release.tasks[:50]:
        assert release.rubric(task.task_id) == scanned(task.task_id)
    assert release.rubric("*") == scanned("*")


class _Iterations(list):  # type: ignore[type-arg]  # a list that counts the scans over it
    iterations = 0

    def __iter__(self) -> Any:
        self.iterations += 1
        return super().__iter__()


class _Tracked(list):  # type: ignore[type-arg]  # a list that can be weakly referenced (alive or not)
    __hash__ = object.__hash__  # type: ignore[assignment]


def test_lrb_score_holds_one_systems_judgments_at_a_time_and_reads_each_table_once(
    lrb_run: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`score@` read every system's judgment records and derived tables before scoring (~100 MB a system at 1,000
    tasks, ~1.5 GB at 5,000 × 3): it reads a system's when the protocol asks for them and drops the previous
    system's, each table read once, and writes the same metrics."""
    import gc
    import weakref

    from reportbench import pipeline
    from reportbench.judges import runner

    root, params = lrb_run
    alive: list[tuple[str, Any]] = []  # (system, weak reference to a table it read)
    reads: list[Path] = []
    held_at_read: list[int] = []  # other systems' tables alive when a system's table is read
    real = runner.read_judgment_records  # LiveResearchBench's score reads the records as columns

    def tracking(path: Path) -> Any:
        system = Path(path).parent.parent.name
        gc.collect()
        held_at_read.append(sum(1 for s, ref in alive if s != system and ref() is not None))
        reads.append(Path(path))
        out = real(path)
        alive.append((system, weakref.ref(out)))
        return out

    monkeypatch.setattr(runner, "read_judgment_records", tracking)
    pipeline.score_stage(params, B, root / "releases", root / "runs", root / "judgments", tmp_path / "s",
                         tmp_path / "m", cross_dir=root / "cross")
    n_systems = len(params["plan"]["benchmarks"][B]["systems"])
    assert len({p.parent.parent.name for p in reads}) == n_systems
    assert len(reads) == len(set(reads))  # each table read once
    assert max(held_at_read) == 0  # before: every system's tables were alive when the next one's were read
    for name in ("leaderboard.json", "systems.json", "extra.json"):
        assert (tmp_path / "m" / name).read_bytes() == (root / "metrics" / name).read_bytes(), name


def test_lrb_offline_depth_judge_counts_each_report_once(
    lrb_run: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offline depth judge counted a report's dimensions for every pair it is in (the reference's: once per
    system, order and member) and split it into sentences twice each time: each distinct report is counted once,
    with the same depth table."""
    from reportbench import pipeline
    from reportbench.protocols.liveresearchbench import tasks

    root, params = lrb_run
    monkeypatch.setenv("REPORTBENCH_UNIT_REUSE", "0")
    monkeypatch.setattr(tasks, "_DEPTH_MEMO", {}, raising=False)
    split: list[str] = []
    real = tasks._sentences
    monkeypatch.setattr(tasks, "_sentences", lambda text: split.append(text) or real(text))
    pipeline.cross_stage(params, B, root / "releases", root / "runs", tmp_path / "c")
    assert split and len(split) == len(set(split))  # before: 2 splits per report per pair it is in
    assert _tree(tmp_path / "c") == _tree(root / "cross")


def test_lrb_site_holds_one_release(
    lrb_run: tuple[Path, dict[str, Any]], lrb_site_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pages' release and the one the messages' re-rendering reads (judge_context) are one object: the site
    held two copies (~15 KB a task each at LiveResearchBench's rubric sizes, issue 36)."""
    from reportbench import pipeline
    from reportbench.site import build

    _, params = lrb_run
    seen: set[int] = set()
    real_context, real_page = pipeline.judge_context, build.render_sample_page

    def context(*args: Any, **kwargs: Any) -> Any:
        ctx = real_context(*args, **kwargs)
        seen.add(id(ctx.release))
        return ctx

    def page(*args: Any, **kwargs: Any) -> str:
        seen.add(id(kwargs["release"]))
        return real_page(*args, **kwargs)

    monkeypatch.setattr(pipeline, "judge_context", context)
    monkeypatch.setattr(build, "render_sample_page", page)
    build.build_benchmark_site(params, B, lrb_site_root, tmp_path / "site", max_samples=1)
    assert len(seen) == 1


def test_lrb_judge_unit_holds_no_report_while_it_judges_and_writes_the_same_records(
    lrb_run: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judge unit held every report's fields for all its steps (~70 KB a report: ~350 MB at 5,000 tasks, the
    largest part of `judge@`'s peak, issue 36); LiveResearchBench's steps only pass over the reports, so the unit
    reads them per pass (pipeline.StreamedReports). Counted: the stored reports alive while each step is judged
    (before: every report of the run, at every step), and the records are byte for byte those of the run."""
    import gc

    from reportbench import pipeline
    from reportbench.protocols import JudgeItem
    from reportbench.protocols.liveresearchbench import benchmark as lrb
    from reportbench.reports.stored import StoredReport, read_stored_reports

    root, params = lrb_run
    system = params["plan"]["benchmarks"][B]["systems"][0]
    member = params["plan"]["benchmarks"][B]["members"][0]
    n_reports = len(read_stored_reports(root / "runs" / system))
    alive: list[int] = []
    items_alive: list[int] = []  # JudgeItems alive as each report's item is built
    judge = pipeline._judge
    fields = lrb._report_fields

    def counting(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive.append(sum(1 for o in gc.get_objects() if type(o) is StoredReport))
        return judge(*args, **kwargs)

    def counting_items(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        items_alive.append(sum(1 for o in gc.get_objects() if type(o) is JudgeItem))
        return fields(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_judge", counting)
    monkeypatch.setattr(lrb, "_report_fields", counting_items)
    out = tmp_path / "judgments"
    pipeline.run_judge_stage(params, B, system, member, root / "releases", root / "runs" / system, out,
                             tmp_path / "usage.json", pages_dir=root / "pages")  # fmt: skip
    assert n_reports > 1 and len(alive) == 6  # the six judge steps (claims is computed)
    assert max(alive) == 0, f"stored reports alive while judging: {alive} (of {n_reports})"
    # at most this step's items built so far (before: the previous step's too, until this step's were built)
    assert items_alive and max(items_alive) < n_reports, items_alive
    before = _tree(root / "judgments" / system / member)
    assert before and _tree(out) == before


def test_streamed_reports_pass_over_the_file_in_order(lrb_run: tuple[Path, dict[str, Any]]) -> None:
    from reportbench.pipeline import StreamedReports
    from reportbench.reports.stored import read_stored_reports

    root, params = lrb_run
    run = root / "runs" / params["plan"]["benchmarks"][B]["systems"][0]
    streamed = StreamedReports(run)
    assert [r.report_id for r in streamed] == [r.report_id for r in read_stored_reports(run)]
    assert list(streamed) == read_stored_reports(run) and streamed.passes == 2 and len(streamed) > 1


def test_lrb_score_builds_a_tasks_judgments_only_while_it_scores_it(
    lrb_run: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`score@` held one system's judgment records as validated pydantic objects (~36 KB a task: ~540 MB at
    5,000 tasks × 3, issue 36). It keeps them as columns (judges.runner.JudgmentRecords) and builds a task's
    Judgments when it scores that task. Counted: the Judgments alive when each system's citation accuracy is
    scored (before: every record of the system's report-level steps), and the metrics byte for byte the run's."""
    import gc

    from reportbench import pipeline
    from reportbench.judges.base import Judgment
    from reportbench.judges.runner import read_judgments
    from reportbench.protocols.liveresearchbench import benchmark as lrb

    root, params = lrb_run
    system = params["plan"]["benchmarks"][B]["systems"][0]
    member = params["plan"]["benchmarks"][B]["members"][0]
    n_records = len(read_judgments(root / "judgments" / system / member / "presentation.parquet"))
    alive: list[int] = []
    real = lrb._accuracy_rows

    def counting(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive.append(sum(1 for o in gc.get_objects() if type(o) is Judgment))
        return real(*args, **kwargs)

    monkeypatch.setattr(lrb, "_accuracy_rows", counting)
    pipeline.score_stage(params, B, root / "releases", root / "runs", root / "judgments", tmp_path / "s",
                         tmp_path / "m", cross_dir=root / "cross")  # fmt: skip
    assert n_records > 1 and len(alive) == len(params["plan"]["benchmarks"][B]["systems"])
    # at most the last task's record of the step scored last (before: every record of the system's steps)
    assert max(alive) <= 1, f"Judgments alive while scoring: {alive} ({n_records} presentation records a system)"
    for name in ("leaderboard.json", "systems.json", "extra.json"):
        assert (tmp_path / "m" / name).read_bytes() == (root / "metrics" / name).read_bytes(), name
    assert _tree(tmp_path / "s") == _tree(root / "scores")


def test_judgment_records_give_the_judgments_read_judgments_gives(lrb_run: tuple[Path, dict[str, Any]]) -> None:
    from reportbench.judges.runner import read_judgment_records, read_judgments

    root, params = lrb_run
    system = params["plan"]["benchmarks"][B]["systems"][0]
    member = params["plan"]["benchmarks"][B]["members"][0]
    for path in sorted((root / "judgments" / system / member).glob("*.parquet")):
        records, full = read_judgment_records(path), read_judgments(path)
        assert list(records) == full and len(records) == len(full), path.name
        assert records.n_ok() == sum(1 for j in full if j.ok)
        if full:
            assert records[0] == full[0] and records[-1] == full[-1] and records[1:3] == full[1:3]
            by = records.rows_by("task_id")
            for tid, rows in by.items():
                assert records.at(rows) == [j for j in full if j.input_ids.get("task_id") == tid]
