"""The six live stages end to end, in-process, against the fake services (real arxiv/pyalex client code).

Fixture build: 9 listed papers -> 2 published (see tests/fixtures/live/README.md for what each paper exercises).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import responses

from live_fakes import FakeServices, live_test_params
from reportbench.judges.base import Judgment
from reportbench.judges.runner import read_judgments
from reportbench.live_builder.live import Paths, run_all, stage_label, stage_publish
from reportbench.live_builder.live_config import load_live_config
from reportbench.release.format import read_release

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def base_params() -> dict[str, Any]:
    from reportbench.config import composed_params

    return composed_params(["live=default"])  # the opt-in group `reportbench live init` selects


def build(root: Path, params: dict[str, Any], fakes: FakeServices | None = None) -> tuple[dict[str, Any], FakeServices]:
    fakes = fakes or FakeServices()
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        fakes.install(rsps)
        out = run_all(params, root)
    return out, fakes


def digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def built(
    base_params: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any], dict[str, Any], FakeServices]:
    root = tmp_path_factory.mktemp("live")
    params = live_test_params(base_params, root)
    out, fakes = build(root, params)
    return root, params, out, fakes


def test_release_is_valid_and_complete(built: tuple[Path, dict[str, Any], dict[str, Any], FakeServices]) -> None:
    root, params, _, _ = built
    paths = Paths(load_live_config(params), root)
    rel = read_release(paths.release_dir)  # schemas, hashes, links
    assert rel.task_ids == ["2513.00101v1", "2513.00102v1"]
    t = rel.task("2513.00101v1")
    assert t.published_date == "2025-06-02T17:30:00+00:00" and t.categories == ["cs.CL", "cs.IR"]
    assert t.task_prompt.startswith("Your task is to write a Related Works section") and t.abstract in t.task_prompt
    assert "\\cite{vaswani2513}" in t.exemplar and "figure" not in t.exemplar
    refs = rel.exemplar_refs("2513.00101v1")
    assert [r.ref_key for r in refs][:2] == ["vaswani2513", "lee2024doi"] and len(refs) == 7
    assert rel.has_important_refs and rel.nuggets("2513.00101v1")
    assert {n.self_assignment for n in rel.nugget_rows} <= {"support", "partial_support", "not_support", "failed"}
    vital = [n.importance for n in rel.nuggets("2513.00101v1")]
    assert vital == sorted(vital, key=lambda x: x != "vital")  # vital first (nuggetizer)
    v = next(r for r in refs if r.ref_key == "vaswani2513")
    assert v.arxiv_id == "2413.00201" and v.url == "https://arxiv.org/abs/2413.00201" and v.year == 2024
    counts = {c.arxiv_id or c.title: c for c in rel.citation_counts}
    assert counts["2413.00201"].cited_by_count == 120 and counts["2413.00201"].source == "openalex"
    assert counts["Graph Neural Summaries of Citation Networks"].arxiv_id is None  # non-arXiv counts kept by title
    assert all(c.fetched_at for c in rel.citation_counts)
    docs = {d.doc_id for d in rel.corpus}
    assert "arxiv:2413.00201" in docs and len([d for d in docs if d == "arxiv:2413.00201"]) == 1  # cited twice, one doc
    manifest = json.loads((paths.release_dir / "release.json").read_text())
    assert manifest["created_at"] == "2025-06-07" and manifest["synthetic"] is False
    assert (
        manifest["provenance"]["live.categories"] == "cs.CL,cs.IR" and manifest["provenance"]["tool.arxiv"] == "4.0.2"
    )


def test_card_stats_and_drops(built: tuple[Path, dict[str, Any], dict[str, Any], FakeServices]) -> None:
    root, params, out, _ = built
    paths = Paths(load_live_config(params), root)
    card = (paths.release_dir / "CARD.md").read_text()
    for needle in (
        "## Live build",
        "`cs.CL`, `cs.IR`",
        "2025-06-01 .. 2025-06-07",
        "v1 only: yes",
        "### Licences",
        "CC0",
        "- pyalex: 0.21",
        "not_v1 1",
    ):
        assert needle in card, needle
    stats = json.loads(paths.stats.read_text())
    assert stats == out["publish"]["stats"]
    assert stats["papers"] == {"listed": 9, "after_listing_filters": 8, "published": 2, "dropped": 7}
    nonzero = {k: v for k, v in stats["dropped_by_reason"].items() if v}
    assert nonzero == {
        "download_failed": 1,
        "no_source": 2,
        "not_v1": 1,
        "too_few_citations": 1,
        "too_many_words": 1,
        "unresolved_keys": 1,
    }
    assert stats["dropped_by_reason"]["venue_filter"] == 0  # every known reason is a key: diffs line up
    assert stats["dropped_by_stage"] == {"filter": 3, "label": 0, "list": 1, "sources": 3}
    refs = stats["references"]
    assert refs["total"] == 12 and refs["per_paper_mean"] == 6.0 and refs["share_on_arxiv"] == 0.75
    assert sum(refs["by_method"].values()) == 12 and refs["by_method"]["none"] == 1
    assert stats["section"]["words_mean"] > 0 and stats["section"]["sentences_mean"] > 0
    assert stats["requests"]["by_stage"] == {"list": 2, "sources": 8, "recover": 6}
    assert stats["requests"]["recover_per_cited_reference"] == 0.5 <= 1.2
    # every number in the metrics file is diffable by `dvc metrics diff` (no NaN)
    assert "NaN" not in paths.stats.read_text()


def test_export_loads_with_polars(built: tuple[Path, dict[str, Any], dict[str, Any], FakeServices]) -> None:
    root, params, _, _ = built
    paths = Paths(load_live_config(params), root)
    readme = (paths.export_dir / "README.md").read_text()
    assert readme.startswith("---\n") and "config_name: papers" in readme and "path: papers/test-*.parquet" in readme
    papers = pl.read_parquet(paths.export_dir / "papers" / "*.parquet")
    assert papers["arxiv_id"].to_list() == ["2513.00101v1", "2513.00102v1"]
    assert papers.schema["authors"] == pl.List(pl.String)
    cites = pl.read_parquet(paths.export_dir / "citations" / "*.parquet")
    assert cites.height == 12 and set(cites["method"]) >= {"bib_arxiv", "arxiv_title", "openalex_title", "none"}
    imp = pl.read_parquet(paths.export_dir / "important_citations" / "*.parquet")
    assert imp.height == int(cites["is_important"].sum())
    dropped = pl.read_parquet(paths.export_dir / "dropped" / "*.parquet")
    assert dict(zip(dropped["arxiv_id"], dropped["reason_code"], strict=True)) == {
        "2513.00103v2": "not_v1",
        "2513.00104v1": "download_failed",
        "2513.00105v1": "no_source",
        "2513.00106v1": "too_many_words",
        "2513.00107v1": "unresolved_keys",
        "2513.00108v1": "no_source",
        "2513.00109v1": "too_few_citations",
    }
    assert all(dropped["reason"].str.len_chars() > 0)
    assert pl.read_parquet(paths.export_dir / "nuggets" / "*.parquet").height > 0


def test_judgments_are_recorded(built: tuple[Path, dict[str, Any], dict[str, Any], FakeServices]) -> None:
    root, params, _, _ = built
    paths = Paths(load_live_config(params), root)
    files = sorted(p.name for p in paths.judgments_dir.glob("*.parquet"))
    assert files == [
        "important_reference.parquet",
        "nugget_assign.parquet",
        "nugget_create.parquet",
        "nugget_score.parquet",
    ]
    imp = read_judgments(paths.judgments_dir / "important_reference.parquet")
    assert len(imp) == 12 and all(j.ok and j.judge_id.startswith("offline") for j in imp)


def test_rebuild_makes_zero_requests_and_identical_files(
    built: tuple[Path, dict[str, Any], dict[str, Any], FakeServices], capsys: pytest.CaptureFixture[str]
) -> None:
    root, params, _, first_fakes = built
    paths = Paths(load_live_config(params), root)
    assert first_fakes.n_calls == 16
    before = {d: digest(d) for d in (paths.release_dir, paths.export_dir, paths.work / "recover", paths.work / "label")}
    fakes = FakeServices()
    out, _ = build(root, params, fakes)
    assert fakes.n_calls == 0
    assert all(rep["requests"] == 0 for rep in (out["list"], out["sources"], out["recover"]))
    assert out["list"]["cache_hits"] == 2 and out["sources"]["cache_hits"] == 8
    assert out["recover"]["cache_hits"] == 0  # every identifier answered by the item store: not even a cache read
    assert {d: digest(d) for d in before} == before  # byte-identical release, export and intermediate data
    printed = capsys.readouterr().out
    assert "requests per cited reference = 0.0" in printed
    stats = json.loads(paths.stats.read_text())
    assert stats["requests"]["total"] == 0 and stats["requests"]["cache_hits"] == 10


def test_root_pipeline_reads_the_live_release(
    built: tuple[Path, dict[str, Any], dict[str, Any], FakeServices], tmp_path: Path
) -> None:
    from reportbench.pipeline import build_release

    root, params, _, _ = built
    paths = Paths(load_live_config(params), root)
    p = dict(params)
    release = {"name": "fixture-2025-06", "kind": "path", "source": str(paths.release_dir), "max_tasks": None}
    p["benchmarks"] = {"deepscholar": {"release": release}}
    manifest = build_release(p, "deepscholar", tmp_path / "data" / "releases" / "fixture-2025-06")
    assert manifest["counts"]["tasks"] == 2
    assert read_release(tmp_path / "data" / "releases" / "fixture-2025-06").has_important_refs


class _FailingJudge:
    """Wraps a judge; items of one paper fail (as an LLM judge's exhausted retries would)."""

    def __init__(self, inner: Any, task_id: str) -> None:
        self.inner, self.task_id = inner, task_id
        self.judge_id = inner.judge_id

    async def __call__(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Judgment:
        if input_ids.get("task_id") == self.task_id:
            return Judgment(
                task="x",
                item_id=item_id,
                input_ids=input_ids,
                judge_id=self.judge_id,
                status="failed",
                error="call: timeout: simulated",
            )
        return await self.inner(item_id, inputs, input_ids)


def test_a_label_failure_drops_the_paper_and_the_release_goes_on(
    built: tuple[Path, dict[str, Any], dict[str, Any], FakeServices], tmp_path: Path
) -> None:
    import shutil

    from reportbench.judges.factory import make_judge
    from reportbench.pipeline import judge_config

    root, params, _, _ = built
    shutil.copytree(root / "live", tmp_path / "live")
    shutil.copytree(root / "metrics", tmp_path / "metrics")

    def judge_for(task: str) -> Any:
        inner = make_judge(task, judge_config(params, task))
        return _FailingJudge(inner, "2513.00102v1") if task == "nugget_score" else inner

    stage_label(params, tmp_path, judge_for=judge_for)
    out = stage_publish(params, tmp_path)
    rel = read_release(Paths(load_live_config(params), tmp_path).release_dir)
    assert rel.task_ids == ["2513.00101v1"]
    assert out["stats"]["dropped_by_reason"]["label_failed"] == 1
    dropped = pl.read_parquet(Paths(load_live_config(params), tmp_path).export_dir / "dropped" / "*.parquet")
    row = dropped.filter(pl.col("arxiv_id") == "2513.00102v1").row(0, named=True)
    assert row["stage"] == "label" and "nugget_score window 0 failed: call: timeout: simulated" in row["reason"]


def test_build_without_labels(base_params: dict[str, Any], tmp_path: Path) -> None:
    params = live_test_params(base_params, tmp_path, **{"label.important_refs": False, "label.nuggets": False})
    build(tmp_path, params)
    rel = read_release(Paths(load_live_config(params), tmp_path).release_dir)
    assert not rel.has_important_refs and rel.nugget_rows == [] and len(rel.tasks) == 2


def test_network_outage_is_recorded_and_release_still_builds(base_params: dict[str, Any], tmp_path: Path) -> None:
    """OpenAlex down for the whole build: counts are missing (never 0), every failure is recorded."""
    fakes = FakeServices()
    fakes.openalex.fail_all = True
    params = live_test_params(base_params, tmp_path)
    out, _ = build(tmp_path, params, fakes)
    rel = read_release(Paths(load_live_config(params), tmp_path).release_dir)
    assert len(rel.tasks) == 2 and rel.citation_counts == []
    summary = json.loads((Paths(load_live_config(params), tmp_path).recover_dir / "summary.json").read_text())
    assert summary["errors"] > 0 and summary["error_list"][0]["step"] == "openalex_doi"
    assert out["publish"]["stats"]["references"]["share_with_count"] == 0.0
