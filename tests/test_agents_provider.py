"""`provider_deep_research` against the stub's Responses API (background mode, polling, url_citation annotations)
on ResearcherBench's demo tasks: native citations kept, usage and cost recorded, wall-time cancel, no-key fail-fast."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.agents.protocol import TaskRecord
from reportbench.stub_server import stub_server_thread
from reportbench.systems import SystemError_, run_system
from reportbench.types import Task

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Path:
    from reportbench import pipeline
    from reportbench.config import composed_params

    out = tmp_path_factory.mktemp("release") / "researcherbench"
    params = composed_params(["benchmarks=[researcherbench]"], conf_dir=repo_root / "conf")
    pipeline.build_release(params, "researcherbench", out)
    return out


@pytest.fixture()
def tasks(release_dir: Path) -> list[Task]:
    from reportbench.release.format import read_release

    return read_release(release_dir).tasks[:2]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(tmp_path / "agents-home"))
    return tmp_path / "agents-home"


def _spec(base_url: str, release_dir: Path, **budget: float) -> dict:
    return {
        "kind": "provider_deep_research",
        "model": "openai/o3-deep-research",
        "api_base": base_url,
        "price": {"input_per_mtok": 10.0, "output_per_mtok": 40.0},
        "budget": {"search_calls": 2, "wall_s": 30, **budget},
        "options": {"poll_s": 0.05},
        "release_dir": str(release_dir),
    }


def test_background_response_is_polled_and_its_annotations_become_citations(
    release_dir: Path, tasks: list[Task], tmp_path: Path
) -> None:
    with stub_server_thread() as stub:
        outcomes = run_system("o3dr", _spec(stub.base_url, release_dir), tasks, tmp_path / "run")
        assert stub.counts["responses_created"] == 2 and stub.counts["responses_polls"] >= 2
    assert [o.status for o in outcomes] == ["ok", "ok"]
    reports = [json.loads(line) for line in (tmp_path / "run" / "reports.jsonl").read_text().splitlines()]
    for report in reports:
        urls = sorted(s["url"] for s in report["sources"].values())
        assert len(urls) == 2 and all(u.startswith("https://stub-research.example/") for u in urls)
        cited = [k for sent in report["sentences"] for k in sent["citation_keys"]]
        assert sorted(cited) == urls  # each annotation span became a citation of its sentence
    raw = sorted((tmp_path / "run" / "raw").glob("*.json"))
    assert len(raw) == 2 and json.loads(raw[0].read_text())["object"] == "response"  # the native JSON, kept
    for path in sorted((tmp_path / "run" / "agent").glob("*.json")):
        rec = TaskRecord.model_validate_json(path.read_text())
        assert rec.outcome == "ok" and rec.search_backend == "provider" and len(rec.queries) == 2
        u = rec.usage
        assert u.llm_calls == 1 and u.search_calls == 2
        assert u.usd == pytest.approx((u.prompt_tokens * 10 + u.completion_tokens * 40) / 1e6) and u.usd > 0


def test_wall_time_cancels_the_background_response(release_dir: Path, tasks: list[Task], tmp_path: Path) -> None:
    with stub_server_thread() as stub:
        stub.responses_delay_s = 30.0  # never completes within the budget
        outcomes = run_system("slow", _spec(stub.base_url, release_dir, wall_s=0.3), tasks, tmp_path / "slow")
        assert stub.counts["responses_cancelled"] == 2
    assert all(o.status == "failed" and o.reason.startswith("over_budget: wall_s") for o in outcomes)


def test_a_hosted_provider_without_its_key_fails_fast(
    release_dir: Path, tasks: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PERPLEXITYAI_API_KEY", raising=False)
    spec = {
        "kind": "provider_deep_research",
        "model": "perplexity/sonar-deep-research",
        "release_dir": str(release_dir),
    }
    with pytest.raises(SystemError_, match="PERPLEXITYAI_API_KEY"):
        run_system("pplx", spec, tasks, tmp_path / "pplx")


ANSWER = "<think>planning the search</think>\nSparse attention saves memory [1]. Sketches bound errors [2]."


class _FakePerplexity:
    """A loopback chat endpoint answering like sonar-deep-research: a <think> block, [n] markers, `citations`,
    `search_results` and `usage.num_search_queries` (self-authored body)."""

    def __init__(self) -> None:
        self.port = 0
        self.bodies: list[dict] = []
        self._runner = None

    async def start(self) -> _FakePerplexity:
        from aiohttp import web

        async def chat(request: web.Request) -> web.Response:
            self.bodies.append(await request.json())
            return web.json_response(
                {
                    "id": "p1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "sonar-deep-research",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {
                                "role": "assistant",
                                "content": ANSWER,
                            },
                        }
                    ],
                    "citations": ["https://example.org/p/1", "https://example.org/p/2"],
                    "search_results": [{"url": "https://example.org/p/1", "title": "Sparse attention notes"}],
                    "usage": {
                        "prompt_tokens": 20,
                        "completion_tokens": 30,
                        "total_tokens": 50,
                        "num_search_queries": 4,
                    },
                }
            )

        app = web.Application()
        app.router.add_post("/chat/completions", chat)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        await self._runner.cleanup()


def test_perplexity_citations_become_the_reference_list(
    release_dir: Path, tasks: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.agents.search.stub import serve_in_thread

    monkeypatch.setenv("PERPLEXITYAI_API_KEY", "pplx-" + "0" * 8)
    with serve_in_thread(_FakePerplexity()) as fake:
        spec = {
            "kind": "provider_deep_research",
            "model": "perplexity/sonar-deep-research",
            "api_base": f"http://127.0.0.1:{fake.port}",
            "release_dir": str(release_dir),
            "price": {"input_per_mtok": 2.0, "output_per_mtok": 8.0},
        }
        outcomes = run_system("pplx", spec, tasks[:1], tmp_path / "pplx")
        assert fake.bodies[0]["model"] == "sonar-deep-research"
        assert fake.bodies[0]["messages"] == [{"role": "user", "content": tasks[0].task_prompt}]
    assert [o.status for o in outcomes] == ["ok"]
    report = json.loads((tmp_path / "pplx" / "reports.jsonl").read_text())
    assert "<think>" not in report["body"]
    assert [s["citation_keys"] != [] for s in report["sentences"]] == [True, True]
    assert sorted(s["url"] for s in report["sources"].values()) == [
        "https://example.org/p/1",
        "https://example.org/p/2",
    ]
    rec = TaskRecord.model_validate_json(next((tmp_path / "pplx" / "agent").glob("*.json")).read_text())
    assert rec.usage.search_calls == 4 and rec.usage.usd == pytest.approx((20 * 2 + 30 * 8) / 1e6)
