"""ResearcherBench responses through our report adapters: every shared response parses with all its URLs, and
each citation style of the shared systems (self-authored miniatures) resolves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reportbench.fetch.urls import normalise_url
from reportbench.protocols.researcherbench.responses import load_responses, parse_response, run_response_file_system
from reportbench.types import Task

# A plain URL regex that allows balanced parentheses inside a URL (Wikipedia titles).
PLAIN_URL_RE = re.compile(r"https?://(?:[^\s<>\"'`\[\]()]|\([^\s()]*\))+")


def plain_urls(text: str) -> set[str]:
    return {normalise_url(u.rstrip(".,;:*")) for u in PLAIN_URL_RE.findall(text)}


def report_urls(report) -> set[str]:
    return {normalise_url(s.url) for s in report.sources.values() if s.url}


@pytest.fixture(scope="module")
def user_data(shared_dir: Path) -> Path:
    d = shared_dir / "data" / "researcherbench" / "user_data"
    if not d.is_dir():
        pytest.skip("../shared/data/researcherbench/user_data is not present")
    return d


def test_every_shared_response_parses_with_every_url(user_data: Path) -> None:
    files = sorted(user_data.glob("*.json"))
    assert files
    n = 0
    for f in files:
        for qid, e in sorted(load_responses(f).items()):
            report = parse_response(e["response"], f"q{qid}", f.stem, str(f))
            assert report_urls(report) == plain_urls(e["response"]), (f.name, qid)
            assert report.body.strip()
            n += 1
    assert n >= 65 * 2


def test_response_file_kind_reads_one_report_per_task(user_data: Path, tmp_path: Path) -> None:
    tasks = [Task(task_id=f"q{i}", title="t", task_prompt="p") for i in (1, 2, 99)]
    reports, outcomes = run_response_file_system("OpenAI", {"path": str(user_data / "OpenAI.json")}, tasks, tmp_path)
    assert [r.task_id for r in reports] == ["q1", "q2"]
    assert [o.status for o in outcomes] == ["ok", "ok", "missing"]


CASES = {
    "inline_links": (
        "Dense retrieval helps ([DPR](https://a.org/dpr)). Sparse too ([BM25](https://b.org/bm25#:~:text=x%20y)).",
        {"https://a.org/dpr", "https://b.org/bm25"},
    ),
    "numbered_references": (
        "Claim one [1]. Claim two [2].\n\n## References\n[1] Title A. https://a.org/1\n[2] Title B. https://b.org/2\n",
        {"https://a.org/1", "https://b.org/2"},
    ),
    "perplexity_footnotes": (
        "Claim [1][2].\n\n<div>⁂</div>\n\n[^1]: https://a.org/p1\n\n[^2]: https://b.org/p2\n",
        {"https://a.org/p1", "https://b.org/p2"},
    ),
    "centered_div_numbered_list": (
        'Claim[1](https://a.org/x).\n\n<div style="text-align: center">⁂</div>\n\n1. https://a.org/x\n2. https://b.org/y\n',
        {"https://a.org/x", "https://b.org/y"},
    ),
    "escaped_markers": (
        "Claim \\[1\\] and \\[2\\].\n\n## References\n\\[1\\] [Paper A](https://a.org/a)\n\\[2\\] [Paper B](https://b.org/b)\n",
        {"https://a.org/a", "https://b.org/b"},
    ),
    "doubao_inline": (
        "Claim [(1)](https://a.org/d1) and [(2)](https://b.org/d2).\n\n**References**\n1. Paper A https://a.org/d1\n",
        {"https://a.org/d1", "https://b.org/d2"},
    ),
    "numbered_link_entries": (
        "Claim [1].\n\n## References\n- [1\\. First paper](https://a.org/m1)\n- [2\\. Second](https://b.org/m2)\n",
        {"https://a.org/m1", "https://b.org/m2"},
    ),
    "key_citations_h3": (
        "Some text.\n\n### Key Citations\n- [Paper A](https://a.org/k1)\n- [Paper B](https://b.org/k2)\n",
        {"https://a.org/k1", "https://b.org/k2"},
    ),
    "key_citations_h4": (
        "Some text.\n\n#### Key Citations\n- [Paper A](https://a.org/k3)\n",
        {"https://a.org/k3"},
    ),
    "multi_url_entry": (
        "Claim [1].\n\n## References\n[1] Title. https://a.org/u1 (mirror: https://b.org/u2)\n",
        {"https://a.org/u1", "https://b.org/u2"},
    ),
    "no_urls": ("Plain prose with no citations at all.", set()),
}


@pytest.mark.core
@pytest.mark.parametrize("name", sorted(CASES))
def test_citation_styles(name: str) -> None:
    text, want = CASES[name]
    report = parse_response(text, "q1", "s", None)
    assert report_urls(report) == {normalise_url(u) for u in want}
    assert plain_urls(text) == {normalise_url(u) for u in want}


@pytest.mark.core
def test_key_citations_not_judged_as_body() -> None:
    report = parse_response("Body text.\n\n### Key Citations\n- [Paper A](https://a.org/k1)\n", "q1", "s", None)
    assert "Key Citations" not in report.body


@pytest.mark.core
def test_fragment_urls_normalise_to_one_page() -> None:
    text = "A ([x](https://a.org/p#:~:text=foo)). B ([y](https://a.org/p#:~:text=bar))."
    assert plain_urls(text) == {"https://a.org/p"}
    assert report_urls(parse_response(text, "q1", "s", None)) == {"https://a.org/p"}


def test_demo_response_json_layout_roundtrip(tmp_path: Path) -> None:
    f = tmp_path / "sys.json"
    f.write_text(json.dumps([{"id": 3, "question": "Q", "response": "Claim ([a](https://a.org/z))."}]))
    tasks = [Task(task_id="q3", title="t", task_prompt="p")]
    reports, _ = run_response_file_system("sys", {"path": str(f)}, tasks, tmp_path)
    assert report_urls(reports[0]) == {"https://a.org/z"}


@pytest.mark.core
def test_prose_mentioning_think_tags_stays_markdown(tmp_path: Path) -> None:
    from reportbench.reports.base import detect_format, load_report

    prose = tmp_path / "q1.md"
    prose.write_text(
        "Reasoning models wrap their thoughts in <think> ... </think> tags before an <answer> [1].\n\n"
        "## References\n[1] https://a.org/x\n"
    )
    assert detect_format(prose) == "markdown"
    report = load_report(prose, task_id="q1", system="s")
    assert report.format == "markdown" and any("read as markdown" in w for w in report.warnings)
    assert report_urls(report) == {"https://a.org/x"}
    transcript = tmp_path / "q2.md"
    transcript.write_text("<think>\nplan\n</think>\n<answer>\nThe answer.\n</answer>\n")
    assert detect_format(transcript) == "deepresearcher"  # a real transcript is still recognised
