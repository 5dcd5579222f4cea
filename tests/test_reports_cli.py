"""`reportbench parse` prints the Report as JSON on stdout and a summary on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.cli import main
from reportbench.types import Report

pytestmark = pytest.mark.core


def test_parse_prints_valid_report_json(fixtures_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = fixtures_dir / "reports" / "searchai" / "0"
    code = main(["parse", str(path), "--task-id", "2501.00001v1", "--system", "searchai_test"])
    out, err = capsys.readouterr()
    assert code == 0
    report = Report.model_validate(json.loads(out))
    assert (report.task_id, report.system, report.format) == ("2501.00001v1", "searchai_test", "searchai")
    assert report.sources["7"].arxiv_id == "2301.01234"
    assert "sentences: 3" in err and "0 unresolved" in err and "arXiv ids: 3" in err


def test_parse_with_explicit_format(fixtures_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = fixtures_dir / "reports" / "markdown" / "multi_cite.md"
    assert main(["parse", str(path), "--format", "markdown", "--indent"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["unresolved_citations"] == ["9"]
    assert "warning:" in err


def test_parse_failure_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(tmp_path / "missing.md")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "missing.md" in err


def test_unknown_format_is_rejected_by_argparse(fixtures_dir: Path) -> None:
    assert main(["parse", str(fixtures_dir), "--format", "nope"]) == 2  # argparse's usage error, as an exit code
