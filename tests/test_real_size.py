"""Real-size runs (issue 36), by counts, not timings (the timings: bench/scale.py): the site writes judge messages
only for the pages it writes and names how to get every other task; cross and score hold one system's parsed
reports at a time. One small pipeline (ResearchQA's demo, the real stage functions, offline judge) built once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def rqa_pipeline(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    from reportbench import pipeline
    from reportbench.config import composed_params

    params = composed_params(["benchmarks=[researchqa]"], conf_dir=repo_root / "conf", remembered=False)
    work = tmp_path_factory.mktemp("rqa")
    (work / "data").mkdir()
    (work / "data" / "demo").symlink_to(repo_root / "data" / "demo")
    (work / "prompts").symlink_to(repo_root / "prompts")
    old = Path.cwd()
    os.chdir(work)
    try:
        b = "researchqa"
        rel = params["plan"]["benchmarks"][b]["release"]
        release, runs = Path(f"data/releases/{b}/{rel}"), Path(f"data/runs/{b}/{rel}")
        pipeline.build_release(params, b, release)
        for s in params["plan"]["benchmarks"][b]["systems"]:
            pipeline.run_system(params, b, s, release, runs / s)
        pipeline.run_benchmark_judge_stage(params, b, release, runs, Path(f"data/judgments/{b}/{rel}"),
                                           Path(f"metrics/{b}/{rel}/usage"))
        pipeline.cross_stage(params, b, release, runs, Path(f"data/cross/{b}/{rel}"))
        pipeline.score_stage(params, b, release, runs, Path(f"data/judgments/{b}/{rel}"),
                             Path(f"data/scores/{b}/{rel}"), Path(f"metrics/{b}/{rel}"),
                             cross_dir=Path(f"data/cross/{b}/{rel}"))
        yield work, params
    finally:
        os.chdir(old)


def test_judge_messages_are_rendered_only_for_pages_written(
    rqa_pipeline: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.site import messages
    from reportbench.site.build import build_benchmark_site
    from reportbench.site.samples import load_system

    work, params = rqa_pipeline
    calls: list[Any] = []
    real = messages._one

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[3])  # the stored record
        return real(*args, **kwargs)

    monkeypatch.setattr(messages, "_one", counting)
    build_benchmark_site(params, "researchqa", work, tmp_path, max_samples=1)
    entry = params["plan"]["benchmarks"]["researchqa"]
    allowed = 0
    every = 0
    for s in entry["systems"]:
        sd = load_system(work, "researchqa", entry["release"], s, entry["members"])
        first = sd.task_ids[0]
        allowed += len(sd.judgments.get(first, [])) + len(sd.unattributed)
        every += sum(len(v) for v in sd.judgments.values())
    assert every > allowed > 0
    assert 0 < len(calls) <= allowed  # before: every judgment of every task was re-rendered


def test_every_task_without_a_page_names_the_command_that_renders_it(
    rqa_pipeline: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    from reportbench.site.build import build_benchmark_site
    from reportbench.site.html import esc
    from reportbench.site.samples import load_system, view_command

    work, params = rqa_pipeline
    entry = params["plan"]["benchmarks"]["researchqa"]
    build_benchmark_site(params, "researchqa", work, tmp_path, max_samples=1)
    for s in entry["systems"]:
        sd = load_system(work, "researchqa", entry["release"], s, entry["members"])
        sdir = tmp_path / "benchmarks" / "researchqa" / entry["release"] / "samples" / s
        page = (sdir / "index.html").read_text(encoding="utf-8")
        tids = sd.task_ids
        assert len(tids) > 1
        assert f"Sample pages written for 1 of {len(tids)} tasks" in page
        for tid in tids[1:]:  # listed, and how to get its page
            assert esc(view_command(sd, tid)) in page
            assert view_command(sd, tid).startswith(f"reportbench view -b researchqa -s {s} -t ")
        assert len(list(sdir.glob("*.html"))) == 2  # the system page and one sample page


class _Reports(list):  # type: ignore[type-arg]  # a list that can be weakly referenced (counted while alive)
    __hash__ = object.__hash__  # type: ignore[assignment]


def test_cross_and_score_hold_no_systems_reports_whole(
    rqa_pipeline: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parsed reports are ~200 KB each: a stage holding every system's at once grows with systems × tasks. ResearchQA's
    cross stage derives the answers it needs report by report; its score stage parses none."""
    import weakref

    from reportbench import partial_reuse, pipeline
    from reportbench.reports import stored

    work, params = rqa_pipeline
    real = stored.read_stored_reports  # what SystemReports reads a run folder with
    alive: weakref.WeakSet[_Reports] = weakref.WeakSet()
    resident_at_read: list[int] = []

    def counting(run_dir: Path) -> list[Any]:
        resident_at_read.append(len(alive))  # other systems' report lists still in memory when this one is read
        out = _Reports(real(run_dir))
        alive.add(out)
        return out

    monkeypatch.setattr(stored, "read_stored_reports", counting)
    streamed: list[str] = []  # ResearchQA's cross and score derive what they need report by report (partial_reuse)
    real_iter = partial_reuse.iter_reports

    def streaming(run_dir: Path) -> Any:
        streamed.append(Path(run_dir).name)
        return real_iter(run_dir)

    monkeypatch.setattr(partial_reuse, "iter_reports", streaming)
    b = "researchqa"
    rel = params["plan"]["benchmarks"][b]["release"]
    names = sorted(params["plan"]["benchmarks"][b]["systems"])
    release, runs = work / f"data/releases/{b}/{rel}", work / f"data/runs/{b}/{rel}"
    pipeline.cross_stage(params, b, release, runs, tmp_path / "cross")
    assert resident_at_read == [] and sorted(set(streamed)) == names  # no system's reports held whole
    streamed.clear()
    pipeline.score_stage(params, b, release, runs, work / f"data/judgments/{b}/{rel}", tmp_path / "scores",
                         tmp_path / "metrics", cross_dir=tmp_path / "cross")
    assert resident_at_read == [] and streamed == []  # its tasks come from the reports' line heads
    # the same results as the pipeline's own run
    assert (tmp_path / "metrics" / "leaderboard.json").read_bytes() == (
        work / f"metrics/{b}/{rel}/leaderboard.json"
    ).read_bytes()


