"""The `code` stage's digests: what every cacheable stage (and, for its modules, every system stage) depends on."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reportbench.digest import tree_digest

pytestmark = pytest.mark.core


def _tree(root: Path) -> Path:
    pkg = root / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "b.py").write_text("B = 2\n")
    (pkg / "data.json").write_text("{}\n")
    return pkg


def test_same_bytes_same_digest_wherever_the_tree_lives(tmp_path: Path) -> None:
    one = _tree(tmp_path / "one")
    two = tmp_path / "elsewhere" / "deeper" / "pkg"
    shutil.copytree(one, two)
    assert tree_digest([one], tmp_path) == tree_digest([two], tmp_path / "unrelated")  # a plug-in installed elsewhere
    (two / "__pycache__").mkdir()
    (two / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\x00bytecode")  # differs per interpreter: ignored
    assert tree_digest([one], tmp_path, pattern="*") == tree_digest([two], tmp_path, pattern="*")


def test_a_changed_byte_or_a_renamed_file_changes_it(tmp_path: Path) -> None:
    pkg = _tree(tmp_path)
    before = tree_digest([pkg], tmp_path, pattern="*")
    (pkg / "data.json").write_text("{ }\n")  # not Python, still code's data: counted with pattern="*"
    assert tree_digest([pkg], tmp_path, pattern="*") != before
    assert tree_digest([pkg], tmp_path) == tree_digest([pkg], tmp_path)  # *.py only: unchanged by data.json
    py_only = tree_digest([pkg], tmp_path)
    (pkg / "sub" / "b.py").rename(pkg / "sub" / "c.py")
    assert tree_digest([pkg], tmp_path) != py_only


def test_the_code_stage_writes_both_digests(repo_root: Path, tmp_path: Path) -> None:
    out, systems = tmp_path / "code.sha256", tmp_path / "code-systems.sha256"
    cmd = [sys.executable, "stages/code_digest.py", "--src", "src/reportbench", "--out", str(out),
           "--systems-out", str(systems)]  # fmt: skip
    subprocess.run(cmd, cwd=repo_root, check=True, capture_output=True)
    digest, name = out.read_text().split()
    assert len(digest) == 64 and name == "src/reportbench"
    lines = systems.read_text().splitlines()
    assert "src/reportbench/systems" in {line.split()[1] for line in lines} and len(lines) >= 5
