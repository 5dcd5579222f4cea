"""The loopback budget proxy on its own: token → ledger, refusals, streamed answers, Exa-compatible search, and the
litellm path a hosted provider takes (pointed at the stub through litellm's own OPENAI_API_BASE)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from reportbench.agents.protocol import AgentSystemConfig, Budget
from reportbench.agents.proxy import AgentProxy, Rates, TaskLedger, prompt_tokens_upper
from reportbench.agents.search.base import SearchService, make_backend
from reportbench.agents.search.stub import serve_in_thread
from reportbench.stub_server import stub_server_thread

pytestmark = pytest.mark.integration

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}


def _proxy(cfg: AgentSystemConfig, stub_search, tmp_path: Path):
    service = SearchService(make_backend(cfg.search), cache_path=tmp_path / "cache.sqlite")
    return serve_in_thread(AgentProxy(cfg, service))


def _hosted(model: str, base_url: str, stub_search, monkeypatch: pytest.MonkeyPatch) -> AgentSystemConfig:
    """A hosted-model agent config whose calls go through litellm to the stub: OPENAI_API_BASE is litellm's own
    setting (no api_base in our config), the key comes from the variable the config names."""
    monkeypatch.setenv("OPENAI_API_BASE", base_url)
    monkeypatch.setenv("STUB_PROVIDER_KEY", "stub-key-0000")
    return AgentSystemConfig(
        kind="search_llm",
        model=model,
        api_key_env="STUB_PROVIDER_KEY",
        search={"backend": "tavily", "api_base": stub_search.tavily_url},
    )


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
        cfg = _hosted("openai/gpt-4o-mini", llm.base_url, stub_search, monkeypatch)
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
            token = proxy.register("t1", Budget(llm_calls=1, tokens=12))
            auth = {"Authorization": f"Bearer {token}"}
            body = {"model": "text-embedding-3-small", "input": ["alpha beta", "gamma delta epsilon"]}
            got = requests.post(proxy.llm_url + "/embeddings", json=body, headers=auth, timeout=10).json()
            again = requests.post(proxy.llm_url + "/embeddings", json=body, headers=auth, timeout=10).json()
            assert [len(d["embedding"]) for d in got["data"]] == [32, 32] and got == again  # deterministic
            over = requests.post(proxy.llm_url + "/embeddings", json=body, headers=auth, timeout=10)
            usage = proxy.ledgers[token].usage
        assert llm.counts["embeddings"] == 2
    assert over.status_code == 402  # 2 x 5 tokens used: a third 5 would pass the token budget (12)
    assert (usage.embedding_calls, usage.llm_calls, usage.prompt_tokens) == (2, 0, 10)
    assert usage.usd == pytest.approx(10 * 0.02 / 1e6)


def _fire(url: str, token: str, body: dict, count: int) -> list[requests.Response]:
    """`count` identical calls at once (one thread each), as an agent fanning out would."""
    from concurrent.futures import ThreadPoolExecutor

    def one(_: int) -> requests.Response:
        return requests.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=120)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def test_concurrent_calls_with_n_cannot_spend_past_the_budget(
    tmp_path: Path, stub_search, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: 40 concurrent calls with n: 8 and max_tokens 500 under a 2,000-token / $0.01 budget were all
    admitted (160,160 tokens, $0.16). Each call now reserves its worst case (prompt + max_tokens x n, priced from
    litellm's local map: gpt-4o, $2.50 / $10 per M tokens) before it is forwarded, is capped to what is left, and
    is refused (402, recorded) once nothing is left."""
    rules = [("write at length", "word " * 3000)]  # every answer runs to the cap the proxy sets
    with stub_server_thread(rules=rules) as llm:
        cfg = _hosted("openai/gpt-4o", llm.base_url, stub_search, monkeypatch)
        with _proxy(cfg, stub_search, tmp_path) as proxy:
            token = proxy.register("t1", Budget(tokens=2000, usd=0.01))
            ledger = proxy.ledgers[token]
            seen_at_refusal: list[str | None] = []
            original = ledger._refuse

            def refuse_and_look(reason: str, what: str) -> str:
                out = original(reason, what)
                seen_at_refusal.append(ledger.over_budget)  # what the record says as the 402 is being written
                return out

            ledger._refuse = refuse_and_look  # type: ignore[method-assign]
            body = {
                "model": "m",
                "n": 8,
                "max_tokens": 500,
                "messages": [{"role": "user", "content": "please write at length"}],
            }
            answers = _fire(proxy.llm_url + "/chat/completions", token, body, 40)
            usage = ledger.usage
            rates = proxy.rates()
            admitted = [a for a in answers if a.status_code == 200]
            refused = [a for a in answers if a.status_code == 402]
        forwarded = llm.counts["requests"]
    assert len(admitted) + len(refused) == 40 and refused and admitted
    assert forwarded == len(admitted)  # a refused call never reached the provider
    assert all(r.json()["error"]["type"] == "budget_exceeded" for r in refused)
    assert usage.llm_refused == len(refused) and usage.llm_calls == len(admitted) and usage.llm_capped >= 1
    assert ledger.over_budget and len(seen_at_refusal) == len(refused) and all(seen_at_refusal)
    assert (ledger.reserved_tokens, ledger.in_flight) == (0, 0) and ledger.reserved_usd == pytest.approx(0.0)
    spent_tokens = usage.prompt_tokens + usage.completion_tokens
    assert usage.usd is not None and rates.prompt and rates.completion
    prompt_tokens = prompt_tokens_upper(body)
    worst_tokens = prompt_tokens + 500 * 8
    worst_usd = prompt_tokens * rates.prompt + 500 * 8 * rates.completion
    # the bound: at most one request's worst case over the budget (before the fix: 160,160 tokens, $0.16)
    assert spent_tokens <= 2000 + worst_tokens and usage.usd <= 0.01 + worst_usd
    # and in fact within it: the prompt estimate is from above, every cap fits what was left
    assert spent_tokens <= 2000 and usage.usd <= 0.01 + 1e-12


