"""Resource bounds on untrusted reports (issue 26, defects 1, 2 and 5; docs/reliability.md "Resource bounds").

- every module-level regex of the report readers, citation scanners and injection detector runs in linear
  time on adversarial text (long runs of one character, whitespace, deep nesting);
- the reference-list split is linear in a line's leading whitespace and in list nesting;
- a report over a size bound is a parse_error naming the limit and the key that raises it, decided by size
  (never by a wall-clock timer), and the other reports of the folder are still read;
- the offline organisation step keeps O(sentences) memory and refuses sections over its sentence bound.
"""

from __future__ import annotations

import importlib
import re
import time
import tracemalloc
from pathlib import Path

import pytest

from reportbench.bounds import InputTooLargeError, ReportLimits, report_limits
from reportbench.reports.base import ReportParseError, load_report
from reportbench.reports.references import split_reference_section

pytestmark = pytest.mark.core

N = 50_000
ADVERSARIAL = {
    "spaces": " " * N,
    "tabs": "\t" * N,
    "newlines": "\n" * N,
    "space-newline": " \n" * (N // 2),
    "nested list": "".join("  " * i + "- x\n" for i in range(300)),
    "letters": "a" * N,
    "digits": "1" * N,
    "stars": "*" * N,
    "underscores": "_" * N,
    "open brackets": "[" * N,
    "open parens": "(" * N,
    "backslashes": "\\" * N,
    "dots": "." * N,
    "hashes": "#" * N,
    "dashes": "-" * N,
    "pipes": "|" * N,
    "less-than": "<" * N,
    "words": "ab " * (N // 3),
    "url": "[x](http://" + "a" * N,
    "bare url": "http://" + "a" * N,
    "capitals": "A " * (N // 2),
}
# applied to whole untrusted texts (reports, reference entries, sentences, pages)
MODULES = (
    "reportbench.reports.references",
    "reportbench.reports.citations",
    "reportbench.reports.sentences",
    "reportbench.reports.sniff",
    "reportbench.reports.arxiv_ids",
    "reportbench.reports.formats.markdown",
    "reportbench.reports.formats.deepresearcher",
    "reportbench.reports.formats.openai_deep_research",
    "reportbench.injection",
    "reportbench.judges.lexical",
    "reportbench.fetch.extract",
)
# matched only against one stripped line of at most 200 characters (references._is_line): tested through
# split_reference_section below
LINE_ONLY = {
    ("reportbench.reports.references", "REFERENCE_HEADING_RE"),
    ("reportbench.reports.references", "_END_TAG_RE"),
}
BOUND_S = 2.0  # CPU seconds of the test thread (time.thread_time: not inflated by load): linear patterns take
# milliseconds here; a quadratic one takes minutes on 50k characters


def _patterns() -> list[tuple[str, str, re.Pattern[str]]]:
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            values = value if isinstance(value, tuple | list) else (value,)
            for i, pattern in enumerate(v for v in values if isinstance(v, re.Pattern)):
                if (name, attr) not in LINE_ONLY:
                    found.append((name, f"{attr}[{i}]" if isinstance(value, tuple | list) else attr, pattern))
    return found


PATTERNS = _patterns()


def test_every_pattern_is_collected() -> None:
    assert len(PATTERNS) > 60  # the scan below covers the modules' patterns, not an empty list


@pytest.mark.parametrize(
    ("module", "attr", "pattern"), PATTERNS, ids=[f"{m.rsplit('.', 1)[1]}.{a}" for m, a, _ in PATTERNS]
)
def test_regex_is_linear_on_adversarial_text(module: str, attr: str, pattern: re.Pattern[str]) -> None:
    for name, text in ADVERSARIAL.items():
        subject = text.encode("utf-8") if isinstance(pattern.pattern, bytes) else text  # a pattern over bytes
        started = time.thread_time()
        for _ in pattern.finditer(subject):  # type: ignore[arg-type]
            pass
        elapsed = time.thread_time() - started
        assert elapsed < BOUND_S, f"{module}.{attr} took {elapsed:.1f} s on {len(text):,} chars of {name}"


@pytest.mark.parametrize(
    "text",
    [
        "Body.\n" + " " * 100_000 + "\n",
        "Body.\n" + "\t" * 100_000 + "x\n",
        "".join("  " * i + "- item\n" for i in range(1_500)) + "\n## References\n[1] A. https://a.example\n",
        "## References\n" * 20_000,
    ],
    ids=["whitespace line", "tab line", "nested list", "many headings"],
)
def test_reference_split_is_linear(text: str) -> None:
    started = time.thread_time()
    split_reference_section(text)
    assert time.thread_time() - started < BOUND_S


def test_reference_split_still_finds_the_list() -> None:
    body, section = split_reference_section(
        "Text [1].\n\n  **References:**  \n[1] A paper. https://a.example\n<references>\nnot an entry\n"
    )
    assert body == "Text [1]." and section == "[1] A paper. https://a.example\n<references>\nnot an entry"
    body, section = split_reference_section("Text.\n\n<references>\n[2] B. https://b.example\n</references>\ntail\n")
    assert body == "Text." and section == "[2] B. https://b.example"


# ---------------------------------------------------------------- per-report bounds


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


SENTENCE = "The agent records each tool call before it writes the report. "


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("## Work\n\n" + "\n\n".join(SENTENCE * 20 for _ in range(300)) + "\n", "max_sentences"),
        ("## Work\n\n" + " " * 102_400 + "Agents.\n", "max_line_chars"),
        ("## Work\n\n" + "".join("  " * i + "- item\n" for i in range(200)), "max_indent"),
        ("## Work\n\n" + (SENTENCE * 300 + "\n") * 60, "max_paragraph_chars"),
        ("## Work\n\n" + "Claim [1].\n" * 25_000, "max_lines"),
        ("## Work\n\n" + "\n\n".join("Claim [1][2][3][4][5]." for _ in range(1_100)) + "\n", "max_citations"),
    ],
)
def test_report_over_a_bound_is_refused_naming_limit_and_key(tmp_path: Path, text: str, limit: str) -> None:
    path = _write(tmp_path, "t1.md", text)
    started = time.thread_time()
    with report_limits(ReportLimits(), "mysys"), pytest.raises(ReportParseError) as info:
        load_report(path, task_id="t1", system="mysys")
    assert time.thread_time() - started < 10
    message = str(info.value)
    assert f"over the {limit} limit" in message and f"systems.mysys.limits.{limit}" in message, message
    assert "redos" not in message and "TimeoutError" not in message  # what is too large, not nltk internals


def test_raised_limit_accepts_the_report(tmp_path: Path) -> None:
    text = "## Work\n\n" + "\n\n".join(SENTENCE * 20 for _ in range(300)) + "\n"
    path = _write(tmp_path, "t1.md", text)
    limits = ReportLimits.from_spec({"limits": {"max_sentences": 7_000}}, "mysys")
    with report_limits(limits, "mysys"):
        assert len(load_report(path, task_id="t1", system="mysys").sentences) == 6_000


def test_limits_config_errors_name_the_key() -> None:
    with pytest.raises(ValueError, match=r"systems\.s\.limits: unknown limit\(s\) \['max_pages'\]"):
        ReportLimits.from_spec({"limits": {"max_pages": 3}}, "s")
    with pytest.raises(ValueError, match=r"systems\.s\.limits\.max_lines: 0 must be a positive integer"):
        ReportLimits.from_spec({"limits": {"max_lines": 0}}, "s")


def test_sentence_splitting_has_no_wall_clock_guard() -> None:
    """The parse outcome depends on the input alone: nltk's load-dependent regex timeout is off."""
    from reportbench.reports import sentences

    sentences.split_sentences("One. Two.")
    pytest.importorskip("nltk.redos")
    # the `redos` module Punkt itself matches through (loaded apart from `import nltk`: reports/sentences.py). Read
    # from the tokenizer's own code: once another test has imported the real nltk, `sys.modules` names that copy.
    punkt_globals = type(sentences._tokenizer(frozenset())).span_tokenize.__globals__
    assert punkt_globals["redos"].DEFAULT_TIMEOUT is None


def test_folder_keeps_good_reports_next_to_a_hostile_one(tmp_path: Path) -> None:
    from reportbench.systems.folder import run_folder_system
    from reportbench.types import Task

    folder = tmp_path / "sys"
    folder.mkdir()
    _write(folder, "t1.md", "## Work\n\nAgents keep traces [1].\n\n## References\n[1] A. https://a.example/1\n")
    _write(folder, "t2.md", "## Work\n\n" + " " * 102_400 + "x\n")
    tasks = [Task(task_id=t, title="t", task_prompt="q") for t in ("t1", "t2")]
    reports, outcomes = run_folder_system("s", {"path": str(folder)}, tasks, tmp_path / "out")
    by_task = {o.task_id: o for o in outcomes}
    assert [r.task_id for r in reports] == ["t1"] and by_task["t1"].status == "ok"
    assert by_task["t2"].status == "parse_error" and "systems.s.limits.max_line_chars" in (by_task["t2"].reason or "")


# ---------------------------------------------------------------- organisation (offline judge)


def _section(n: int) -> str:
    words = ["agents", "traces", "tools", "citations", "reports", "verifiers", "search", "pages", "claims", "cost"]
    return "\n\n".join(
        " ".join(f"Work {i} on {words[i % 10]} and {words[(i * 3) % 10]} uses method {i}." for i in range(j, j + 10))
        for j in range(0, n, 10)
    )


def test_organisation_memory_is_linear_in_sentences() -> None:
    from reportbench.judges.tasks.organization import OrganizationInput, offline

    inputs = OrganizationInput(paper_title="t", paper_abstract="a", section_a=_section(600), section_b=_section(20))
    tracemalloc.start()
    try:
        offline(inputs, {})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * 1024**2, f"peak {peak / 1024**2:.0f} MB"  # all 180k pairs kept: ~100 MB


def test_organisation_refuses_sections_over_its_bound_naming_the_key() -> None:
    from reportbench.judges.tasks.organization import OrganizationInput, offline

    inputs = OrganizationInput(paper_title="t", paper_abstract="a", section_a=_section(20), section_b=_section(1_010))
    expected = r"section_b sentences \(1,010\).*judge\.offline\.organization\.max_sentences"
    with pytest.raises(InputTooLargeError, match=expected):
        offline(inputs, {})
    assert offline(inputs, {"organization": {"max_sentences": 2_000}}).output.decision in ("A", "B")


def test_offline_judge_records_the_bound_as_the_items_reason() -> None:
    import asyncio

    from reportbench.judges.offline import OfflineJudge
    from reportbench.judges.tasks.organization import TASK, OrganizationInput

    judge = OfflineJudge(TASK, {"offline": {"organization": {"max_sentences": 50}}})
    inputs = OrganizationInput(paper_title="t", paper_abstract="a", section_a=_section(60), section_b=_section(20))
    judgment = asyncio.run(judge("x", inputs, {}))
    assert judgment.status == "failed"
    error = judgment.error or ""
    assert error.startswith("too_large: ") and "judge.offline.organization.max_sentences" in error
    default = OfflineJudge(TASK, {})
    assert judge.judge_id == default.judge_id  # a bound decides whether an answer exists, not what it is
