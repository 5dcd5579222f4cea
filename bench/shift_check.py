"""The shift check (reportbench.reports.check.shift_check) at scale, and on the benchmark authors' real reports.

    python bench/shift_check.py [--n 1000,5000]            # synthetic release: µs per report, peak RSS
    python bench/shift_check.py --real [SHARED_DATA] [--mirror AUTHORS_MIRROR]

Scale: for each N, a fresh process generates N self-authored tasks (a ~30-word question each, over a Zipf
vocabulary of 40,000 pseudo-words with 8 topic words per task) and N reports (~2,000 words: its own task's topic
words and Zipf background), then times `shift_check` alone (CPU) and prints µs per report, the
peak RSS of the process and its RSS before the check (the generated texts), and the CPU ratio between the
smallest and the largest N. Generation is not timed.

Real: every system the authors released in SHARED_DATA (default $REPORTBENCH_SHARED/data or ../shared/data):
ResearcherBench's user_data answer files, LiveResearchBench's reference reports, DeepScholar's baselines and,
with the mirror ($REPORTBENCH_AUTHORS_MIRROR or SHARED_DATA/../authors/mirror), DeepResearch Bench's claude-3-7
submission (its zh and en tasks). Each is loaded and checked as `reportbench check` does (false positives:
errors and flagged reports on the real, correctly named folders); then, on every system with >= 20 reports,
every block of 5 consecutive reports is shifted by each offset in OFFSETS (the block's reports hold the answers
of the tasks `offset` away) and the detection rate of the error is printed, split into the tuning part and the
held-out part (HELD_OUT) the thresholds were not chosen on.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from reportbench.types import Report, Task

OFFSETS = (-3, -1, 1, 2, 7)
BLOCK = 5
HELD_OUT = ("researcherbench/OpenAI", "deepresearch_bench/claude-3-7-sonnet-latest (zh)",
            "deepresearch_bench/claude-3-7-sonnet-latest (en)")


# ------------------------------------------------------------------------------------------- synthetic scale


def _words(rng: random.Random, n: int) -> list[str]:
    syll = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "qui", "ban", "er", "ost", "mar", "zi", "pel"]
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(syll) for _ in range(rng.randint(2, 4))))
    return sorted(out)


def synthetic(n: int, seed: int = 7) -> tuple[list[Task], list[Report]]:
    """N tasks and N reports (report i answers task i), self-authored, deterministic."""
    rng = random.Random(seed)
    vocab = _words(rng, 40_000)
    weights = [1.0 / (r + 1) for r in range(len(vocab))]  # Zipf background
    topics = [rng.sample(vocab[2000:], 8) for _ in range(n)]
    tasks = [
        Task(task_id=f"t{i}", title=" ".join(topics[i][:4]),
             task_prompt=" ".join(topics[i] + rng.choices(vocab, weights, k=22)))
        for i in range(n)
    ]
    reports = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=1700) + rng.choices(topics[i], k=250)
        rng.shuffle(words)
        body = ". ".join(" ".join(words[k : k + 20]) for k in range(0, len(words), 20))
        reports.append(Report(report_id=f"r{i}", task_id=f"t{i}", system="synthetic", format="markdown", body=body))
    return tasks, reports


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def scale_one(n: int) -> dict[str, Any]:
    """One N in this process: CPU of shift_check alone, peak RSS."""
    from reportbench.reports.check import shift_check

    tasks, reports = synthetic(n)
    before = _rss_mb()
    t0 = time.process_time()
    result = shift_check(tasks, reports)
    cpu = time.process_time() - t0
    return {"n": n, "cpu_s": round(cpu, 2), "us_per_report": round(cpu / n * 1e6), "rss_before_mb": round(before),
            "peak_rss_mb": round(_rss_mb()), "checked": result.checked, "error": result.error,
            "flagged": len(result.mismatched)}


def run_scale(ns: list[int]) -> int:
    rows = []
    for n in ns:  # a fresh process per N: peak RSS is that N's alone
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    load = os.getloadavg()
    print(f"shift_check on a synthetic release (load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} cores)")
    print(f"{'N':>6} {'CPU s':>7} {'µs/report':>10} {'RSS before MB':>14} {'peak RSS MB':>12} {'flagged':>8} error")
    for r in rows:
        print(f"{r['n']:>6} {r['cpu_s']:>7} {r['us_per_report']:>10} {r['rss_before_mb']:>14} "
              f"{r['peak_rss_mb']:>12} {r['flagged']:>8} {r['error'] or '-'}")
    if len(rows) > 1 and rows[0]["cpu_s"] > 0:
        print(f"CPU N={rows[0]['n']} -> N={rows[-1]['n']}: {rows[-1]['cpu_s'] / rows[0]['cpu_s']:.2f}x "
              f"(tasks x{rows[-1]['n'] / rows[0]['n']:.0f})")
    return 0


# ------------------------------------------------------------------------------------------------ real data


@dataclass
class RealSystem:
    name: str
    benchmark: str
    tasks: list[Any]
    reports: list[Any]
    result: Any  # the CheckResult `reportbench check` prints


def _release(benchmark: str, conf_name: str, data: Path, keys: tuple[str, ...]) -> Any:
    """A benchmark's release config (conf/<b>/release/<name>.yaml) read from `data` instead of ../shared."""
    import yaml

    from reportbench.benchmarks import get_benchmark

    root = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((root / "conf" / benchmark / "release" / f"{conf_name}.yaml").read_text()) or {}
    for k in keys:
        cfg[k] = str(data)
    return get_benchmark(benchmark).build_release(cfg)


