"""The bounded-input leftovers of issue 33: each hostile input is refused or bounded by a size or count limit
(never by timing), with the figure of the attack in the test."""

from __future__ import annotations

import contextlib
import gzip
import io
import tarfile
import threading
from collections.abc import Iterator
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



def test_a_cache_that_cannot_be_created_is_one_error_line(tmp_path: Path) -> None:
    """Issue 33: on a full disk, creating the judge cache ended in a raw sqlite3.OperationalError traceback. A real
    write failure (the file-size limit at 0 bytes, as a full disk refuses every write) now gives one `error:` line."""
    import json
    import subprocess
    import sys

    export = tmp_path / "answers.jsonl.gz"
    with gzip.open(export, "wt", encoding="utf-8") as f:
        from reportbench.judges.cache import CACHE_KEY_VERSION

        f.write(json.dumps({"format": "reportbench-judge-cache", "key_version": CACHE_KEY_VERSION}) + "\n")
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
        "from reportbench.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    cache = tmp_path / "full" / "judge.sqlite"
    run = subprocess.run(
        [sys.executable, "-c", code, "cache", "import", str(export), "--cache", str(cache)],
        capture_output=True, text=True, timeout=120,
    )
    out = (run.stdout + run.stderr).strip()
    assert run.returncode == 2, out
    assert "Traceback" not in out and len(out.splitlines()) == 1, out
    assert f"judge cache {cache} cannot be created or opened: disk I/O error" in out


def test_paid_answers_go_to_the_temporary_folder_when_the_caches_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `<cache>.unsaved.jsonl` spill sat on the cache's own full disk. When it cannot be written the answer
    goes to the temporary folder (the error names it), and the next open of the cache imports it from there."""
    import sqlite3
    import tempfile

    from reportbench.judges.cache import CacheWriteError, ResponseCache

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the test's own temporary folder
    (tmp_path / "tmp").mkdir()
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    db = cache._db()
    db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")
    for i in range(10_000):  # fill every page: the next answer cannot be stored
        try:
            db.execute("INSERT INTO responses (key, text, created_at) VALUES (?, ?, '')", (f"f{i}", "x" * 200))
        except sqlite3.OperationalError:
            break
    path.with_name(path.name + ".unsaved.jsonl").mkdir()  # the first place cannot be written
    err = cache._spill({"key": "k1", "text": "answer", "created_at": ""}, sqlite3.OperationalError("disk full"))
    assert isinstance(err, CacheWriteError)
    fallback = cache.spill_fallback
    assert str(fallback).startswith(str(tmp_path / "tmp")) and fallback.is_file()
    assert f"kept in {fallback}" in str(err) and "could not be written" in str(err)
    cache.close()
    assert ResponseCache(path).get("k1") is not None and not fallback.exists()  # imported on the next open


def _minimal_pdf(text: str) -> bytes:
    """A one-page PDF whose page shows `text` (self-made with pypdf's writer)."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    page = writer.add_blank_page(200, 200)
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
    )
    stream = DecodedStreamObject()
    stream.set_data(f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode())
    page[NameObject("/Contents")] = writer._add_object(stream)
    page.compress_content_streams()  # the words are not in the raw bytes: only the PDF path can read them
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


BINARY_BODIES = {
    "png": (b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(256)) * 4, "a PNG image"),
    "elf": (b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x02\x00>\x00" + b"\x01" * 200, "an ELF executable"),
    "nul": (b"\x00" * 5_000_000, "NUL bytes (5000000 of 5000000)"),
}


@pytest.mark.integration
@pytest.mark.parametrize("what", sorted(BINARY_BODIES))
def test_binary_bodies_served_as_text_are_not_ok_pages(what: str) -> None:
    """Issue 33: PNG/ELF bytes and 5 MB of NUL bytes served as text/plain were stored as `ok` pages and reached
    the verifier judges. Fetched through the real client from a loopback server, they are `unsupported_type`
    with the reason, and no text."""
    from reportbench.fetch.snapshot import snapshot_from_raw

    body, reason = BINARY_BODIES[what]
    with _serve(body, "text/plain; charset=utf-8") as url:
        snap = snapshot_from_raw(_fetcher().fetch(url), "http")
    assert snap.error_class == "unsupported_type", snap
    assert f"the body is {reason}" in (snap.error or "") or reason in (snap.error or ""), snap.error
    assert "served as 'text/plain'" in (snap.error or "") and not snap.text


