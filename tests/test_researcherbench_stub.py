"""ResearcherBench judge tasks through the real litellm stack against the loopback stub server: a responder
that answers each of our three prompts validly (rubric yes/no text, claims JSON, verification JSON by id);
with 20 % injected faults and retries, every judgment and every score equals the fault-free run."""

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
from reportbench.protocols.researcherbench.tasks import ExtractInput, offline_extract
from reportbench.stub_server import FAULT_KINDS, stub_server_thread
from spine_helpers import run_benchmark

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]

FAULTS = {kind: 0.2 / len(FAULT_KINDS) for kind in FAULT_KINDS}


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
    """A deterministic stand-in for the rubric, extraction and verification judges (our prompts)."""
    user = messages[-1]["content"]
    if "Rubric item (importance weight" in user:
        return "yes: the report states it." if _h(user) % 3 else "no: the report never says so."
    if "<<<SECTION" in user:
        inp = ExtractInput(
            question="q",
            section=_between(user, "<<<SECTION\n", "SECTION>>>"),
            references=_between(user, "<<<REFERENCES\n", "REFERENCES>>>"),
        )
        claims = offline_extract(inp, {}).output.model_dump()["claims"]
        return json.dumps({"claims": claims})
    if "<<<PAGE" in user:
        ids = [int(i) for i in re.findall(r"^\[(\d+)\]\nClaim:", user, re.M)]
        verdicts = ("yes", "no", "unknown")
        return json.dumps({"results": [{"id": i, "result": verdicts[_h(f"{user}{i}") % 3]} for i in ids]})
    raise AssertionError(f"unexpected prompt: {user[:80]!r}")


def _params(repo_root: Path, base_url: str, *, max_retries: int) -> dict:
    params = composed_params(
        ["benchmarks=[deepscholar,researcherbench]", "judge=stub", "researcherbench/judges=single"],
        conf_dir=repo_root / "conf",
    )
    params["judge"].update({"api_base": base_url})
    params["judge"]["runtime"] = {
        **params["judge"]["runtime"],
        "max_concurrency": 16,
        "timeout_s": 0.5,
        "max_retries": max_retries,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "parse_retries": 4,
        "cache_path": None,
        "progress": False,
    }
    return params


def _run(repo_root: Path, out: Path, **server: Any) -> tuple[Path, dict[str, int]]:
    with stub_server_thread(responder=responder, **server) as s:
        root = run_benchmark(_params(repo_root, s.base_url, max_retries=8), "researcherbench", out)
        return root, dict(s.counts)


def _snapshot(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sysdir in sorted((root / "judgments").iterdir()):
        for step in ("rubric", "extract", "verify"):
            js = read_judgments(sysdir / "main" / f"{step}.parquet")
            out[f"{sysdir.name}/{step}"] = [(j.item_id, j.status, j.value, j.parsed) for j in js]
        res = pl.read_parquet(sysdir / "main" / "derived" / "claim_results.parquet")
        out[f"{sysdir.name}/results"] = res.rows()
    summary = json.loads((root / "metrics" / "systems.json").read_text())
    out["metrics"] = {s: v["metrics"] for s, v in summary.items()}
    return out


def test_stub_with_faults_gives_identical_results(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    clean_root, clean_counts = _run(repo_root, tmp_path / "clean")
    clean = _snapshot(clean_root)
    assert clean_counts.get("requests", 0) > 20
    results = [r[-1] for k, v in clean.items() if k.endswith("/results") for r in v]
    assert {"yes", "no", "unknown", "no_url", "fetch_error"} <= set(results)
    assert all(st == "ok" for k, v in clean.items() if "/" in k and not k.endswith("results") for _, st, _, _ in v)

    faulty_root, counts = _run(repo_root, tmp_path / "faulty", faults=FAULTS, seed=7, timeout_sleep_s=1.5)
    assert sum(counts.get(k, 0) for k in FAULT_KINDS) > 0, counts
    faulty = _snapshot(faulty_root)
    assert faulty == copy.deepcopy(clean)
