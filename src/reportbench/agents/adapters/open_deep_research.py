"""Adapter: LangChain's open_deep_research (PyPI `open-deep-research`), run inside its own venv.

The LangGraph agent (clarify -> research brief -> supervisor with parallel researchers -> compression ->
final report) is run unchanged from the wheel, non-interactively (`allow_clarification: false`), with
Tavily as its search API and every model role (research, summarization, compression, final report) set to
`openai:<llm.model>`. Redirection, without patching the agent's logic:
- LLM: `init_chat_model("openai:…")` builds langchain-openai's ChatOpenAI, which reads `OPENAI_API_BASE` /
  `OPENAI_BASE_URL` and `OPENAI_API_KEY` from the environment: we set them to the budget proxy.
- Search: the agent builds `tavily.AsyncTavilyClient(api_key=…)` with no base URL argument, so this script
  rebinds the name in `open_deep_research.utils` to a subclass whose default `api_base_url` is the search
  proxy's, and records each query and each URL whose raw content the agent read (and summarised).
The final report ends with ODR's own `### Sources` list (`[n] Title: URL`); it is parsed into the
references (entries without a URL are dropped and reported in `reason`, never guessed).

Options (request `options`): `configurable` (dict merged into ODR's Configuration, e.g.
`max_concurrent_research_units`, `max_researcher_iterations`, `max_react_tool_calls`), `recursion_limit`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import sys
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

RECURSION_LIMIT = 100
_SOURCES_HEADING = re.compile(r"(?im)^\s{0,3}#{1,6}\s*(sources|references)\s*:?\s*$")
_ENTRY = re.compile(r"^\s*(?:[-*]\s*)?\[?(\d+)[\].)]?\s*(.*?)\s*(https?://[^\s<>)\]]+)", re.M)


def split_sources(report: str) -> tuple[str, list[dict[str, Any]], list[str]]:
    """(body without the sources section, [{n, url, title}], lines of the section that were not entries)."""
    m = _SOURCES_HEADING.search(report)
    if not m:
        return report, [], []
    level = len(re.match(r"\s*(#+)", m.group(0)).group(1))  # type: ignore[union-attr]
    rest = report[m.end():]
    nxt = re.search(rf"(?m)^\s{{0,3}}#{{1,{level}}}\s", rest)
    section = rest[: nxt.start()] if nxt else rest
    tail = rest[nxt.start():] if nxt else ""
    refs: dict[int, dict[str, Any]] = {}
    skipped = []
    for line in section.splitlines():
        if not line.strip():
            continue
        e = _ENTRY.match(line)
        if e is None:
            skipped.append(line.strip())
            continue
        n, title, url = int(e.group(1)), e.group(2).strip().rstrip(":-–— ").strip(), e.group(3).rstrip(".,;")
        refs.setdefault(n, {"n": n, "url": url, "title": title})
    body = (report[: m.start()].rstrip() + ("\n\n" + tail.lstrip() if tail.strip() else "")).rstrip() + "\n"
    return body, [refs[n] for n in sorted(refs)], skipped


def _patch_tavily(req: dict[str, Any], stats: dict[str, Any]) -> None:
    import open_deep_research.utils as odr_utils
    from tavily import AsyncTavilyClient

    base = str(req["search"]["base_url"]).rstrip("/")
    key = common.search_key(req)

    class ProxyTavily(AsyncTavilyClient):  # type: ignore[misc, valid-type]
        def __init__(self, api_key: str | None = None, **kw: Any) -> None:
            kw.setdefault("api_base_url", base)
            super().__init__(api_key=api_key or key, **kw)

        async def search(self, query: str, *a: Any, **kw: Any) -> Any:
            stats["queries"].append(query)
            out = await super().search(query, *a, **kw)
            for r in (out or {}).get("results") or []:
                if r.get("raw_content") and r.get("url"):
                    stats["pages_read"].append(str(r["url"]))
            return out

    odr_utils.AsyncTavilyClient = ProxyTavily


def main(req: dict[str, Any]) -> dict[str, Any]:
    llm = req["llm"]
    os.environ["OPENAI_API_KEY"] = common.llm_key(req)
    os.environ["OPENAI_API_BASE"] = common.llm_base(req)
    os.environ["OPENAI_BASE_URL"] = common.llm_base(req)
    os.environ["TAVILY_API_KEY"] = common.search_key(req)
    os.environ.setdefault("LANGSMITH_TRACING", "false")
    os.environ["GET_API_KEYS_FROM_CONFIG"] = "false"
    stats: dict[str, Any] = {"queries": [], "pages_read": []}
    _patch_tavily(req, stats)
    from langchain_core.messages import HumanMessage
    from open_deep_research.deep_researcher import deep_researcher

    opts = req.get("options") or {}
    model = f"openai:{llm['model']}"
    configurable: dict[str, Any] = {
        "search_api": "tavily",
        "allow_clarification": False,
        "research_model": model,
        "summarization_model": model,
        "compression_model": model,
        "final_report_model": model,
        **(opts.get("configurable") or {}),
    }
    config = {"configurable": configurable, "recursion_limit": int(opts.get("recursion_limit") or RECURSION_LIMIT)}
    state = asyncio.run(deep_researcher.ainvoke({"messages": [HumanMessage(content=req["question"])]}, config))
    report = str(state.get("final_report") or "")
    if not report.strip() or report.startswith("Error generating final report"):
        return {"report_markdown": "", "references": [], "queries": stats["queries"],
                "pages_read": sorted(set(stats["pages_read"])), "agent_version": common.package_version(
                    "open-deep-research"), "models": [llm["model"]], "outcome": "failed",
                "reason": common.classify(RuntimeError(report[:400] or "no final report"))[1]}
    body, refs, skipped = split_sources(report)
    reason = None
    if skipped:
        reason = f"{len(skipped)} line(s) of the Sources section had no [n] ... URL entry and were dropped"
    return {
        "report_markdown": common.render(body, refs) if refs else body,
        "references": refs,
        "queries": stats["queries"],
        "pages_read": sorted(set(stats["pages_read"])),
        "agent_version": common.package_version("open-deep-research"),
        "models": [llm["model"]],
        "outcome": "ok",
        "reason": reason,
    }


if __name__ == "__main__":
    sys.exit(common.run(main))