@pytest.mark.integration
def test_a_pdf_served_as_text_goes_through_the_pdf_path() -> None:
    from reportbench.fetch.snapshot import snapshot_from_raw

    pdf = _minimal_pdf("Coral reefs bleach in heatwaves")
    assert b"Coral" not in pdf
    with _serve(pdf, "text/plain") as url:
        snap = snapshot_from_raw(_fetcher().fetch(url), "http")
    assert snap.error_class == "ok" and "Coral reefs bleach in heatwaves" in snap.text, snap


def _fetcher():  # noqa: ANN202 - reportbench.fetch.client.Fetcher
    from reportbench.fetch.client import Fetcher

    return Fetcher(allow_hosts={"127.0.0.1"}, per_host_interval_s=0.0, retries=0, timeout_s=10.0, sleep=lambda s: None)


@contextlib.contextmanager
def _serve(body: bytes, content_type: str) -> Iterator[str]:
    """A loopback HTTP server answering every GET with `body` as `content_type`."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page.txt"
    finally:
        server.shutdown()
        server.server_close()


def test_four_mb_of_list_numbers_stop_at_max_sentences_with_bounded_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: 4 MB of `1. 1. 1. …` in 20,000-character paragraphs (within every size bound) ran past 120 s and
    653 MB before max_sentences (5,000) refused it: all 1.3 M sentences were built first. Splitting now stops one
    past the limit: at most 5,001 sentences are cleaned, and memory stays far below."""
    from reportbench.reports import sentences
    from reportbench.reports.base import ReportParseError, load_report

    paragraph = ("1. " * 6700)[:20_000].rstrip()
    path = tmp_path / "t1.md"
    path.write_text("## Work\n\n" + "\n\n".join([paragraph] * 200) + "\n", encoding="utf-8")
    assert 3.9e6 < path.stat().st_size < 5 * 1024 * 1024
    cleaned = 0
    clean = sentences._clean_claim

    def counting(text: str) -> str:
        nonlocal cleaned
        cleaned += 1
        return clean(text)

    monkeypatch.setattr(sentences, "_clean_claim", counting)
    with pytest.raises(ReportParseError) as err:
        load_report(path, task_id="t1", system="s")
    assert "sentence count (5,001 or more: counting stopped there) is over the max_sentences limit" in str(err.value)
    assert cleaned <= 5_001, cleaned  # before: 1.3 M


