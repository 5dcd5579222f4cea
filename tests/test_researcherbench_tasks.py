"""ResearcherBench judge tasks: strict parsers (and the authors' compat parser), offline rules, text helpers."""

from __future__ import annotations

import pytest

from reportbench.judges.base import ParseError
from reportbench.protocols.researcherbench.tasks import (
    ExtractInput,
    RubricInput,
    VerifyInput,
    claim_list,
    offline_extract,
    offline_rubric,
    offline_verify,
    parse_extract,
    parse_rubric,
    parse_rubric_authors,
    parse_verify,
)
from reportbench.protocols.researcherbench.text import reference_urls, sections, split_authors

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("raw", "covered"),
    [
        ("yes: the report explains it", True),
        ("No: missing", False),
        ("**Yes** - it does", True),
        ('"no" because ...', False),
        ("YES", True),
        ("> no, partial only", False),
    ],
)
def test_rubric_parser_accepts_a_leading_verdict(raw: str, covered: bool) -> None:
    assert parse_rubric(raw).covered is covered


@pytest.mark.parametrize("raw", ["", "The answer is yes", "yesterday it was", "nope", "Covered: yes", "eyes"])
def test_rubric_parser_rejects_anything_else(raw: str) -> None:
    with pytest.raises(ParseError):
        parse_rubric(raw)


def test_authors_compat_parser_reproduces_the_substring_fallback() -> None:
    assert parse_rubric_authors("yes: fine").covered
    assert not parse_rubric_authors("no: not there").covered
    assert parse_rubric_authors("**No** - Bayesian methods absent, eyes elsewhere").covered  # 'yes' in 'eyes'
    assert not parse_rubric_authors("Not covered").covered  # 'no' substring -> not covered
    assert not parse_rubric_authors("").covered


def test_rubric_record_form_is_exact_json_only() -> None:
    assert parse_rubric('{"covered": true, "justification": "x"}').covered is True
    assert parse_rubric_authors('{"covered": false, "justification": "yes-ish"}').covered is False
    with pytest.raises(ParseError):
        parse_rubric('{"covered": "yes"}')


def test_rubric_justification_is_kept() -> None:
    assert parse_rubric("yes: it explains rotary embeddings").justification == "it explains rotary embeddings"


def test_extract_parser_strict() -> None:
    ok = '[{"claim": "A is B", "context": "A is B [1].", "source": "https://x.org/a"}]'
    assert parse_extract(ok).claims[0].source == "https://x.org/a"
    wrapped = '```json\n{"claims": [{"claim": "A", "context": "c", "source": ""}]}\n```'
    assert parse_extract(wrapped).claims[0].source == ""
    assert parse_extract("[]").claims == []
    for bad in (
        "Here are the claims: []",
        '[{"claim": "A", "context": "c"}]',
        '[{"claim": "A", "context": "c", "source": ["u1", "u2"]}]',
        '[{"claim": "", "context": "c", "source": ""}]',
        '{"items": []}',
        '[{"claim": "A", "context": "c", "source": "", "extra": 1}]',
        "[{'claim': 'A'}]",
    ):
        with pytest.raises(ParseError):
            parse_extract(bad)


def _verify_input(n: int) -> VerifyInput:
    return VerifyInput(source="page", claims=[{"id": i + 1, "claim": f"c{i}", "context": "x"} for i in range(n)])


def test_verify_parser_maps_by_id_and_checks_the_count() -> None:
    inp = _verify_input(3)
    out = parse_verify('[{"id": 3, "result": "Unknown"}, {"id": 1, "result": "YES"}, {"id": 2, "result": "no"}]', inp)
    assert out.by_id() == {1: "yes", 2: "no", 3: "unknown"}
    assert [r.id for r in out.results] == [1, 2, 3]
    for bad in (
        '[{"id": 1, "result": "yes"}, {"id": 2, "result": "no"}]',  # one missing
        '[{"id": 1, "result": "yes"}, {"id": 1, "result": "no"}, {"id": 3, "result": "no"}]',  # duplicate
        '[{"id": 1, "result": "partially"}, {"id": 2, "result": "no"}, {"id": 3, "result": "no"}]',
        '[{"id": "1", "result": "yes"}, {"id": 2, "result": "no"}, {"id": 3, "result": "no"}]',
        '[{"id": 0, "result": "yes"}, {"id": 1, "result": "no"}, {"id": 2, "result": "no"}]',
        '[{"result": "yes"}, {"result": "no"}, {"result": "no"}]',
    ):
        with pytest.raises(ParseError):
            parse_verify(bad, inp)
    assert parse_verify('{"results": [{"id": 1, "result": "no"}]}', _verify_input(1)).by_id() == {1: "no"}


