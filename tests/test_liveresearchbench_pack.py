"""The LiveResearchBench authors' pack through our judge tasks (judge.prompts=authors): input mapping, the
positional q-numbering mapped back to our item ids, strict parsing, the Gemini path's un-escaping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.judges.base import ParseError
from reportbench.judges.tasks import get_task
from reportbench.prompt_packs import get_step
from reportbench.prompt_packs.judging import authors_prompt
from reportbench.protocols.liveresearchbench import tasks as T

pytestmark = pytest.mark.core


@pytest.fixture()
def mirror(authors_mirror: Path) -> None:
    if not get_step("liveresearchbench", "coverage/openai").available():
        pytest.skip("LiveResearchBench sources not in the mirror")


def test_coverage_pack_maps_positions_back_to_item_ids(mirror: None) -> None:
    prompt = authors_prompt(get_task("lrb_coverage"))
    assert prompt.prompt_id == "authors:liveresearchbench/coverage"
    inp = T.ChecklistInput(
        query="Q {x}",
        report="R [CONTENT]",
        eval_date="November 12, 2025",
        criteria=[T.ChecklistLine(id="q1", text="first"), T.ChecklistLine(id="q3", text="third")],
    )
    msgs = prompt.messages(inp)
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "- q1: first\n- q2: third" in msgs[1]["content"]  # the authors renumber by position
    raw = json.dumps(
        {"evaluations": {"q1": {"score": 1, "justification": "a"}, "q2": {"score": 0, "justification": "b"}}}
    )
    out = prompt.parse(raw, inp)
    assert out.scores() == {"q1": 1, "q3": 0}
    with pytest.raises(ParseError):
        prompt.parse(json.dumps({"evaluations": {"q1": {"score": "1", "justification": "a"}}}), inp)


def test_gemini_path_unescapes_then_parses_strictly(mirror: None) -> None:
    step = get_step("liveresearchbench", "consistency/gemini")
    raw = '```json\n{"specific_issues": ["50\\% vs 40\\%"], "total_issues": 1, "score": 90, "justification": "x"}\n```'
    assert step.parse(raw)["specific_issues"] == ["50% vs 40%"]
    with pytest.raises(ParseError):
        step.parse('{"specific_issues": [], "total_issues": 0, "score": 0, "justification": "x"}')
    msgs = step.render({"query": "Q", "report_content": "R", "current_date": "November 12, 2025"})
    assert len(msgs) == 1 and msgs[0]["role"] == "user" and msgs[0]["content"].startswith("System: ")
    assert "November 12, 2025" in msgs[0]["content"]


def test_depth_pack_validates_totals(mirror: None) -> None:
    prompt = authors_prompt(get_task("lrb_depth"))
    inp = T.DepthInput(query="Q", report_a="A", report_b="B")
    side = {"granularity": 1, "insight": 1, "critique": 1, "evidence": 1, "density": 1}
    good = {
        "winner": "tie",
        "scores": {"A": {**side, "total": 5}, "B": {**side, "total": 5}},
        "justification": "j",
        "major_flaws": {"A": [], "B": []},
    }
    assert prompt.parse(json.dumps(good), inp).winner == "tie"
    bad = {**good, "scores": {"A": {**side, "total": 7}, "B": {**side, "total": 5}}}
    with pytest.raises(ParseError):
        prompt.parse(json.dumps(bad), inp)


def test_gemini_member_gets_the_merged_framing_through_our_task(mirror: None) -> None:
    prompt = authors_prompt(get_task("lrb_consistency"))
    inp = T.PointwiseInput(query="Q", report="R", eval_date="November 12, 2025")
    openai = prompt.messages(inp)
    gemini = prompt.messages(inp.model_copy(update={"authors_path": "gemini"}))
    assert [m["role"] for m in openai] == ["system", "user"] and [m["role"] for m in gemini] == ["user"]
    assert gemini == get_step("liveresearchbench", "consistency/gemini").render(
        {"query": "Q", "report_content": "R", "current_date": "November 12, 2025"}
    )
    raw = '{"specific_issues": ["50\\% vs 40\\%"], "total_issues": 1, "score": 90, "justification": "x"}'
    assert prompt.parse(raw, inp).specific_issues == ["50% vs 40%"]  # the Gemini client's un-escaping
    assert "authors_path" not in inp.prompt_values()
