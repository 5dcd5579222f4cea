"""What the bounded hostile inputs of issue 33 cost now (docs/reliability.md, "Resource bounds").

Run from the repo root with the venv active:  `python bench/hostile_bounds.py`

Each case is the attack of the issue, run through the real code: a report of 4 MB of `1. 1. 1. …` in
20,000-character paragraphs and one of 1.3 M `[1]` markers (refused at max_sentences / max_citations), an offline
nugget_assign item over a 0.6 MB passage of short sentences (refused at max_window_scores), and a tiny e-print
tar with a member 1,200 directories deep (skipped at max_depth). Prints CPU seconds and peak traced memory of
each; the tests (tests/test_hostile_leftovers.py) bound the same cases by counts, not by these timings.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path


def measure(name: str, fn: Callable[[], str]) -> None:
    tracemalloc.start()
    started = time.process_time()
    try:
        outcome = fn()
    except Exception as exc:  # noqa: BLE001 - the refusal is the outcome being measured
        outcome = f"{type(exc).__name__}: {exc}"
    cpu = time.process_time() - started
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    print(f"{name}: {cpu:.1f} s CPU, {peak:.0f} MB peak; {outcome[:150]}")


def report(tmp: Path, body: str) -> Callable[[], str]:
    from reportbench.reports.base import load_report

    path = tmp / "t1.md"

    def run() -> str:
        path.write_text(body, encoding="utf-8")
        return str(load_report(path, task_id="t1", system="bench"))

    return run


def nugget_item() -> str:
    from reportbench.judges.tasks.nugget_assign import NuggetAssignInput, offline

    passage = " ".join(f"Fact {i}." for i in range(70_000))
    return str(offline(NuggetAssignInput(query="q", passage=passage, nuggets=["Fact one.", "Fact two."]), {}))


def deep_tar(tmp: Path) -> str:
    from reportbench.live_builder.safe_extract import extract_source

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo("/".join(["d"] * 1200) + "/main.tex")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"x\n\n"))
    result = extract_source(gzip.compress(buf.getvalue(), mtime=0), tmp / "eprint")
    return f"files {result.files}, skipped: {result.skipped[0].reason}"


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ones = ("1. " * 6700)[:20_000].rstrip()
        measure("4 MB of '1. 1. 1.'", report(tmp, "## Work\n\n" + "\n\n".join([ones] * 200) + "\n"))
        markers = "\n\n".join(["Claim " + "[1]" * 6600] * 200)
        measure("1.3 M [1] markers", report(tmp, "## Work\n\n" + markers + "\n\n## References\n[1] A. https://a.org\n"))
        measure("nugget_assign, 140k windows x 2 nuggets", nugget_item)
        measure("e-print member 1,200 directories deep", lambda: deep_tar(tmp))


if __name__ == "__main__":
    main()