def test_claim_list_layout() -> None:
    assert claim_list(_verify_input(2).claims) == "[1]\nClaim: c0\nContext: x\n\n[2]\nClaim: c1\nContext: x\n"
    assert "claim_list" in _verify_input(1).prompt_values()


def test_offline_rubric_rule() -> None:
    report = "Rotary position embeddings rotate the query and key vectors by an angle set by position."
    yes = offline_rubric(
        RubricInput(
            question="q", item="Explains rotary embeddings rotating query and key vectors.", weight=3, response=report
        ),
        {},
    )
    no = offline_rubric(
        RubricInput(question="q", item="Discusses ALiBi linear biases for extrapolation.", weight=1, response=report),
        {},
    )
    assert yes.output.covered and not no.output.covered


def test_offline_extract_resolves_markers_links_and_footnotes() -> None:
    section = (
        "Dense retrievers are widely used for attribution today [1].\n\n"
        "Sparse scoring was proposed in 2021 by several groups ([paper](https://b.org/x#:~:text=a)).\n\n"
        "Escaped markers resolve too in this sentence here \\[2\\].\n\n"
        "An uncited sentence with enough words to count."
    )
    refs = "[^1]: https://a.org/dpr\n[2] Some title. https://c.org/y"
    out = offline_extract(ExtractInput(question="q", section=section, references=refs), {}).output
    assert [c.source for c in out.claims] == [
        "https://a.org/dpr",
        "https://b.org/x#:~:text=a",
        "https://c.org/y",
        "",
    ]
    assert "[1]" not in out.claims[0].claim and "[1]" in out.claims[0].context


def test_offline_verify_rule() -> None:
    page = "Rotary position embeddings rotate the query and key vectors by an angle proportional to position. " * 2
    inp = VerifyInput(
        source=page,
        claims=[
            {"id": 1, "claim": "Rotary embeddings rotate query and key vectors by position", "context": ""},
            {"id": 2, "claim": "Rotary embeddings were invented in 2012 for convolutional networks", "context": ""},
        ],
    )
    assert offline_verify(inp, {}).output.by_id() == {1: "yes", 2: "no"}
    tiny = VerifyInput(source="404", claims=[{"id": 1, "claim": "x", "context": ""}])
    assert offline_verify(tiny, {}).output.by_id() == {1: "unknown"}


def test_authors_split_bug_and_fix() -> None:
    text = "Body.\n\n## References\n[1] IEEE entry\n\n## References\n[1] https://x.org\n"
    content, refs = split_authors(text)
    assert content == "Body.\n\n" or content.startswith("Body.")
    assert "https://x.org" not in refs  # split[1] only: the URL list is lost (the authors' bug)
    _, fixed = split_authors(text, fixed=True)
    assert "https://x.org" in fixed and "IEEE entry" in fixed
    assert split_authors("no header here") == ("no header here", "")
    _, perplexity = split_authors("Text [1].\n\n<div>⁂</div>\n\n[^1]: https://p.org\n")
    assert reference_urls(perplexity) == {"1": "https://p.org"}


def test_sections_of_five_paragraphs() -> None:
    text = "\n\n".join(f"p{i}" for i in range(7))
    assert sections(text) == ["p0\n\np1\n\np2\n\np3\n\np4", "p5\n\np6"]
    assert sections(text, join="authors") == ["p0p1p2p3p4", "p5p6"]
    assert sections("one block") == ["one block"]
    assert sections("") == []


def test_reference_urls_markdown_link_entries() -> None:
    assert reference_urls("[1\\. A title](https://t.org/a)\n- [2\\. B](https://t.org/b)") == {
        "1": "https://t.org/a",
        "2": "https://t.org/b",
    }
