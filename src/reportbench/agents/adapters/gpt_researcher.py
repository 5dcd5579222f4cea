"""Adapter: GPT Researcher (PyPI `gpt-researcher`), run inside its own venv.

`GPTResearcher(query, report_type="research_report")` runs unchanged: it picks an agent role, plans
sub-queries, searches (Tavily retriever), scrapes the result pages (`bs` scraper: plain HTTP GET), compresses
the scraped text with embeddings, and writes an APA-style report with inline markdown-link citations.
Redirection, from gpt-researcher's own settings:
- LLM and embeddings: `FAST_LLM`, `SMART_LLM`, `STRATEGIC_LLM` = `openai:<llm.model>` and `EMBEDDING` =
  `openai:<options.embedding_model>` (default `text-embedding-3-small`), with `OPENAI_BASE_URL` /
  `OPENAI_API_KEY` pointing at the budget proxy (gpt-researcher passes OPENAI_BASE_URL to both clients).
  The proxy must therefore also answer `POST /v1/embeddings`.
- Search: the Tavily retriever hard-codes `https://api.tavily.com/search` in its constructor; this script
  wraps the constructor to point `base_url` at the search proxy and to record each query.
Citations: every markdown link in the report whose URL is a source the agent visited becomes a numbered
marker `[n]` (numbers by first appearance); gpt-researcher's own `## References` section is replaced by the
numbered list. Links to URLs the agent never retrieved stay plain links (never mapped by guess).

Options: `report_type` (default `research_report`), `embedding_model`, `settings` (extra gpt-researcher settings,
set as its environment variables, e.g. {"MAX_SEARCH_RESULTS_PER_QUERY": "5", "TOTAL_WORDS": "1200"}).
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
# this file's name would shadow the agent's own package (`gpt_researcher`): our folder leaves sys.path and the
# shared helpers load by file path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_spec = importlib.util.spec_from_file_location("_oss_common", _HERE / "_oss_common.py")
assert _spec is not None and _spec.loader is not None
common = importlib.util.module_from_spec(_spec)
sys.modules["_oss_common"] = common
_spec.loader.exec_module(common)

_LINK = re.compile(r"(?P<open>\()?\[(?P<text>[^\]]*)\]\((?P<url>https?://[^)\s]+)\)(?P<close>\))?")
_REF_HEADING = re.compile(r"(?im)^\s{0,3}#{1,6}\s*(references|sources|bibliography)\s*:?\s*$")


def number_links(report: str, known: dict[str, str]) -> tuple[str, list[dict[str, Any]]]:
    """(body with links to known URLs replaced by [n], references) — the report's own reference section dropped.

    `known` maps each URL the agent retrieved to its title. `([Author, 2024](url))` becomes `[n]`;
    `[text](url)` becomes `text [n]`.
    """
    m = _REF_HEADING.search(report)
    body = report[: m.start()] if m else report
    sources = common.Sources()

    def repl(match: re.Match[str]) -> str:
        url = match.group("url").rstrip(".,;")
        if url not in known:
            return match.group(0)
        n = sources.add(url, known.get(url, ""))
        if match.group("open") and match.group("close"):  # ([Author, 2024](url)) -> [n]
            return f"[{n}]"
        return f"{match.group('open') or ''}{match.group('text')} [{n}]{match.group('close') or ''}"

    return _LINK.sub(repl, body).rstrip() + "\n", sources.references()


def _patch_tavily(req: dict[str, Any], stats: dict[str, Any]) -> None:
    from gpt_researcher.retrievers.tavily import tavily_search as mod

    url = str(req["search"]["base_url"]).rstrip("/") + "/search"
    original_init = mod.TavilySearch.__init__
    original_search = mod.TavilySearch._search

    def init(self: Any, *a: Any, **kw: Any) -> None:
        original_init(self, *a, **kw)
        self.base_url = url

    def search(self: Any, query: str, *a: Any, **kw: Any) -> Any:
        stats["queries"].append(query)
        return original_search(self, query, *a, **kw)

    mod.TavilySearch.__init__ = init
    mod.TavilySearch._search = search


def _tiktoken_fallback() -> bool:
    """gpt-researcher's own cost estimate and langchain's embedding chunking load tiktoken encodings, which
    tiktoken downloads on first use. Where that cannot happen (offline, no TIKTOKEN_CACHE_DIR), the estimate
    becomes a word count and embedding inputs go untokenised (gpt-researcher's chunks are ~1000 chars).
    Costs recorded by reportbench come from the budget proxy either way. True when the fallback is applied."""
    import tiktoken

    try:
        tiktoken.get_encoding("o200k_base")
        return False
    except Exception:  # network or cache error: the encodings cannot be had here
        pass
    from gpt_researcher.context import compression
    from gpt_researcher.utils import costs, llm

    def llm_cost(input_content: str, output_content: str) -> float:
        return (len(str(input_content).split()) * costs.INPUT_COST_PER_TOKEN
                + len(str(output_content).split()) * costs.OUTPUT_COST_PER_TOKEN)

    def embedding_cost(model: str, docs: list[Any]) -> float:
        return sum(len(str(d).split()) for d in docs) * costs.EMBEDDING_COST

    costs.estimate_llm_cost = llm.estimate_llm_cost = llm_cost
    costs.estimate_embedding_cost = compression.estimate_embedding_cost = embedding_cost
    os.environ["EMBEDDING_KWARGS"] = '{"check_embedding_ctx_length": false}'
    print("gpt_researcher adapter: tiktoken encodings unavailable; word-count cost estimate", file=sys.stderr)
    return True


def main(req: dict[str, Any]) -> dict[str, Any]:
    llm = req["llm"]
    opts = req.get("options") or {}
    model = f"openai:{llm['model']}"
    os.environ.update({
        "OPENAI_API_KEY": common.llm_key(req),
        "OPENAI_BASE_URL": common.llm_base(req),
        "FAST_LLM": model,
        "SMART_LLM": model,
        "STRATEGIC_LLM": model,
        "EMBEDDING": f"openai:{opts.get('embedding_model') or 'text-embedding-3-small'}",
        "RETRIEVER": "tavily",
        "TAVILY_API_KEY": common.search_key(req),
        "SCRAPER": "bs",
        "REPORT_SOURCE": "web",
        "LANGSMITH_TRACING": "false",
    })
    os.environ.update({str(k): str(v) for k, v in (opts.get("settings") or {}).items()})
    workdir = Path(req.get("workdir") or ".")
    os.chdir(workdir)  # gpt-researcher writes outputs/ and logs/ under the working directory
    stats: dict[str, Any] = {"queries": []}
    _patch_tavily(req, stats)
    _tiktoken_fallback()
    from gpt_researcher import GPTResearcher

    async def go() -> tuple[str, Any]:
        researcher = GPTResearcher(query=req["question"], report_type=str(opts.get("report_type") or
                                                                             "research_report"), verbose=False)
        await researcher.conduct_research()
        return await researcher.write_report(), researcher

    report, researcher = asyncio.run(go())
    visited = [str(u) for u in researcher.get_source_urls()]
    known: dict[str, str] = {u: "" for u in visited}
    scraped = []
    for s in researcher.get_research_sources() or []:
        if isinstance(s, dict) and s.get("url"):
            known[str(s["url"])] = str(s.get("title") or known.get(str(s["url"])) or "")
            if s.get("raw_content"):
                scraped.append(str(s["url"]))
    base = {"queries": stats["queries"], "pages_read": sorted(set(scraped)),
            "agent_version": common.package_version("gpt-researcher"), "models": [llm["model"]]}
    if not str(report or "").strip():
        return {**base, "report_markdown": "", "references": [], "outcome": "failed",
                "reason": "gpt-researcher wrote an empty report"}
    body, refs = number_links(str(report), known)
    return {**base, "report_markdown": common.render(body, refs) if refs else body, "references": refs,
            "outcome": "ok", "reason": None}


if __name__ == "__main__":
    sys.exit(common.run(main))