def drb_release(checkout: Path) -> Any:
    """DeepResearch Bench's tasks from the authors' query.jsonl, with the fields the plug-in's release gives a
    task (title = the prompt's first 120 characters, task_prompt = the prompt); its reference reports (not in
    the mirror) are not needed to check a mapping."""
    tasks = []
    for line in (checkout / "data" / "prompt_data" / "query.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            tasks.append(Task(task_id=str(q["id"]), title=q["prompt"][:120], categories=[q.get("topic") or ""],
                              task_prompt=q["prompt"]))
    langs = {str(json.loads(x)["id"]): json.loads(x)["language"]
             for x in (checkout / "data" / "prompt_data" / "query.jsonl").read_text(encoding="utf-8").splitlines()
             if x.strip()}
    return SimpleNamespace(tasks=tasks, meta=SimpleNamespace(subset=None), languages=langs)


def drb_folder(checkout: Path, model: str, into: Path, task_ids: set[str] | None = None) -> Path:
    """The authors' submission (`raw_data/<model>.jsonl`) as a folder of `<id>.md` files."""
    into.mkdir(parents=True, exist_ok=True)
    submission = checkout / "data" / "test_data" / "raw_data" / f"{model}.jsonl"
    for line in submission.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if task_ids is None or str(row["id"]) in task_ids:
                (into / f"{row['id']}.md").write_text(str(row.get("article") or ""), encoding="utf-8")
    return into


def drb_checkout(mirror: Path | None) -> Path | None:
    if mirror is None:
        return None
    pattern = "Ayanami0730/deep_research_bench/*/data/test_data/raw_data/claude-3-7-sonnet-latest.jsonl"
    hits = sorted(mirror.glob(pattern))
    return hits[0].parents[3] if hits else None


def real_systems(data: Path, mirror: Path | None, tmp: Path) -> Iterator[RealSystem]:
    """Every released system, loaded and checked as `reportbench check` does."""
    from reportbench.systems.check import content_checks, load_for_check

    def checked(name: str, benchmark: str, path: Path, release: Any, opts: dict[str, Any]) -> RealSystem:
        result, reports, files = load_for_check(path, benchmark, release, opts)
        content_checks(result, list(release.tasks), reports, files)
        return RealSystem(name, benchmark, list(release.tasks), reports, result)

    rb = data / "researcherbench"
    if rb.is_dir():
        release = _release("researcherbench", "researcherbench", rb, ("source",))
        for f in sorted((rb / "user_data").glob("*.json")):
            yield checked(f"researcherbench/{f.stem}", "researcherbench", f, release, {"allow_missing": True})
    lrb = data / "liveresearchbench"
    if lrb.is_dir():
        csv = lrb / "coverage_checklist_public80.csv"
        release = _release("liveresearchbench", "public80", csv, ("path", "source"))
        yield checked("liveresearchbench/reference_reports", "liveresearchbench", lrb / "reference_reports",
                      release, {"allow_missing": True})
    ds = data / "deepscholar-bench"
    if ds.is_dir():
        release = _release("deepscholar", "deepscholar", ds, ("source",))
        for d in sorted(p for p in (ds / "tests" / "baselines_results").iterdir() if p.is_dir()):
            yield checked(f"deepscholar/{d.name}", "deepscholar", d, release, {"allow_missing": True})
    checkout = drb_checkout(mirror)
    if checkout is not None:
        full = drb_release(checkout)
        for lang in ("zh", "en"):
            ids = {t for t, lg in full.languages.items() if lg == lang}
            release = SimpleNamespace(tasks=[t for t in full.tasks if t.task_id in ids], meta=full.meta)
            folder = drb_folder(checkout, "claude-3-7-sonnet-latest", tmp / f"drb-{lang}", ids)
            yield checked(f"deepresearch_bench/claude-3-7-sonnet-latest ({lang})", "deepresearch_bench", folder,
                          release, {})


