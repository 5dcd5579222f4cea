"""A judge's configured price prices its own calls, whatever other judge in the same process priced the same model
name. litellm's cost map is process-wide (one entry per model): before, a client priced A, then one priced B, then
one priced A again got B's cost (`register_cost` remembered every price it ever registered and skipped the second
A). In one pytest worker this made `tests/test_executor_ray.py`'s cost-bound test compute its limit from another
test's price (test_estimate prices `openai/stub-judge` at 1e-4) while the Ray workers priced at 1e-6: the limit
was ~60x the real spend and the bound never tripped ("DID NOT RAISE BudgetExceeded" in the full CI)."""

from __future__ import annotations

import asyncio

import pytest

from reportbench.judges.client import LLMClient
from reportbench.stub_server import StubServer
from test_judge_client import MSGS, cfg_for

pytestmark = pytest.mark.integration

MODEL = "openai/stub-judge-repriced"  # a name no other test prices


def test_each_client_is_priced_at_its_own_price_whatever_was_registered_before() -> None:
    async def main() -> None:
        async with StubServer() as s:
            def client(inp: float, out: float) -> LLMClient:
                return LLMClient({**cfg_for(s.base_url), "model": MODEL, "input_cost_per_token": inp,
                                  "output_cost_per_token": out})  # fmt: skip

            def expected(c: object, inp: float, out: float) -> float:
                return inp * c.prompt_tokens + out * c.completion_tokens  # type: ignore[attr-defined]

            cheap, dear = client(1e-6, 2e-6), client(1e-4, 1e-4)
            first = await cheap.complete(MSGS)
            assert first.cost_usd == pytest.approx(expected(first, 1e-6, 2e-6))
            other = await dear.complete([{"role": "user", "content": "another question"}])
            assert other.cost_usd == pytest.approx(expected(other, 1e-4, 1e-4))
            # the cheap price again, by the same client and by a new one: never the dear price registered last
            for c in (cheap, client(1e-6, 2e-6)):
                again = await c.complete([{"role": "user", "content": f"a third question {id(c)}"}])
                assert again.cost_usd == pytest.approx(expected(again, 1e-6, 2e-6)), again.cost_usd

    asyncio.run(main())
