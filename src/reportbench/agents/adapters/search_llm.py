"""`search_llm`: one search call, one LLM answer with numbered citations (the papers' "search-augmented LLM" rows).

Standard library only, so it runs in any Python (reportbench's own by default). Protocol: docs/agents.md §4.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

VERSION = "reportbench-search_llm 1"
INSTRUCTIONS = (
    "Answer the research request below as a well-organised report in Markdown. Support each claim with the "
    "numbered sources given, citing them inline as [1], [2], ... Use only these sources for citations; do not "
    "write a reference list (it is appended for you)."
)


def post(url: str, body: dict[str, Any], token: str, timeout: float) -> Any:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - loopback proxy URLs only
            return json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", errors="replace")[:500]
        raise RuntimeError(f"HTTP {exc.code} from {url}: {detail}") from None


def search_query(question: str, max_chars: int) -> str:
    """The question itself, whitespace collapsed and cut (search APIs take short queries)."""
    text = " ".join(question.split())
    return text[:max_chars].rsplit(" ", 1)[0] if len(text) > max_chars else text


def run(req: dict[str, Any]) -> dict[str, Any]:
    opts = req.get("options") or {}
    timeout = float((req.get("budget") or {}).get("wall_s") or 600)
    llm, search = req["llm"], req["search"]
    query = search_query(req.get("title") or req["question"], int(opts.get("query_chars", 300)))
    found = post(
        search["base_url"].rstrip("/") + "/search",
        {"query": query, "max_results": int(search.get("max_results") or 5)},
        os.environ.get(search["api_key_env"], ""),
        timeout,
    )
    hits = [h for h in found.get("results") or [] if isinstance(h, dict) and h.get("url")]
    sources = "\n\n".join(
        f"[{i}] {h.get('title') or h['url']} ({h['url']})\n{(h.get('content') or '')[:1500]}"
        for i, h in enumerate(hits, 1)
    )
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": f"Sources:\n\n{sources or '(no results)'}\n\nRequest:\n{req['question']}"},
    ]
    body: dict[str, Any] = {"model": llm["model"], "messages": messages, "temperature": opts.get("temperature", 0)}
    if opts.get("max_tokens"):
        body["max_tokens"] = int(opts["max_tokens"])
    answer = post(
        llm["base_url"].rstrip("/") + "/chat/completions", body, os.environ.get(llm["api_key_env"], ""), timeout
    )
    text = ((answer.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
    return {
        "report_markdown": text,
        "references": [{"n": i, "url": h["url"], "title": h.get("title") or ""} for i, h in enumerate(hits, 1)],
        "queries": [query],
        "pages_read": [],  # snippets only: no page was opened
        "agent_version": VERSION,
        "models": [str(answer.get("model") or llm["model"])],
        "outcome": "ok" if text.strip() else "failed",
        "reason": None if text.strip() else "the model answered with no text",
    }


def main() -> int:
    req = json.loads(sys.stdin.read())
    try:
        result = run(req)
    except Exception as exc:  # noqa: BLE001 - reported in the result; the runner records it
        print(f"search_llm: {type(exc).__name__}: {exc}", file=sys.stderr)
        over = "budget_exceeded" in str(exc)
        result = {
            "outcome": "over_budget" if over else "failed",
            "reason": f"{type(exc).__name__}: {exc}"[:1000],
            "agent_version": VERSION,
        }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
