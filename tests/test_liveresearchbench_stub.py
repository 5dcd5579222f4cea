"""LiveResearchBench judge tasks through the real litellm stack against the loopback stub server: two ensemble
members (different model strings), every judge task (presentation, coverage, consistency, citation association,
relevance, support, and depth in the cross stage); with 20 % injected faults and retries, every judgment, the
depth table and every score equal the fault-free run."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from reportbench.config import composed_params
from reportbench.judges.runner import read_judgments
from reportbench.protocols.liveresearchbench.rules import issue_bin_score, tie_rule
from reportbench.stub_server import FAULT_KINDS, stub_server_thread
from spine_helpers import run_benchmark

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]

FAULTS = {kind: 0.2 / len(FAULT_KINDS) for kind in FAULT_KINDS}
STEPS = ("presentation", "coverage", "consistency", "citation", "relevance", "support")
DIMS = ("granularity", "insight", "critique", "evidence", "density")


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _checklist(user: str, prefix: str) -> str:
    ids = re.findall(rf"^- ({prefix}\d+): ", user, re.M)
    return json.dumps({"evaluations": {i: {"score": _h(user + i) % 2, "justification": f"stub {i}"} for i in ids}})


def responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
    """Deterministic, valid answers for our seven prompts (the model string makes the two members differ)."""
    user = messages[-1]["content"]
    if "Criteria (use these ids as keys):" in user:
        return _checklist(user, "p")
    if "Checklist (use these ids as keys):" in user:
        return _checklist(user, "q")
    if "List each substantive contradiction" in user or "List each claim that needs a source" in user:
        n = _h(user) % 5
        issues = [f"issue {k}" for k in range(n)]
        return json.dumps(
            {"specific_issues": issues, "total_issues": n, "score": issue_bin_score(n), "justification": "stub"}
        )
    if "<<<REPORT A" in user:
        a = {d: _h(user + "A" + d) % 6 for d in DIMS}
        b = {d: _h(user + "B" + d) % 6 for d in DIMS}
        ta, tb = sum(a.values()), sum(b.values())
        winner = {"eval": "A", "ref": "B", "tie": "tie"}[tie_rule(ta, tb)]
        return json.dumps(
            {
                "winner": winner,
                "scores": {"A": {**a, "total": ta}, "B": {**b, "total": tb}},
                "justification": "stub",
                "major_flaws": {"A": [], "B": []},
            }
        )
    if '"relevant"' in user:
        return json.dumps({"relevant": int(_h(user) % 4 != 0), "reason": "stub"})
    if '"supported"' in user:
        return json.dumps({"supported": _h(user) % 2, "evidence": "stub"})
    raise AssertionError(f"unexpected prompt: {user[:80]!r}")


def _params(repo_root: Path, base_url: str) -> dict:
    params = composed_params(["benchmarks=[deepscholar,liveresearchbench]", "judge=stub"], conf_dir=repo_root / "conf")
    params["judge"].update({"api_base": base_url})
    params["judge"]["runtime"] = {
        **params["judge"]["runtime"],
        "max_concurrency": 16,
        "timeout_s": 0.5,
        "max_retries": 8,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "parse_retries": 4,
        "cache_path": None,
        "progress": False,
    }
    params["benchmarks"]["liveresearchbench"]["judges"] = {
        "gpt5": {"model": "openai/stub-gpt5"},
        "gemini": {"model": "openai/stub-gemini"},
    }
    return params


def _run(repo_root: Path, out: Path, **server: Any) -> tuple[Path, dict[str, int]]:
    with stub_server_thread(responder=responder, **server) as s:
        root = run_benchmark(_params(repo_root, s.base_url), "liveresearchbench", out)
        return root, dict(s.counts)


def _snapshot(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sysdir in sorted((root / "judgments").iterdir()):
        for member in ("gemini", "gpt5"):
            for step in STEPS:
                js = read_judgments(sysdir / member / f"{step}.parquet")
                out[f"{sysdir.name}/{member}/{step}"] = [(j.item_id, j.status, j.value, j.parsed, j.model) for j in js]
    out["depth"] = pl.read_parquet(root / "cross" / "depth.parquet").rows()
    summary = json.loads((root / "metrics" / "systems.json").read_text())
    out["metrics"] = {s: v["metrics"] for s, v in summary.items()}
    return out


def test_stub_two_members_with_faults_gives_identical_results(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    clean_root, clean_counts = _run(repo_root, tmp_path / "clean")
    clean = _snapshot(clean_root)
    assert clean_counts.get("requests", 0) > 50
    judged = {k: v for k, v in clean.items() if k.count("/") == 2}
    assert all(st == "ok" for v in judged.values() for _, st, _, _, _ in v)
    for step in STEPS:  # every judge task ran for both members
        for member in ("gemini", "gpt5"):
            assert clean[f"careful_analyst/{member}/{step}"], (member, step)
    models = {m for v in judged.values() for *_, m in v}
    assert models == {"openai/stub-gpt5", "openai/stub-gemini"}
    depth = [r for r in clean["depth"] if r[4] == "ok"]
    assert len(depth) == 20

    faulty_root, counts = _run(repo_root, tmp_path / "faulty", faults=FAULTS, seed=7, timeout_sleep_s=1.5)
    assert sum(counts.get(k, 0) for k in FAULT_KINDS) > 0, counts
    faulty = _snapshot(faulty_root)
    assert faulty == copy.deepcopy(clean)


# ------------------------------------------------------------------------------- judge.prompts=authors
def _authors_openings() -> dict[str, str]:
    """Each criterion's system-prompt opening, rendered from the pinned sources at test time (never stored)."""
    from reportbench.prompt_packs import get_step

    sample = {
        "query": "Q",
        "report_content": "R",
        "checklists": ["c"],
        "current_date": "May 01, 2025",
        "report_a": "A",
        "report_b": "B",
    }
    out = {}
    for key in ("presentation", "coverage", "consistency", "citation", "depth"):
        system = get_step("liveresearchbench", f"{key}/openai").render(sample)[0]["content"]
        out[key] = system[:160]
    assert len(set(out.values())) == 5
    return out


