"""The loopback budget proxy on its own: token → ledger, refusals, streamed answers, Exa-compatible search, and the
litellm path a hosted provider takes (pointed at the stub through litellm's own OPENAI_API_BASE)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from reportbench.agents.protocol import AgentSystemConfig, Budget
from reportbench.agents.proxy import AgentProxy
from reportbench.agents.search.base import SearchService, make_backend
from reportbench.agents.search.stub import serve_in_thread
from reportbench.stub_server import stub_server_thread

pytestmark = pytest.mark.integration

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}


def _proxy(cfg: AgentSystemConfig, stub_search, tmp_path: Path):
    service = SearchService(make_backend(cfg.search), cache_path=tmp_path / "cache.sqlite")
    return serve_in_thread(AgentProxy(cfg, service))


def test_tokens_refusals_streams_and_exa(tmp_path: Path, stub_search) -> None:
    with stub_server_thread() as llm:
        cfg = AgentSystemConfig(
            kind="search_llm",
            model="openai/stub",
            api_base=llm.base_url,
            search={"backend": "tavily", "api_base": stub_search.tavily_url},
        )
        with _proxy(cfg, stub_search, tmp_path) as proxy:
            token = proxy.register("t1", Budget(llm_calls=2, search_calls=1))
            auth = {"Authorization": f"Bearer {token}"}
            url = proxy.llm_url + "/chat/completions"
            assert (
                requests.post(url, json=CHAT, headers={"Authorization": "Bearer nope"}, timeout=10).status_code == 401
            )
            plain = requests.post(url, json=CHAT, headers=auth, timeout=10).json()
            assert plain["choices"][0]["message"]["content"]
            streamed = requests.post(url, json={**CHAT, "stream": True}, headers=auth, timeout=10)
            assert streamed.headers["Content-Type"].startswith("text/event-stream")
            events = [ln[6:] for ln in streamed.text.splitlines() if ln.startswith("data: ")]
            assert events[-1] == "[DONE]"
            chunks = [json.loads(e) for e in events[:-1]]
            assert chunks[0]["choices"][0]["delta"]["content"] == plain["choices"][0]["message"]["content"]
            assert chunks[-1]["usage"]["completion_tokens"] > 0
            third = requests.post(url, json=CHAT, headers=auth, timeout=10)
            assert third.status_code == 402 and third.json()["error"]["type"] == "budget_exceeded"
            exa = requests.post(
                proxy.exa_url + "/search",
                json={"query": "q", "numResults": 2},
                headers={"x-api-key": token},
                timeout=10,
            ).json()
            assert [r["url"] for r in exa["results"]][:1] and "text" in exa["results"][0]
            again = requests.post(
                proxy.exa_url + "/search", json={"query": "q"}, headers={"x-api-key": token}, timeout=10
            )
            assert again.status_code == 402
            ledger = proxy.ledgers[token]
            assert (ledger.usage.llm_calls, ledger.usage.llm_refused, ledger.usage.search_calls) == (2, 1, 1)
            assert ledger.queries == ["q"] and ledger.over_budget == "llm_calls: 2 of 2 used"


def test_a_hosted_model_is_forwarded_through_litellm(
    tmp_path: Path, stub_search, monkeypatch: pytest.MonkeyPatch
) -> None:
    with stub_server_thread() as llm:
        monkeypatch.setenv("OPENAI_API_BASE", llm.base_url)  # litellm's own setting: no api_base in our config
        monkeypatch.setenv("STUB_PROVIDER_KEY", "stub-key-0000")
        cfg = AgentSystemConfig(
            kind="search_llm",
            model="openai/gpt-4o-mini",
            api_key_env="STUB_PROVIDER_KEY",
            search={"backend": "tavily", "api_base": stub_search.tavily_url},
        )
        with _proxy(cfg, stub_search, tmp_path) as proxy:
            token = proxy.register("t1", Budget())
            got = requests.post(
                proxy.llm_url + "/chat/completions", json=CHAT, headers={"Authorization": f"Bearer {token}"}, timeout=60
            )
            assert got.status_code == 200, got.text
            usage = proxy.ledgers[token].usage
        assert llm.counts["ok"] == 1
    assert usage.llm_calls == 1 and usage.prompt_tokens > 0
    assert usage.usd is not None and usage.usd > 0  # gpt-4o-mini is in litellm's price map


def test_embeddings_are_forwarded_and_count_tokens_not_llm_calls(tmp_path: Path, stub_search) -> None:
    with stub_server_thread() as llm:
        cfg = AgentSystemConfig(
            kind="gpt_researcher",
            model="openai/stub",
            api_base=llm.base_url,
            price={"input_per_mtok": 0.02, "output_per_mtok": 0.0},
            search={"backend": "tavily", "api_base": stub_search.tavily_url},
        )
        with _proxy(cfg, stub_search, tmp_path) as proxy:
            token = proxy.register("t1", Budget(llm_calls=1, tokens=8))
            auth = {"Authorization": f"Bearer {token}"}
            body = {"model": "text-embedding-3-small", "input": ["alpha beta", "gamma delta epsilon"]}
            got = requests.post(proxy.llm_url + "/embeddings", json=body, headers=auth, timeout=10).json()
            again = requests.post(proxy.llm_url + "/embeddings", json=body, headers=auth, timeout=10).json()
            assert [len(d["embedding"]) for d in got["data"]] == [32, 32] and got == again  # deterministic
            over = requests.post(proxy.llm_url + "/embeddings", json=body, headers=auth, timeout=10)
            usage = proxy.ledgers[token].usage
        assert llm.counts["embeddings"] == 2
    assert over.status_code == 402  # 2 x 5 tokens used: the token budget (8) is spent
    assert (usage.embedding_calls, usage.llm_calls, usage.prompt_tokens) == (2, 0, 10)
    assert usage.usd == pytest.approx(10 * 0.02 / 1e6)
