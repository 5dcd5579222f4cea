"""Shared helpers of the open-source agents' adapter scripts (stdlib only: runs inside each agent's venv).

Why a sibling module: the four adapters (storm, open_deep_research, gpt_researcher,
smolagents_deep_research) speak the same stdin/stdout protocol and all turn an agent's sources into a
numbered reference list; each adapter imports this file from its own directory (`sys.path[0]`).
Nothing here imports reportbench: the agent's venv does not have it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import traceback
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_REASON = 500


@dataclass
class Sources:
    """URL -> citation number, in the order the agent first saw each URL (numbers never change)."""

    by_url: dict[str, int] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)

    def add(self, url: str, title: str = "") -> int:
        url = url.strip()
        if url not in self.by_url:
            self.by_url[url] = len(self.by_url) + 1
        if title and not self.titles.get(url):
            self.titles[url] = title.strip()
        return self.by_url[url]

    def references(self, cited: set[int] | None = None) -> list[dict[str, Any]]:
        """[{n, url, title}] sorted by n; only the numbers in `cited` when given."""
        return [
            {"n": n, "url": url, "title": self.titles.get(url, "")}
            for url, n in sorted(self.by_url.items(), key=lambda kv: kv[1])
            if cited is None or n in cited
        ]


_MARKER = re.compile(r"\[(\d+(?:\s*[,–-]\s*\d+)*)\]")


def cited_numbers(text: str) -> set[int]:
    """Numbers used in [n], [n, m] and [n-m] markers."""
    out: set[int] = set()
    for group in _MARKER.findall(text):
        for part in re.split(r"\s*,\s*", group):
            bounds = re.split(r"\s*[–-]\s*", part)
            if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
                lo, hi = int(bounds[0]), int(bounds[1])
                if 0 < hi - lo < 50:
                    out.update(range(lo, hi + 1))
                    continue
            if part.strip().isdigit():
                out.add(int(part))
    return out


def render(body: str, refs: list[dict[str, Any]]) -> str:
    """The report: the agent's body, then `## References` with one `[n] title. url` line per source."""
    lines = [body.rstrip(), "", "## References", ""]
    for r in refs:
        title = (r.get("title") or "").replace("\n", " ").strip()
        lines.append(f"[{r['n']}] {title + '. ' if title else ''}{r['url']}")
    return "\n".join(lines).rstrip() + "\n"


def read_request() -> dict[str, Any]:
    """The task JSON from stdin; a clear error naming the missing field."""
    req = json.loads(sys.stdin.read() or "{}")
    for key in ("task_id", "question", "llm", "search"):
        if key not in req:
            raise SystemExit(f"adapter: request lacks field {key!r}")
    return req


def secret(env_name: str | None) -> str:
    """A key from the environment (never from the request itself); '' when unset."""
    return os.environ.get(env_name or "", "") if env_name else ""


def llm_base(req: dict[str, Any]) -> str:
    return str(req["llm"]["base_url"]).rstrip("/")


def llm_key(req: dict[str, Any]) -> str:
    return secret(req["llm"].get("api_key_env")) or "unused-key"


def search_key(req: dict[str, Any]) -> str:
    return secret(req["search"].get("api_key_env")) or "unused-key"


def _redact(text: str) -> str:
    """Blank every secret-looking environment value (names ending in KEY/TOKEN/SECRET) out of `text`."""
    for name, value in os.environ.items():
        if len(value) >= 8 and name.upper().endswith(("KEY", "TOKEN", "SECRET")) and value in text:
            text = text.replace(value, "***")
    return re.sub(r"(sk-|tvly-)[A-Za-z0-9_\-]{6,}", r"\1***", text)


def classify(exc: BaseException) -> tuple[str, str]:
    """(outcome, reason) for an agent's exception: the budget proxy's refusals (HTTP 402, `budget_exceeded`) are
    `over_budget` (the runner also sets it from the proxies' own counts, whatever we say)."""
    text = f"{type(exc).__name__}: {exc}"
    low = text.lower()
    outcome = "over_budget" if ("budget_exceeded" in low or "over_budget" in low or "402" in low) else "failed"
    return outcome, _redact(text)[:MAX_REASON]


def search_http(req: dict[str, Any], query: str, k: int | None = None) -> list[dict[str, str]]:
    """One search through the configured backend's HTTP API (Tavily- or Exa-compatible): [{url,title,content}]."""
    s = req["search"]
    backend = str(s.get("backend", "tavily")).lower()
    k = int(k or s.get("max_results") or 5)
    base = str(s["base_url"]).rstrip("/")  # Tavily-compatible (the search proxy)
    key = search_key(req)
    if backend == "exa" and s.get("exa_base_url"):
        base = str(s["exa_base_url"]).rstrip("/")
        payload: dict[str, Any] = {"query": query, "numResults": k, "contents": {"text": {"maxCharacters": 2000}}}
        headers = {"x-api-key": key}
    else:
        payload = {"query": query, "max_results": k, "search_depth": "basic"}
        headers = {"Authorization": f"Bearer {key}"}
    data = json.dumps(payload).encode("utf-8")
    rq = urllib.request.Request(f"{base}/search", data=data, method="POST",
                                headers={"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(rq, timeout=60) as resp:
        body = json.loads(resp.read().decode("utf-8"))
    out = []
    for r in body.get("results") or []:
        url = str(r.get("url") or "")
        if url:
            out.append({"url": url, "title": str(r.get("title") or ""),
                        "content": str(r.get("content") or r.get("text") or "")})
    return out


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[io.TextIOBase]:
    """Agents print progress; only our JSON may reach stdout."""
    real = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        yield real  # type: ignore[misc]


def run(main: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """Read the request, run `main`, write the result JSON; any exception becomes `failed`/`over_budget`."""
    out = sys.stdout
    try:
        req = read_request()
    except (ValueError, SystemExit) as exc:
        json.dump({"outcome": "failed", "reason": f"bad request: {exc}"}, out)
        out.write("\n")
        return 2
    result: dict[str, Any]
    with stdout_to_stderr():
        try:
            result = main(req)
            result.setdefault("outcome", "ok")
            result.setdefault("reason", None)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            outcome, reason = classify(exc)
            result = {"report_markdown": "", "references": [], "outcome": outcome, "reason": reason}
    json.dump(result, out, ensure_ascii=False)
    out.write("\n")
    out.flush()
    return 0


def package_version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{dist} {version(dist)}"
    except PackageNotFoundError:
        return f"{dist} ?"
