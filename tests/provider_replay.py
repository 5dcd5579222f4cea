"""A loopback replay of the three deep-research APIs, serving the documented response shapes in
tests/fixtures/provider_replays/ (each file names its sources) through the routes the real clients call:

- OpenAI Responses: POST /v1/responses (background → queued), GET /v1/responses/{id}, POST /v1/responses/{id}/cancel
- Perplexity async: POST /async/chat/completions (→ CREATED), GET /async/chat/completions/{id}
- Gemini Interactions: POST /v1beta/interactions (→ in_progress), GET /v1beta/interactions/{id}, POST …/{id}/cancel

Every job answers "in progress" to its first `pending_polls` polls, then the fixture (`delay_s` > 0: until then).
`fail_create[backend] = N` answers the next N creates with HTTP 503 (a request that may have been billed);
`usage[backend]` replaces fields of the fixture's usage (e.g. an 812k-token run). `counts` records every call.
The report's last paragraph restates the task's prompt (appended after every cited span, so the documented
annotation offsets stay valid): each task gets a report about itself, as from the real service."""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "provider_replays"


def _prompt(backend: str, body: Any) -> str:
    if backend == "perplexity":
        messages = (body.get("request") or {}).get("messages") or [{}]
        return str(messages[-1].get("content") or "")
    return str(body.get("input") or "") if isinstance(body, dict) else ""


def _echo(jid_prompt: str) -> str:
    return f"\n\nThis report answers the question: {jid_prompt}\n" if jid_prompt else ""


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


class ProviderReplay:
    def __init__(self, pending_polls: int = 1, delay_s: float = 0.0) -> None:
        self.port = 0
        self.pending_polls = pending_polls
        self.delay_s = delay_s
        self.counts: Counter[str] = Counter()
        self.bodies: dict[str, list[Any]] = {"openai": [], "perplexity": [], "gemini": []}
        self.fail_create: Counter[str] = Counter()
        self.usage: dict[str, dict[str, Any]] = {}
        self.jobs: dict[str, dict[str, Any]] = {}
        self._runner: Any = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------------------ shared job state
    def _new(self, backend: str, body: Any) -> str | None:
        self.counts[f"{backend}_create"] += 1
        self.bodies[backend].append(body)
        if self.fail_create[backend] > 0:
            self.fail_create[backend] -= 1
            return None
        jid = f"{backend}-{len(self.jobs):04d}"
        self.jobs[jid] = {
            "backend": backend,
            "polls": 0,
            "created": time.time(),
            "cancelled": False,
            "prompt": _prompt(backend, body),
        }
        return jid

    def _ready(self, jid: str) -> bool:
        job = self.jobs[jid]
        job["polls"] += 1
        self.counts[f"{job['backend']}_poll"] += 1
        return job["polls"] > self.pending_polls and time.time() - job["created"] >= self.delay_s

    def _usage(self, backend: str, usage: dict[str, Any]) -> dict[str, Any]:
        return {**usage, **self.usage.get(backend, {})}

    # --------------------------------------------------------------------------------------- OpenAI
    def _openai_view(self, jid: str, ready: bool) -> dict[str, Any]:
        resp = copy.deepcopy(fixture("openai_o3_deep_research.json")["response"])
        resp["id"] = jid
        if self.jobs[jid]["cancelled"]:
            return {**resp, "status": "cancelled", "output": [], "usage": None}
        if not ready:
            return {
                **resp,
                "status": "in_progress" if self.jobs[jid]["polls"] else "queued",
                "output": [],
                "usage": None,
            }
        resp["usage"] = self._usage("openai", resp["usage"])
        resp["output"][-1]["content"][0]["text"] += _echo(self.jobs[jid]["prompt"])
        return resp

    # ------------------------------------------------------------------------------------ server
    async def start(self) -> ProviderReplay:
        from aiohttp import web

        async def oa_create(request: web.Request) -> web.Response:
            jid = self._new("openai", await request.json())
            if jid is None:
                return web.json_response({"error": {"message": "upstream overloaded"}}, status=503)
            return web.json_response(self._openai_view(jid, False))

        async def oa_get(request: web.Request) -> web.Response:
            jid = request.match_info["jid"]
            return web.json_response(self._openai_view(jid, self._ready(jid)))

        async def oa_cancel(request: web.Request) -> web.Response:
            jid = request.match_info["jid"]
            self.jobs[jid]["cancelled"] = True
            self.counts["openai_cancel"] += 1
            return web.json_response(self._openai_view(jid, False))

        async def px_create(request: web.Request) -> web.Response:
            body = await request.json()
            jid = self._new("perplexity", body)
            if jid is None:
                return web.json_response({"error": {"message": "upstream overloaded"}}, status=503)
            model = (body.get("request") or {}).get("model", "")
            return web.json_response({"id": jid, "model": model, "created_at": int(time.time()), "status": "CREATED"})

        async def px_get(request: web.Request) -> web.Response:
            jid = request.match_info["jid"]
            head = {"id": jid, "model": "sonar-deep-research", "created_at": int(self.jobs[jid]["created"])}
            if not self._ready(jid):
                return web.json_response({**head, "status": "IN_PROGRESS", "response": None})
            resp = fixture("perplexity_sonar_deep_research.json")["response"]
            resp["usage"] = self._usage("perplexity", resp["usage"])
            resp["choices"][0]["message"]["content"] += _echo(self.jobs[jid]["prompt"])
            return web.json_response(
                {**head, "status": "COMPLETED", "completed_at": int(time.time()), "response": resp}
            )

        def gm_view(jid: str, ready: bool) -> dict[str, Any]:
            inter = fixture("gemini_deep_research.json")["interaction"]
            inter["id"] = jid
            if self.jobs[jid]["cancelled"]:
                return {"id": jid, "status": "cancelled", "agent": inter["agent"]}
            if not ready:
                return {"id": jid, "status": "in_progress", "agent": inter["agent"]}
            inter["usage"] = self._usage("gemini", inter["usage"])
            inter["steps"][-1]["content"][0]["text"] += _echo(self.jobs[jid]["prompt"])
            return inter

        async def gm_create(request: web.Request) -> web.Response:
            jid = self._new("gemini", await request.json())
            if jid is None:
                return web.json_response(
                    {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}, status=503
                )
            return web.json_response(gm_view(jid, False))

        async def gm_get(request: web.Request) -> web.Response:
            jid = request.match_info["jid"]
            return web.json_response(gm_view(jid, self._ready(jid)))

        async def gm_cancel(request: web.Request) -> web.Response:
            jid = request.match_info["jid"]
            self.jobs[jid]["cancelled"] = True
            self.counts["gemini_cancel"] += 1
            return web.json_response(gm_view(jid, False))

        app = web.Application()
        app.router.add_post("/v1/responses", oa_create)
        app.router.add_get("/v1/responses/{jid}", oa_get)
        app.router.add_post("/v1/responses/{jid}/cancel", oa_cancel)
        app.router.add_post("/async/chat/completions", px_create)
        app.router.add_get("/async/chat/completions/{jid}", px_get)
        app.router.add_post("/v1beta/interactions", gm_create)
        app.router.add_get("/v1beta/interactions/{jid}", gm_get)
        app.router.add_post("/v1beta/interactions/{jid}/cancel", gm_cancel)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        await self._runner.cleanup()
