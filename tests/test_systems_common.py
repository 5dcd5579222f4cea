"""Shared rules of the producing systems: the publication cut-off, what a system may see of a task, how a
produced output becomes a report or a recorded failure, and how the reference writer assembles citations."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from reportbench.systems import SYSTEM_KINDS, SystemError_, run_system
from reportbench.systems.common import (
    Doc,
    parse_output,
    published_before,
    raw_path,
    resolve_release_dir,
    task_payload,
)
from reportbench.systems.deepscholar_ref import assemble_report, cited_numbers
from reportbench.systems.retrieval import BM25Index, arxiv_query, clean_query, terms
from reportbench.types import Task

pytestmark = pytest.mark.core

CUTOFF = datetime(2025, 3, 18, 10, 4, tzinfo=UTC)


@pytest.mark.parametrize(
    ("published", "arxiv_id", "usable"),
    [
        ("2025-03-17", None, True),
        ("2025-03-18", None, False),  # same day without a time: cannot prove it is earlier
        ("2025-03-18T10:03:59+00:00", None, True),
        ("2025-03-18T10:04:00+00:00", None, False),  # the task paper's own timestamp is not "before"
        ("2025-03-18T06:00:00-05:00", None, False),  # 11:00 UTC
        ("2025-06-02", None, False),
        (None, "2502.01234", True),  # no date: an id issued in an earlier month proves it
        (None, "2503.01234", False),  # same month: ambiguous
        (None, "2513.00087", False),  # synthetic month 13 proves nothing
        (None, "cs/0302025", True),
        (None, None, False),
        ("not a date", None, False),
    ],
)
def test_published_before(published: str | None, arxiv_id: str | None, usable: bool) -> None:
    assert published_before(published, CUTOFF, arxiv_id) is usable


def test_task_payload_never_contains_the_exemplar() -> None:
    task = Task(
        task_id="t1",
        title="T",
        abstract="A",
        published_date="2025-01-01",
        task_prompt="P",
        exemplar="SECRET related work",
        exemplar_raw="SECRET raw",
    )
    payload = task_payload(task)
    assert "SECRET" not in str(payload)
    assert set(payload) == {"task_id", "title", "abstract", "published_date", "categories", "task_prompt"}


def test_raw_path_never_escapes_the_run_dir(tmp_path: Path) -> None:
    path = raw_path(tmp_path, "../../etc/passwd")
    assert path.resolve().parent == (tmp_path / "raw").resolve() and "/" not in path.name
    assert raw_path(tmp_path, "..").name == "task.md"


def test_empty_and_missing_outputs_are_failures(tmp_path: Path) -> None:
    report, outcome = parse_output(tmp_path / "none.md", system="s", task_id="t")
    assert report is None and outcome.status == "failed" and "empty output" in (outcome.reason or "")
    (tmp_path / "blank.md").write_text("  \n\n")
    report, outcome = parse_output(tmp_path / "blank.md", system="s", task_id="t")
    assert report is None and outcome.status == "failed" and outcome.reason == "empty output"
    (tmp_path / "ok.md").write_text(
        "## Related Work\n\nA claim [1].\n\n## References\n\n[1] A paper. arXiv:2401.00001\n"
    )
    report, outcome = parse_output(tmp_path / "ok.md", system="s", task_id="t")
    assert outcome.status == "ok" and report is not None and report.sources["1"].arxiv_id == "2401.00001"


def test_release_dir_must_be_given_outside_the_dvc_layout(tmp_path: Path) -> None:
    with pytest.raises(SystemError_, match="release_dir"):
        resolve_release_dir("x", {}, tmp_path / "somewhere")
    with pytest.raises(SystemError_, match="not a release directory"):
        resolve_release_dir("x", {"release_dir": str(tmp_path)}, tmp_path)


def test_unknown_kind_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(SystemError_, match="unknown kind"):
        run_system("x", {"kind": "nope"}, [], tmp_path)
    assert {"folder", "offline_baseline", "deepscholar_ref", "command", "endpoint"} <= set(SYSTEM_KINDS)


def test_bm25_is_deterministic_and_never_returns_non_matches() -> None:
    docs = [
        Doc(doc_id="b", title="Pooling bias", abstract="Shallow pools undercount relevant documents."),
        Doc(doc_id="a", title="Pooling bias", abstract="Shallow pools undercount relevant documents."),
        Doc(doc_id="c", title="Robot grasping", abstract="Curriculum learning from pixels."),
    ]
    hits = BM25Index(docs).search(terms("pooling bias in shallow pools"), 10)
    assert [d.doc_id for d, _ in hits] == ["a", "b"]
    assert BM25Index([]).search(["x"], 3) == []


def test_arxiv_query_keeps_words_and_adds_the_date_range() -> None:
    assert clean_query('ti:"deep research" (agents) AND [x]') == "ti deep research agents AND x"
    assert arxiv_query("kv cache", CUTOFF) == "(kv cache) AND submittedDate:[000001010000 TO 202503181004]"


def test_cited_numbers_expand_groups_and_ranges() -> None:
    assert cited_numbers("A [2]. B [1, 3]. C [4-6][2].") == [2, 1, 3, 4, 5, 6]


def test_assemble_report_lists_only_cited_sources_in_context_numbering() -> None:
    docs = [Doc(doc_id=f"d{i}", title=f"Paper {i}", arxiv_id=f"2401.0000{i}") for i in range(1, 5)]
    section = "## Related Works\n\nFirst [3]. Second [1][9].\n\n## References\n\n[1] made up\n"
    markdown, valid, warnings = assemble_report(section, docs, "cited")
    assert valid == [3, 1]
    assert "made up" not in markdown, "the writer's own list is replaced"
    assert markdown.count("## References") == 1
    assert "[3] Paper 3. arXiv:2401.00003" in markdown and "[2] Paper 2" not in markdown
    assert any("outside" in w for w in warnings) and any("own reference list" in w for w in warnings)
    markdown_all, _, _ = assemble_report("Text [1].", docs, "all")
    assert "[4] Paper 4" in markdown_all
    _, valid_none, warnings_none = assemble_report("No citations at all.", docs, "cited")
    assert valid_none == [] and any("cited none" in w for w in warnings_none)


@pytest.mark.parametrize("group", ["demo", "with_ref", "oracles", "agents=byo_examples"])
def test_system_groups_compose_with_a_path_and_a_known_kind(group: str, repo_root: Path) -> None:
    from reportbench.config import composed_params

    override = group if "=" in group else f"deepscholar/systems={group}"
    params = composed_params([override], conf_dir=repo_root / "conf")
    own, agents = params["benchmarks"]["deepscholar"]["systems"], params["agents"]
    systems = {**own, **agents}
    assert params["plan"]["benchmarks"]["deepscholar"]["systems"] == sorted(own) + sorted(agents)
    params["systems"] = systems
    for name, spec in systems.items():
        assert spec["kind"] in SYSTEM_KINDS, name
        assert (repo_root / spec["path"]).exists(), f"{name}.path {spec['path']} (the stage's DVC dependency)"
    if group == "demo":
        assert params["systems"]["offline_baseline"]["kind"] == "offline_baseline"
    if group == "oracles":
        ref = params["systems"]["deepscholar_ref"]
        for name, oracle in (
            ("deepscholar_ref_oracle_arxiv", "important_arxiv"),
            ("deepscholar_ref_oracle_all", "important_all"),
        ):
            spec = params["systems"][name]
            assert spec["oracle"] == oracle and spec["model"] == ref["model"] and spec["api_base"] == ref["api_base"]