def test_concurrent_searches_stop_at_the_count_and_wall_time_stops_calls(tmp_path: Path, stub_search) -> None:
    """20 concurrent searches under `search_calls: 3`: exactly 3 reach the backend. Past the task's wall time
    every call is refused before it is forwarded."""
    with stub_server_thread() as llm:
        cfg = AgentSystemConfig(
            kind="search_llm",
            model="openai/stub",
            api_base=llm.base_url,
            search={"backend": "tavily", "api_base": stub_search.tavily_url},
        )
        with _proxy(cfg, stub_search, tmp_path) as proxy:
            token = proxy.register("t1", Budget(search_calls=3))
            answers = _fire(proxy.tavily_url + "/search", token, {"query": "same question"}, 20)
            assert sorted(a.status_code for a in answers) == [200] * 3 + [402] * 17
            late = proxy.register("t2", Budget(wall_s=30))
            proxy.ledgers[late].start_clock(0)  # the task's wall time is used up
            chat = requests.post(
                proxy.llm_url + "/chat/completions", json=CHAT, headers={"Authorization": f"Bearer {late}"}, timeout=10
            )
            assert chat.status_code == 402 and "wall_s: 30 s used" in chat.json()["error"]["message"]
            assert proxy.ledgers[late].over_budget == "wall_s: 30 s used"
        assert llm.counts["requests"] == 0
    assert stub_search.counts["tavily"] <= 3