def test_a_million_citation_markers_stop_at_max_citations_with_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: 1.3 M `[1]` markers cost 17 s and 511 MB before max_citations (5,000) refused the report (every
    marker was built first). The scan now stops at the 5,001st marker: at most 5,000 are ever built."""
    from reportbench.reports import citations
    from reportbench.reports.base import ReportParseError, load_report

    built = 0
    marker = citations.Marker

    def counting(*args: object) -> object:
        nonlocal built
        built += 1
        return marker(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(citations, "Marker", counting)

    line = "Claim " + "[1]" * 6600
    path = tmp_path / "t1.md"
    body = "## Work\n\n" + "\n\n".join([line] * 200) + "\n\n## References\n[1] A page. https://example.org/a\n"
    path.write_text(body, encoding="utf-8")
    assert body.count("[1]") == 1_320_001
    with pytest.raises(ReportParseError) as err:
        load_report(path, task_id="t1", system="s")
    assert "citation marker count (5,001 or more: counting stopped there) is over the max_citations" in str(err.value)
    assert built <= 5_000, built  # before: 1,320,001


def _judge_offline(task: object, items: list[tuple[str, object]]) -> list:  # noqa: ANN202 - list[Judgment]
    import asyncio

    from reportbench.judges.offline import OfflineJudge

    judge = OfflineJudge(task)  # type: ignore[arg-type]

    async def run() -> list:  # noqa: ANN202
        return [await judge(item_id, inputs, {}) for item_id, inputs in items]  # type: ignore[arg-type]

    return asyncio.run(run())


def test_nugget_assign_work_is_bounded_by_windows_times_nuggets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: the offline nugget_assign cost ~25 s per MB of report per nugget (each nugget is scored against
    every window of the passage), with no bound. An item whose windows x nuggets exceed max_window_scores
    (200,000) is refused before any nugget is scored: `too_large`, an undefined outcome with its reason."""
    from reportbench.judges.errors import failure_class
    from reportbench.judges.tasks import nugget_assign

    scored = 0
    score = nugget_assign.support_score

    def counting(*args: object, **kwargs: object) -> object:
        nonlocal scored
        scored += 1
        return score(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(nugget_assign, "support_score", counting)
    passage = " ".join(f"Fact {i}." for i in range(70_000))  # ~0.6 MB of short sentences: ~140,000 windows
    big = nugget_assign.NuggetAssignInput(query="q", passage=passage, nuggets=["Fact one holds.", "Fact two."])
    small = nugget_assign.NuggetAssignInput(query="q", passage="Fact one holds. Fact two.", nuggets=["Fact one."])
    refused, ok = _judge_offline(nugget_assign.TASK, [("big", big), ("small", small)])
    assert refused.status == "failed" and refused.error.startswith("too_large: "), refused.error
    assert "nugget_assign window scores (139,999 passage windows x 2 nuggets)" in refused.error
    assert "judge.offline.nugget_assign.max_window_scores" in refused.error
    assert failure_class(refused.status, refused.error) == "undefined"
    assert ok.status == "ok" and scored == 1  # only the small item's nugget was scored
    from reportbench.judges.lexical import prepare_source

    sample = " ".join(f"Fact {i}. Then more, e.g. this." for i in range(50))  # the count matches the real windows
    counted = nugget_assign.NuggetAssignInput(query="q", passage=sample, nuggets=["x"] * 1000)
    with pytest.raises(Exception, match=rf"\({len(prepare_source(sample, 2).windows):,} passage windows x 1000"):
        nugget_assign.check_work(counted, {"max_window_scores": 1}, 2)


def test_an_oversized_section_is_undefined_and_the_stage_stays_complete() -> None:
    """Issue 33: one report within every report bound (0.65 MB, ~4,300 sentences) made 2 of its 6 offline
    `organization` items end too_large; they counted against max_failure_rate, so judge@deepscholar exited 3
    for every system on every rerun. A bound no retry changes is a recorded per-item outcome now."""
    from reportbench.judges.errors import failure_class
    from reportbench.judges.tasks import organization
    from reportbench.pipeline import _bound_problems

    sentence = "Coral reefs bleach when marine heatwaves push the water past the threshold of the symbionts. "
    huge = sentence * 4_300  # ~0.4 MB: 4,300 sentences, over the 1,000 a section may have
    assert len(huge) > 390_000
    normal = "Transit photometry finds exoplanets. Surveys fit light curves. " * 20
    items = []
    for i in range(6):
        a, b = (huge, normal) if i < 2 else (normal, normal + " Another finding.")
        items.append((f"org{i}", organization.OrganizationInput(
            paper_title="t", paper_abstract="a", section_a=a, section_b=b)))
    judgments = _judge_offline(organization.TASK, items)
    outcomes = [(j.status, j.error) for j in judgments]
    assert [failure_class(s, e) for s, e in outcomes] == ["undefined"] * 2 + ["ok"] * 4, outcomes
    assert all("too_large:" in (e or "") for _, e in outcomes[:2])
    cfg = {"runtime": {"max_failure_rate": 0.1, "max_call_failure_rate": 0.0}}
    assert _bound_problems("organization", judgments, cfg) == []  # before: 2 of 6 failed -> exit 3
