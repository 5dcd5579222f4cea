"""Reading back the reports system@ wrote (reports/stored.py): the same reports as a full validation, sentences
validated only when read, and a hand-edited file still stopped with its file, line and field."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest

from reportbench.reports.stored import StoredReport, read_stored_reports
from reportbench.systems import read_reports, write_run
from reportbench.types import Report, Sentence, Source

pytestmark = pytest.mark.core


def _report(i: int) -> Report:
    body = f'Claim {i} "quoted", with a comma,"sentences": inside [1].\n\nSecond {i} <b>x</b> [2].'
    return Report(
        report_id=f"sys/t{i}",
        task_id=f"t{i}",
        system="sys",
        format="markdown",
        path=f"/x/t{i}.md",
        body=body,
        sentences=[
            Sentence(index=0, text=f'Claim {i} ,"sources": [1].', claim=f"Claim {i}", citation_keys=["1"]),
            Sentence(index=1, text=f"Second {i} [2].", claim=f"Second {i}", citation_keys=["2"], section="Intro"),
        ],
        sources={"1": Source(key="1", title="One", raw="[1] One"), "2": Source(key="2", url="https://a.example/2")},
        unresolved_citations=["9"] if i % 2 else [],
        warnings=["w"],
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    write_run(tmp_path, [_report(i) for i in range(4)], [])
    return tmp_path


def test_stored_reports_equal_the_fully_validated_ones_byte_for_byte(run_dir: Path) -> None:
    lazy, full = read_stored_reports(run_dir), read_reports(run_dir)
    assert all(type(r) is StoredReport for r in lazy)  # every line took the fast path
    assert all("sentences" not in r.__dict__ for r in lazy)  # nothing validated the sentences yet
    assert [r.model_dump_json() for r in lazy] == [r.model_dump_json() for r in full]
    assert lazy == full and full == lazy
    assert [r.model_fields_set for r in lazy] == [r.model_fields_set for r in full]
    assert [r.cited_keys for r in lazy] == [r.cited_keys for r in full]
    again = read_stored_reports(run_dir)
    assert pickle.loads(pickle.dumps(again[0])) == full[0]
    assert copy.deepcopy(again[1]) == full[1]
    assert dict(again[2]) == dict(full[2]) and list(dict(again[2])) == list(dict(full[2]))  # field order too
    assert again[3].model_copy(update={"system": "y"}).sentences == full[3].sentences


def test_a_step_that_reads_no_sentences_validates_none(run_dir: Path) -> None:
    from reportbench.protocols.researchqa.benchmark import answer_text

    reports = read_stored_reports(run_dir)
    texts = [answer_text(r) for r in reports]  # what ResearchQA's coverage step reads: body and reference list
    assert texts == [answer_text(r) for r in read_reports(run_dir)]
    assert all("sentences" not in r.__dict__ for r in reports)


def _edit(run_dir: Path, line_no: int, edit: object) -> None:
    path = run_dir / "reports.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[line_no - 1] = edit(lines[line_no - 1]) if callable(edit) else str(edit)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_hand_edited_field_is_an_error_naming_file_line_and_field(run_dir: Path) -> None:
    _edit(run_dir, 3, lambda s: s.replace('"task_id":"t2"', '"task_id":5'))
    with pytest.raises(ValueError) as err:
        read_stored_reports(run_dir)
    msg = str(err.value)
    assert f"{run_dir / 'reports.jsonl'}: line 3 is not a valid Report" in msg and "task_id" in msg


def test_an_unknown_field_is_refused_as_before(run_dir: Path) -> None:
    _edit(run_dir, 2, lambda s: s.replace('"system":"sys"', '"system":"sys","extra_field":1'))
    with pytest.raises(ValueError, match=r"(?s)line 2 is not a valid Report.*extra_field"):
        read_stored_reports(run_dir)


def test_hand_edited_sentences_fail_when_read_naming_file_line_and_field(run_dir: Path) -> None:
    _edit(run_dir, 2, lambda s: s.replace('"index":1', '"index":"one"'))
    reports = read_stored_reports(run_dir)  # the head of every line is valid
    assert reports[0].sentences[0].claim == "Claim 0"
    with pytest.raises(ValueError) as err:
        _ = reports[1].sentences
    msg = str(err.value)
    assert f"{run_dir / 'reports.jsonl'}: line 2 is not a valid Report: sentences.1.index" in msg
    with pytest.raises(ValueError, match="sentences.1.index"):
        reports[1].model_dump_json()  # what reads every field reads them too


def test_a_line_laid_out_otherwise_is_validated_whole(run_dir: Path) -> None:
    # keys reordered and spaced (a hand edit, or the redacted writer's json.dumps): the full validation, same report
    full = read_reports(run_dir)
    _edit(run_dir, 1, lambda s: json.dumps(dict(reversed(list(json.loads(s).items())))))
    _edit(run_dir, 2, lambda s: json.dumps(json.loads(s), indent=None, separators=(", ", ": ")))
    lazy = read_stored_reports(run_dir)
    assert type(lazy[0]) is Report and type(lazy[1]) is Report and type(lazy[2]) is StoredReport
    assert lazy == full
    _edit(run_dir, 1, lambda s: s.replace('"index": 1', '"index": "one"'))
    with pytest.raises(ValueError, match=r"(?s)line 1 is not a valid Report.*sentences\.1\.index"):
        read_stored_reports(run_dir)


def test_sentences_of_a_file_replaced_after_reading_are_refused(run_dir: Path) -> None:
    reports = read_stored_reports(run_dir)
    write_run(run_dir, [_report(i + 10) for i in range(4)], [])  # a rerun of system@ replaced the file
    with pytest.raises(ValueError, match="reports.jsonl changed after its reports were read"):
        _ = reports[0].sentences


def test_strip_think_fast_path_keeps_every_case_blind_match() -> None:
    import re

    from reportbench.protocols.researchqa.labels import strip_think

    think = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
    opening = re.compile(r"^\s*<think>.*", re.DOTALL | re.IGNORECASE)

    def reference(text: str) -> str:  # strip_think without its fast path
        out = think.sub("", text)
        if "</think>" in out.lower():
            out = out[out.lower().rindex("</think>") + len("</think>") :]
        return opening.sub("", out).strip()

    cases = ["<think>a</think> b", "x </THINK> y", "  <Think> open", "plain text ", "a <think>b</think> c <think>d",
             "<th\u0130nk>hidden</th\u0131nk> kept", "<TH\u0130NK>open", "\n<tHiNk>\nq\n</ThInK>\nans", "",
             "<thin\u212a>kelvin</THIN\u212a> sign", "no tag > here"]  # fmt: skip
    assert [strip_think(c) for c in cases] == [reference(c) for c in cases]

    lowered: list[str] = []

    class Text(str):
        def lower(self) -> str:
            lowered.append(self)
            return str(self).lower()

    assert strip_think(Text("a long report without any tag " * 100)) == ("a long report without any tag " * 100).strip()
    assert lowered == []  # no ">": not copied lowercased (every think tag needs one)
    assert strip_think(Text("x <think>y</think> z")) == "x  z" and lowered


def test_the_judge_stage_reads_its_release_once_and_again_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import polars as pl

    from reportbench import pipeline
    from reportbench.release.format import ReleaseError, write_release
    from test_release_format import make_release

    monkeypatch.chdir(tmp_path)  # the stored release goes to ./.reportbench/cache
    folder = tmp_path / "release"
    write_release(make_release(), folder)
    first = pipeline._unit_release(folder, "deepscholar")
    assert pipeline._unit_release(folder, "deepscholar") is first  # every unit of the stage: one read
    df = pl.read_parquet(folder / "tasks.parquet")
    df.with_columns(pl.lit("changed").alias("title")).write_parquet(folder / "tasks.parquet")
    with pytest.raises(ReleaseError, match=r"tasks.parquet: sha256 differs from release.json"):
        pipeline._unit_release(folder, "deepscholar")  # a changed table is read and checked again


# ------------------------------------------------------------------ files system@ registered as written by us
def _ours(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As system@ then the judge stage do it: register the file written, then digest the run folder (unit key)."""
    import time

    from reportbench.digest import memo_tree_digest
    from reportbench.reports.stored import register_written

    monkeypatch.chdir(run_dir)  # the registry and the memo live under ./.reportbench/cache
    register_written(run_dir / "reports.jsonl")
    memo_tree_digest(run_dir, now_ns=time.time_ns() + 10**10)  # 10 s later: not racily clean


