"""ResearchQA coverage: the label parser on every label-noise case of spec §7, scoring arithmetic, <think>."""

from __future__ import annotations

import pytest

from reportbench.judges.base import ParseError
from reportbench.protocols.researchqa.labels import (
    label_of,
    label_score,
    parse_labels,
    strip_links,
    strip_think,
)
from reportbench.protocols.researchqa.tasks import (
    CoverageInput,
    CoverageOutput,
    PairwiseInput,
    offline_coverage,
    offline_pairwise,
    parse_coverage,
    parse_pairwise,
)

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("raw", "n", "expected"),
    [
        ("Mostly\nCompletely\nBarely", 3, ["Mostly", "Completely", "Barely"]),
        ("Mostly.\nCompletely.\n", 2, ["Mostly", "Completely"]),  # trailing periods
        ("- Mostly\n* Completely\n• Barely", 3, ["Mostly", "Completely", "Barely"]),  # bullets
        ("1. Mostly\n2) Completely\n(3) Not at all", 3, ["Mostly", "Completely", "Not at all"]),  # numbering
        ("Q1: Mostly\nQuestion 2 - barely", 2, ["Mostly", "Barely"]),
        ("MOSTLY\ncompletely\nnOt At AlL", 3, ["Mostly", "Completely", "Not at all"]),  # case
        ("**Mostly**\n`Completely`", 2, ["Mostly", "Completely"]),  # emphasis / code
        ("Here are my ratings:\nMostly\nCompletely", 2, ["Mostly", "Completely"]),  # extra prose ignored
        ("Not\nat all\nMostly", 2, ["Not at all", "Mostly"]),  # "Not at all" split across lines
        ("Not at\nall\nMostly", 2, ["Not at all", "Mostly"]),
        ("\n\n  Mostly  \n\n\nBarely\n\n", 2, ["Mostly", "Barely"]),  # blank lines, spaces
        ("- 1. **Moderately**.\n", 1, ["Moderately"]),
        ("Mostly\r\nBarely\r\n", 2, ["Mostly", "Barely"]),
    ],
)
def test_parser_accepts_label_noise(raw: str, n: int, expected: list[str]) -> None:
    assert parse_labels(raw, n) == expected


@pytest.mark.parametrize(
    ("raw", "n"),
    [
        ("Mostly\nCompletely", 3),  # fewer lines than items
        ("Mostly\nCompletely\nBarely\nMostly", 3),  # more lines than items
        ("The answer is mentioned but not at all detailed", 1),  # contains a label, is not one
        ("Mostly, because it explains dense retrieval", 1),  # label plus prose on one line
        ("Mostly, Completely", 2),  # two labels on one line
        ("Somewhat\nMostly", 2),  # an unknown label
        ("", 1),
        ("   \n  ", 1),
    ],
)
def test_parser_rejects_wrong_counts_and_substrings(raw: str, n: int) -> None:
    with pytest.raises(ParseError):
        parse_labels(raw, n)


def test_label_of_is_whole_line_only() -> None:
    assert label_of("  not at all. ") == "Not at all"
    assert label_of("not at all detailed") is None
    assert label_of("mostly covered") is None


def test_scale_is_x_minus_one_over_four() -> None:
    assert [label_score(x) for x in ("Not at all", "Barely", "Moderately", "Mostly", "Completely")] == [
        0.0,
        0.25,
        0.5,
        0.75,
        1.0,
    ]
    out = CoverageOutput(labels=["Completely", "Barely", "Mostly", "Not at all"])
    assert out.value() == pytest.approx((1 + 0.25 + 0.75 + 0) / 4)
    assert CoverageOutput(labels=[]).value() is None


