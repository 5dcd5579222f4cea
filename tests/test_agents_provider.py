"""`provider_deep_research` against the stub's Responses API (background mode, polling, url_citation annotations)
on ResearcherBench's demo tasks: native citations kept, usage and cost recorded, wall-time cancel, no-key fail-fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.agents.protocol import TaskRecord
from reportbench.stub_server import stub_server_thread
from reportbench.systems import SystemError_, run_system
from reportbench.types import Task

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Path:
    from reportbench import pipeline
    from reportbench.config import composed_params

    out = tmp_path_factory.mktemp("release") / "researcherbench"
    params = composed_params(["benchmarks=[researcherbench]"], conf_dir=repo_root / "conf")
    pipeline.build_release(params, "researcherbench", out)
    return out


@pytest.fixture()
def tasks(release_dir: Path) -> list[Task]:
    from reportbench.release.format import read_release

    return read_release(release_dir).tasks[:2]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(tmp_path / "agents-home"))
    return tmp_path / "agents-home"


def _spec(base_url: str, release_dir: Path, **budget: float) -> dict:
    return {
        "kind": "provider_deep_research",
        "model": "openai/o3-deep-research",
        "api_base": base_url,
        "price": {"input_per_mtok": 10.0, "output_per_mtok": 40.0},
        "budget": {"search_calls": 2, "wall_s": 30, **budget},
        "options": {"poll_s": 0.05},
        "release_dir": str(release_dir),
    }


def test_background_response_is_polled_and_its_annotations_become_citations(
    release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    with stub_server_thread() as stub:
        outcomes = run_system("o3dr", _spec(stub.base_url, release_dir), tasks, tmp_path / "run")
        assert stub.counts["responses_created"] == 2 and stub.counts["responses_polls"] >= 2
    assert [o.status for o in outcomes] == ["ok", "ok"]
    reports = [json.loads(line) for line in (tmp_path / "run" / "reports.jsonl").read_text().splitlines()]
    for report in reports:
        urls = sorted(s["url"] for s in report["sources"].values())
        assert len(urls) == 2 and all(u.startswith("https://stub-research.example/") for u in urls)
        cited = [k for sent in report["sentences"] for k in sent["citation_keys"]]
        assert sorted(cited) == urls  # each annotation span became a citation of its sentence
    raw = sorted((tmp_path / "run" / "raw").glob("*.json"))
    assert len(raw) == 2 and json.loads(raw[0].read_text())["object"] == "response"  # the native JSON, kept
    for path in sorted((tmp_path / "run" / "agent").glob("*.json")):
        rec = TaskRecord.model_validate_json(path.read_text())
        assert rec.outcome == "ok" and rec.search_backend == "provider" and len(rec.queries) == 2
        u = rec.usage
        assert u.llm_calls == 1 and u.search_calls == 2
        # the config's token rates, plus the web-search fee from the price table ($10 per 1,000 calls)
        assert u.usd == pytest.approx((u.prompt_tokens * 10 + u.completion_tokens * 40) / 1e6 + 2 * 0.01) and u.usd > 0


def test_wall_time_cancels_the_background_response(release_dir: Path, tasks: list[Task], tmp_path: Path) -> None:
    with stub_server_thread() as stub:
        stub.responses_delay_s = 30.0  # never completes within the budget
        outcomes = run_system("slow", _spec(stub.base_url, release_dir, wall_s=0.3), tasks, tmp_path / "slow")
        assert stub.counts["responses_cancelled"] == 2
    assert all(o.status == "failed" and o.reason.startswith("over_budget: wall_s") for o in outcomes)


def test_a_hosted_provider_without_its_key_fails_fast(
    release_dir: Path, tasks: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PERPLEXITYAI_API_KEY", raising=False)
    spec = {
        "kind": "provider_deep_research",
        "model": "perplexity/sonar-deep-research",
        "release_dir": str(release_dir),
    }
    with pytest.raises(SystemError_, match="PERPLEXITYAI_API_KEY"):
        run_system("pplx", spec, tasks, tmp_path / "pplx")


# ---------------------------------------------------------------------------------------------------------------
# Replays of the providers' documented response shapes (tests/fixtures/provider_replays/, each naming its sources)
# through the real clients: openai (Responses API), httpx (Perplexity's async API), google-genai (Interactions).


@pytest.fixture()
def replay():
    from provider_replay import ProviderReplay
    from reportbench.agents.search.stub import serve_in_thread

    with serve_in_thread(ProviderReplay()) as server:
        yield server


MODELS = {
    "openai": "openai/o3-deep-research",
    "perplexity": "perplexity/sonar-deep-research",
    "gemini": "gemini/deep-research-pro-preview-12-2025",
}


def _replayed(backend: str, base: str, release_dir: Path, **over: object) -> dict:
    spec = {
        "kind": "provider_deep_research",
        "model": MODELS[backend],
        "api_base": f"{base}/v1" if backend == "openai" else base,
        "budget": {"tokens": 600000, "wall_s": 30},  # the shipped budget's tokens
        "options": {"poll_s": 0.01},
        "concurrency": 1,
        "release_dir": str(release_dir),
    }
    for k, v in over.items():
        spec[k] = {**spec[k], **v} if isinstance(v, dict) and isinstance(spec.get(k), dict) else v
    return spec


def _record(run: Path) -> TaskRecord:
    return TaskRecord.model_validate_json(next((run / "agent").glob("*.json")).read_text())


def _report(run: Path) -> dict:
    return json.loads((run / "reports.jsonl").read_text().splitlines()[0])


def test_openai_replay_caps_output_at_the_model_limit_and_bills_the_search_calls(
    replay, release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    outcomes = run_system("o3", _replayed("openai", replay.base_url, release_dir), tasks[:1], tmp_path / "o3")
    assert [o.status for o in outcomes] == ["ok"]
    body = replay.bodies["openai"][0]
    # before: the budget's 600000 tokens went out as max_output_tokens (the model's limit is 100,000)
    assert body["max_output_tokens"] == 100000 and body["background"] is True
    report = _report(tmp_path / "o3")
    assert sorted(s["url"] for s in report["sources"].values()) == [
        "https://example.org/count-sketch",
        "https://example.org/sparse-attention",
    ]
    assert sum(1 for s in report["sentences"] if s["citation_keys"]) == 2
    rec = _record(tmp_path / "o3")
    assert rec.queries == ["sparse attention memory long context survey", "count sketch error bound streaming"]
    assert rec.pages_read == ["https://example.org/sparse-attention"] * 2
    u = rec.usage
    assert (u.prompt_tokens, u.completion_tokens, u.search_calls) == (60506, 22883, 4)
    # every fee: tokens at $10/$40 per million and 4 web_search_call items at $10 per 1,000 (before: tokens only)
    assert u.usd == pytest.approx(60506 * 10 / 1e6 + 22883 * 40 / 1e6 + 4 * 10 / 1000)


def test_a_replayed_812k_token_run_keeps_its_report(
    replay, release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    replay.usage["openai"] = {"input_tokens": 812000, "total_tokens": 834883}
    outcomes = run_system("o3", _replayed("openai", replay.base_url, release_dir), tasks[:1], tmp_path / "kept")
    rec = _record(tmp_path / "kept")
    assert rec.outcome == "over_budget" and rec.reason.startswith("tokens: 834883 of 600000")
    assert rec.report_file and rec.usage.usd == pytest.approx(8.12 + 22883 * 40 / 1e6 + 0.04)
    kept = tmp_path / "kept" / "raw" / f"{tasks[0].task_id}.json"
    assert json.loads(kept.read_text())["status"] == "completed"  # the paid report, kept (before: discarded)
    assert outcomes[0].status == "failed" and "report kept: raw/" in outcomes[0].reason
    # scored when the config says so, and marked
    spec = _replayed("openai", replay.base_url, release_dir, options={"score_over_budget": True})
    scored = run_system("o3s", spec, tasks[:1], tmp_path / "scored")
    assert scored[0].status == "ok" and scored[0].flags == ["over_budget"]
    assert scored[0].reason.startswith("over_budget: tokens")
    assert _report(tmp_path / "scored")["sources"]


def test_a_call_that_cannot_fit_is_refused_before_it_is_sent(
    replay, release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    spec = _replayed("openai", replay.base_url, release_dir, budget={"tokens": 800})
    outcomes = run_system("tiny", spec, tasks[:1], tmp_path / "tiny")
    assert replay.counts["openai_create"] == 0
    assert outcomes[0].reason.startswith("over_budget: refused before the call (nothing spent)")
    assert _record(tmp_path / "tiny").usage.usd == 0


def test_a_dollar_budget_caps_the_output_after_reserving_the_tool_fees(
    replay, release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    spec = _replayed("openai", replay.base_url, release_dir, budget={"usd": 1.0, "search_calls": 10})
    run_system("usd", spec, tasks[:1], tmp_path / "usd")
    body = replay.bodies["openai"][0]
    prompt = len(tasks[0].task_prompt.encode()) // 3 + 16
    assert body["max_tool_calls"] == 10
    assert body["max_output_tokens"] == int((1.0 - prompt * 10 / 1e6 - 10 * 10 / 1000) / (40 / 1e6))


@pytest.mark.parametrize("backend", ["openai", "perplexity", "gemini"])
def test_a_create_that_may_have_been_billed_is_never_resent(
    backend: str, replay, release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    replay.fail_create[backend] = 5
    outcomes = run_system(backend, _replayed(backend, replay.base_url, release_dir), tasks[:1], tmp_path / backend)
    assert replay.counts[f"{backend}_create"] == 1  # before: openai's client resent it (max_retries=2)
    assert outcomes[0].status == "failed" and "timeout after billing possible" in outcomes[0].reason


def test_perplexity_replay_bills_citation_reasoning_and_search_fees(
    replay, release_dir: Path, tasks: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from provider_replay import fixture

    monkeypatch.setenv("PERPLEXITYAI_API_KEY", "pplx-" + "0" * 8)
    outcomes = run_system("pplx", _replayed("perplexity", replay.base_url, release_dir), tasks[:1], tmp_path / "p")
    assert [o.status for o in outcomes] == ["ok"]
    sent = replay.bodies["perplexity"][0]["request"]
    assert sent["model"] == "sonar-deep-research" and sent["messages"][0]["content"] == tasks[0].task_prompt
    assert replay.counts["perplexity_create"] == 1 and replay.counts["perplexity_poll"] == 2
    report = _report(tmp_path / "p")
    assert "<think>" not in report["body"]
    assert sorted(s["url"] for s in report["sources"].values()) == [
        "https://example.org/count-sketch",
        "https://example.org/sparse-attention",
        "https://example.org/streaming",
    ]
    u = _record(tmp_path / "p").usage
    assert (u.prompt_tokens, u.completion_tokens, u.search_calls) == (19 + 30000, 4000 + 100000, 24)
    documented = fixture("perplexity_sonar_deep_research.json")["response"]["usage"]["cost"]["total_cost"]
    assert u.usd == pytest.approx(documented, abs=1e-4)  # before: $0.032 (input + output tokens only)


def test_perplexity_wall_time_leaves_no_request_open(
    replay, release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    replay.pending_polls = 10**6
    spec = _replayed("perplexity", replay.base_url, release_dir, budget={"wall_s": 0.3})
    outcomes = run_system("slow", spec, tasks[:1], tmp_path / "slow")
    assert replay.counts["perplexity_create"] == 1
    assert outcomes[0].reason.startswith("over_budget: wall_s") and "no cancel" in outcomes[0].reason


def test_gemini_deep_research_through_google_genai(
    replay, release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    outcomes = run_system("gdr", _replayed("gemini", replay.base_url, release_dir), tasks[:1], tmp_path / "g")
    assert [o.status for o in outcomes] == ["ok"]
    assert replay.bodies["gemini"][0] == {
        "agent": "deep-research-pro-preview-12-2025",
        "input": tasks[0].task_prompt,
        "background": True,
    }
    report = _report(tmp_path / "g")
    cited = [report["sources"][k]["url"] for s in report["sentences"] for k in s["citation_keys"]]
    assert cited == ["https://example.org/sparse-attention", "https://example.org/count-sketch"]  # span → [n]
    rec = _record(tmp_path / "g")
    assert rec.queries == ["sparse attention memory long context", "count sketch error bound"]
    assert rec.pages_read == ["https://example.org/sparse-attention"]
    u = rec.usage
    assert (u.prompt_tokens, u.completion_tokens, u.search_calls) == (300000, 49000, 12)
    assert u.usd == pytest.approx(300000 * 2 / 1e6 + 49000 * 12 / 1e6 + 12 * 0.035)


def test_gemini_resumes_by_interaction_id_after_a_kill(
    replay, release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    """A run killed after the create: the saved id is polled, no second interaction is created (paid once)."""
    import httpx

    from reportbench.agents.envs import agents_home
    from reportbench.agents.runner import AgentRun, config_hash, parse_config

    spec = _replayed("gemini", replay.base_url, release_dir)
    jid = httpx.post(f"{replay.base_url}/v1beta/interactions", json={"agent": "x", "background": True}).json()["id"]
    work = agents_home() / "runs" / config_hash(parse_config("gdr", spec), "researcherbench", "gdr")
    key = AgentRun._key(None, tasks[0])  # type: ignore[arg-type]
    work.mkdir(parents=True)
    (work / f"{key}.pending.json").write_text(json.dumps({"backend": "gemini", "id": jid}))
    outcomes = run_system("gdr", spec, tasks[:1], tmp_path / "g")
    assert [o.status for o in outcomes] == ["ok"]
    assert replay.counts["gemini_create"] == 1 and replay.jobs[jid]["polls"] >= 2
    assert not (work / f"{key}.pending.json").exists()


def test_agents_ls_lists_the_three_provider_backends(capsys: pytest.CaptureFixture[str]) -> None:
    from reportbench.cli import main

    assert main(["agents", "ls"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert "google-genai 2.34.0" in rows["gemini"] and "gemini/deep-research-pro-preview-12-2025" in rows["gemini"]
    assert "openai/o3-deep-research" in rows["openai"] and "perplexity/sonar-deep-research" in rows["perplexity"]


def test_price_table_rows_name_their_source_and_date() -> None:
    import yaml

    from reportbench.agents.provider_prices import TABLE, lookup, table_version

    rows = yaml.safe_load(TABLE.read_text())["models"]
    assert table_version() and set(rows) >= {
        "o3-deep-research",
        "sonar-deep-research",
        "deep-research-pro-preview-12-2025",
    }
    for name, row in rows.items():
        assert row["source"].strip() and str(row["as_of"]), name
    assert lookup("openai/o3-deep-research-2025-06-26").model == "o3-deep-research"  # a dated snapshot
    assert lookup("openai/gpt-4.1") is None


def test_gemini_without_a_key_fails_fast_naming_both_variables(
    release_dir: Path, tasks: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    spec = {"kind": "provider_deep_research", "model": MODELS["gemini"], "release_dir": str(release_dir)}
    with pytest.raises(SystemError_, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        run_system("gdr", spec, tasks, tmp_path / "gdr")


def test_the_default_backends_carry_no_variant_and_custom_tools_do() -> None:
    from reportbench.agents.provider import provider_variant
    from reportbench.agents.runner import parse_config

    for model in MODELS.values():
        assert provider_variant(parse_config("s", {"kind": "provider_deep_research", "model": model})) == []
    custom = {"kind": "provider_deep_research", "model": MODELS["openai"], "options": {"tools": [{"type": "mcp"}]}}
    assert provider_variant(parse_config("s", custom)) == [("tools", "mcp")]
