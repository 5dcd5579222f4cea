"""Per-report isolation inside the adapter layer: a bug in one adapter never escapes as a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportbench.reports import ReportParseError, detect_format, load_report
from reportbench.reports.base import _REGISTRY, ReportAdapter, register_adapter
from reportbench.types import Report

pytestmark = pytest.mark.core


class _Broken(ReportAdapter):
    name = "broken_for_test"

    def detect(self, path: Path) -> bool:
        raise RecursionError("maximum recursion depth exceeded")

    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = 0) -> Report:
        raise TypeError("'int' object is not iterable")


@pytest.fixture()
def broken() -> object:
    adapter = register_adapter(_Broken())
    yield adapter
    _REGISTRY.pop(adapter.name)


def test_a_raising_detect_never_stops_detection(broken: object, tmp_path: Path) -> None:
    path = tmp_path / "r.md"
    path.write_text("## Related Work\n\nA claim.\n", encoding="utf-8")
    assert detect_format(path) == "markdown"


def test_a_raising_load_is_a_parse_error_naming_the_file(broken: object, tmp_path: Path) -> None:
    path = tmp_path / "r.md"
    path.write_text("text\n", encoding="utf-8")
    with pytest.raises(ReportParseError, match=r"r\.md: broken_for_test adapter could not read it: TypeError"):
        load_report(path, "broken_for_test")


def test_special_files_are_refused_even_without_a_folder(tmp_path: Path) -> None:
    """`reportbench parse /dev/zero` must not read forever."""
    with pytest.raises(ReportParseError, match="not a regular file or folder"):
        load_report(Path("/dev/zero"), "markdown")
