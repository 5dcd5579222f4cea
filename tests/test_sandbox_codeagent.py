"""A smolagents `CodeAgent` step whose model-written code attacks, through the real system stage
(tests/test_sandbox_hostile.py's project: fake keys in the stage's environment and on a parent's command line).

The model (scripted) answers the manager with code that reads the stage's environment through /proc, then
imports `os` to walk it, then writes outside its folder. Each step is refused (the agent's own executor refuses
`open` and unauthorised imports before the sandbox has to: defence in depth; tests/test_sandbox_hostile.py's
swapped-in adapter is the case where the code does run, inside the sandbox), the agent sees the refusals and
finishes; the task is recorded, the competitor is unchanged and no key fragment is anywhere."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_stubs import ScriptedLLM, agent_python, all_text
from test_sandbox_hostile import (  # noqa: F401  (project: the shared fixture)
    ESCAPE,
    _assert_competitor_unchanged,
    _assert_no_key_anywhere,
    _run_dir,
    _stage,
    project,
)

pytestmark = pytest.mark.integration
NEEDS_AGENT_VENV = True  # run last: CI builds the venvs in the background meanwhile (tests/conftest.py)
KIND = "smolagents_deep_research"

STEPS = [
    'Thought: RB-STEP read the keys.\n<code>\nleak = open("/proc/1/environ").read()\nprint(leak)\n</code>',
    'Thought: RB-STEP walk the processes.\n<code>\nimport os\nprint(os.listdir("/proc"))\n</code>',
    f'Thought: RB-STEP leave a mark.\n<code>\nimport pathlib\npathlib.Path("/{ESCAPE}.txt").write_text("x")\n</code>',
]


def attacker(body: dict[str, Any]) -> dict[str, Any]:
    if "<end_plan>" in (body.get("stop") or []):
        return {"content": "1. Read what I can.\n2. Report.\n<end_plan>"}
    done = all_text(body).count("RB-STEP")  # each of its earlier steps is in the memory it is sent
    if done < len(STEPS):
        return {"content": STEPS[done]}
    return {"content": 'Thought: report.\n<code>\nfinal_answer("## Findings\\n\\nNothing could be read.")\n</code>'}


def test_a_code_agent_step_that_attacks_is_refused(
    project: dict[str, Any], monkeypatch: pytest.MonkeyPatch  # noqa: F811 - the fixture imported above
) -> None:
    py = Path(os.path.abspath(agent_python(KIND)))  # the shared venv
    home = project["proj"].parent / "codeagent-home" / KIND
    home.mkdir(parents=True)
    (home / "venv").symlink_to(py.parent.parent, target_is_directory=True)
    shutil.copy(py.parent.parent.parent / "lock.txt", home / "lock.txt")
    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(home.parent))
    with ScriptedLLM(attacker) as llm:
        entry = {
            "kind": KIND,
            "model": "openai/stub-agent",
            "api_base": llm.base_url,
            "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
            "budget": {"llm_calls": 40, "wall_s": 300},
            "concurrency": 1,
        }
        proc = _stage(project, "code_attacker", entry)
        sent = "\n".join(all_text(b) for b in llm.chat_bodies())
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = _run_dir(project, "code_attacker")
    assert json.loads((run / "sandbox.json").read_text())["backend"] == "bwrap"
    outcomes = [json.loads(line) for line in (run / "outcomes.jsonl").read_text().splitlines()]
    assert {o["task_id"] for o in outcomes} == set(project["ids"])
    assert all(o["status"] == "ok" for o in outcomes), outcomes  # it finished, with what it could not read
    # every step was refused, and the agent was told so
    assert "Forbidden function evaluation: 'open'" in sent, sent[-3000:]
    assert "Import of os is not allowed" in sent, sent[-3000:]
    assert not Path(f"/{ESCAPE}.txt").exists()
    _assert_competitor_unchanged(project)
    _assert_no_key_anywhere(project)
