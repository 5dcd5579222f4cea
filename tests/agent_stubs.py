"""Loopback stubs for running the open-source agents offline (tests only, never results).

Why a module of its own: `reportbench.stub_server` answers chat completions with text or JSON from a
request hash; the agents we wrap (STORM, open_deep_research, gpt-researcher, smolagents) also need
*tool calls*, streamed answers and multi-turn plans. Here a per-agent **script** (a function of the
request body) decides each assistant message, so a test drives an agent through its real control
flow (its own HTTP client, prompts, parsers) and then checks what the adapter made of the result.

- `ScriptedLLM(script)`: OpenAI-compatible `POST /v1/chat/completions` (plain and `stream: true`),
  `POST /v1/embeddings` (hashed bag-of-words vectors), `GET /v1/models`; `requests` keeps every body for assertions.
- `SearchStub()`: Tavily-compatible `POST /tavily/search` (body `query`, `max_results`; `POST /tavily/extract`)
  and Exa-compatible `POST /exa/search` (body `query`, `numResults`), as the search proxy lays them out
  (docs/agents.md §4), answering self-authored results whose URLs point back
  at this server (`GET /page/<n>` serves a small HTML page), so page visits stay on loopback too.

Both run on 127.0.0.1 in a daemon thread (`with ScriptedLLM(script) as llm: llm.base_url`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

Script = Callable[[dict[str, Any]], dict[str, Any]]
"""request body -> assistant message: {"content": str} and/or {"tool_calls": [{"name", "arguments"}]}, or an
HTTP error: {"error_status": 402, "error": {...}}."""


class _Server:
    """A ThreadingHTTPServer on a free loopback port, run in a daemon thread."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                return

            def _body(self) -> dict[str, Any]:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    data = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    data = {"_raw": raw.decode("utf-8", "replace")}
                return data if isinstance(data, dict) else {"_raw": data}

            def send_json(self, obj: Any, status: int = 200) -> None:
                raw = json.dumps(obj).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                body = self._body()
                with outer._lock:
                    outer.requests.append((self.path, body))
                outer.post(self, self.path, body)

            def do_GET(self) -> None:
                with outer._lock:
                    outer.requests.append((self.path, {}))
                outer.get(self, self.path)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        # a short poll: shutdown() waits up to one poll interval (the default 0.5 s cost ~1 s per test with two stubs)
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    def post(self, h: Any, path: str, body: dict[str, Any]) -> None:
        h.send_json({"error": {"message": f"no route {path}"}}, 404)

    def get(self, h: Any, path: str) -> None:
        h.send_json({"error": {"message": f"no route {path}"}}, 404)

    def __enter__(self) -> _Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