def test_a_request_is_capped_to_what_is_left() -> None:
    """The reservation caps n first, then max_tokens; with less than one completion token left it refuses."""
    ledger = TaskLedger("t", Budget(tokens=1000))
    rates = Rates()
    res, refused, changes = ledger.reserve_llm(100, 500, 8, rates)
    assert refused is None and changes == {"n": 1}
    assert res is not None and res.tokens == 600 and ledger.reserved_tokens == 600
    res2, _, changes2 = ledger.reserve_llm(100, None, 1, rates)
    assert res2 is not None and changes2 == {"max_tokens": 300} and ledger.reserved_tokens == 1000
    none, refused, _ = ledger.reserve_llm(10, 5, 1, rates)
    assert none is None and refused.startswith("tokens: 0 used + 1000 reserved of 1000")
    ledger.settle(res, 100, 20, None)  # the first answer was short: what it did not use is free again
    assert ledger.reserved_tokens == 400 and ledger.usage.prompt_tokens + ledger.usage.completion_tokens == 120
    res3, refused, changes3 = ledger.reserve_llm(10, 1000, 2, rates)
    assert res3 is not None and changes3 == {"n": 1, "max_tokens": 470}


def test_page_text_requests_get_the_recorded_page_never_the_snippet(tmp_path: Path, stub_search) -> None:
    """Issue 35: `include_raw_content` is answered with the page's main text through the spine's fetch path (here:
    the release's recorded pages, offline); a page that was never recorded gets null, as Tavily answers, never the
    snippet (before: `raw_content` was the snippet and every result counted as a page read)."""
    from reportbench.agents.search.pages import PageReader
    from reportbench.agents.search.stub import stub_hits

    query = "lumen teapot market"
    first, second = (h["url"] for h in stub_hits(query, 2))
    body = "<html><head><title>Lumen</title></head><body><p>The recorded page says the market grew 8 percent.</p>"
    seeds = tmp_path / "pages.jsonl"
    seeds.write_text(json.dumps({"url": first, "status": 200, "content_type": "text/html", "body": body}) + "\n")
    cfg = AgentSystemConfig(kind="search_llm", model="openai/stub", api_base="http://127.0.0.1:9/v1",
                            search={"backend": "tavily", "api_base": stub_search.tavily_url})  # fmt: skip
    service = SearchService(make_backend(cfg.search), cache_path=tmp_path / "cache.sqlite")
    pages = PageReader({"cache_path": str(tmp_path / "pages.sqlite")}, [seeds])
    with serve_in_thread(AgentProxy(cfg, service, pages=pages)) as proxy:
        token = proxy.register("t1", Budget(search_calls=3))
        auth = {"Authorization": f"Bearer {token}"}
        plain = requests.post(proxy.tavily_url + "/search", json={"query": query, "max_results": 2}, headers=auth,
                              timeout=10).json()  # fmt: skip
        raw = requests.post(proxy.tavily_url + "/search",
                            json={"query": query, "max_results": 2, "include_raw_content": True}, headers=auth,
                            timeout=10).json()  # fmt: skip
        exa = requests.post(proxy.exa_url + "/search",
                            json={"query": query, "numResults": 2, "contents": {"text": {"maxCharacters": 20}}},
                            headers={"x-api-key": token}, timeout=10).json()  # fmt: skip
        ledger = proxy.ledgers[token]
    pages.close()
    assert [r["raw_content"] for r in plain["results"]] == [None, None]  # not asked: not read
    by_url = {r["url"]: r for r in raw["results"]}
    assert "The recorded page says the market grew 8 percent." in by_url[first]["raw_content"]
    assert by_url[second]["raw_content"] is None and by_url[second]["content"]  # the snippet stays the snippet
    assert exa["results"][0]["text"] == by_url[first]["raw_content"][:20]  # Exa's text, cut as asked
    assert (ledger.usage.pages_fetched, ledger.usage.pages_unread) == (2, 2)
    assert [(p.url, p.source, p.text is not None) for p in ledger.pages] == [
        (first, "seed", True), (second, "not_fetched", False), (first, "seed", True), (second, "not_fetched", False)
    ]
