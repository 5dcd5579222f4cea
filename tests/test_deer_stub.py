"""DEER's judge tasks through the real litellm stack against the stub server with 20 % injected faults: the
five rubric calls, claim extraction and verification all recover the fault-free answers exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.llm import LLMJudge
from reportbench.judges.runner import run_judgments_sync
from reportbench.prompts import load_prompt
from reportbench.protocols.deer import ivm
from reportbench.protocols.deer.rubric import CALLS
from reportbench.protocols.deer.tasks import (
    RUBRIC_TASKS,
    TASKS,
    ExtractInput,
    RubricInput,
    VerifyInput,
)
from reportbench.stub_server import FAULT_KINDS, stub_server_thread

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]

FAULTS = {kind: 0.2 / len(FAULT_KINDS) for kind in FAULT_KINDS}
TASK_BY_NAME = {t.name: t for t in TASKS}


def _cfg(base_url: str, retries: int) -> dict[str, Any]:
    return {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base_url,
        "structured_output": "json_schema",
        "runtime": {
            "max_concurrency": 16,
            "timeout_s": 0.5,
            "max_retries": retries,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "parse_retries": retries,
            "cache_path": None,
            "progress": False,
        },
    }


def _items(repo_root: Path) -> dict[str, list[tuple[str, Any, dict[str, str]]]]:
    demo = repo_root / "data" / "demo" / "deer"
    reports = sorted((demo / "systems" / "careful_writer").glob("*.md"))
    query = (demo / "tasks" / "physics" / "1" / "query.md").read_text()
    eg = (demo / "tasks" / "physics" / "1" / "core_criteria.md").read_text()
    out: dict[str, list[tuple[str, Any, dict[str, str]]]] = {}
    for call in CALLS:
        out[RUBRIC_TASKS[call]] = [
            (f"{p.stem}:{call}", RubricInput(call=call, query=query, report=p.read_text(), guidance=eg), {})
            for p in reports
        ]
    ext, ver = [], []
    for p in reports:
        body, _ = ivm.split_references(p.read_text())
        seg = ivm.segment(body.strip())
        for b, batch in enumerate(ivm.batches(seg.sentences, 5)):
            ext.append(
                (f"{p.stem}:x{b}", ExtractInput(report=seg.labelled, targets=[f"{a}: {s}" for a, s in batch]), {})
            )
            ver.append(
                (
                    f"{p.stem}:v{b}",
                    VerifyInput(url=f"https://example.org/{p.stem}/{b}", claims=[s for _, s in batch], context=body),
                    {},
                )
            )
    out["deer_extract"], out["deer_verify"] = ext, ver
    return out


def _responder_for(items: dict[str, list[tuple[str, Any, dict[str, str]]]], prompts: Path) -> Any:
    """Answers valid for OUR strict parsers: the offline rule's answer for the item whose prompt this is."""
    table: dict[str, str] = {}
    for name, rows in items.items():
        task = TASK_BY_NAME[name]
        for _, inp, _ in rows:
            user = load_prompt(task.prompt_id, prompts).render(**inp.prompt_values())[-1]["content"]
            out = task.offline(inp, {}).output
            table[user] = out.model_dump_json(by_alias=True) if name != "deer_verify" else out.model_dump_json()
            if name in RUBRIC_TASKS.values():
                table[user] = _rubric_answer(out)

    def respond(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        user = next(str(m["content"]) for m in reversed(messages) if m.get("role") == "user")
        return table[user]

    return respond


def _rubric_answer(out: Any) -> str:
    import json

    nested: dict[str, Any] = {}
    for key, score in out.scores.items():
        g, s, e, f = key.split(".")
        nested.setdefault(g, {}).setdefault(s, {}).setdefault(e, {})[f] = {
            "description": out.rationales[key],
            "score": "N/A" if score is None else score,
        }
    return json.dumps({"scores": nested})


def _run_all(base_url: str, items: dict[str, Any], prompts: Path, retries: int) -> dict[str, list[Any]]:
    out = {}
    for name, rows in items.items():
        judge = LLMJudge(TASK_BY_NAME[name], _cfg(base_url, retries), prompts_dir=prompts)
        out[name] = list(run_judgments_sync(judge, rows, name))
    return out


def test_deer_tasks_survive_injected_faults(repo_root: Path) -> None:
    prompts = repo_root / "prompts"
    items = _items(repo_root)
    responder = _responder_for(items, prompts)
    with stub_server_thread(responder=responder) as s:
        clean = _run_all(s.base_url, items, prompts, retries=0)
    for name, js in clean.items():
        assert js and all(j.ok for j in js), (name, [j.error for j in js if not j.ok][:2])
    with stub_server_thread(responder=responder, faults=FAULTS, seed=5, timeout_sleep_s=1.5) as s:
        faulty = _run_all(s.base_url, items, prompts, retries=8)
        counts = dict(s.counts)
    assert sum(counts.get(k, 0) for k in FAULT_KINDS) > 0, counts
    for name in items:
        assert all(j.ok for j in faulty[name]), (name, [j.error for j in faulty[name] if not j.ok][:2])
        assert [(j.item_id, j.parsed) for j in faulty[name]] == [(j.item_id, j.parsed) for j in clean[name]]
    n_calls = sum(len(v) for v in items.values())
    assert n_calls == 15 + len(items["deer_extract"]) + len(items["deer_verify"])
