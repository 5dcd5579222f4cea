"""smolagents_deep_research: the adapter runs the real smolagents CodeAgent + ToolCallingAgent offline.

The scripted LLM plays both agents through their own protocols (code blocks for the manager, tool calls
for the search agent, plain text for plans); the search stub serves Tavily/Exa results and pages. The
test checks what reportbench relies on: one JSON line, a report whose markers resolve through the
appended reference list to URLs the search actually returned, the queries and pages counted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agent_stubs import STUB_ENV, ScriptedLLM, SearchStub, all_text, make_request, run_adapter

pytestmark = pytest.mark.integration
NEEDS_AGENT_VENV = True  # run last: CI builds the venvs in the background meanwhile (tests/conftest.py)

KIND = "smolagents_deep_research"

REPORT = (
    "# Keeping citations accurate\\n\\n"
    "Agents retrieve before they write, which grounds claims in sources [1]. "
    "Checking each citation against the page it names catches mistakes [2].\\n"
)


def smol_script(body: dict[str, Any]) -> dict[str, Any]:
    """Plays smolagents' manager (CodeAgent) and search agent (ToolCallingAgent)."""
    if "<end_plan>" in (body.get("stop") or []):
        return {"content": "1. Ask the search agent for sources.\n2. Write the report.\n<end_plan>"}
    text = all_text(body)
    if body.get("tools"):  # the search agent
        if "Stub notes on" not in text:
            return {"tool_calls": [{"name": "web_search", "arguments": {"query": "citation accuracy agents"}}]}
        if "Stub page" not in text:
            url = re.findall(r"URL: (\S+)", text)[0]
            return {"tool_calls": [{"name": "visit_page", "arguments": {"url": url}}]}
        return {"tool_calls": [{"name": "final_answer",
                                "arguments": {"answer": "Sources [1] and [2] discuss grounding and checking."}}]}
    if "Sources [1] and [2]" not in text:  # the manager, before delegating
        return {"content": 'Thought: delegate.\n<code>\nnotes = search_agent(task="Find sources on citation '
                           'accuracy of research agents.")\nprint(notes)\n</code>'}
    return {"content": f'Thought: write it.\n<code>\nfinal_answer("{REPORT}")\n</code>'}


@pytest.mark.parametrize("backend", ["tavily", "exa"])
def test_smolagents_adapter_end_to_end(tmp_path: Path, backend: str) -> None:
    with ScriptedLLM(smol_script) as llm, SearchStub() as search:
        result, stderr = run_adapter(KIND, make_request(llm, search, tmp_path, backend=backend), env=STUB_ENV)
        assert result["outcome"] == "ok", (result, stderr[-3000:])
        assert search.search_count() == 1
        path, sent = [(p, b) for p, b in search.requests if p.endswith("/search")][0]
        assert path == f"/{backend}/search" and ("numResults" in sent) == (backend == "exa")
    report = result["report_markdown"]
    assert "## References" in report and "[1]" in report and "[2]" in report
    refs = {r["n"]: r["url"] for r in result["references"]}
    assert set(refs) == {1, 2}
    assert all(u.startswith(search.base_url + "/page/") for u in refs.values())
    for n, url in refs.items():
        assert f"[{n}] " in report and url in report
    assert result["queries"] == ["citation accuracy agents"]
    assert result["pages_read"] == [refs[1]]
    assert result["agent_version"].startswith("smolagents ")
    assert len(llm.chat_bodies()) >= 4
    assert "sk-stub-llm-key" not in stderr + str(result)


def test_smolagents_adapter_llm_failure_is_failed_with_reason(tmp_path: Path) -> None:
    def broken(body: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model down")

    with ScriptedLLM(broken) as llm, SearchStub() as search:
        result, _ = run_adapter(KIND, make_request(llm, search, tmp_path), env=STUB_ENV)
    assert result["outcome"] == "failed"
    assert result["reason"]
    assert result["report_markdown"] == ""


def test_smolagents_adapter_budget_refusal_is_over_budget(tmp_path: Path) -> None:
    """The budget proxy's refusal (HTTP 402 budget_exceeded) ends the task as over_budget, not failed."""
    calls: list[int] = []

    def budget(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) > 2:
            return {"error_status": 402, "error": {"type": "budget_exceeded", "message": "llm_calls: 2 used"}}
        return smol_script(body)

    with ScriptedLLM(budget) as llm, SearchStub() as search:
        result, _ = run_adapter(KIND, make_request(llm, search, tmp_path), env=STUB_ENV)
    assert result["outcome"] == "over_budget", result
    assert "budget_exceeded" in result["reason"] or "402" in result["reason"]
