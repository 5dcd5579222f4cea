"""DEER authors' pack wired to our judge tasks: render from our typed inputs, strict parse back into our
output models, response models build. Skips without the authors' sources (REPORTBENCH_AUTHORS_MIRROR)."""

from __future__ import annotations

import json

import pytest

from reportbench.judges.base import ParseError
from reportbench.prompt_packs import get_step
from reportbench.prompt_packs.judging import AuthorsPrompt
from reportbench.protocols.deer.rubric import CALLS
from reportbench.protocols.deer.tasks import RUBRIC_TASKS, SAMPLE_INPUTS, TASKS

pytestmark = pytest.mark.core
TASK_BY_NAME = {t.name: t for t in TASKS}


@pytest.fixture(autouse=True)
def _sources() -> None:
    if not get_step("DEER", "j1").available():
        pytest.skip("authors' DEER sources not in the mirror/cache (set REPORTBENCH_AUTHORS_MIRROR)")


def _rubric_answer(out: object, fence: bool = False) -> str:
    nested: dict = {}
    for key, score in out.scores.items():  # type: ignore[attr-defined]
        g, s, e, f = key.split(".")
        nested.setdefault(g, {}).setdefault(s, {}).setdefault(e, {})[f] = {
            "description": "d",
            "score": "N/A" if score is None else score,
        }
    text = json.dumps({"scores": nested})
    return f"Here you go:\n```json\n{text}\n```" if fence else text


@pytest.mark.parametrize("call", list(CALLS))
def test_rubric_steps_round_trip(call: str) -> None:
    task = TASK_BY_NAME[RUBRIC_TASKS[call]]
    step = get_step(
        "DEER",
        {
            "request_fulfillment": "j1",
            "analytical_soundness": "j2",
            "structural_coherence": "j3",
            "format_style": "j4",
            "information_ethics": "j5",
        }[call],
    )
    prompt = AuthorsPrompt(task, step)
    inp = SAMPLE_INPUTS[task.name]
    msgs = prompt.messages(inp)
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert (inp.guidance in msgs[1]["content"]) == CALLS[call][1]  # EG only in J1-J3, as the authors' code
    offline = task.offline(inp, {}).output
    parsed = prompt.parse(_rubric_answer(offline, fence=True), inp)
    assert parsed.scores == offline.scores
    with pytest.raises(ParseError):
        prompt.parse(_rubric_answer(offline).replace('"score": ', '"score": 1', 1), inp)  # 1x -> out of range
    model = step.response_model()
    assert model.model_json_schema()["title"].endswith("_response")


def test_extraction_and_verification_steps_round_trip() -> None:
    ext_task, ver_task = TASK_BY_NAME["deer_extract"], TASK_BY_NAME["deer_verify"]
    ext = AuthorsPrompt(ext_task, get_step("DEER", "claim_extraction"))
    inp = SAMPLE_INPUTS["deer_extract"]
    msgs = ext.messages(inp)
    assert msgs[1]["content"].endswith("\n".join(inp.targets))
    out = ext_task.offline(inp, {}).output
    assert ext.parse(out.model_dump_json(), inp) == out
    bad = json.loads(out.model_dump_json())
    bad["claims"][0]["position"] = "L99.S1"
    with pytest.raises(ParseError):
        ext.parse(json.dumps(bad), inp)
    assert "claims" in get_step("DEER", "claim_extraction").response_model().model_json_schema()["properties"]

    ver = AuthorsPrompt(ver_task, get_step("DEER", "claim_verification"))
    vin = SAMPLE_INPUTS["deer_verify"]
    assert "1. c1\n2. c {2}" in ver.messages(vin)[0]["content"]
    vout = ver_task.offline(vin, {}).output
    assert ver.parse(vout.model_dump_json(), vin) == vout
    with pytest.raises(ParseError):
        ver.parse(
            json.dumps(
                {
                    "reliable_explanation": "x",
                    "reliable": True,
                    "results": [{"claim_index": 3, "explanation": "e", "result": "supported"}],
                }
            ),
            vin,
        )