def test_judge_stage_judges_only_the_units_whose_inputs_changed(
    rqa_pipeline: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One system's run changed: `judge@` judges that system's units only; the others' outputs come back byte
    for byte (unit_reuse), and the result equals a full rejudge."""
    import shutil

    from reportbench import pipeline

    work, params = rqa_pipeline
    copy = tmp_path / "repo"
    shutil.copytree(work, copy, symlinks=True)
    monkeypatch.chdir(copy)
    b = "researchqa"
    rel = params["plan"]["benchmarks"][b]["release"]
    systems = list(params["plan"]["benchmarks"][b]["systems"])
    release, runs = Path(f"data/releases/{b}/{rel}"), Path(f"data/runs/{b}/{rel}")
    judged: list[str] = []
    real = pipeline.run_judge_stage

    def counting(params_: Any, benchmark: str, system: str, *args: Any, **kwargs: Any) -> Any:
        judged.append(system)
        return real(params_, benchmark, system, *args, **kwargs)

    monkeypatch.setattr(pipeline, "run_judge_stage", counting)

    def judge(out: str) -> None:
        pipeline.run_benchmark_judge_stage(params, b, release, runs, Path(out), Path(f"{out}-usage"))

    judge("j1")  # nothing changed since the fixture's run
    assert judged == []
    assert _tree(Path("j1")) == _tree(Path(f"data/judgments/{b}/{rel}"))
    changed = systems[0]
    with open(runs / changed / "reports.jsonl", "a", encoding="utf-8") as f:
        f.write("\n")  # a change to the run folder (a blank line: the same reports)
    judge("j2")
    assert judged == [changed]
    monkeypatch.setenv("REPORTBENCH_UNIT_REUSE", "0")
    judge("j3")  # the full rejudge: every unit
    assert sorted(judged[1:]) == sorted(systems)
    assert _tree(Path("j2")) == _tree(Path("j3")) and _tree(Path("j2-usage")) == _tree(Path("j3-usage"))


def test_the_judge_stage_keeps_what_it_holds_out_of_the_gc_passes_and_hands_it_back(
    rqa_copy: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a unit is judged, the objects held since before (imports, release, its reports and items) are frozen
    (gc.freeze: no collector pass walks them again); after the stage, nothing stays frozen."""
    import gc

    from reportbench import pipeline

    _, params = rqa_copy
    monkeypatch.setenv("REPORTBENCH_UNIT_REUSE", "0")  # every unit judged
    b = "researchqa"
    rel = params["plan"]["benchmarks"][b]["release"]
    frozen: list[int] = []
    real = pipeline._judge

    def spying(*args: Any, **kwargs: Any) -> Any:
        frozen.append(gc.get_freeze_count())
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_judge", spying)
    assert gc.get_freeze_count() == 0
    pipeline.run_benchmark_judge_stage(params, b, Path(f"data/releases/{b}/{rel}"), Path(f"data/runs/{b}/{rel}"),
                                       Path("j"), Path("j-usage"))  # fmt: skip
    assert len(frozen) == len(pipeline.judge_units(params, b)) and min(frozen) > 1000
    assert gc.get_freeze_count() == 0
    assert _tree(Path("j")) == _tree(Path(f"data/judgments/{b}/{rel}"))  # the same records as the fixture's stage


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _change_reports(run_dir: Path) -> None:
    """A real change to one system's run: its last report is gone and every other report's body gets one more
    sentence (still valid Reports)."""
    from reportbench.systems import read_reports

    reports = read_reports(run_dir)
    with open(run_dir / "reports.jsonl", "w", encoding="utf-8") as f:
        for r in reports[:-1]:
            f.write(r.model_copy(update={"body": r.body + "\n\nA revised closing sentence."}).model_dump_json() + "\n")


@pytest.fixture
def rqa_copy(rqa_pipeline: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A private copy of the small pipeline's workspace (the test changes a system's run), as the working dir."""
    import shutil

    work, params = rqa_pipeline
    copy = tmp_path / "repo"
    shutil.copytree(work, copy, symlinks=True)
    monkeypatch.chdir(copy)
    monkeypatch.delenv("REPORTBENCH_UNIT_REUSE", raising=False)
    return copy, params


def test_cross_and_score_reuse_the_partials_of_unchanged_systems(
    rqa_copy: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One system's reports changed: `cross@` and `score@` parse that system's reports only (the others' tasks and
    answers come from the partial cache), and write the same bytes as a rebuild with every reuse off."""
    from reportbench import partial_reuse, pipeline

    _, params = rqa_copy
    b = "researchqa"
    rel = params["plan"]["benchmarks"][b]["release"]
    names = list(params["plan"]["benchmarks"][b]["systems"])
    release, runs = Path(f"data/releases/{b}/{rel}"), Path(f"data/runs/{b}/{rel}")
    parsed: list[str] = []
    real = partial_reuse.iter_reports

    def counting(run_dir: Path) -> Any:
        parsed.append(Path(run_dir).name)
        return real(run_dir)

    monkeypatch.setattr(partial_reuse, "iter_reports", counting)

    def cross_and_score(tag: str) -> None:
        pipeline.cross_stage(params, b, release, runs, Path(f"c-{tag}"), reuse=True)
        pipeline.score_stage(params, b, release, runs, Path(f"data/judgments/{b}/{rel}"), Path(f"s-{tag}"),
                             Path(f"m-{tag}"), cross_dir=Path(f"c-{tag}"), reuse=True)

    cross_and_score("first")  # fills the partial cache
    assert sorted(set(parsed)) == sorted(names)
    parsed.clear()
    changed = names[0]
    _change_reports(runs / changed)
    pipeline.run_benchmark_judge_stage(params, b, release, runs, Path(f"data/judgments/{b}/{rel}"),
                                       Path(f"metrics/{b}/{rel}/usage"))
    parsed.clear()
    cross_and_score("reused")
    assert set(parsed) == {changed}  # before: every system's reports, in both stages
    monkeypatch.setenv("REPORTBENCH_UNIT_REUSE", "0")
    parsed.clear()
    cross_and_score("full")
    assert sorted(set(parsed)) == sorted(names)
    for part in ("c", "s", "m"):
        assert _tree(Path(f"{part}-reused")) == _tree(Path(f"{part}-full")), part
    assert _tree(Path("c-first")) != _tree(Path("c-full"))  # the change reached the battles' answers


def test_a_partial_that_fails_is_not_stored(tmp_path: Path) -> None:
    from reportbench import partial_reuse

    def boom() -> Any:
        raise RuntimeError("judge down")

    with pytest.raises(RuntimeError):
        partial_reuse.load_or_compute("b", "s", "answers", "k1", boom, cache_dir=tmp_path)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))
    value, reused = partial_reuse.load_or_compute("b", "s", "answers", "k1", lambda: {"t": "x"}, cache_dir=tmp_path)
    assert (value, reused) == ({"t": "x"}, False)
    value, reused = partial_reuse.load_or_compute("b", "s", "answers", "k1", boom, cache_dir=tmp_path)
    assert (value, reused) == ({"t": "x"}, True)
    partial_reuse.load_or_compute("b", "s", "answers", "k2", lambda: {"t": "y"}, cache_dir=tmp_path)
    assert [p.name for p in tmp_path.rglob("*.json")] == ["k2.json"]  # one version per (system, name)


