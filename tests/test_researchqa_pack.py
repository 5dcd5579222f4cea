"""ResearchQA authors' pack: strict parsers of the authors' answer formats and the binding to our tasks
(no authors' text here: the goldens test in test_authors_packs.py compares the rendered messages)."""

from __future__ import annotations

import pytest

from reportbench.judges.base import ParseError
from reportbench.prompt_packs import get_step
from reportbench.protocols.researchqa.tasks import CoverageInput, PairwiseInput

pytestmark = pytest.mark.core


def test_steps_are_registered_with_the_goldens_keys() -> None:
    cov, pair = get_step("researchqa", "coverage"), get_step("ResearchQA", "pairwise judge (tournament / Elo)")
    assert cov.step_id == "researchqa/coverage" and pair.step_id == "researchqa/pairwise"
    assert cov.judge_task == "researchqa_coverage" and pair.judge_task == "researchqa_pairwise"
    assert pair.render_swapped is not None and cov.render_swapped is None


def test_authors_pairwise_parser() -> None:
    parse = get_step("researchqa", "pairwise").parse
    ok = parse('**output: {"judgement": "Response 2"}**\nJustification: Response 2 is broader.')
    assert ok == {"verdict": "B", "justification": "Response B is broader."}
    for bad in (
        '**output: {"judgement": "Response 2"}**',  # no justification
        'output: {"judgement": "Response 1"}\nJustification: x',  # the ** are required
        "**output: {'judgement': 'Response 1'}**\nJustification: x",  # single quotes
        '**output: {"judgement": "Tie"}**\nJustification: x',
        "Error: rate limited",
        "",
    ):
        with pytest.raises(ParseError):
            parse(bad)


def test_pairwise_binding_maps_the_verdict_to_the_shown_position() -> None:
    step = get_step("researchqa", "pairwise")
    x = PairwiseInput(query="q", response_1="first", response_2="second")
    assert step.from_task(x) == {"query": "q", "response_A": "first", "response_B": "second"}
    assert step.to_output({"verdict": "A", "justification": "j"}, x) == {"better": "Response 1", "justification": "j"}
    assert step.to_output({"verdict": "B", "justification": "j"}, x)["better"] == "Response 2"


def test_authors_coverage_parser_counts_against_the_questions() -> None:
    step = get_step("researchqa", "coverage")
    x = CoverageInput(response="r", questions=["a?", "b?"])
    assert step.to_output(step.parse("Mostly\n2. Completely."), x) == {"labels": ["Mostly", "Completely"]}
    with pytest.raises(ParseError):
        step.to_output(step.parse("Mostly"), x)
    with pytest.raises(ParseError):
        step.parse("mentioned but not at all detailed")
