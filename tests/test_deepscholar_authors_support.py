"""With the authors' DeepScholar pack (REPORTBENCH_AUTHORS_MIRROR): Claim Coverage's `support` and Cite-P's
`citation_support` send the authors' support messages (their code used one prompt for both) and accept only a
bare 1/0 answer; anything else is a recorded failure, never a guessed 0. Skips without the authors' sources."""

from __future__ import annotations

from typing import Any

import pytest

from reportbench.judges.factory import make_judge
from reportbench.judges.runner import run_judgments_sync
from reportbench.judges.tasks.support import SupportInput
from reportbench.prompt_packs import get_step
from reportbench.protocols.deepscholar import tasks as _ds_tasks  # noqa: F401  (registers citation_support)
from reportbench.stub_server import stub_server_thread

pytestmark = pytest.mark.integration

ANSWERS = {"claim one": "1", "claim zero": "0", "claim spaced": " 1\n", "claim dot": "1.", "claim word": "Yes"}


def _cfg(base_url: str) -> dict[str, Any]:
    return {
        "backend": "litellm", "model": "openai/stub-judge", "api_base": base_url, "structured_output": "json_schema",
        "prompts": "authors",
        "runtime": {"max_concurrency": 2, "timeout_s": 5, "max_retries": 0, "backoff_base_s": 0.01,
                    "backoff_max_s": 0.05, "parse_retries": 0, "cache_path": None, "progress": False},
    }  # fmt: skip


@pytest.mark.parametrize("task", ["support", "citation_support"])
def test_authors_support_parses_bare_binary_strictly(task: str) -> None:
    step = get_step("deepscholar", "support")
    if not step.available():
        pytest.skip("DeepScholar sources not in the mirror/cache (set REPORTBENCH_AUTHORS_MIRROR)")
    seen: dict[str, list[dict[str, Any]]] = {}

    def responder(messages: list[dict[str, Any]], fmt: dict[str, Any] | None) -> str:
        assert fmt is None, "the authors send no response_format for the support validator"
        claim = next(c for c in ANSWERS if f"Claim: {c}\n" in messages[-1]["content"])
        seen[claim] = messages
        return ANSWERS[claim]

    items = [(c, SupportInput(claim=c, reference="Title: t\nabstract"), {}) for c in ANSWERS]
    with stub_server_thread(responder=responder) as s:
        judge = make_judge(task, _cfg(s.base_url))
        runs = {j.item_id: j for j in run_judgments_sync(judge, items, "t")}
    assert runs["claim one"].ok and runs["claim one"].value == 1.0
    assert runs["claim zero"].ok and runs["claim zero"].value == 0.0
    assert runs["claim spaced"].ok and runs["claim spaced"].value == 1.0  # surrounding whitespace only
    for bad in ("claim dot", "claim word"):  # the authors would map these to 0; we record a failure
        assert runs[bad].status == "failed" and (runs[bad].error or "").startswith("parse: ")
    assert all(j.prompt_id == "authors:deepscholar/support" for j in runs.values())
    assert seen["claim one"] == step.render({"premise": "Title: t\nabstract", "hypothesis": "claim one"})