def shifted(reports: list[Any], tasks: list[Any], start: int, length: int, offset: int) -> list[Any] | None:
    """The reports with a block shifted: the reports of tasks start..start+length-1 (in task order, among the
    tasks with a report) hold the answers of the tasks `offset` places away; None when the block does not fit."""
    by_task = {r.task_id: r for r in reports}
    order = [t.task_id for t in tasks if t.task_id in by_task]
    if start + offset < 0 or start + length + offset > len(order) or start + length > len(order):
        return None
    out = dict(by_task)
    for k in range(start, start + length):
        out[order[k]] = by_task[order[k + offset]].model_copy(update={"task_id": order[k]})
    return [out[t] for t in order]


def detection(system: RealSystem, length: int = BLOCK, offsets: tuple[int, ...] = OFFSETS) -> tuple[int, int]:
    """(blocks refused, blocks tried) over every start and offset."""
    from reportbench.reports.check import shift_check

    hit = tried = 0
    for offset in offsets:
        for start in range(len(system.reports)):
            moved = shifted(system.reports, system.tasks, start, length, offset)
            if moved is None:
                continue
            tried += 1
            hit += shift_check(system.tasks, moved).error is not None
    return hit, tried


def run_real(data: Path, mirror: Path | None) -> int:
    if not data.is_dir():
        print(f"no shared data at {data}", file=sys.stderr)
        return 2
    print(f"real systems in {data}" + (f" (+ DeepResearch Bench from {mirror})" if mirror else ""))
    print(f"{'system':<52} {'part':<8} {'reports':>7} {'errors':>6} {'flagged':>7} {'5-blocks refused':>17}")
    totals: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in real_systems(data, mirror, Path(tmp)):
            part = "held-out" if s.name in HELD_OUT else "tune"
            shift_errors = [e for e in s.result.errors if "shifted mapping" in e or "match another task" in e]
            flagged = len(s.result.shift.get("mismatched") or [])
            det = "-"
            if len(s.reports) >= 20:
                hit, tried = detection(s)
                t = totals.setdefault(part, [0, 0])
                t[0] += hit
                t[1] += tried
                det = f"{hit}/{tried}"
            print(f"{s.name:<52} {part:<8} {len(s.reports):>7} {len(shift_errors):>6} {flagged:>7} {det:>17}")
            for m in s.result.shift.get("mismatched") or []:
                print(f"    flagged {m['task_id']} -> {m['best_task']} (z {m['best']} vs own {m['own']})")
    for part, (hit, tried) in totals.items():
        print(f"{part}: {hit}/{tried} shifted 5-blocks refused ({hit / max(tried, 1):.1%}), offsets {OFFSETS}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="1000,5000", help="comma-separated task counts (synthetic)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--real", nargs="?", const="", default=None, metavar="SHARED_DATA",
                    help="check the authors' released systems instead")
    ap.add_argument("--mirror", type=Path, default=os.environ.get("REPORTBENCH_AUTHORS_MIRROR"))
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(scale_one(args.one)))
        return 0
    if args.real is not None:
        data = Path(args.real) if args.real else Path(os.environ.get("REPORTBENCH_SHARED", "../shared")) / "data"
        mirror = args.mirror or (data.parent / "authors" / "mirror")
        return run_real(data, Path(mirror) if Path(mirror).is_dir() else None)
    return run_scale([int(x) for x in args.n.split(",")])


if __name__ == "__main__":
    sys.exit(main())