def authors_responder(openings: dict[str, str]) -> Any:
    def respond(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        system = messages[0]["content"].removeprefix("System: ") if len(messages) == 1 else messages[0]["content"]
        text = "\n".join(m["content"] for m in messages)
        kind = next((k for k, o in openings.items() if system.startswith(o)), None)
        if kind == "presentation":
            return _checklist(text, "p")
        if kind == "coverage":
            return _checklist(text, "q")
        if kind in ("consistency", "citation"):
            n = _h(text) % 5
            return json.dumps(
                {
                    "specific_issues": [f"i{k}" for k in range(n)],
                    "total_issues": n,
                    "score": issue_bin_score(n),
                    "justification": "stub",
                }
            )
        if kind == "depth":
            a = {d: _h(text + "A" + d) % 6 for d in DIMS}
            b = {d: _h(text + "B" + d) % 6 for d in DIMS}
            ta, tb = sum(a.values()), sum(b.values())
            winner = {"eval": "A", "ref": "B", "tie": "tie"}[tie_rule(ta, tb)]
            return json.dumps(
                {
                    "winner": winner,
                    "scores": {"A": {**a, "total": ta}, "B": {**b, "total": tb}},
                    "justification": "stub",
                    "major_flaws": {"A": [], "B": []},
                }
            )
        return responder(messages, response_format)  # relevance / support: ours (no authors' prompt exists)

    return respond


def test_stub_authors_pack_two_members_with_their_own_framing(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, authors_mirror: Path
) -> None:
    from reportbench.prompt_packs import get_step

    if not get_step("liveresearchbench", "coverage/openai").available():
        pytest.skip("LiveResearchBench sources not in the mirror")
    monkeypatch.chdir(repo_root)
    seen: list[int] = []
    openings = _authors_openings()
    inner = authors_responder(openings)

    def recording(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        seen.append(len(messages))
        return inner(messages, response_format)

    with stub_server_thread(responder=recording, faults=FAULTS, seed=3, timeout_sleep_s=1.5) as s:
        params = _params(repo_root, s.base_url)
        params["judge"]["prompts"] = "authors"
        root = run_benchmark(params, "liveresearchbench", tmp_path / "authors")
    js = read_judgments(root / "judgments" / "careful_analyst" / "gemini" / "coverage.parquet")
    assert js and all(j.ok for j in js) and js[0].prompt_id == "authors:liveresearchbench/coverage"
    assert {1, 2} <= set(seen)  # the gemini member's merged single turn and gpt5's [system, user]
    depth = pl.read_parquet(root / "cross" / "depth.parquet")
    assert depth.filter(pl.col("status") == "ok").height == 20
    summary = json.loads((root / "metrics" / "systems.json").read_text())
    assert summary["careful_analyst"]["grading_coverage"]["coverage"]["gemini"] == {"n_graded": 3, "n_expected": 3}
