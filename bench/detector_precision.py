"""Run the refusal / plan / not-found detector (reportbench.reports.refusal) on every report the benchmark authors
released, and print each flag with the span that triggered it, so a person can judge which are true non-answers.

    python bench/detector_precision.py [SHARED_DATA] [--mirror AUTHORS_MIRROR]
    python bench/detector_precision.py --labelled bench/data/detector_labelled.jsonl [--split tune|heldout]

SHARED_DATA defaults to $REPORTBENCH_SHARED/data or ../shared/data; the mirror (DeepResearch Bench's released
claude-3-7 articles) to $REPORTBENCH_AUTHORS_MIRROR. Prints one line per flagged report and a count per source;
the precision figure in docs/mapping.md is these spans read by hand. With --labelled, the self-authored labelled
set instead: precision (flagged reports that are non-answers) and recall per split, the held-out split apart.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from reportbench.reports import load_report
from reportbench.reports.refusal import NON_ANSWER_FLAGS, detect_report


def _texts(data: Path, mirror: Path | None) -> Iterator[tuple[str, str, str]]:
    """(source, report name, markdown text) of every released report."""
    lrb = data / "liveresearchbench" / "reference_reports"
    for p in sorted(lrb.glob("*.md")):
        yield "liveresearchbench/reference_reports", p.name, p.read_text(encoding="utf-8")
    for p in sorted((data / "researcherbench" / "user_data").glob("*.json")):
        for row in json.loads(p.read_text(encoding="utf-8")):
            yield f"researcherbench/{p.stem}", str(row.get("id")), str(row.get("response") or "")
    ds = data / "deepscholar-bench" / "tests" / "baselines_results"
    for p in sorted(ds.rglob("*.md")):
        if "state" not in p.relative_to(ds).parts:
            yield f"deepscholar/{p.relative_to(ds).parts[0]}", str(p.relative_to(ds)), p.read_text(encoding="utf-8")
    if mirror is not None:
        for p in sorted(mirror.glob("Ayanami0730/deep_research_bench/*/data/test_data/raw_data/*.jsonl")):
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    yield f"deepresearch_bench/{p.stem}", str(row.get("id")), str(row.get("article") or "")


LABELLED = Path(__file__).parent / "data" / "detector_labelled.jsonl"
NON_ANSWER_LABELS = {"refusal", "plan_not_answer", "not_found"}


def labelled_items(path: Path) -> list[dict[str, str]]:
    """The labelled set's items (the first line, `_about`, describes the file)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if "id" in r]


def flags_for(text: str, tmp: Path, name: str) -> list[str]:
    """The non-answer flags of one markdown text, parsed as any report is."""
    path = tmp / "report.md"
    path.write_text(text, encoding="utf-8")
    report = load_report(path, task_id=name, system="labelled")
    return [f.flag for f in detect_report(report) if f.flag in NON_ANSWER_FLAGS]


def score_labelled(items: list[dict[str, str]]) -> dict[str, dict[str, float | int]]:
    """Per split: n, positives, flagged, true positives (flagged and labelled a non-answer), exact (the flag names
    the labelled kind), precision and recall; NaN where the denominator is 0."""
    out: dict[str, dict[str, float | int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for it in items:
            flags = flags_for(it["text"], Path(tmp), it["id"])
            c = out.setdefault(it["split"], {"n": 0, "positives": 0, "flagged": 0, "true_positives": 0, "exact": 0})
            positive = it["label"] in NON_ANSWER_LABELS
            c["n"] += 1
            c["positives"] += positive
            if flags:
                c["flagged"] += 1
                c["true_positives"] += positive
                c["exact"] += it["label"] in flags
            it["flags"] = flags  # type: ignore[assignment]
    for c in out.values():
        c["precision"] = c["true_positives"] / c["flagged"] if c["flagged"] else float("nan")
        c["recall"] = c["true_positives"] / c["positives"] if c["positives"] else float("nan")
    return out


def main_labelled(path: Path, split: str | None) -> int:
    items = [it for it in labelled_items(path) if split is None or it["split"] == split]
    result = score_labelled(items)
    for it in items:
        mark = "ok " if bool(it["flags"]) == (it["label"] in NON_ANSWER_LABELS) else "ERR"
        print(f"{mark} {it['split']:<8} {it['id']} label={it['label']:<16} flags={','.join(it['flags']) or '-'}")
    for name, c in sorted(result.items()):
        print(f"{name}: {c['n']} reports, {c['positives']} non-answers, {c['flagged']} flagged, "
              f"{c['true_positives']} true ({c['exact']} with the labelled kind): precision {c['precision']:.2f}, "
              f"recall {c['recall']:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(os.environ.get("REPORTBENCH_SHARED", "../shared")) / "data"
    ap.add_argument("data", nargs="?", type=Path, default=default)
    ap.add_argument("--mirror", type=Path, default=os.environ.get("REPORTBENCH_AUTHORS_MIRROR"))
    ap.add_argument("--labelled", type=Path, nargs="?", const=LABELLED, default=None,
                    help=f"score the labelled set instead (default file: {LABELLED})")
    ap.add_argument("--split", choices=("tune", "heldout"), default=None, help="one split of the labelled set")
    args = ap.parse_args(argv)
    if args.labelled is not None:
        return main_labelled(args.labelled, args.split)
    if not args.data.is_dir():
        print(f"no shared data at {args.data}", file=sys.stderr)
        return 2
    counts: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for source, name, text in _texts(args.data, args.mirror):
            c = counts.setdefault(source, [0, 0])
            if not text.strip():
                continue
            path = Path(tmp) / "report.md"
            path.write_text(text, encoding="utf-8")
            report = load_report(path, task_id=name, system=source)
            c[0] += 1
            hits = [f for f in detect_report(report) if f.flag in NON_ANSWER_FLAGS]
            if hits:
                c[1] += 1
                for h in hits:
                    print(f"FLAG {source} {name[:60]!r} {h.flag}: {h.evidence!r}")
    total = [sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())]
    for source, (n, flagged) in sorted(counts.items()):
        print(f"{source}: {n} reports, {flagged} flagged")
    print(f"all: {total[0]} reports, {total[1]} flagged (refusal / plan_not_answer / not_found)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
