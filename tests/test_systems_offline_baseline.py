"""The offline baseline: cites only corpus documents it retrieved, never a post-cutoff paper, deterministic,
and records a failure (never an empty report) when nothing usable exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.release.demo import DEFAULT_DEMO_DIR, build_demo_release
from reportbench.release.format import Release, read_release, write_release
from reportbench.systems import run_system
from reportbench.systems.common import published_before, task_cutoff
from reportbench.systems.offline_baseline import attributed_sentence

pytestmark = pytest.mark.core

SPEC = {"kind": "offline_baseline", "path": "src/reportbench/systems/offline_baseline.py"}
LEAKS = {"2513.00411", "2513.00530", "2513.00602"}  # one paper per demo task, dated after its cut-off


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rel") / "releases" / "demo"
    write_release(build_demo_release(DEFAULT_DEMO_DIR), out)
    return out


@pytest.fixture(scope="module")
def release(release_dir: Path) -> Release:
    return read_release(release_dir)


@pytest.fixture(scope="module")
def run_dir(release: Release, release_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "offline_baseline"
    outcomes = run_system("offline_baseline", {**SPEC, "release_dir": str(release_dir)}, release.tasks, out)
    assert [o.status for o in outcomes] == ["ok"] * len(release.tasks), outcomes
    return out


def _reports(run_dir: Path) -> list:
    from reportbench.systems import read_reports

    return read_reports(run_dir)


def test_every_citation_resolves_to_a_corpus_doc_it_retrieved(release: Release, run_dir: Path) -> None:
    by_arxiv = {d.arxiv_id: d for d in release.corpus if d.arxiv_id}
    by_title = {d.title.lower(): d for d in release.corpus}
    for report in _reports(run_dir):
        trace = json.loads((run_dir / "trace" / f"{report.task_id}.json").read_text())
        retrieved = {doc_id for rnd in trace["rounds"] for hits in rnd["retrieved"] for doc_id in hits}
        assert report.sentences and report.sources
        assert report.unresolved_citations == []
        cited = set(report.cited_keys)
        assert cited == set(report.sources), "every listed source is cited and every citation is listed"
        cutoff = task_cutoff(release.task(report.task_id))
        for key in cited:
            src = report.sources[key]
            doc = by_arxiv.get(src.arxiv_id) if src.arxiv_id else by_title.get((src.title or "").lower())
            assert doc is not None, f"{report.task_id} [{key}] {src.raw!r} is not a corpus document"
            assert doc.doc_id in retrieved, f"{report.task_id} cites {doc.doc_id} it never retrieved"
            assert published_before(doc.published_date, cutoff, doc.arxiv_id), f"{doc.doc_id} is after the cut-off"
            assert doc.arxiv_id not in LEAKS


def test_leak_papers_are_dropped_before_search(release: Release, run_dir: Path) -> None:
    for task in release.tasks:
        trace = json.loads((run_dir / "trace" / f"{task.task_id}.json").read_text())
        dropped = set(trace["dropped_by_cutoff_or_self"])
        cutoff = task_cutoff(task)
        late = {d.doc_id for d in release.corpus if not published_before(d.published_date, cutoff, d.arxiv_id)}
        assert late and late <= dropped
        retrieved = {doc_id for rnd in trace["rounds"] for hits in rnd["retrieved"] for doc_id in hits}
        assert not (retrieved & late)


def test_same_shape_as_the_reference_pipeline(run_dir: Path) -> None:
    trace = json.loads((run_dir / "trace" / "demo-0001.json").read_text())
    assert len(trace["rounds"]) == 2 and all(len(r["queries"]) == 2 for r in trace["rounds"])
    assert len(trace["ranked"]) <= 30
    words = len((run_dir / "raw" / "demo-0001.md").read_text().split("## References")[0].split())
    assert words <= 600 + 5  # the heading words


def test_runs_are_byte_identical(release: Release, release_dir: Path, run_dir: Path, tmp_path: Path) -> None:
    again = tmp_path / "offline_baseline"
    run_system("offline_baseline", {**SPEC, "release_dir": str(release_dir)}, release.tasks, again)
    for name in ("raw/demo-0002.md", "trace/demo-0002.json", "outcomes.jsonl"):
        a, b = (run_dir / name).read_text(), (again / name).read_text()
        assert a.replace(str(run_dir), "") == b.replace(str(again), "")


def test_nothing_usable_is_a_recorded_failure(release: Release, release_dir: Path, tmp_path: Path) -> None:
    early = release.tasks[0].model_copy(update={"published_date": "1990-01-01T00:00:00+00:00"})
    outcomes = run_system("ob", {**SPEC, "release_dir": str(release_dir)}, [early], tmp_path / "ob")
    assert outcomes[0].status == "failed" and "published before" in (outcomes[0].reason or "")
    assert (tmp_path / "ob" / "reports.jsonl").read_text() == ""
    assert not (tmp_path / "ob" / "raw" / f"{early.task_id}.md").exists()


def test_release_is_found_from_the_dvc_layout(release: Release, release_dir: Path) -> None:
    out = release_dir.parent.parent / "runs" / "demo" / "offline_baseline"
    outcomes = run_system("offline_baseline", dict(SPEC), release.tasks[:1], out)
    assert outcomes[0].status == "ok"


def test_bad_config_names_the_key(release: Release, release_dir: Path, tmp_path: Path) -> None:
    from reportbench.systems import SystemError_

    with pytest.raises(SystemError_, match="systems.ob.*final_k"):
        run_system("ob", {**SPEC, "release_dir": str(release_dir), "final_k": "many"}, release.tasks, tmp_path)
    with pytest.raises(SystemError_, match="unknown key"):
        run_system("ob", {**SPEC, "release_dir": str(release_dir), "model": "x"}, release.tasks, tmp_path)


def test_attribution_rewrites_first_person() -> None:
    from reportbench.systems.common import Doc

    doc = Doc(doc_id="d", title="Pool Depth: A Study", abstract="We re-judge four pools with our assessors.")
    assert attributed_sentence(doc, {"pool"}) == "The authors of Pool Depth re-judge four pools with their assessors"
    acronym = Doc(doc_id="e", title="X", abstract="GroundedQA-Eval bundles six collections of answers.")
    assert attributed_sentence(acronym, set()).startswith("In X, GroundedQA-Eval bundles")


def test_pool_is_tokenised_once_per_stage(
    release: Release, release_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stage tokenises each pool document once, however many tasks it runs (linear in the tasks)."""
    from collections import Counter

    from reportbench.systems import retrieval

    calls: Counter[str] = Counter()
    real = retrieval.doc_terms

    def counting(doc: retrieval.Doc) -> list[str]:
        calls[doc.doc_id] += 1
        return real(doc)

    monkeypatch.setattr(retrieval, "doc_terms", counting)
    tasks = release.tasks * 3  # more tasks must not mean more tokenising
    outcomes = run_system("ob", {**SPEC, "release_dir": str(release_dir)}, tasks, tmp_path / "ob")
    assert all(o.status == "ok" for o in outcomes)
    assert set(calls) == {d.doc_id for d in release.corpus}
    assert max(calls.values()) == 1


def test_shared_pool_terms_give_the_same_index(release: Release) -> None:
    """A per-task subset indexed from the shared pool terms scores exactly like one tokenised afresh."""
    from reportbench.systems.common import corpus_docs, usable_docs
    from reportbench.systems.retrieval import BM25Index, PoolTerms, terms

    pool = corpus_docs(release)
    shared = PoolTerms(pool)
    assert len(shared) == len(set(pool))
    for task in release.tasks:
        docs, _ = usable_docs(pool, task)
        fresh, reused = BM25Index(docs), BM25Index(docs, pool_terms=shared)
        query = terms(f"{task.title} {task.abstract}")
        assert fresh.scores(query) == reused.scores(query)
        assert fresh.search(query[:6], 50) == reused.search(query[:6], 50)
