"""The survey builder end to end, offline: recorded OpenAlex/arXiv responses (through the real pyalex and HTTP
cache code) + the scripted stub generator/judge (litellm against the loopback stub server) -> a release that the
ResearchQA evaluation then runs on (release, systems, coverage judge, battles, ratings). A rebuild from the
caches makes zero HTTP requests and zero LLM calls and writes a byte-identical release; every drop has a reason.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import responses

from reportbench.config import composed_params
from reportbench.stub_server import stub_server_thread
from reportbench.survey_builder.stages import STAGES, run_stage
from spine_helpers import refresh_plan, run_benchmark
from survey_builder_fakes import FakeServices, make_responder

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]
NAME = "fixture-2026-05"


def builder_params(repo_root: Path, tmp: Path, base_url: str) -> dict[str, Any]:
    p = composed_params(["judge=llm", "live_researchqa=default"], conf_dir=repo_root / "conf")  # opt-in group
    p["judge"].update({"model": "openai/stub-generator", "api_base": base_url, "structured_output": "none"})
    p["judge"]["runtime"].update(
        {"max_concurrency": 8, "timeout_s": 5, "max_retries": 0, "parse_retries": 0, "progress": False,
         "cache_path": str(tmp / "judge.sqlite")}
    )  # fmt: skip
    cfg = p["live_researchqa"]
    cfg.update({"name": NAME, "window": {"start": "2026-05-01", "end": "2026-05-31"}, "arxiv_source_id": None})
    cfg["queries"]["min_queries_per_field"] = 2
    cfg["splits"].update({"test_per_field": 1, "valid_per_field": 1})
    cfg["http"].update({"cache_dir": str(tmp / "http-cache"), "arxiv_interval_s": 0.0, "openalex_interval_s": 0.0,
                        "retries": 0, "backoff_factor": 0.0})  # fmt: skip
    return p


def build(params: dict[str, Any], root: Path) -> FakeServices:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        fakes = FakeServices().install(rsps)
        for stage in STAGES:
            run_stage(stage, params, root)
    return fakes


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> dict[str, Any]:
    import os

    tmp = tmp_path_factory.mktemp("survey-builder")
    cwd = os.getcwd()
    os.chdir(repo_root)  # prompts/ is read relative to the repo root, as in a DVC stage
    try:
        with stub_server_thread(responder=make_responder(repo_root / "prompts")) as s:
            params = builder_params(repo_root, tmp, s.base_url)
            first = build(params, tmp / "a")
            llm_first = s.counts["requests"]
            second = build(params, tmp / "b")
            llm_second = s.counts["requests"] - llm_first
    finally:
        os.chdir(cwd)
    return {"tmp": tmp, "params": params, "first": first, "second": second, "llm": (llm_first, llm_second)}


def _release(root: Path) -> Path:
    return root / "live_researchqa" / "releases" / NAME


def _drops(root: Path) -> pl.DataFrame:
    return pl.read_parquet(_release(root) / "dropped.parquet")


def test_every_stage_drop_has_its_reason(built: dict[str, Any]) -> None:
    d = _drops(built["tmp"] / "a")
    assert d.filter((pl.col("reason") == "") | pl.col("reason").is_null()).height == 0
    by = {(r["stage"], r["item_id"]): r["reason_code"] for r in d.iter_rows(named=True)}
    # surveys: one per listing/check/full-text rule
    assert by[("surveys", "W4410001004")] == "not_a_review"
    assert by[("surveys", "W4410001005")] == "no_open_fulltext"
    assert by[("surveys", "W4410001006")] == "no_latex_source"
    assert by[("surveys", "W4410001007")] == "no_title_keyword"
    # sections
    assert by[("sections", "W4410001001-s0")] == "title_blacklist"
    assert by[("sections", "W4410001001-s4")] == "too_short"
    assert by[("sections", "W4410001001-s7")] == "appendix"
    assert by[("sections", "W4410001008-s1")] == "too_few_citations"
    # queries: every filter of the paper's chain drops the query it was scripted to drop
    assert by[("queries", "W4410001002-s1")] == "not_self_contained"
    assert by[("queries", "W4410001002-s2")] == "too_variable"
    assert by[("queries", "W4410001001-s3")] == "citation_in_query"
    assert by[("queries", "W4410001003-s4")] == "answer_too_short"
    assert by[("queries", "W4410001003-s3")] == "keyword_past_tense"
    assert by[("queries", "W4410001001-s5")] == "field_misaligned"
    assert by[("queries", "W4410001008-s0")] == "field_too_small"
    # rubric items: duplicates, vacuous, hallucinated and unmatched citations, LLM duplicates, the top-8 cut
    codes = set(d.filter(pl.col("stage") == "rubrics")["reason_code"])
    assert {"duplicate", "vacuous", "unmatched_citation", "duplicate_llm", "below_top_k"} <= codes
    hallucinated = d.filter(pl.col("reason").str.contains("A Universal Benchmark for Every Scientific Question"))
    assert hallucinated.height == 5 and set(hallucinated["reason_code"]) == {"unmatched_citation"}


def test_filter_verdicts_are_recorded_in_order(built: dict[str, Any]) -> None:
    v = pl.read_parquet(built["tmp"] / "a" / "live_researchqa" / "work" / NAME / "queries" / "verdicts.parquet")
    kept = v.filter(pl.col("query_id") == "W4410001001-s1").sort("order")
    assert kept["filter"].to_list() == [
        "self_containment", "answer_variability", "rephrase", "citation_in_query", "answer_length", "keywords",
        "field_alignment", "field_size",
    ]  # fmt: skip
    assert kept["passed"].all() and kept.filter(pl.col("kind") == "judge")["judgment_item"].null_count() == 0
    dropped = v.filter(pl.col("query_id") == "W4410001002-s1")
    assert dropped["filter"].to_list() == ["self_containment"] and not dropped["passed"][0]
    assert dropped["value"][0] == 4.0


def test_release_is_a_researchqa_release(built: dict[str, Any]) -> None:
    from reportbench.protocols.researchqa.release import build_release

    rel = _release(built["tmp"] / "a")
    splits = {s: json.loads((rel / f"{s}.json").read_text()) for s in ("test", "valid", "train", "full")}
    assert [len(splits[s]) for s in ("test", "valid", "train")] == [2, 2, 1]
    assert len(splits["full"]) == 5
    origins = {item["origin"] for row in splits["full"] for item in row["rubric"]}
    assert origins == {"survey", "parametric"}  # the hybrid set mixes both after the importance ranking
    for row in splits["full"]:
        assert 1 <= len(row["rubric"]) <= 8
        assert row["general_domain"] in {"Engineering & Computer Science", "Health Sciences & Medicine"}
        for item in row["rubric"]:
            assert item["rubric_item"].startswith("Does the response")
            if item["type"] == ["citation"]:
                assert item["citation_metadata"]["url"] and item["citation_metadata"]["title"]
    for split in ("test", "valid", "train"):
        release = build_release({"name": NAME, "kind": "path", "path": str(rel), "split": split})
        assert len(release.tasks) == len(splits[split])
    import datasets

    hub = datasets.load_dataset(str(rel))
    assert {k: v.num_rows for k, v in hub.items()} == {"test": 2, "validation": 2, "train": 1}
    assert hub["test"][0]["rubric"][0]["rubric_item"].startswith("Does the response")
    card = (rel / "CARD.md").read_text()
    assert "Artificial Intelligence" in card and "reconstruction" in card
    stats = json.loads((built["tmp"] / "a" / "metrics" / "live_researchqa" / "release.json").read_text())
    assert stats["counts"]["queries_published"] == 5 and stats["splits"] == {"test": 2, "valid": 2, "train": 1}
    assert stats["dropped_by_stage"]["queries"]["not_self_contained"] == 1
    assert stats["judge"]["items_per_kept_query"] > 0 and stats["judge"]["cost_per_1000_queries_usd"] > 0
    assert stats["requests"]["per_kept_query"] > 0


def test_rebuild_from_the_caches_makes_no_request_and_the_same_release(built: dict[str, Any]) -> None:
    first, second = built["first"], built["second"]
    assert first.n_calls > 0 and second.n_calls == 0
    assert first.eprints.calls and not any("2605.01004" in u for u in first.eprints.calls)  # not a review: no download
    llm_first, llm_second = built["llm"]
    assert llm_first > 0 and llm_second == 0
    a, b = _release(built["tmp"] / "a"), _release(built["tmp"] / "b")
    for name in ("test.json", "valid.json", "train.json", "full.json", "sources.json", "CARD.md", "README.md",
                 "release.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    stats_b = json.loads((built["tmp"] / "b" / "metrics" / "live_researchqa" / "release.json").read_text())
    assert stats_b["requests"]["total"] == 0 and stats_b["judge"]["calls_this_build"] == 0


def test_researchqa_evaluation_runs_on_the_release(built: dict[str, Any], repo_root: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(repo_root)
    rel = _release(built["tmp"] / "a")
    sources = {r["id"]: r for r in json.loads((rel / "sources.json").read_text())}
    test_rows = json.loads((rel / "test.json").read_text())
    systems = {}
    refs = "\n\nReferences\n[1] Attention Is All You Need (2017)"
    for name, make in {
        "reference_copy": lambda r: sources[r["id"]]["reference_answer"] + " [1]" + refs,
        "one_liner": lambda r: "It depends on the setting [1]." + refs,
    }.items():
        folder = tmp_path / "systems" / name
        folder.mkdir(parents=True)
        for r in test_rows:
            (folder / f"{r['id']}.md").write_text(make(r))
        systems[name] = {"kind": "folder", "path": str(folder), "format": "auto"}
    overrides = ["benchmarks=[deepscholar,researchqa]", "researchqa/release=researchqa"]
    p = composed_params(overrides, conf_dir=repo_root / "conf")
    p["judge"]["runtime"]["progress"] = False
    r = p["benchmarks"]["researchqa"]
    r["release"].update({"name": NAME, "path": str(rel), "source": str(rel), "split": "test"})
    r["judging"]["battles"]["min_per_domain"] = 2
    r["scoring"]["rating"]["rounds"] = 20
    r["systems"] = systems
    root = run_benchmark(refresh_plan(p), "researchqa", tmp_path / "eval")
    result = json.loads((root / "metrics" / "systems.json").read_text())
    cov = {s: v["metrics"]["coverage"] for s, v in result.items()}
    assert set(cov) == {"reference_copy", "one_liner"}
    assert all(c["n_failed"] == 0 for c in cov.values())
    assert cov["reference_copy"]["mean"] > cov["one_liner"]["mean"]
    extra = json.loads((root / "metrics" / "extra.json").read_text())
    assert extra["ratings"]["tables"]["half"]


def test_nothing_leaves_silently(built: dict[str, Any]) -> None:
    """At every stage, what came in = what was kept + what was dropped (with a reason)."""
    root = built["tmp"] / "a"
    work = root / "live_researchqa" / "work" / NAME
    d = _drops(root)

    def n_drops(stage: str, kind: str) -> int:
        return d.filter((pl.col("stage") == stage) & (pl.col("kind") == kind)).height

    def lines(path: Path) -> list[dict[str, Any]]:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    surveys = lines(work / "surveys" / "surveys.jsonl")
    listed = json.loads((work / "surveys" / "summary.json").read_text())["listed"]
    assert listed == 8 == len(surveys) + n_drops("surveys", "survey")
    n_sections = sum(len(s["sections"]) for s in surveys)
    sections = lines(work / "sections" / "sections.jsonl")
    assert n_sections == len(sections) + n_drops("sections", "section")
    queries = lines(work / "queries" / "queries.jsonl")
    assert len(sections) == len(queries) + n_drops("queries", "query")
    candidates = lines(work / "rubrics" / "candidates.jsonl")
    kept_items = {i for r in lines(work / "rubrics" / "rubrics.jsonl") for i in r["items"]}
    dropped_items = set(d.filter(pl.col("kind") == "rubric_item")["item_id"])
    assert {c["item_id"] for c in candidates} == kept_items | dropped_items and not kept_items & dropped_items
    assert all(c["status"] == "kept" for c in candidates if c["item_id"] in kept_items)
    full = json.loads((_release(root) / "full.json").read_text())
    assert len(queries) == len(full) + n_drops("rubrics", "query") + n_drops("publish", "query")


def test_a_missing_generator_key_fails_before_any_request(repo_root: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from reportbench.judges.errors import FatalJudgeError

    monkeypatch.chdir(repo_root)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    p = builder_params(repo_root, tmp_path, "unused")
    p["judge"].update({"model": "openai/gpt-4.1-mini", "api_base": None})
    p["live_researchqa"]["generator_model"] = "openai/gpt-4.1-mini"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        fakes = FakeServices().install(rsps)
        with pytest.raises(FatalJudgeError, match="OPENAI_API_KEY"):
            run_stage("surveys", p, tmp_path)
    assert fakes.n_calls == 0


def test_generator_faults_are_retried_or_recorded_never_lost(built: dict[str, Any], repo_root: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """20 % injected faults (429, 500, timeouts, malformed and truncated bodies): with retries the release is
    byte-identical to the clean build; without retries every failure is a recorded drop with its reason."""
    from reportbench.stub_server import FAULT_KINDS

    monkeypatch.chdir(repo_root)
    faults = {kind: 0.2 / len(FAULT_KINDS) for kind in FAULT_KINDS}
    tmp = built["tmp"]
    for retries, root in ((8, tmp / "faulty-retried"), (0, tmp / "faulty-no-retry")):
        with stub_server_thread(responder=make_responder(repo_root / "prompts"), faults=faults, seed=5,
                                timeout_sleep_s=1.0) as s:  # fmt: skip
            p = copy.deepcopy(built["params"])
            p["judge"]["api_base"] = s.base_url
            p["judge"]["runtime"].update({"max_retries": retries, "parse_retries": 4 if retries else 0,
                                          "timeout_s": 0.5, "backoff_base_s": 0.01, "backoff_max_s": 0.05,
                                          "cache_path": str(root / "judge.sqlite")})  # fmt: skip
            if retries:
                build(p, root)
            else:  # so many failures may leave no field with 2 queries: publish then stops with one clear error
                with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
                    FakeServices().install(rsps)
                    for stage in STAGES[:-1]:
                        run_stage(stage, p, root)
            injected = sum(s.counts.get(k, 0) for k in FAULT_KINDS)
        assert injected > 0
        if retries:
            for name in ("full.json", "sources.json", "CARD.md"):
                assert (_release(root) / name).read_bytes() == (_release(tmp / "a") / name).read_bytes(), name
        else:
            work = root / "live_researchqa" / "work" / NAME
            d = pl.concat([pl.read_parquet(work / s / "dropped.parquet") for s in STAGES[:-1]])
            failed = d.filter(pl.col("reason_code").str.ends_with("_failed"))
            assert failed.height > 0 and all(("call:" in r) or ("parse:" in r) for r in failed["reason"])
