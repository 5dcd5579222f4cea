"""The bad-input corpus (tests/bad_inputs/cases.yaml): one parametrised test asserting each case's outcome class
and message. Report and folder cases go through the real `kind: folder` system (discovery, confinement,
adapters, isolation, outcomes), archives through the e-print extractor, configs through `run_system`, releases
through `read_release`. See tests/bad_inputs/README.md."""

from __future__ import annotations

import gzip
import io
import os
import random
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from reportbench.reports.refusal import ALL_FLAGS as NON_ANSWER  # issue 21 §5 flags, checked in test_refusal
from reportbench.systems import SystemError_, TaskOutcome, read_outcomes, read_reports, run_system
from reportbench.types import Task

pytestmark = pytest.mark.core

CORPUS = Path(__file__).resolve().parent / "bad_inputs" / "cases.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
TASKS = [Task(task_id=t, title=f"Task {t}", task_prompt="Write a related-work section.") for t in ("t1", "t2")]


# ------------------------------------------------------------------ recipes: content git cannot hold as text


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def _deep(open_: str, close: str, n: int) -> str:
    return open_ * n + "1" + close * n


def make_content(recipe: list[Any]) -> bytes:
    """Bytes for a single-file case."""
    name, *args = recipe
    if name == "random_bytes":
        return random.Random(15).randbytes(int(args[0]))
    if name == "gzip_text":
        return gzip.compress(str(args[0]).encode(), mtime=0)
    if name == "with_nuls":
        return str(args[0]).encode() + b"\x00\x00\x00\x00" + str(args[0]).encode()
    if name == "encode":
        return str(args[0]).encode(str(args[1]))
    if name == "big_text":
        line = b"A long report sentence that repeats itself to exceed the size limit [1].\n"
        return line * (int(args[0]) // len(line) + 1)
    if name == "deep_json":
        return _deep(args[0], args[1], int(args[2])).encode()
    if name == "raw":
        return str(args[0]).encode()
    if name == "tar":
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for member, kind, value in args[0]:
                info = tarfile.TarInfo(member)
                if kind == "symlink":
                    info.type, info.linkname = tarfile.SYMTYPE, value
                    tar.addfile(info)
                    continue
                data = b"\x00" * int(value) if kind == "zeros" else str(value).encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()
    if name == "truncated_targz":
        return gzip.compress(make_content(["tar", [["main.tex", "file", "\\documentclass{article}" * 200]]]))[
            : int(args[0])
        ]
    raise ValueError(f"unknown recipe {name!r}")


def make_in(folder: Path, recipe: list[Any]) -> None:
    """Build a file, folder, link or FIFO inside `folder` (for folder / task-folder cases)."""
    name, *args = recipe
    if name == "files":
        for rel, text in args[0].items():
            _write(folder / rel, text)
        for extra in args[1:]:
            make_in(folder, extra)
    elif name == "empty_dir":
        folder.mkdir(parents=True, exist_ok=True)
    elif name == "random_file":
        _write(folder / args[0], random.Random(15).randbytes(int(args[1])))
    elif name == "symlink":
        target = folder / args[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(args[1], target)
    elif name == "fifo":
        os.mkfifo(folder / args[0])
    elif name == "deep_json_file":
        _write(folder / args[0], _deep(args[1], args[2], int(args[3])))
    else:
        raise ValueError(f"unknown recipe {name!r}")


# ------------------------------------------------------------------ runners per kind


def _run_folder(folder: Path, out: Path) -> tuple[dict[str, TaskOutcome], list[TaskOutcome], list[Any]]:
    run_system("sys", {"kind": "folder", "path": str(folder), "allow_missing": True}, TASKS, out)
    outcomes = read_outcomes(out)
    by_task = {o.task_id: o for o in outcomes if o.status != "unmapped"}
    assert set(by_task) == {"t1", "t2"}, "one outcome per task, always"
    return by_task, [o for o in outcomes if o.status == "unmapped"], read_reports(out)


def run_report_case(case: dict[str, Any], tmp: Path) -> tuple[str, str]:
    folder = tmp / "systems"
    folder.mkdir()
    name = case.get("name", "t1.md")
    if name.endswith("/"):
        make_in(folder / name.rstrip("/"), case["make"])
    elif "text" in case:
        _write(folder / name, case["text"])
    elif "hex" in case:
        _write(folder / name, bytes.fromhex(case["hex"]))
    else:
        _write(folder / name, make_content(case["make"]))
    by_task, unmapped, reports = _run_folder(folder, tmp / "out")
    assert not unmapped, unmapped
    assert by_task["t2"].status == "missing"
    t1 = by_task["t1"]
    if t1.status == "ok":
        report = next(r for r in reports if r.task_id == "t1")
        assert report.body.strip(), "an ok report always has a body"
        assert [f for f in t1.flags if f not in NON_ANSWER] == case.get("flags", []), t1.flags
        return "ok", "\n".join(report.warnings)
    assert t1.path and Path(t1.path).name in (t1.reason or ""), "the reason names the file"
    return t1.status, t1.reason or ""


def run_folder_case(case: dict[str, Any], tmp: Path) -> tuple[str, str]:
    folder = tmp / "systems"
    folder.mkdir()
    for rel, text in (case.get("files") or {}).items():
        _write(folder / rel, text)
    for recipe in case.get("make") or []:
        make_in(folder, recipe)
    by_task, unmapped, _ = _run_folder(folder, tmp / "out")
    assert {t: o.status for t, o in by_task.items()} == {"t1": "missing", "t2": "missing", **case["outcomes"]}
    reasons = [Path(o.path or "").name + ": " + (o.reason or "") for o in unmapped]
    expected = case.get("unmapped", [])
    assert len(reasons) == len(expected), reasons
    for pattern in expected:
        assert any(re.search(pattern, r) for r in reasons), (pattern, reasons)
    if case["expect"] == "unmapped":
        return "unmapped", "\n".join(reasons)
    bad = [o for o in by_task.values() if o.status == case["expect"]]
    return (case["expect"], "\n".join(o.reason or "" for o in bad)) if bad else ("ok", "")


def run_archive_case(case: dict[str, Any], tmp: Path) -> tuple[str, str]:
    from reportbench.live_builder.safe_extract import ExtractionError, ExtractLimits, extract_source

    limits = ExtractLimits(**case.get("limits", {}))
    try:
        result = extract_source(make_content(case["make"]), tmp / "x", limits)
    except ExtractionError as exc:
        assert not (tmp / "x").exists() or not any((tmp / "x").iterdir()), "nothing left behind"
        return "error", str(exc)
    assert all(not Path(f).is_absolute() and ".." not in Path(f).parts for f in result.files)
    return ("skipped", "\n".join(f"{s.name}: {s.reason}" for s in result.skipped)) if result.skipped else ("ok", "")


def run_config_case(case: dict[str, Any], tmp: Path) -> tuple[str, str]:
    spec = {k: (str(v).replace("{tmp}", str(tmp)) if isinstance(v, str) else v) for k, v in case["spec"].items()}
    try:
        run_system("bad", spec, TASKS, tmp / "out")
    except SystemError_ as exc:
        assert "\n" not in str(exc), "one line"
        return "config_error", str(exc)
    return "ok", ""


@pytest.fixture(scope="module")
def demo_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from reportbench.release.demo import build_demo_release
    from reportbench.release.format import write_release

    out = tmp_path_factory.mktemp("release") / "demo"
    write_release(build_demo_release(), out)
    return out


def run_release_case(case: dict[str, Any], tmp: Path, release: Path) -> tuple[str, str]:
    from reportbench.release.format import ReleaseError, read_release

    copy = tmp / "release"
    shutil.copytree(release, copy)
    action, *args = case["break"]
    if action == "delete":
        (copy / args[0]).unlink()
    elif action == "write":
        (copy / args[0]).write_text(args[1], encoding="utf-8")
    elif action == "garbage_table":
        table = sorted(copy.rglob("*.parquet"))[0]
        table.write_bytes(random.Random(15).randbytes(512))
    try:
        read_release(copy)
    except ReleaseError as exc:
        return "release_error", str(exc)
    return "ok", ""


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input(case: dict[str, Any], tmp_path: Path, request: pytest.FixtureRequest) -> None:
    kind = case["kind"]
    if kind == "report":
        outcome, message = run_report_case(case, tmp_path)
    elif kind == "folder":
        outcome, message = run_folder_case(case, tmp_path)
    elif kind == "archive":
        outcome, message = run_archive_case(case, tmp_path)
    elif kind == "config":
        outcome, message = run_config_case(case, tmp_path)
    elif kind == "release":
        outcome, message = run_release_case(case, tmp_path, request.getfixturevalue("demo_release"))
    else:
        raise AssertionError(f"unknown case kind {kind!r}")
    assert outcome == case["expect"], f"{case['id']}: got {outcome}: {message}"
    assert re.search(case["message"], message), f"{case['id']}: message {message!r} lacks /{case['message']}/"


def test_the_corpus_is_large_and_varied() -> None:
    kinds = {c["kind"] for c in CASES}
    assert len(CASES) >= 40 and kinds == {"report", "folder", "archive", "config", "release"}
    assert len({c["id"] for c in CASES}) == len(CASES), "case ids are unique"
