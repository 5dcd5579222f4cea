"""The bounded-input leftovers of issue 33: each hostile input is refused or bounded by a size or count limit
(never by timing), with the figure of the attack in the test."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.core


def _deep_tar(levels: int, *, dirs: bool) -> bytes:
    """A tiny gzip'd tar whose one file sits `levels` directories deep (with each directory as a member too)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        parts = ["d"] * levels
        if dirs:
            for i in range(1, levels + 1):
                info = tarfile.TarInfo("/".join(parts[:i]))
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
        data = b"\\documentclass{article}\n"
        info = tarfile.TarInfo("/".join([*parts, "main.tex"]))
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), mtime=0)


@pytest.mark.parametrize("dirs", [False, True])
def test_an_eprint_1200_directories_deep_is_skipped_not_walked(tmp_path: Path, dirs: bool) -> None:
    """Issue 33: a ~460-byte e-print with a member 1,200 directories deep ran 78 s then raised RecursionError,
    leaving the deep tree in the temporary folder. Now no path deeper than max_depth (32) is created."""
    from reportbench.live_builder.safe_extract import ExtractLimits, extract_source

    src = _deep_tar(1200, dirs=dirs)
    assert len(src) < (30_000 if dirs else 2_000)
    result = extract_source(src, tmp_path / "out")
    assert result.files == []
    assert any("1201 path levels > max_depth=32" in s.reason for s in result.skipped), result.skipped[-1:]
    deepest = max((len(p.relative_to(tmp_path / "out").parts) for p in (tmp_path / "out").rglob("*")), default=0)
    assert deepest <= ExtractLimits().max_depth


def test_a_file_name_with_a_newline_maps_to_no_task() -> None:
    """Issue 33: `demo-0001\\n.md` mapped to demo-0001 (the arXiv-version rule stripped the newline)."""
    from reportbench.reports.task_names import NameIndex

    index = NameIndex(["demo-0001", "demo-0002"])
    assert index.match("demo-0001").task_id == "demo-0001"
    for stem in ("demo-0001\n", " demo-0001", "demo-0001\u202e", "demo-\x1b[2J0001"):
        m = index.match(stem)
        assert m.task_id is None and "not read as a task id" in m.note, (stem, m)

