"""Sentence splitting: Punkt English + the 'et al.' guard + markdown structure + citation placeholders."""

from __future__ import annotations

import pytest

from reportbench.reports.citations import scan_citations
from reportbench.reports.sentences import build_sentences, split_sentences

pytestmark = pytest.mark.core


def _sentences(body: str):
    return build_sentences(body, scan_citations(body, {}).markers)


def test_et_al_never_ends_a_sentence() -> None:
    text = "Smith et al. showed this first. Then Lee et al. extended it."
    assert split_sentences(text) == ["Smith et al. showed this first.", "Then Lee et al. extended it."]


def test_abbreviations_and_decimals() -> None:
    text = "Throughput rose 2.35x, e.g. on the U.S. traces (i.e. the busiest ones). See Fig. 3 for details."
    assert split_sentences(text) == [
        "Throughput rose 2.35x, e.g. on the U.S. traces (i.e. the busiest ones).",
        "See Fig. 3 for details.",
    ]


def test_nltk_profile_is_plain_punkt() -> None:
    # nltk's English Punkt does not know "e.g."; extra_abbreviations=() reproduces that faithfully
    text = "It helps, e.g. the first case. Done."
    assert split_sentences(text, extra_abbreviations=()) == ["It helps, e.g.", "the first case.", "Done."]
    assert split_sentences(text) == ["It helps, e.g. the first case.", "Done."]


def test_headings_become_sections_and_are_not_glued_to_sentences() -> None:
    body = (
        "# Related Work\n## Dense retrieval\nEncoders work [1]. They scale [2].\n\n"
        "## Graphs\nCall graphs help [3]."
    )
    sents = _sentences(body)
    assert [s.claim for s in sents] == ["Encoders work.", "They scale.", "Call graphs help."]
    assert [s.section for s in sents] == ["Dense retrieval", "Dense retrieval", "Graphs"]
    assert [s.citation_keys for s in sents] == [["1"], ["2"], ["3"]]


def test_plain_title_line_and_bold_heading_are_sections() -> None:
    sents = _sentences("Related Works\n\nFirst claim [1].\n\n**Background**\n\nSecond claim [2].")
    assert [(s.section, s.claim) for s in sents] == [
        ("Related Works", "First claim."),
        ("Background", "Second claim."),
    ]


def test_list_markers_are_dropped_and_items_split() -> None:
    sents = _sentences("Intro sentence.\n\n- First item [1].\n- Second item.\n1. Numbered item [2].")
    assert [s.claim for s in sents] == ["Intro sentence.", "First item.", "Second item.", "Numbered item."]
    assert sents[1].text == "First item [1]."


def test_table_rows_pair_cells_with_headers() -> None:
    body = (
        "| Method | Idea | Refs |\n|---|---|---|\n"
        "| Dense | bi-encoder | [1][2] |\n| Graph | propagation | [3] |"
    )
    sents = _sentences(body)
    assert [s.claim for s in sents] == ["Method: Dense; Idea: bi-encoder", "Method: Graph; Idea: propagation"]
    assert [s.citation_keys for s in sents] == [["1", "2"], ["3"]]


def test_marker_after_the_period_stays_with_its_sentence() -> None:
    sents = _sentences("Inequality is rising.[1] Taxes lag behind.[2][3] Done.")
    assert [s.claim for s in sents] == ["Inequality is rising.", "Taxes lag behind.", "Done."]
    assert [s.citation_keys for s in sents] == [["1"], ["2", "3"], []]


def test_initials_inside_link_citations_do_not_split() -> None:
    body = (
        "Optimal tax theory was revisited "
        "\\[[Vassili N. Kolokoltsov' 2024-08-10](http://arxiv.org/abs/2408.14476v1)\\]. Next."
    )
    sents = _sentences(body)
    assert len(sents) == 2
    assert sents[0].claim == "Optimal tax theory was revisited."
    assert sents[0].citation_keys == ["http://arxiv.org/abs/2408.14476v1"]


def test_stranded_marker_joins_previous_sentence() -> None:
    sents = _sentences("A claim. [4]")
    assert len(sents) == 1
    assert sents[0].citation_keys == ["4"]


def test_sentence_cites_subject_marker() -> None:
    sents = _sentences("For example, [2] proposed a parallel engine.")
    assert sents[0].claim == "For example, proposed a parallel engine."
    assert sents[0].citation_keys == ["2"]


def test_short_list_items_are_sentences_not_headings() -> None:
    sents = _sentences(
        "Key directions:\n\n- KV cache compression [1]\n- Eviction policies\n\nClosing remark."
    )
    assert [(s.claim, s.section) for s in sents] == [
        ("Key directions:", None),
        ("KV cache compression", None),
        ("Eviction policies", None),
        ("Closing remark.", None),
    ]


def test_unclosed_emphasis_in_long_text_is_fast() -> None:
    import time

    text = "**a " * 20000 + "end."
    start = time.thread_time()  # this thread's CPU time: what a quadratic regex burns, whatever the machine's load
    _sentences(text)
    assert time.thread_time() - start < 5