class ScriptedLLM(_Server):
    """OpenAI-compatible chat server whose answers come from `script` (see the module docstring)."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [b for p, b in self.requests if p.rstrip("/").endswith("/chat/completions")]

    def get(self, h: Any, path: str) -> None:
        if path.rstrip("/").endswith("/models"):
            h.send_json({"object": "list", "data": [{"id": "stub-agent", "object": "model", "owned_by": "stub"}]})
            return
        super().get(h, path)

    def post(self, h: Any, path: str, body: dict[str, Any]) -> None:
        if path.rstrip("/").endswith("/embeddings"):
            h.send_json(embeddings_payload(body))
            return
        if not path.rstrip("/").endswith("/chat/completions"):
            super().post(h, path, body)
            return
        try:
            msg = self.script(body)
        except Exception as exc:  # a script bug must show in the agent's error, not hang it
            h.send_json({"error": {"message": f"stub script failed: {exc!r}", "type": "server_error"}}, 500)
            return
        if "error_status" in msg:  # e.g. the budget proxy's 402 budget_exceeded
            h.send_json({"error": msg.get("error") or {"message": "stub error"}}, int(msg["error_status"]))
            return
        content = msg.get("content")
        calls = [
            {
                "id": f"call_{i}_{hashlib.sha256(json.dumps(c, sort_keys=True).encode()).hexdigest()[:8]}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
            }
            for i, c in enumerate(msg.get("tool_calls") or [])
        ]
        prompt_tokens = sum(_tokens(str(m.get("content", ""))) for m in body.get("messages") or [])
        completion_tokens = _tokens(str(content or "") + json.dumps(calls))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else "stop"
        cid, created, model = "chatcmpl-agentstub", int(time.time()), body.get("model", "stub-agent")
        if not body.get("stream"):
            h.send_json({"id": cid, "object": "chat.completion", "created": created, "model": model,
                         "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                      "logprobs": None}], "usage": usage})
            return
        delta: dict[str, Any] = {"role": "assistant", "content": content or ""}
        if calls:
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
        chunks = [
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {"choices": [], "usage": usage},
        ]
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()
        for c in chunks:
            c.update({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model})
            h.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
        h.wfile.write(b"data: [DONE]\n\n")
        h.wfile.flush()
        h.close_connection = True


def _hashed_vector(item: Any, dim: int = 64) -> list[float]:
    """A deterministic unit vector for a text (hashed words) or a token-id list (hashed ids)."""
    toks = [str(t) for t in item] if isinstance(item, list) else re.findall(r"[a-z0-9]+", str(item).lower())
    v = [0.0] * dim
    for t in toks:
        v[int(hashlib.md5(t.encode()).hexdigest()[:8], 16) % dim] += 1.0
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]


def embeddings_payload(body: dict[str, Any]) -> dict[str, Any]:
    """OpenAI `POST /v1/embeddings` answer: one hashed vector per input (text or token ids)."""
    inputs = body.get("input")
    items = inputs if isinstance(inputs, list) and inputs and not isinstance(inputs[0], int) else [inputs]
    data = [{"object": "embedding", "index": i, "embedding": _hashed_vector(x)} for i, x in enumerate(items)]
    n = sum(len(str(x).split()) for x in items)
    return {"object": "list", "data": data, "model": body.get("model", "stub-embed"),
            "usage": {"prompt_tokens": n, "total_tokens": n}}


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (string or content-part list)."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            return message_text(m)
    return ""


def message_text(m: dict[str, Any]) -> str:
    content = m.get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def all_text(body: dict[str, Any]) -> str:
    return "\n".join(message_text(m) for m in body.get("messages") or [])


# ------------------------------------------------------------------------------------------------
# Search
# ------------------------------------------------------------------------------------------------

TOPICS = ("retrieval-augmented generation", "citation accuracy", "long-form report evaluation")


class SearchStub(_Server):
    """Tavily- and Exa-compatible search over three self-authored pages served by this server."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def page_url(self, n: int) -> str:
        return f"{self.base_url}/page/{n}"

    def search_count(self) -> int:
        return sum(1 for p, _ in self.requests if p.rstrip("/").endswith("/search"))

    def results(self, query: str, k: int) -> list[dict[str, Any]]:
        seed = int(hashlib.sha256(query.encode("utf-8")).hexdigest(), 16)
        order = [(seed + i) % len(TOPICS) for i in range(len(TOPICS))]
        out = []
        for n in order[: max(1, k)]:
            topic = TOPICS[n]
            out.append({"title": f"Stub notes on {topic}", "url": self.page_url(n + 1),
                        "content": f"A self-authored note about {topic}, found for the query '{query}'.",
                        "score": round(1.0 - 0.1 * len(out), 3)})
        return out

    def post(self, h: Any, path: str, body: dict[str, Any]) -> None:
        query = str(body.get("query") or "")
        if path.rstrip("/").endswith("/search") and ("/exa/" in path or "numResults" in body):
            k = int(body.get("numResults") or 3)
            res = [{"id": r["url"], "url": r["url"], "title": r["title"], "text": r["content"],
                    "score": r["score"], "publishedDate": None, "author": None} for r in self.results(query, k)]
            h.send_json({"requestId": "stub", "results": res})
            return
        if path.rstrip("/").endswith("/search"):
            k = int(body.get("max_results") or 3)
            raw = bool(body.get("include_raw_content"))
            res = [{**r, "raw_content": self._page_text(r["url"]) if raw else None} for r in self.results(query, k)]
            h.send_json({"query": query, "results": res, "answer": None, "images": [],
                         "follow_up_questions": None, "response_time": 0.01})
            return
        if path.rstrip("/").endswith("/extract"):
            urls = body.get("urls") or []
            urls = [urls] if isinstance(urls, str) else urls
            h.send_json({"results": [{"url": u, "raw_content": self._page_text(u)} for u in urls],
                         "failed_results": []})
            return
        super().post(h, path, body)

    def _page_text(self, url: str) -> str:
        m = re.search(r"/page/(\d+)", url)
        n = int(m.group(1)) if m else 0
        topic = TOPICS[(n - 1) % len(TOPICS)] if n else "nothing"
        return (f"Stub page {n}. This page discusses {topic} in a few plain sentences for offline tests. "
                f"It was written for reportbench's own tests and says nothing true or false about {topic}; "
                "scrapers that drop pages under a hundred characters still keep it.")

    def get(self, h: Any, path: str) -> None:
        if re.fullmatch(r"/page/\d+", path):
            text = self._page_text(path)
            raw = f"<html><head><title>{text[:20]}</title></head><body><p>{text}</p></body></html>".encode()
            h.send_response(200)
            h.send_header("Content-Type", "text/html; charset=utf-8")
            h.send_header("Content-Length", str(len(raw)))
            h.end_headers()
            h.wfile.write(raw)
            return
        super().get(h, path)