def _no_validation(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = StoredReport.model_validate_json.__func__  # type: ignore[attr-defined]

    def counting(cls: type, *args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(StoredReport, "model_validate_json", classmethod(counting))
    return calls


def test_a_file_our_writer_wrote_is_read_without_validating_it_again(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.reports import stored

    full = read_reports(run_dir)
    _ours(run_dir, monkeypatch)
    validations = _no_validation(monkeypatch)
    before = dict(stored.READS)
    lazy = read_stored_reports(run_dir)
    assert stored.READS["constructed"] == before["constructed"] + 1 and validations == []
    assert all(type(r) is StoredReport for r in lazy) and all("sentences" not in r.__dict__ for r in lazy)
    assert [r.model_dump_json() for r in lazy] == [r.model_dump_json() for r in full]
    assert lazy == full and full == lazy
    assert [r.model_fields_set for r in lazy] == [r.model_fields_set for r in full]
    assert [{k: s.model_fields_set for k, s in r.sources.items()} for r in lazy] == [
        {k: s.model_fields_set for k, s in r.sources.items()} for r in full
    ]
    assert [list(r.__dict__) for r in read_stored_reports(run_dir)] == [
        [f for f in Report.model_fields if f != "sentences"] for _ in full
    ]
    assert [r.cited_keys for r in lazy] == [r.cited_keys for r in full]
    assert pickle.loads(pickle.dumps(lazy[0])) == full[0] and copy.deepcopy(lazy[1]) == full[1]


def test_a_registered_file_edited_by_hand_is_validated_and_stops_naming_file_line_and_field(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.reports import stored

    _ours(run_dir, monkeypatch)
    _edit(run_dir, 3, lambda s: s.replace('"task_id":"t2"', '"task_id":5'))
    _ours_digest_only(run_dir)
    before = dict(stored.READS)
    with pytest.raises(ValueError) as err:
        read_stored_reports(run_dir)
    assert stored.READS["validated"] == before["validated"] + 1
    msg = str(err.value)
    assert f"{run_dir / 'reports.jsonl'}: line 3 is not a valid Report" in msg and "task_id" in msg


def _ours_digest_only(run_dir: Path) -> None:
    import time

    from reportbench.digest import memo_tree_digest

    memo_tree_digest(run_dir, now_ns=time.time_ns() + 10**10)


def test_a_registered_file_not_digested_in_this_process_is_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.reports import stored
    from reportbench.reports.stored import register_written

    write_run(tmp_path, [_report(i) for i in range(3)], [])
    monkeypatch.chdir(tmp_path)
    register_written(tmp_path / "reports.jsonl")  # registered, but nothing vouched for the bytes read now
    validations = _no_validation(monkeypatch)
    assert read_stored_reports(tmp_path) == read_reports(tmp_path)
    assert len(validations) == 3 and stored.READS["validated"] >= 1


def _count_release_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets a 1 each time the pipeline reads (and validates) a release folder."""
    from reportbench import pipeline

    reads: list[int] = []
    real = pipeline.read_release

    def counting(*args: object, **kwargs: object) -> object:
        reads.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "read_release", counting)
    return reads


def test_a_release_is_stored_validated_and_read_again_only_when_its_bytes_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next judge stage (another process: the in-process memo emptied) loads the stored release instead of
    reading and validating it again; a changed table is read (and its hash checked) again."""
    import os
    import time

    import polars as pl

    from reportbench import pipeline, unit_reuse
    from reportbench.release.format import ReleaseError, write_release
    from test_release_format import make_release

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "release"
    write_release(make_release(), folder)
    old = time.time_ns() - 10**10  # written 10 s ago: not racily clean, so its digests are memoised
    for f in folder.iterdir():
        os.utime(f, ns=(old, old))
    later = time.time_ns() + 10**10
    monkeypatch.setattr(unit_reuse, "_dir_digest", lambda p: unit_reuse.memo_tree_digest(p, now_ns=later))
    reads = _count_release_reads(monkeypatch)
    first = pipeline._unit_release(folder, "deepscholar")
    pipeline._RELEASE_READ.clear()  # a new stage process
    second = pipeline._unit_release(folder, "deepscholar")
    assert reads == [1] and second is not first
    assert second.tasks == first.tasks and second.table("tasks") == first.table("tasks")
    entry = next((tmp_path / unit_reuse.RELEASES_DIR / "deepscholar").glob("*.pickle"))
    entry.write_bytes(b"damaged")  # a damaged entry is read again, never trusted
    pipeline._RELEASE_READ.clear()
    assert pipeline._unit_release(folder, "deepscholar").tasks == first.tasks and reads == [1, 1]
    df = pl.read_parquet(folder / "tasks.parquet")
    df.with_columns(pl.lit("changed").alias("title")).write_parquet(folder / "tasks.parquet")
    pipeline._RELEASE_READ.clear()
    with pytest.raises(ReleaseError, match=r"tasks.parquet: sha256 differs from release.json"):
        pipeline._unit_release(folder, "deepscholar")


def test_release_at_stores_what_the_judge_stage_then_reads_without_validating_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench import pipeline
    from test_release_format import make_release

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(pipeline, "configured_release", lambda benchmark, cfg: make_release())
    folder = tmp_path / "release"
    pipeline.build_release({"benchmarks": {"deepscholar": {"release": {"name": "unit"}}}}, "deepscholar", folder)
    reads = _count_release_reads(monkeypatch)
    pipeline._RELEASE_READ.clear()  # the judge stage's process
    assert pipeline._unit_release(folder, "deepscholar").tasks == make_release().tasks and reads == []


def test_a_registered_file_is_read_by_its_stored_layout_without_scanning_its_lines(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """system@ stores where each line's keys are (`register_written`): the judge stage reads each line's head at
    those offsets instead of mapping the file and scanning ~70 KB per report for its end and its keys; the same
    reports, and not a byte of the sentences read."""
    import mmap
    import os

    from reportbench.reports import stored

    full = read_reports(run_dir)
    _ours(run_dir, monkeypatch)
    mapped: list[int] = []
    real_mmap, real_pread = mmap.mmap, os.pread
    monkeypatch.setattr(mmap, "mmap", lambda *a, **k: mapped.append(1) or real_mmap(*a, **k))
    read: list[int] = []
    monkeypatch.setattr(os, "pread", lambda fd, n, offset: read.append(n) or real_pread(fd, n, offset))
    before = dict(stored.READS)
    lazy = read_stored_reports(run_dir)
    assert stored.READS["laid_out"] == before["laid_out"] + 1 and mapped == []  # neither mapped nor scanned
    sentences = sum(len(json.dumps([s.model_dump() for s in r.sentences], separators=(",", ":"))) for r in full)
    assert sum(read) < (run_dir / "reports.jsonl").stat().st_size - sentences + 16 * len(full)  # heads only
    assert [r.model_dump_json() for r in lazy] == [r.model_dump_json() for r in full]
    assert [r.model_fields_set for r in lazy] == [r.model_fields_set for r in full]


def test_a_damaged_stored_layout_is_not_trusted(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3
    from array import array

    from reportbench.reports import stored

    full = read_reports(run_dir)
    _ours(run_dir, monkeypatch)
    db = sqlite3.connect(str(stored.WRITTEN_PATH))
    with db:
        sha, blob = db.execute("SELECT sha256, offsets FROM layout").fetchone()
        offsets = array("Q")
        offsets.frombytes(blob)
        offsets[5] += 1  # the second line's sentences key one byte off
        db.execute("UPDATE layout SET offsets = ? WHERE sha256 = ?", (offsets.tobytes(), sha))
    db.close()
    before = dict(stored.READS)
    assert [r.model_dump_json() for r in read_stored_reports(run_dir)] == [r.model_dump_json() for r in full]
    assert stored.READS["laid_out"] == before["laid_out"] and stored.READS["constructed"] == before["constructed"] + 1
