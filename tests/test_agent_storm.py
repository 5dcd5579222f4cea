"""storm: the adapter runs STORM's real wiki pipeline (dspy modules, TavilySearchRM) offline.

The scripted LLM answers each of STORM's dspy signatures (personas, questions, queries, expert answers,
outline, sections, lead) from the instruction it recognises; the search stub serves Tavily results. The whole
pipeline runs once, through `dvc repro` (tests/test_agent_oss_dvc.py[storm], with this script): STORM's `[n]`
markers resolve through `url_to_info.json` to the URLs the search returned, the scripted queries are recorded,
the outline's sections reach the parsed report, and the run is marked as using the hashed encoder. Here: the
encoder's failure paths, which stop before any LLM call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agent_stubs import STUB_ENV, ScriptedLLM, SearchStub, last_user_text, make_request, run_adapter

pytestmark = pytest.mark.integration
NEEDS_AGENT_VENV = True  # run last: CI builds the venvs in the background meanwhile (tests/conftest.py)

KIND = "storm"
OFFLINE = {"encoder": "hashed", "max_conv_turn": 2, "max_perspective": 1, "max_thread_num": 1}


def storm_script(body: dict[str, Any]) -> dict[str, Any]:
    """Plays the LM behind each STORM dspy signature (first words of its instruction pick the answer)."""
    p = last_user_text(body)
    if "recommend some Wikipedia pages" in p:
        return {"content": "find related pages.\n\nRelated Topics: N/A"}
    if "select a group of Wikipedia editors" in p:
        return {"content": "pick editors.\n\nPersonas:\n1. Citation auditor: checks each cited page."}
    if "Ask good questions" in p:
        if p.count("Expert:") >= 1:
            return {"content": "done.\n\nQuestion: Thank you so much for your help!"}
        return {"content": "ask.\n\nQuestion: How do agents verify their citations?"}
    if "What do you type in the search box" in p:
        return {"content": "- how agents verify citations"}
    if "You are an expert who can use information" in p:
        return {"content": "Agents verify each citation against the cited page [1]. Retrieval grounds claims [2]."}
    if "outline for a Wikipedia page" in p:
        return {"content": "# Verification\n# Grounding"}
    if "Write a Wikipedia section" in p:
        titles = re.findall(r"The section you need to write:\s*(.+)", p)  # the last one: the first is a template
        title = (titles[-1].strip() if titles else "Verification").lstrip("# ")
        return {"content": f"# {title}\n\nAgents check every citation against its source [1]. "
                           "Grounding in retrieved text reduces errors [2]."}
    if "Write a lead section" in p:
        return {"content": "Deep-research agents keep citations accurate by checking them [1]."}
    return {"content": "stub text"}


def test_storm_rejects_unknown_encoder(tmp_path: Path) -> None:
    with ScriptedLLM(storm_script) as llm, SearchStub() as search:
        result, _ = run_adapter(KIND, make_request(llm, search, tmp_path, options={"encoder": "nope"}), env=STUB_ENV)
        assert llm.chat_bodies() == []
    assert result["outcome"] == "failed" and "options.encoder" in result["reason"]


def test_storm_default_encoder_fails_fast_without_the_model(tmp_path: Path) -> None:
    """STORM as published needs sentence-transformers' model: without it (offline, not cached) the task fails
    before any LLM call, naming the way out."""
    env = {**STUB_ENV, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    with ScriptedLLM(storm_script) as llm, SearchStub() as search:
        result, _ = run_adapter(KIND, make_request(llm, search, tmp_path), env=env)
        assert llm.chat_bodies() == [] and search.search_count() == 0
    assert result["outcome"] == "failed"
    assert "paraphrase-MiniLM-L6-v2" in result["reason"] and "options.encoder: hashed" in result["reason"]
