"""The two errors every report reader raises (base, sniff, schemas, the adapters): below all of them."""

from __future__ import annotations

from pathlib import Path


class ReportParseError(ValueError):
    """A report could not be read; the message names the file and what is wrong with it."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class EmptyReportError(ReportParseError):
    """The output exists but holds no report (empty file, only whitespace, an empty folder, no body text).

    Scored as the benchmark scores a missing report (outcome `missing`), never as an ok report.
    """