# ------------------------------------------------------------------------------------------------
# Agent environments and adapter runs
# ------------------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
ADAPTERS = REPO / "src" / "reportbench" / "agents" / "adapters"


DEFAULT_BUILDS = "smolagents_deep_research"
"""Kinds a test may build when their venv is missing (REPORTBENCH_BUILD_AGENTS overrides; `all` for every kind, as
.ci/run sets it). Only the small one by default: the others take ~0.7-1.7 GB of disk each (BUILD_COST)."""
BUILD_COST = {"smolagents_deep_research": "~0.1 GB", "storm": "~1.7 GB (torch CPU)", "open_deep_research": "~0.7 GB",
              "gpt_researcher": "~1.4 GB"}


def agent_python(kind: str) -> Path:
    """The kind's venv interpreter (`reportbench agents install <kind>`), built once and shared by every test.

    `envs.install` keeps a venv built from the current requirements file, waits while another process builds it
    (CI starts every build in the background before pytest: .ci/run) and never retries a failed build here: that
    is a test failure with the build log's tail. A kind not in REPORTBENCH_BUILD_AGENTS and not built is skipped
    with the reason (locally); CI sets REPORTBENCH_BUILD_AGENTS=all, so there nothing skips.
    """
    from reportbench.agents import envs

    allowed = {k.strip() for k in os.environ.get("REPORTBENCH_BUILD_AGENTS", DEFAULT_BUILDS).split(",")}
    if not envs.is_current(kind) and kind not in allowed and "all" not in allowed:
        pytest.skip(f"the {kind} venv is not built ({BUILD_COST.get(kind, '?')}; under 80 s with uv, docs/agents.md "
                    f"§11): set REPORTBENCH_BUILD_AGENTS={kind} (or all), or run `reportbench agents install {kind}`")
    try:
        envs.install(kind, echo=False, retry_failed=False)
    except envs.AgentEnvError as exc:
        pytest.fail(str(exc), pytrace=False)
    return envs.python_for(kind)


def run_adapter(kind: str, request: dict[str, Any], *, env: dict[str, str] | None = None,
                timeout: float = 600) -> tuple[dict[str, Any], str]:
    """Run the kind's adapter script in its venv with `request` on stdin: (result JSON, stderr)."""
    py = agent_python(kind)
    full_env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_BASE", "_BASE_URL"))}
    # uv installs no bytecode: the first run of a kind writes it for the modules it imports (as the runner's
    # stripped environment does), the later ones reuse it (storm: ~15 s of CPU to import uncompiled, ~6 s compiled)
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)
    full_env.update(env or {})
    proc = subprocess.run([str(py), str(ADAPTERS / f"{kind}.py")], input=json.dumps(request), text=True,
                          capture_output=True, env=full_env, timeout=timeout)
    assert proc.returncode == 0, f"adapter exited {proc.returncode}\n{proc.stderr[-4000:]}"
    lines = [x for x in proc.stdout.splitlines() if x.strip()]
    assert len(lines) == 1, f"adapter must print exactly one JSON line, got: {proc.stdout[-2000:]}"
    return json.loads(lines[0]), proc.stderr


def make_request(llm: ScriptedLLM, search: SearchStub, workdir: Path, *, task_id: str = "t1",
                 question: str = "How do deep-research agents keep their citations accurate?",
                 backend: str = "tavily", budget: dict[str, Any] | None = None,
                 options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The adapter protocol's request for one task against the two stubs."""
    return {
        "task_id": task_id,
        "benchmark": "demo",
        "question": question,
        "llm": {"model": "stub-agent", "base_url": llm.base_url, "api_key_env": "STUB_LLM_KEY"},
        "search": {"backend": backend, "base_url": f"{search.base_url}/tavily",
                   "exa_base_url": f"{search.base_url}/exa", "api_key_env": "STUB_SEARCH_KEY", "max_results": 3},
        "budget": budget or {},
        "workdir": str(workdir),
        "options": options or {},
    }


STUB_ENV = {"STUB_LLM_KEY": "sk-stub-llm-key-0000", "STUB_SEARCH_KEY": "tvly-stub-search-key-0000"}
