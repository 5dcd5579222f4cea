"""Adapter: smolagents' open deep-research agent, as a reportbench agent kind (runs inside its own venv).

The "open Deep Research" agent of Hugging Face lives in smolagents' repository (examples/open_deep_research),
not in the `smolagents` wheel, and its browser tools need SerpAPI and a text browser of its own. This adapter
rebuilds its architecture from the wheel's public classes, with our search backend instead of SerpAPI:
a manager `CodeAgent` (max 12 steps, plan every 4) that delegates to a managed `ToolCallingAgent`
"search_agent" (max 20 steps, plan every 4) holding two tools, `web_search` (the configured Tavily- or
Exa-compatible API) and `visit_page` (plain HTTP GET, text only). Each search result is shown to the
model with a stable number; the report cites those numbers and this script appends the reference list.

Options: `max_steps` (both agents; defaults 12 and 20 as in the example). Protocol: one JSON request on stdin,
one JSON result on stdout (see _oss_common.run). Imports only smolagents, openai and the stdlib.
"""

from __future__ import annotations

import html
import importlib.util
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
# this file's name would shadow the agent's own package (open_deep_research is even a namespace package, which
# any plain module of that name beats): our folder leaves sys.path and the shared helpers load by file path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_spec = importlib.util.spec_from_file_location("_oss_common", _HERE / "_oss_common.py")
assert _spec is not None and _spec.loader is not None
common = importlib.util.module_from_spec(_spec)
sys.modules["_oss_common"] = common
_spec.loader.exec_module(common)

MANAGER_MAX_STEPS = 12
SEARCH_MAX_STEPS = 20
PLANNING_INTERVAL = 4
PAGE_CHARS = 6000
SAFE_IMPORTS = ["re", "json", "math", "datetime", "collections", "itertools", "statistics"]

TASK = (
    "Write a well-researched report in Markdown that answers the research question below.\n"
    "Use search_agent to find sources. Every factual sentence must cite its source with the bracketed\n"
    "number that web_search printed next to the result, e.g. [3]; cite only numbers you were shown.\n"
    "Do not write a reference list: it is appended for you. Return the whole report with final_answer.\n\n"
    "Research question: {question}"
)


def _page_text(raw: bytes, limit: int = PAGE_CHARS) -> str:
    text = raw.decode("utf-8", "replace")
    text = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", text)
    text = html.unescape(re.sub(r"(?s)<[^>]+>", " ", text))
    return re.sub(r"\s+", " ", text).strip()[:limit]


def build_tools(req: dict[str, Any], sources: common.Sources, stats: dict[str, Any]) -> list[Any]:
    from smolagents import Tool

    class WebSearch(Tool):
        name = "web_search"
        description = "Searches the web; returns numbered results (cite them by their number in brackets)."
        inputs = {"query": {"type": "string", "description": "the search query"}}
        output_type = "string"

        def forward(self, query: str) -> str:
            stats["queries"].append(query)
            hits = common.search_http(req, query)
            if not hits:
                return "No results."
            lines = []
            for h in hits:
                n = sources.add(h["url"], h["title"])
                lines.append(f"[{n}] {h['title']}\nURL: {h['url']}\n{h['content']}")
            return "\n\n".join(lines)

    class VisitPage(Tool):
        name = "visit_page"
        description = "Reads the text of a web page found by web_search (give its URL)."
        inputs = {"url": {"type": "string", "description": "the page URL"}}
        output_type = "string"

        def forward(self, url: str) -> str:
            if not url.startswith(("http://", "https://")):
                return "Only http(s) URLs can be visited."
            try:
                rq = urllib.request.Request(url, headers={"User-Agent": "reportbench-agent/1"})
                with urllib.request.urlopen(rq, timeout=30) as resp:
                    raw = resp.read(2_000_000)
            except Exception as exc:  # a dead page is an observation for the agent, not a crash
                return f"Could not read {url}: {type(exc).__name__}"
            stats["pages_read"].append(url)
            n = sources.add(url)
            return f"[{n}] {url}\n{_page_text(raw)}"

    return [WebSearch(), VisitPage()]


def main(req: dict[str, Any]) -> dict[str, Any]:
    from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent

    opts = req.get("options") or {}  # budgets are enforced by the proxies; max_steps only shapes the agent
    llm = req["llm"]
    model = OpenAIServerModel(model_id=llm["model"], api_base=common.llm_base(req), api_key=common.llm_key(req),
                              client_kwargs={"max_retries": 2})
    sources = common.Sources()
    stats: dict[str, Any] = {"queries": [], "pages_read": []}
    search_agent = ToolCallingAgent(
        tools=build_tools(req, sources, stats),
        model=model,
        max_steps=int(opts.get("max_steps") or SEARCH_MAX_STEPS),
        planning_interval=PLANNING_INTERVAL,
        name="search_agent",
        description="A team member that searches the web and reads pages to answer a question; "
        "give it a full-sentence task with all context.",
        provide_run_summary=True,
        verbosity_level=0,
    )
    manager = CodeAgent(
        tools=[],
        model=model,
        managed_agents=[search_agent],
        max_steps=int(opts.get("max_steps") or MANAGER_MAX_STEPS),
        planning_interval=PLANNING_INTERVAL,
        additional_authorized_imports=SAFE_IMPORTS,
        verbosity_level=0,
    )
    result = manager.run(TASK.format(question=req["question"]), return_full_result=True)
    body = str(result.output or "")
    outcome = "ok" if result.state == "success" and body.strip() else "failed"
    reason = None if outcome == "ok" else f"agent ended with state {result.state!r} and {len(body)} chars"
    cited = common.cited_numbers(body)
    return {
        "report_markdown": common.render(body, sources.references(cited)) if body.strip() else "",
        "references": sources.references(cited),
        "queries": stats["queries"],
        "pages_read": stats["pages_read"],
        "agent_version": common.package_version("smolagents"),
        "models": [llm["model"]],
        "outcome": outcome,
        "reason": reason,
    }


if __name__ == "__main__":
    sys.exit(common.run(main))
