"""How long parsing one folder report takes, cold, per phase: read (bytes, decoding, sniffing), sentences,
citations (inline markers, the reference list and its entries), injection scan (every `injection.scan` call:
the whole text, the body, each reference entry), and the total of `load_report`.

    python bench/parse.py                       # the synthetic scale reports (+ ../shared/data when present)
    python bench/parse.py --n 200 --json

Reports are the ResearchQA- and LiveResearchBench-shaped ~2,000-word synthetic reports `bench/scale.py` writes
(its generator, same seeds), and, when `../shared/data` (or $REPORTBENCH_SHARED) exists, the real reports there:
LiveResearchBench's reference reports, the DeepScholar-bench baselines' outputs and the ResearcherBench systems'
responses (parsed as the researcherbench plug-in parses them). Each report is parsed once in this process after
one warm-up parse of another report (imports and Punkt's parameters loaded): no report is ever parsed twice, so
nothing a cache might keep is reused (the injection scanner remembers windows by their text, for a report's second
scan; windows of different synthetic reports coincide rarely: 9 of ~6,200 lookups over 180 of them). CPU time
(time.process_time), µs per report; phases are timed by wrapping the phase functions (small overhead), "other" is
the total minus the phases.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "src"))

PHASES = ("read", "injection", "citations", "sentences")


class PhaseClock:
    """Accumulates CPU time per phase; a phase entered inside another is charged to the outer one only."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self._active: str | None = None

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._active is not None:
                return fn(*args, **kwargs)
            self._active = phase
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.totals[phase] += time.process_time() - t0
                self._active = None

        return timed


@contextlib.contextmanager
def instrumented(clock: PhaseClock) -> Iterator[None]:
    """Wrap the phase functions where their callers look them up; restore them afterwards."""
    from reportbench import injection
    from reportbench.reports import base, citations, references, sentences
    from reportbench.reports.formats import markdown

    patches = [
        (base, "read_bytes", "read"), (base, "decode_bytes", "read"), (base, "check_report_text", "read"),
        (injection, "scan", "injection"),
        (base, "scan_citations", "citations"), (citations, "scan_citations", "citations"),
        (markdown, "split_reference_section", "citations"), (markdown, "sources_from_section", "citations"),
        (references, "sources_from_section", "citations"),
        (base, "build_sentences", "sentences"), (sentences, "build_sentences", "sentences"),
    ]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]
    try:
        for mod, name, phase in patches:
            setattr(mod, name, clock.wrap(phase, getattr(mod, name)))
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


def synthetic_reports(root: Path, n: int, words: int) -> dict[str, list[Path]]:
    """bench/scale.py's reports: ResearchQA shape (12 numbered sources; one system links them) and
    LiveResearchBench shape (40 sources)."""
    import scale

    out: dict[str, list[Path]] = {}
    for label, n_sources, link_style, seed in (
        ("synthetic ResearchQA, [n] sources", 12, False, 0),
        ("synthetic ResearchQA, linked sources", 12, True, 2),
        ("synthetic LiveResearchBench, 40 sources", 40, False, 1),
    ):
        folder = root / label.split(",")[0].replace(" ", "_") / str(seed)
        folder.mkdir(parents=True, exist_ok=True)
        rng = random.Random(seed)
        paths = []
        for i in range(n):
            p = folder / f"task-{i:05d}.md"
            p.write_text(scale.synthetic_report(rng, f"Question {i} about the field?", words, n_sources, link_style),
                         encoding="utf-8")
            paths.append(p)
        out[label] = paths
    return out


def shared_root() -> Path | None:
    env = os.environ.get("REPORTBENCH_SHARED")
    for cand in ([Path(env) / "data", Path(env)] if env else []) + [REPO.parent / "shared" / "data"]:
        if cand.is_dir() and (cand / "liveresearchbench").exists():
            return cand
    return None


def real_reports(root: Path) -> dict[str, list[Path]]:
    """Folder reports in the shared data: LiveResearchBench reference reports, DeepScholar-bench baselines."""
    out: dict[str, list[Path]] = {}
    lrb = sorted((root / "liveresearchbench/reference_reports").glob("*.md"))
    if lrb:
        out["LiveResearchBench reference reports"] = lrb
    base = root / "deepscholar-bench/tests/baselines_results"
    if base.is_dir():
        for system in sorted(p for p in base.iterdir() if p.is_dir()):
            tasks = sorted(p for p in system.iterdir() if p.is_dir())
            if tasks:
                out[f"DeepScholar-bench {system.name}"] = tasks
    return out


def researcherbench_texts(root: Path) -> dict[str, list[tuple[str, str]]]:
    folder = root / "researcherbench/user_data"
    out: dict[str, list[tuple[str, str]]] = {}
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        rows = json.loads(f.read_text(encoding="utf-8"))
        texts = [(str(r.get("id")), r["response"]) for r in rows
                 if isinstance(r, dict) and isinstance(r.get("response"), str)]
        if texts:
            out[f"ResearcherBench {f.stem} responses"] = texts
    return out


def measure(label: str, items: list[Any], parse: Callable[[Any], Any], warm: Any) -> dict[str, Any]:
    clock = PhaseClock()
    with instrumented(clock):
        parse(warm)  # imports, Punkt parameters
        clock.totals = dict.fromkeys(PHASES, 0.0)
        errors = 0
        t0 = time.process_time()
        for item in items:
            try:
                parse(item)
            except Exception:  # noqa: BLE001 - a report that does not parse still cost its time; counted
                errors += 1
        total = time.process_time() - t0
    n = len(items)
    row = {"set": label, "reports": n, "errors": errors}
    row.update({p: 1e6 * clock.totals[p] / n for p in PHASES})
    row["other"] = 1e6 * (total - sum(clock.totals.values())) / n
    row["total"] = 1e6 * total / n
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100, help="synthetic reports per shape")
    ap.add_argument("--words", type=int, default=2000)
    ap.add_argument("--no-shared", action="store_true", help="only the synthetic reports")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from reportbench.reports.base import load_report

    rows = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="rb-parse-") as tmp:
        sets = synthetic_reports(Path(tmp), args.n + 1, args.words)
        shared = None if args.no_shared else shared_root()
        if shared is not None:
            sets.update(real_reports(shared))
        for label, paths in sets.items():
            warm, items = (paths[0], paths[1:]) if len(paths) > 1 else (paths[0], paths)
            rows.append(measure(label, items, lambda p: load_report(p, task_id=p.stem, system="bench"), warm))
        if shared is not None:
            from reportbench.protocols.researcherbench.responses import parse_response

            for label, texts in researcherbench_texts(shared).items():
                rows.append(measure(label, texts[1:], lambda t: parse_response(t[1], t[0], "bench", None), texts[0]))
    load_after = os.getloadavg()
    if args.json:
        print(json.dumps({"load_before": load, "load_after": load_after, "rows": rows}, indent=1))
        return 0
    print(f"load average {load[0]:.2f} before, {load_after[0]:.2f} after; {os.cpu_count()} CPUs; µs CPU per report")
    head = ["set", "reports", *PHASES, "other", "total"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["set"], str(r["reports"]) + (f" ({r['errors']} errors)" if r["errors"] else "")]
        cells += [f"{r[k]:,.0f}" for k in (*PHASES, "other", "total")]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