def test_site_reuses_the_pages_of_unchanged_systems_and_lists_tasks_without_parsing(
    rqa_copy: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One system's reports changed: the site renders that system's sample pages (and pages whose cross-system
    rows changed), copies every other page from the page cache, and writes the same bytes as a full rebuild.
    A report is parsed only for a page rendered, never to list a system's tasks."""
    from reportbench.site import build, samples

    root, params = rqa_copy
    b = "researchqa"
    entry = params["plan"]["benchmarks"][b]
    names = list(entry["systems"])
    rendered: list[tuple[str, str]] = []
    real_render = samples.render_sample_page

    def counting(sd: Any, task_id: str, **kwargs: Any) -> str:
        rendered.append((sd.system, task_id))
        return real_render(sd, task_id, **kwargs)

    monkeypatch.setattr(build, "render_sample_page", counting)
    build.build_site(params, root, root / "site-first", reuse=True)
    n_pages = len(rendered)
    assert n_pages >= 2 * len(names)
    changed = names[0]
    _change_reports(root / f"data/runs/{b}/{entry['release']}" / changed)
    _rerun_downstream(params, b, entry["release"])  # what `dvc repro` reruns before the site
    rendered.clear()
    counts = build.build_site(params, root, root / "site-reused", reuse=True)
    assert rendered and {s for s, _ in rendered} <= set(names)
    # besides the changed system's pages: a page whose battles against it changed, and the "*" page of every
    # system (its rating, fitted over all systems' battles)
    odd = [(s, t) for s, t in rendered
           if s != changed and t != "*" and not _in_battle_with(root, b, entry["release"], s, t, changed)]
    assert odd == []
    assert counts["reused_pages"] == n_pages - len(rendered) > 0
    # listing the tasks parses no report: only the pages rendered read theirs
    parsed: list[str] = []
    real_get = samples.LazyReports.__getitem__

    def parse_counting(self: Any, task_id: str) -> Any:
        parsed.append(task_id)
        return real_get(self, task_id)

    monkeypatch.setattr(samples.LazyReports, "__getitem__", parse_counting)
    sd = samples.load_system(root, b, entry["release"], changed, entry["members"])
    assert sd.task_ids and parsed == []
    monkeypatch.setenv("REPORTBENCH_UNIT_REUSE", "0")
    build.build_site(params, root, root / "site-full", reuse=True)
    assert _tree(root / "site-reused") == _tree(root / "site-full")
    assert _tree(root / "site-first") != _tree(root / "site-full")


def _rerun_downstream(params: dict[str, Any], b: str, rel: str) -> None:
    from reportbench import pipeline

    release, runs = Path(f"data/releases/{b}/{rel}"), Path(f"data/runs/{b}/{rel}")
    pipeline.run_benchmark_judge_stage(params, b, release, runs, Path(f"data/judgments/{b}/{rel}"),
                                       Path(f"metrics/{b}/{rel}/usage"))
    pipeline.cross_stage(params, b, release, runs, Path(f"data/cross/{b}/{rel}"), reuse=True)
    pipeline.score_stage(params, b, release, runs, Path(f"data/judgments/{b}/{rel}"), Path(f"data/scores/{b}/{rel}"),
                         Path(f"metrics/{b}/{rel}"), cross_dir=Path(f"data/cross/{b}/{rel}"), reuse=True)


def _in_battle_with(root: Path, b: str, release: str, system: str, task_id: str, other: str) -> bool:
    import polars as pl

    path = root / f"data/cross/{b}/{release}/battles.parquet"
    if not path.is_file():
        return False
    df = pl.read_parquet(path).filter(pl.col("task_id") == task_id)
    pairs = set(zip(df["system_a"].to_list(), df["system_b"].to_list(), strict=True))
    return (system, other) in pairs or (other, system) in pairs


def test_site_parses_only_the_reports_of_the_pages_it_writes(
    rqa_pipeline: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing tasks reads line heads; re-rendering the judge messages of the pages written parses those pages'
    reports, not every report of the run (ResearchQA's items are per report): memory bounded by the pages."""
    from reportbench import systems
    from reportbench.site import samples
    from reportbench.site.build import build_benchmark_site

    work, params = rqa_pipeline
    whole: list[Path] = []
    real_read = systems.read_reports
    monkeypatch.setattr(systems, "read_reports", lambda d: whole.append(Path(d)) or real_read(d))
    parsed: list[str] = []
    real_get = samples.LazyReports.__getitem__

    def counting(self: Any, task_id: str) -> Any:
        parsed.append(task_id)
        return real_get(self, task_id)

    monkeypatch.setattr(samples.LazyReports, "__getitem__", counting)
    build_benchmark_site(params, "researchqa", work, tmp_path, max_samples=1)
    n_systems = len(params["plan"]["benchmarks"]["researchqa"]["systems"])
    assert whole == []  # before: every report of every system, to list tasks and to re-render messages
    assert 0 < len(set(parsed)) <= n_systems  # the one page per system (its report read for the page itself too)


def test_the_site_stage_script_reuses_unchanged_pages(
    rqa_copy: tuple[Path, dict[str, Any]], repo_root: Path
) -> None:
    """The user's path: `stages/build_site.py --all` (what dvc.yaml runs) twice; the second run copies every
    unchanged page and writes the same site. (The pipeline functions' reuse is tested above.)"""
    import shutil
    import subprocess
    import sys

    import yaml

    root, params = rqa_copy
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src")}
    env.pop("REPORTBENCH_UNIT_REUSE", None)

    def site() -> str:
        done = subprocess.run([sys.executable, str(repo_root / "stages/build_site.py"), "--all", "--site", "site"],
                              cwd=root, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    first = site()
    assert "(0 unchanged, reused)" in first
    before = _tree(root / "site")
    shutil.rmtree(root / "site")  # as DVC removes a stage's outputs before running it
    second = site()
    n = int(second.split(" sample pages")[0].rsplit(" ", 1)[1])
    assert n > 0 and f"({n} unchanged, reused)" in second
    assert _tree(root / "site") == before
