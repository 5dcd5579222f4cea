"""LiveResearchBench's judge stage holds no report's sentences after its claims step (issue 36: peak memory).

The claims step reads every report's sentences once; a stored report kept them on itself until the unit ended
(~190 KB per report, the LRB-shaped judge@'s largest per-task cost: bench/scale.py --shapes liveresearchbench).
Bounded by counts: how many reports still hold their sentences after the step, with the same table as before;
and the step's traced peak per (claim, URL) pair (its pairs gathered by column, not as a dict each)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from reportbench.protocols.liveresearchbench.benchmark import claims_table
from reportbench.reports.stored import StoredReport, read_stored_reports
from reportbench.systems import read_reports, write_run
from reportbench.types import Report, Sentence, Source

pytestmark = pytest.mark.core

N_REPORTS = 12
PEAK_BYTES_PER_PAIR = 520  # traced peak of the claims step per pair: ~410 now, ~630 with a dict per pair


def _report(i: int) -> Report:
    keys = [str(k % 3 + 1) for k in range(6)]
    sentences = [
        Sentence(index=k, text=f"Finding {i}.{k} [{key}].", claim=f"Finding {i}.{k}", citation_keys=[key])
        for k, key in enumerate(keys)
    ]
    sources = {str(k): Source(key=str(k), url=f"https://src{k}.example/t{i}", raw=f"[{k}] src") for k in (1, 2, 3)}
    body = " ".join(s.text for s in sentences)
    return Report(report_id=f"sys/t{i}", task_id=f"t{i}", system="sys", format="markdown", path=f"/x/t{i}.md",
                  body=body, sentences=sentences, sources=sources)  # fmt: skip


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    write_run(tmp_path, [_report(i) for i in range(N_REPORTS)], [])
    return tmp_path


def _ctx(reports: list[Report]) -> SimpleNamespace:
    return SimpleNamespace(params={}, reports=reports, pages=None)


def test_the_claims_step_keeps_no_reports_sentences(run_dir: Path) -> None:
    stored = read_stored_reports(run_dir)
    assert all(type(r) is StoredReport for r in stored)
    table = claims_table(_ctx(stored))  # type: ignore[arg-type]
    assert table.height == N_REPORTS * 6  # every cited sentence, one URL each
    assert table.equals(claims_table(_ctx(read_reports(run_dir))))  # type: ignore[arg-type]  # the same table
    holding = sum("sentences" in r.__dict__ for r in stored)
    assert holding == 0, f"{holding} of {N_REPORTS} reports keep their sentences after the claims step"


def test_read_sentences_is_what_sentences_gives_without_keeping_it(run_dir: Path) -> None:
    stored, full = read_stored_reports(run_dir), read_reports(run_dir)
    assert stored[0].read_sentences() == full[0].sentences
    assert "sentences" not in stored[0].__dict__
    kept = stored[0].sentences  # read as a field: kept, and read_sentences then gives that list
    assert stored[0].read_sentences() is kept
    assert stored[0] == full[0]


def test_read_sentences_of_a_hand_edited_line_raises_as_sentences_does(run_dir: Path) -> None:
    path = run_dir / "reports.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"index":1', '"index":"one"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = read_stored_reports(run_dir)[1]
    for _ in range(2):  # raised at every read: never an empty list in its place
        with pytest.raises(ValueError, match=r"line 2 is not a valid Report: sentences\.1\.index"):
            report.read_sentences()
    with pytest.raises(ValueError, match=r"line 2 is not a valid Report: sentences\.1\.index"):
        _ = report.sentences


def test_the_claims_table_is_gathered_without_a_dict_per_pair(tmp_path: Path) -> None:
    """The step's transient Python memory per (claim, URL) pair, traced: a dict per pair was ~60 % more."""
    import tracemalloc

    write_run(tmp_path, [_report(i) for i in range(200)], [])
    stored = read_stored_reports(tmp_path)
    tracemalloc.start()
    try:
        table = claims_table(_ctx(stored))  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    per_pair = peak / table.height
    assert table.height == 200 * 6
    assert per_pair < PEAK_BYTES_PER_PAIR, f"{per_pair:.0f} bytes traced per pair"


def _rss_file_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads resident pages from /proc (Linux)")
def test_streamed_reports_hand_back_the_mapped_pages_they_read(tmp_path: Path) -> None:
    """Reading a run's reports.jsonl through its mapping made every page read resident in the process until the
    file was unmapped: 372 MB per pass at 5,000 LiveResearchBench-shaped reports, most of `judge@`'s ~1 GB peak
    (issue 36). Counted in resident file pages: a pass over a ~48 MB file leaves at most a window of it resident."""
    from reportbench.reports.stored import iter_stored_reports

    window = 8 << 20  # stored._RELEASE_BYTES

    pad = " ".join(["evidence"] * 9000)  # ~80 KB a report
    reports = [_report(i).model_copy(update={"body": f"{_report(i).body} {pad}"}) for i in range(600)]
    write_run(tmp_path, reports, [])
    size = (tmp_path / "reports.jsonl").stat().st_size
    assert size > 40 << 20
    base, peak, n = _rss_file_kb(), 0, 0
    for _ in iter_stored_reports(tmp_path):
        n += 1
        if n % 25 == 0:
            peak = max(peak, _rss_file_kb() - base)
    assert n == 600
    # before: ~size resident at the end of the pass; now: the window being read, and a page or two of slack
    assert peak * 1024 < 2 * window + (1 << 20), f"{peak} KB resident of a {size >> 10} KB file"
    # the line heads every stage lists a run's tasks by (partial_reuse.iter_line_heads): the same
    from reportbench.partial_reuse import iter_line_heads

    base, peak, n = _rss_file_kb(), 0, 0
    for _ in iter_line_heads(tmp_path / "reports.jsonl"):
        n += 1
        if n % 25 == 0:
            peak = max(peak, _rss_file_kb() - base)
    assert n == 600 and peak * 1024 < 2 * window + (1 << 20), f"{peak} KB resident (line heads)"