def test_parse_coverage_needs_one_label_per_question() -> None:
    inputs = CoverageInput(response="r", questions=["q1?", "q2?"])
    assert parse_coverage("Mostly\nBarely", inputs).labels == ["Mostly", "Barely"]
    with pytest.raises(ParseError):
        parse_coverage("Mostly", inputs)
    # the record's canonical JSON form re-parses strictly (count and labels checked)
    assert parse_coverage('{"labels": ["Mostly", "Barely"]}', inputs).labels == ["Mostly", "Barely"]
    for bad in (
        '{"labels": ["Mostly"]}',
        '{"labels": ["mostly", "Barely"]}',
        '{"labels": ["Mostly", "Barely"], "x": 1}',
    ):
        with pytest.raises((ParseError, ValueError)):
            parse_coverage(bad, inputs)


def test_offline_records_reparse_with_the_strict_parser() -> None:
    from reportbench.judges.base import dump_parsed

    inputs = CoverageInput(response="dense retrievers embed passages", questions=["Does it embed passages?", "x?"])
    out = offline_coverage(inputs, {}).output
    assert parse_coverage(dump_parsed(out), inputs) == out
    pin = PairwiseInput(query="q", response_1="a", response_2="b")
    pout = offline_pairwise(pin, {}).output
    assert parse_pairwise(dump_parsed(pout), pin) == pout


def test_coverage_prompt_values_are_unnumbered_and_have_no_query() -> None:
    v = CoverageInput(response="ans", questions=["Does it A?", "Does it B?"]).prompt_values()
    assert v["questions"] == "Does it A?\nDoes it B?" and v["num_questions"] == 2
    assert "query" not in v


def test_offline_coverage_grades_by_content_word_share() -> None:
    inputs = CoverageInput(
        response="Dense retrievers embed passages into vectors; sparse retrieval weights terms.",
        questions=[
            "Does the response explain that dense retrievers embed passages into vectors?",
            "Does the response discuss protein folding kinetics?",
        ],
    )
    out = offline_coverage(inputs, {}).output
    assert out.labels == ["Completely", "Not at all"]


def test_think_blocks_are_stripped() -> None:
    assert strip_think("<think>secret plan</think>\nThe answer [1].") == "The answer [1]."
    assert strip_think("a <THINK>x\ny</THINK> b") == "a  b"
    assert strip_think("reasoning with no opening tag</think>Final.") == "Final."
    assert strip_think("<think>never closed") == ""
    assert strip_think("plain") == "plain"


def test_markdown_links_stripped_like_the_authors() -> None:
    text = "Dense [link](https://x.org/a) and [DPR](https://x.org/dpr) work."
    assert strip_links(text, "authors") == "Dense  and [DPR](https://x.org/dpr) work."
    assert strip_links(text, "all") == "Dense  and DPR work."
    assert strip_links(text, "none") == text
    with pytest.raises(ValueError):
        strip_links(text, "bogus")


def test_pairwise_parser_is_strict_json() -> None:
    ok = parse_pairwise('{"better": "Response 2", "justification": "more complete"}')
    assert ok.better == "Response 2" and ok.value() == 0.0
    for bad in ('{"better": "Response 3", "justification": "x"}', "Response 1", '{"better": "Response 1"}'):
        with pytest.raises((ParseError, ValueError)):
            parse_pairwise(bad)


def test_offline_pairwise_is_antisymmetric() -> None:
    q = "How do dense retrievers differ from sparse retrievers?"
    r1 = "Dense retrievers embed text; sparse retrievers weight terms [1].\n[1] DPR (2020)"
    r2 = "Retrieval is useful."
    a = offline_pairwise(PairwiseInput(query=q, response_1=r1, response_2=r2), {}).output.better
    b = offline_pairwise(PairwiseInput(query=q, response_1=r2, response_2=r1), {}).output.better
    assert a == "Response 1" and b == "Response 2"
    # identical content keys: the hash decides, still consistently across orders
    x, y = "same words", "words same"
    a = offline_pairwise(PairwiseInput(query="zzz", response_1=x, response_2=y), {}).output.better
    b = offline_pairwise(PairwiseInput(query="zzz", response_1=y, response_2=x), {}).output.better
    assert a != b
