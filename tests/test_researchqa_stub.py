"""ResearchQA judges through litellm against the loopback stub server: coverage and pairwise judging of the
demo with 20 % injected faults give the same coverage and the same ratings as a clean run; the authors' pack
(judge.prompts=authors) drives the same path when the mirror is available."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from reportbench.config import composed_params
from reportbench.protocols.researchqa.labels import LABELS
from reportbench.stub_server import FAULT_KINDS, stub_server_thread
from spine_helpers import refresh_plan, run_benchmark

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]

FAULTS = {kind: 0.2 / len(FAULT_KINDS) for kind in FAULT_KINDS}
NOISE = ("{}", "{}.", "- {}", "{n}. {}", "**{}**", "{}")


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], 16)


def responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
    """Valid answers for our prompts and the authors' formats, derived from the request text (deterministic),
    with label noise (numbering, bullets, periods, emphasis) that the parser must accept."""
    user = messages[-1]["content"]
    h = _h(user)
    m = re.search(r"Reply with exactly (\d+) lines", user)
    n = int(m.group(1)) if m else None
    if n is None and "\nQuestions:\n" in user and user.endswith("Output:"):  # the authors' coverage layout
        n = len(user.split("\nQuestions:\n", 1)[1].rsplit("\n\nOutput:", 1)[0].split("\n"))
    if n is not None:
        lines = []
        for i in range(n):
            label = LABELS[(h >> (3 * i)) % 5]
            lines.append(NOISE[(h >> (2 * i + 7)) % len(NOISE)].format(label, n=i + 1))
        return "\n".join(lines)
    first = "Response 1" if h % 3 else "Response 2"
    if '"better"' in user:  # our pairwise prompt
        return json.dumps({"better": first, "justification": f"stub {h % 1000}"})
    return f'**output: {{"judgement": "{first}"}}**\nJustification: stub reasons {h % 1000}'


@pytest.fixture()
def params(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(repo_root)
    p = composed_params(["benchmarks=[deepscholar,researchqa]", "judge=llm"], conf_dir=repo_root / "conf")
    p["benchmarks"]["researchqa"]["scoring"]["rating"]["rounds"] = 50
    return refresh_plan(p)


def _judge(params: dict, base_url: str, *, retries: int, prompts: str = "ours") -> dict:
    p = json.loads(json.dumps(params))
    p["judge"].update(
        {"model": "openai/stub-judge", "api_base": base_url, "prompts": prompts, "structured_output": "none"}
    )
    p["judge"]["runtime"].update(
        {
            "max_concurrency": 8,
            "timeout_s": 0.5,
            "max_retries": retries,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "parse_retries": 4,
            "cache_path": None,
            "progress": False,
        }
    )
    return refresh_plan(p)


def _results(root: Path) -> tuple[dict, dict]:
    systems = json.loads((root / "metrics" / "systems.json").read_text())
    extra = json.loads((root / "metrics" / "extra.json").read_text())
    cov = {s: (v["metrics"]["coverage"]["mean"], v["metrics"]["coverage"]["n_failed"]) for s, v in systems.items()}
    return cov, extra["ratings"]["tables"]


def test_faults_with_retries_give_identical_ratings(params: dict, tmp_path: Path) -> None:
    with stub_server_thread(responder=responder) as s:
        clean = run_benchmark(_judge(params, s.base_url, retries=0), "researchqa", tmp_path / "clean")
        assert s.counts["requests"] > 0
    with stub_server_thread(responder=responder, faults=FAULTS, seed=3, timeout_sleep_s=1.5) as s:
        faulty = run_benchmark(_judge(params, s.base_url, retries=8), "researchqa", tmp_path / "faulty")
        counts = dict(s.counts)
    assert sum(counts.get(k, 0) for k in FAULT_KINDS) > 0, counts
    cov_clean, ratings_clean = _results(clean)
    cov_faulty, ratings_faulty = _results(faulty)
    assert all(n_failed == 0 for _, n_failed in cov_clean.values())
    assert cov_faulty == cov_clean
    assert ratings_faulty == ratings_clean
    assert len({v for v, _ in cov_clean.values()}) == 3  # the answers really vary


def test_authors_pack_through_the_stub(
    params: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, authors_mirror: Path
) -> None:
    if not (authors_mirror / "realliyifei" / "ResearchQA").is_dir():
        pytest.skip("the authors' sources are not in the mirror (set REPORTBENCH_AUTHORS_MIRROR)")
    monkeypatch.setenv("REPORTBENCH_AUTHORS_OFFLINE", "1")
    with stub_server_thread(responder=responder) as s:
        root = run_benchmark(_judge(params, s.base_url, retries=0, prompts="authors"), "researchqa", tmp_path / "a")
    cov, ratings = _results(root)
    assert all(n_failed == 0 for _, n_failed in cov.values())
    assert ratings["half"] and ratings["duplicate"]
    import polars as pl

    pairwise = pl.read_parquet(root / "cross" / "pairwise.parquet")
    assert not pairwise["flagged"].any() and set(pairwise["prompt_id"]) == {"authors:researchqa/pairwise"}


def test_an_unparseable_order_counts_zero_votes_and_is_flagged(params: dict, tmp_path: Path) -> None:
    def garbling(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        user = messages[-1]["content"]
        if '"better"' in user and _h(user) % 3 == 0:
            return "I cannot decide between these two answers."  # never parses, on every retry
        return responder(messages, response_format)

    with stub_server_thread(responder=garbling) as s:
        root = run_benchmark(_judge(params, s.base_url, retries=0), "researchqa", tmp_path / "g")
    import polars as pl

    pairwise = pl.read_parquet(root / "cross" / "pairwise.parquet")
    flagged = pairwise.filter(pl.col("flagged"))
    assert flagged.height > 0 and flagged["vote"].null_count() == flagged.height
    assert all(e.startswith("parse:") for e in flagged["error"])
    assert set(flagged["raw_output"]) == {"I cannot decide between these two answers."}
    battles = pl.read_parquet(root / "cross" / "battles.parquet")
    extra = json.loads((root / "metrics" / "extra.json").read_text())["ensemble"]
    main_ok = battles.filter(~pl.col("reserve") & (pl.col("status") == "ok")).height
    assert extra["flagged_orders"] == flagged.height and extra["rated"] == main_ok  # no battle dropped
