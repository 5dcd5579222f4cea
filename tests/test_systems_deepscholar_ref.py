"""DeepScholar-ref end to end against the loopback LLM stub (scripted responder) and recorded arXiv API
responses replayed with `responses` through the real `arxiv` client: the date filter drops the recorded
post-cutoff paper, every `[n]` resolves through the report's own list, failures are recorded per task,
and the oracle settings hand the writer exactly the exemplar's important references."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import responses

from reportbench.release.demo import DEFAULT_DEMO_DIR, build_demo_release
from reportbench.release.format import Release, read_release, write_release
from reportbench.stub_server import stub_server_thread
from reportbench.systems import SystemError_, read_reports, run_system
from reportbench.systems.devservices import ArxivReplay, scripted_responder

pytestmark = pytest.mark.integration

ARXIV_API = "https://export.arxiv.org/api/query"
LEAK = {"demo-0001": "2513.00411", "demo-0002": "2513.00530", "demo-0003": "2513.00602"}


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rel") / "demo"
    write_release(build_demo_release(DEFAULT_DEMO_DIR), out)
    return out


@pytest.fixture(scope="module")
def release(release_dir: Path) -> Release:
    return read_release(release_dir)


@pytest.fixture(scope="module")
def llm() -> Iterator[Any]:
    with stub_server_thread(responder=scripted_responder) as server:
        yield server


@pytest.fixture()
def no_pacing(monkeypatch: pytest.MonkeyPatch) -> None:
    """No 3 s arXiv pacing against recorded responses (the session's rate limiter reads this table)."""
    from reportbench import net

    monkeypatch.setitem(net.DEFAULT_MIN_INTERVAL_S, "export.arxiv.org", 0.0)


@pytest.fixture()
def arxiv_replay(fixtures_dir: Path, no_pacing: None) -> Iterator[ArxivReplay]:
    """Recorded Atom feeds behind export.arxiv.org, replayed through the real `arxiv` client code."""
    replay = ArxivReplay(fixtures_dir / "systems" / "arxiv")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(
            responses.GET,
            re.compile(re.escape(ARXIV_API) + r"\?.*"),
            callback=lambda req: (
                200,
                {"Content-Type": "application/atom+xml"},
                replay.answer(urlsplit(req.url).query),
            ),
        )
        yield replay


def _spec(llm: Any, release_dir: Path, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "kind": "deepscholar_ref",
        "path": "prompts/deepscholar_ref",
        "release_dir": str(release_dir),
        "model": "openai/stub-ref",
        "api_base": llm.base_url,
        "structured_output": "json_schema",
        "runtime": {"cache_path": str(tmp_path / "llm.sqlite"), "backoff_base_s": 0.01, "backoff_max_s": 0.05},
        "search": {"arxiv_url": ARXIV_API, "cache_path": str(tmp_path / "search.sqlite"), "retries": 0},
    }
    spec.update(extra)
    return spec


def test_end_to_end_date_filter_and_resolving_citations(
    llm: Any, arxiv_replay: ArxivReplay, release: Release, release_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    outcomes = run_system("deepscholar_ref", _spec(llm, release_dir, tmp_path), release.tasks, out)
    assert [o.status for o in outcomes] == ["ok"] * 3, outcomes

    # Q=2 queries x N=2 rounds per task, each with the task's date range in the query
    assert len(arxiv_replay.queries) == 12
    assert all(re.search(r"AND submittedDate:\[000001010000 TO 2025\d{8}\]$", q) for q in arxiv_replay.queries)

    for report in read_reports(out):
        task = release.task(report.task_id)
        trace = json.loads((out / "trace" / f"{task.task_id}.json").read_text())
        leak = LEAK[task.task_id]
        # the recorded feed returned the post-cutoff paper high up; it was dropped, never used
        retrieved = {d for rnd in trace["rounds"] for ids in rnd["retrieved"].values() for d in ids}
        assert f"arxiv:{leak}" in trace["dropped_by_cutoff"]
        assert f"arxiv:{leak}" not in retrieved
        assert leak not in (out / "raw" / f"{task.task_id}.md").read_text()
        assert all(c["arxiv_id"] != leak for c in trace["context"])

        # the output parses with [n] citations that resolve to its own reference list
        assert report.format == "markdown" and report.unresolved_citations == []
        cited = report.cited_keys
        assert cited and set(cited) == set(report.sources)
        numbers = {c["number"]: c for c in trace["context"]}
        for key in cited:
            src = report.sources[key]
            assert src.arxiv_id == numbers[int(key)]["arxiv_id"], "[n] points at the n-th context source"
            assert f"arxiv:{src.arxiv_id}" in retrieved
        # the off-topic recorded results were filtered out
        assert not {"arxiv:2113.04019", "arxiv:2313.03127"} & set(trace["filter"]["kept"])

    usage = json.loads((out / "usage.json").read_text())["llm"]
    assert usage["queries"]["calls"] == 6 and usage["aggregate"]["calls"] == 3
    assert all(step["failed"] == 0 for step in usage.values())


def test_rerun_is_served_from_caches_and_identical(
    llm: Any, arxiv_replay: ArxivReplay, release: Release, release_dir: Path, tmp_path: Path
) -> None:
    spec = _spec(llm, release_dir, tmp_path)
    run_system("dsr", spec, release.tasks[:1], tmp_path / "a")
    before_llm, before_arxiv = llm.counts["requests"], len(arxiv_replay.queries)
    run_system("dsr", spec, release.tasks[:1], tmp_path / "b")
    assert llm.counts["requests"] == before_llm and len(arxiv_replay.queries) == before_arxiv
    for name in ("raw/demo-0001.md", "trace/demo-0001.json", "usage.json"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()


def test_llm_faults_become_failed_outcomes(
    arxiv_replay: ArxivReplay, release: Release, release_dir: Path, tmp_path: Path
) -> None:
    with stub_server_thread(responder=scripted_responder, faults={"500": 1.0}) as broken:
        spec = _spec(broken, release_dir, tmp_path)
        spec["runtime"]["max_retries"] = 1
        outcomes = run_system("dsr", spec, release.tasks, tmp_path / "run")
    assert [o.status for o in outcomes] == ["failed"] * 3
    assert all((o.reason or "").startswith("query generation failed: call: server") for o in outcomes)
    trace = json.loads((tmp_path / "run" / "trace" / "demo-0001.json").read_text())
    assert trace["failure"].startswith("query generation failed")


def test_search_failures_are_recorded(
    llm: Any, no_pacing: None, release: Release, release_dir: Path, tmp_path: Path
) -> None:
    with responses.RequestsMock() as mock:
        mock.add(responses.GET, re.compile(re.escape(ARXIV_API) + r"\?.*"), status=503, body="busy")
        outcomes = run_system("dsr", _spec(llm, release_dir, tmp_path), release.tasks[:1], tmp_path / "run")
    assert outcomes[0].status == "failed"
    assert "no usable source retrieved" in (outcomes[0].reason or "") and "HTTP 503" in (outcomes[0].reason or "")


def test_corpus_backend_runs_offline_and_respects_the_cutoff(
    llm: Any, release: Release, release_dir: Path, tmp_path: Path
) -> None:
    spec = _spec(llm, release_dir, tmp_path, search={"backend": "corpus"})
    with responses.RequestsMock():  # any HTTP through requests would fail the test
        outcomes = run_system("dsr", spec, release.tasks, tmp_path / "run")
    assert [o.status for o in outcomes] == ["ok"] * 3
    for report in read_reports(tmp_path / "run"):
        assert LEAK[report.task_id] not in {s.arxiv_id for s in report.sources.values()}


@pytest.fixture(scope="module")
def labelled_release_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo with one non-arXiv reference labelled important, so the two oracles differ."""
    release = build_demo_release(DEFAULT_DEMO_DIR)
    for ref in release.exemplar_ref_rows:
        if ref.task_id == "demo-0001" and ref.arxiv_id is None:
            ref.is_important = True
    out = tmp_path_factory.mktemp("rel-labelled") / "demo"
    write_release(release, out)
    return out


@pytest.mark.parametrize("oracle", ["important_arxiv", "important_all"])
def test_oracles_select_the_exemplar_important_refs(
    oracle: str, llm: Any, labelled_release_dir: Path, tmp_path: Path
) -> None:
    release = read_release(labelled_release_dir)
    spec = _spec(llm, labelled_release_dir, tmp_path, oracle=oracle)
    with responses.RequestsMock():  # an oracle never searches
        outcomes = run_system(f"oracle_{oracle}", spec, release.tasks, tmp_path / "run")
    assert [o.status for o in outcomes] == ["ok"] * 3
    for task in release.tasks:
        important = release.important_refs(task.task_id)
        expected = [r for r in important if oracle == "important_all" or r.arxiv_id]
        trace = json.loads((tmp_path / "run" / "trace" / f"{task.task_id}.json").read_text())
        assert [c["arxiv_id"] for c in trace["context"]] == [r.arxiv_id for r in expected]
        assert "rounds" not in trace and "filter" not in trace  # retrieval, filter, top-k skipped
    non_arxiv = [r for r in release.important_refs("demo-0001") if not r.arxiv_id]
    assert len(non_arxiv) == 1
    trace = json.loads((tmp_path / "run" / "trace" / "demo-0001.json").read_text())
    titles = [c["title"] for c in trace["context"]]
    assert (non_arxiv[0].title in titles) is (oracle == "important_all")
    usage = json.loads((tmp_path / "run" / "usage.json").read_text())["llm"]
    assert usage["filter"]["calls"] == usage["rank"]["calls"] == usage["queries"]["calls"] == 0
    report = read_reports(tmp_path / "run")[0]
    assert report.unresolved_citations == [] and report.sources


def test_oracle_needs_importance_labels(llm: Any, release: Release, release_dir: Path, tmp_path: Path) -> None:
    unlabelled = build_demo_release(DEFAULT_DEMO_DIR)
    for ref in unlabelled.exemplar_ref_rows:
        ref.is_important = None
    out = tmp_path / "unlabelled"
    write_release(unlabelled, out)
    with pytest.raises(SystemError_, match="importance labels"):
        run_system("o", _spec(llm, out, tmp_path, oracle="important_arxiv"), release.tasks, tmp_path / "run")


def test_config_errors_name_the_key(llm: Any, release: Release, release_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemError_, match="oracle"):
        run_system("o", _spec(llm, release_dir, tmp_path, oracle="perfect"), release.tasks, tmp_path)
    with pytest.raises(SystemError_, match=r"systems\.o\.model"):
        run_system("o", _spec(llm, release_dir, tmp_path, model=None), release.tasks, tmp_path)
    with pytest.raises(SystemError_, match="unknown key"):
        run_system("o", _spec(llm, release_dir, tmp_path, serach={}), release.tasks, tmp_path)
