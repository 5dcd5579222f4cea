"""discover_reports: index-named and id-named children map to task ids; everything else is a warning."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reportbench.reports import ReportParseError, discover_reports, load_report
from reportbench.reports.base import EmptyReportError
from reportbench.reports.task_names import TaskNaming

# DeepScholar's rules (its released baselines name folders by 0-based row); declared in the protocol package
DS = TaskNaming(spelled="<arXiv id>", numbers="row_index", arxiv_versions=True)

pytestmark = pytest.mark.core

TASKS = ["2501.00001v1", "2501.00002v2", "2501.00003v1", "2501.00004v1"]
REPORT = (
    "Related Works\n\nA claim [1].\n\nReferences\n\n[1] A title (2020) http://arxiv.org/abs/2301.01234v1\n"
)


def _write(path: Path, text: str = REPORT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_index_and_id_layouts(tmp_path: Path) -> None:
    _write(tmp_path / "0" / "report.md")  # index -> TASKS[0]
    _write(tmp_path / "2501.00002.md")  # id without version
    _write(tmp_path / "2501.00002.json", "{}")  # twin of the .md, not a separate child
    _write(tmp_path / "2501.00003v1" / "report.md")  # id with version, as a folder
    _write(tmp_path / "2501.00004v9.md")  # other version: mapped, with a warning
    _write(tmp_path / "notes.txt", "hello")  # unknown
    _write(tmp_path / "7" / "report.md")  # index out of range
    _write(tmp_path / ".hidden.md")  # hidden: ignored
    found = discover_reports(tmp_path, TASKS, naming=DS)
    assert [(tid, p.name) for tid, p in found] == [
        ("2501.00001v1", "0"),
        ("2501.00002v2", "2501.00002.md"),
        ("2501.00003v1", "2501.00003v1"),
        ("2501.00004v1", "2501.00004v9.md"),
    ]
    joined = "\n".join(found.warnings)
    assert "notes.txt" in joined and "outside the task list" in joined and "version differs" in joined
    assert ".hidden" not in joined


def test_duplicates_and_unrecognised_children_are_reported(tmp_path: Path) -> None:
    _write(tmp_path / "0" / "report.md")
    _write(tmp_path / "2501.00001v1.md")  # same task as index 0
    (tmp_path / "1").mkdir()  # empty folder: mapped; loading it says "empty report" (scored as missing)
    found = discover_reports(tmp_path, TASKS, naming=DS)
    assert [tid for tid, _ in found] == ["2501.00001v1", "2501.00002v2"]
    assert any("already mapped" in w for w in found.warnings)
    assert [reason for _, reason in found.unmapped] == ["task 2501.00001v1 already mapped to 0; not read"]
    with pytest.raises(EmptyReportError, match="the folder is empty"):
        load_report(dict(found)["2501.00002v2"])


def test_named_format_is_checked_when_loading(tmp_path: Path, fixtures_dir: Path) -> None:
    """Discovery maps names; the format is checked when the report is loaded, so the outcome says why."""
    shutil.copytree(fixtures_dir / "reports" / "storm" / "0", tmp_path / "0")
    _write(tmp_path / "1" / "report.md")
    found = discover_reports(tmp_path, TASKS, fmt="storm", naming=DS)
    assert [tid for tid, _ in found] == ["2501.00001v1", "2501.00002v2"]
    with pytest.raises(ReportParseError, match="not a STORM run folder"):
        load_report(dict(found)["2501.00002v2"], "storm")
    with pytest.raises(ValueError, match="unknown report format"):
        discover_reports(tmp_path, TASKS, fmt="nope")


def test_missing_folder_is_a_warning(tmp_path: Path) -> None:
    found = discover_reports(tmp_path / "nope", TASKS)
    assert list(found) == [] and found.warnings
