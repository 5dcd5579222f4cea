"""Both of reportbench's own agent kinds on one demo task of EVERY benchmark (stub LLM, stub search, stub Responses
API): each gets the benchmark's exact task prompt and leaves a report its benchmark's adapter parses with sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.agents.search.stub import stub_search_thread
from reportbench.stub_server import stub_server_thread
from reportbench.systems import run_system
from test_agents_runner import agent_responder

pytestmark = pytest.mark.integration

BENCHMARKS = ["deepscholar", "researcherbench", "deer", "researchqa", "liveresearchbench"]


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_agent_kinds_on_one_demo_task(
    benchmark: str, repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench import pipeline
    from reportbench.config import composed_params
    from reportbench.release.format import read_release

    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(tmp_path / "home"))
    params = composed_params([f"benchmarks=[{benchmark}]"], conf_dir=repo_root / "conf")
    release = tmp_path / "release"
    pipeline.build_release(params, benchmark, release)
    task = read_release(release).tasks[0]
    seen: list[str] = []

    def responder(messages: list[dict], response_format: dict | None) -> str:
        seen.append(str(messages[-1]["content"]))
        return agent_responder(messages, response_format)

    with stub_server_thread(responder=responder) as llm, stub_search_thread() as search:
        specs = {
            "search_llm": {
                "kind": "search_llm",
                "model": "openai/stub",
                "api_base": llm.base_url,
                "search": {"backend": "exa", "api_base": search.exa_url, "max_results": 2},
            },
            "deep": {
                "kind": "provider_deep_research",
                "model": "openai/o4-mini-deep-research",
                "api_base": llm.base_url,
                "options": {"poll_s": 0.05},
            },
        }
        for name, spec in specs.items():
            outcomes = run_system(name, {**spec, "release_dir": str(release)}, [task], tmp_path / name)
            assert [o.status for o in outcomes] == ["ok"], outcomes
            report = json.loads((tmp_path / name / "reports.jsonl").read_text())
            assert report["task_id"] == task.task_id and len(report["sources"]) == 2
            assert any(s["citation_keys"] for s in report["sentences"])
        assert search.counts["exa"] == 1 and llm.counts["responses_created"] == 1
    assert len(seen) == 1 and task.task_prompt in seen[0]  # the benchmark's exact task prompt
    record = json.loads(next((tmp_path / "search_llm" / "agent").glob("*.json")).read_text())
    assert record["queries"] and record["outcome"] == "ok"
