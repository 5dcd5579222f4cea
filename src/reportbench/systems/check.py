"""`reportbench check <folder-or-file> -b <benchmark>`, and the same check at the start of every system stage.

What it says (docs/mapping.md): the mapping table (file -> task, the rule that matched, or why not); per
report the adapter, sources found, whether a reference list was found, unresolved citation markers; refusal /
plan / not-found / no-reference reports; judge-directed text; and whether the reports look shifted onto
neighbouring tasks (reports.check). Errors (names that do not map, a shifted run) exit 1 and stop a system
stage; warnings exit 0. `--json` prints the whole result for machines.

The system stage writes the summary to `check.json` next to outcomes.jsonl, and each ok outcome carries its
report's flags.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportbench.benchmark_arg import add_benchmark_argument
from reportbench.reports.base import confined_to
from reportbench.reports.check import ReportFacts, mismatch_warnings, report_facts, shift_check
from reportbench.reports.formats.markdown import split_markdown_report
from reportbench.reports.task_names import terminal_safe, unprintable
from reportbench.systems.base import SystemError_
from reportbench.systems.spool import SpooledReport, spooled_shift_check

CHECK_FILE = "check.json"
SHIFT_POLICIES = ("error", "warn", "off")


@dataclass
class CheckResult:
    """Everything `check` found about one system's output."""

    benchmark: str
    path: str
    naming: str
    layout: str = ""
    mapping: list[dict[str, Any]] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, str]] = field(default_factory=list)  # files that did not load: {task_id, file, reason}
    shift: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "path": self.path,
            "naming": self.naming,
            "layout": self.layout,
            "errors": self.errors,
            "warnings": self.warnings,
            "mapping": self.mapping,
            "reports": self.reports,
            "problems": self.problems,
            "shift": self.shift,
        }

    def summary(self) -> dict[str, Any]:
        """What a system stage stores in check.json: counts, errors, warnings, the flagged tasks and the evidence
        of each flag (`reports.refusal`: a short excerpt of the text that triggered it)."""
        flagged: dict[str, list[str]] = {}
        evidence: dict[str, dict[str, str]] = {}  # task -> flag -> the text that triggered it (the viewer shows it)
        for r in self.reports:
            for f in r.get("flags") or []:
                flagged.setdefault(f, []).append(r["task_id"])
            for ev in r.get("evidence") or []:
                flag, _, text = str(ev).partition(": ")
                evidence.setdefault(str(r["task_id"]), {})[flag] = text
        return {
            "benchmark": self.benchmark,
            "naming": self.naming,
            "layout": self.layout,
            "files": len(self.mapping),
            "mapped": sum(1 for m in self.mapping if m.get("status") == "mapped"),
            "reports": len(self.reports),
            "errors": self.errors,
            "warnings": self.warnings[:200],
            "flagged": flagged,
            "evidence": evidence,
            "shift": self.shift,
        }


def content_checks(result: CheckResult, tasks: list[Any], reports: list[Any], files: dict[str, str]) -> None:
    """Per-report facts and the shifted-mapping verdict, appended to `result`. `reports`: parsed reports, or a
    system stage's spooled ones (systems.spool: their facts and query rows taken as each was read)."""
    facts: dict[str, ReportFacts]
    if reports and isinstance(reports[0], SpooledReport):
        facts = {r.task_id: r.facts_for(files.get(r.task_id)) for r in reports}
        shift = spooled_shift_check(tasks, reports, facts)
    else:
        facts = {r.task_id: report_facts(r, files.get(r.task_id)) for r in reports}
        shift = shift_check(tasks, reports, facts)
    result.shift = shift.as_dict()
    if shift.error:
        result.errors.append(shift.error)
    else:
        result.warnings.extend(mismatch_warnings(shift))
    for f in facts.values():
        result.reports.append(f.as_dict())
        for ev in f.evidence:
            result.warnings.append(f"{f.task_id}: {ev}")
        if "judge_directed_text" in f.flags:
            result.warnings.append(f"{f.task_id}: judge-directed text (removed before judging)")


def stage_check(
    name: str, spec: dict[str, Any], tasks: list[Any], reports: list[Any], outcomes: list[Any], out_dir: Path
) -> dict[str, Any]:
    """The check of a system stage, on what the kind read or produced: writes check.json; a shifted run stops
    the stage (`shift_check: error`, the default; `warn` keeps it as a warning, `off` skips it)."""
    from reportbench.systems.folder import naming_for, read_mapping  # lazy: +35 ms to import (python -X importtime)

    policy = str(spec.get("shift_check") or "error")
    if policy not in SHIFT_POLICIES:
        raise SystemError_(f"systems.{name}.shift_check: {policy!r} is not one of {SHIFT_POLICIES}")
    benchmark = str(spec.get("benchmark") or "")
    result = CheckResult(benchmark, str(spec.get("path") or ""), naming_for(benchmark or None).describe())
    result.layout = str(spec.get("layout") or ("auto" if spec.get("kind") == "folder" else spec.get("kind") or ""))
    result.mapping = read_mapping(out_dir)
    files = {str(o.task_id): str(o.path) for o in outcomes if o.status == "ok" and o.path}
    if policy != "off":
        content_checks(result, tasks, reports, files)
    summary = result.summary()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / CHECK_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if result.errors and policy == "error":
        raise SystemError_(
            f"systems.{name}: {'; '.join(result.errors)}. The reports seem to sit on the wrong tasks; fix the "
            f"file names, or set shift_check: warn if this is intended (`reportbench check`, docs/mapping.md)"
        )
    return summary


# ------------------------------------------------------------------------------------------------ the CLI


def check_path(
    path: Path, benchmark: str, release: Any, options: dict[str, Any] | None = None
) -> CheckResult:
    """Map, load and check a folder (or answer file) against a release, as the system stage would."""
    result, reports, files = load_for_check(path, benchmark, release, options)
    content_checks(result, list(release.tasks), reports, files)
    return result


def load_for_check(
    path: Path, benchmark: str, release: Any, options: dict[str, Any] | None = None
) -> tuple[CheckResult, list[Any], dict[str, str]]:
    """Map and load a folder (or answer file) as `check` does: the result so far (mapping, problems, mapping
    errors), the parsed reports and each report's file. bench/shift_check.py reuses it on the authors' data."""
    from reportbench.systems.common import isolated_load  # lazy: +32 ms to import (python -X importtime)

    # lazy: +35 ms to import (python -X importtime)
    from reportbench.systems.folder import (
        allowed_missing_share,
        discover_for,
        map_answer_file,
        mapping_error,
        naming_for,
    )

    opts = dict(options or {})
    naming = naming_for(benchmark)
    tasks = list(release.tasks)
    task_ids = [t.task_id for t in tasks]
    # a quick subset (limit): reports of the full release's other tasks are `outside_release`, not problems
    full_ids = list((getattr(release.meta, "subset", None) or {}).get("task_ids_of_full") or []) or None
    result = CheckResult(benchmark, str(path), naming.describe())
    share = allowed_missing_share("check", opts.get("allow_missing"))
    reports: list[Any] = []
    files: dict[str, str] = {}
    if path.is_file():
        chosen, rows = map_answer_file(path, task_ids, naming, full_ids)
        result.layout = "answer_file"
        for tid, text in chosen.items():
            if text.strip():
                reports.append(split_markdown_report(text).to_report("markdown", tid, "check", path))
                files[tid] = f"{path}#{tid}"
            else:
                result.problems.append({"task_id": tid, "file": str(path), "reason": "empty answer"})
    else:
        found = discover_for("check", {**opts, "path": str(path)}, task_ids, naming, full_ids)
        rows = found.rows
        result.layout = found.layout
        result.warnings.extend(w for w in found.warnings if not any(w.endswith(r.reason) for r in rows if r.reason))
        with confined_to(path):
            for tid, p in found:
                rep, outcome = isolated_load(p, fmt=str(opts.get("format") or "auto"), task_id=tid, system="check")
                if rep is None:
                    result.problems.append({"task_id": tid, "file": str(p), "reason": str(outcome.reason)})
                    result.warnings.append(f"{tid}: {outcome.status}: {outcome.reason}")
                else:
                    reports.append(rep)
                    files[tid] = str(p)
    result.mapping = [r.as_dict() for r in rows]
    mapped = {r.task_id for r in rows if r.status == "mapped"}
    missing = [t for t in task_ids if t not in mapped]
    err = mapping_error("check", str(path), rows, missing, len(task_ids), share, naming)
    if err:
        result.errors.append(err.removeprefix("systems.check: "))
    elif missing:
        result.warnings.append(f"{len(missing)} of {len(task_ids)} tasks have no report (allow_missing={share:g})")
    for r in rows:
        if r.status in ("unmapped", "duplicate", "refused"):
            result.warnings.append(f"{r.file}: {r.status}: {r.reason}")
    return result, reports, files


def load_release_for_check(benchmark: str, given: str | None, root: Path = Path(".")) -> Any:
    """A release directory, a release config name (`conf/<b>/release/<name>.yaml`, built in memory), or the
    release `params.yaml` plans for the benchmark."""
    import yaml

    from reportbench.benchmarks import get_benchmark  # lazy: +130 ms to import (python -X importtime)

    # lazy: +181 ms to import (python -X importtime)
    from reportbench.release.format import read_release as _read_release

    spec = get_benchmark(benchmark)
    if given and (Path(given) / "release.json").is_file():
        return _read_release(Path(given))
    if given:
        conf = root / "conf" / benchmark / "release" / f"{given}.yaml"
        if not conf.is_file():
            raise SystemError_(f"--release {given!r}: neither a release directory nor {conf}")
        # lazy: +1 ms to import (python -X importtime)
        from reportbench.release.subset import release_limit, subset_release

        cfg = yaml.safe_load(conf.read_text(encoding="utf-8")) or {}
        return subset_release(spec.build_release(cfg), release_limit(cfg, f"{conf}"))
    params_path = root / "params.yaml"
    name = None
    if params_path.is_file():
        params = yaml.safe_load(params_path.read_text(encoding="utf-8")) or {}
        name = (((params.get("plan") or {}).get("benchmarks") or {}).get(benchmark) or {}).get("release")
    rdir = root / "data" / "releases" / benchmark / str(name)
    if name and (rdir / "release.json").is_file():
        return _read_release(rdir)
    raise SystemError_(
        f"no built release of {benchmark} (looked for {rdir}); pass --release <release dir or "
        f"conf/{benchmark}/release name>, or build it with `dvc repro release@{benchmark}`"
    )


def render_text(result: CheckResult) -> str:
    """The human-readable report of `reportbench check`."""
    lines = [f"check {result.path} as {result.benchmark} (layout {result.layout}; {result.naming})", "", "mapping:"]
    for m in result.mapping:
        target = m.get("task_id") or "—"
        how = m.get("rule") or m.get("reason") or ""
        lines.append(f"  {m['status']:<9} {Path(str(m['file'])).name} -> {target}  [{how}]")
    lines += ["", "reports:"]
    for r in result.reports:
        best = ""
        if r.get("best_task") and r["best_task"] != r["task_id"]:  # the scores say what they are, and what they mean
            flagged = "mapping_suspect" in (r.get("flags") or [])
            best = (
                f"; closer to {r['best_task']} ({result.shift.get('method') or 'bm25'}: {r['best_score']} vs "
                f"{r['own_score']} for its own task{'' if flagged else '; under the margin, not flagged'})"
            )
        lines.append(
            f"  {r['task_id']}: {r['adapter']}, {r['sources']} sources, reference list "
            f"{'yes' if r['reference_list'] else 'no'}, {r['unresolved_markers']} unresolved markers"
            + (f", flags {','.join(r['flags'])}" if r["flags"] else "")
            + best
        )
    for p in result.problems:
        lines.append(f"  {p['task_id']}: not loaded: {p['reason']}")
    lines.append("")
    lines += [f"warning: {w}" for w in result.warnings]
    lines += [f"error: {e}" for e in result.errors]
    verdict = "FAIL" if result.errors else "ok"
    lines.append(f"{verdict}: {len(result.errors)} error(s), {len(result.warnings)} warning(s)")
    return "\n".join(terminal_safe(line, keep="") for line in lines)  # file names are the submitter's: escaped


def _allow(value: str | None) -> Any:
    if value is None:
        return None
    if value.lower() in ("true", "yes"):
        return True
    if value.lower() in ("false", "no"):
        return False
    return float(value)


def cmd_check(args: argparse.Namespace) -> int:
    from reportbench.benchmarks import get_benchmark  # lazy: +130 ms to import (python -X importtime)

    get_benchmark(args.benchmark)  # an unknown benchmark is one error line
    path = Path(args.path)
    if not path.exists():
        raise SystemError_(f"{path}: no such file or folder")
    release = load_release_for_check(args.benchmark, args.release)
    opts = {
        "format": args.format,
        "layout": args.layout,
        "prefix": args.prefix,
        "allow_missing": _allow(args.allow_missing),
        "ignore": args.ignore or [],
    }
    if args.layout == "per_model":  # an LRB-style parent: one check per model subfolder
        from reportbench.systems.folder import model_dirs  # lazy: +35 ms to import (python -X importtime)

        subs = model_dirs(path)
        if not subs:
            raise SystemError_(f"{path}: no model subfolders (--layout per_model)")
        results = [check_path(path / s, args.benchmark, release, {**opts, "layout": "auto"}) for s in subs]
    else:
        results = [check_path(path, args.benchmark, release, opts)]
    if args.json:
        out: Any = [r.as_dict() for r in results] if args.layout == "per_model" else results[0].as_dict()
        text = json.dumps(out, indent=2, ensure_ascii=False)
        # JSON escapes C0 controls itself; bidi overrides, tag characters and C1 controls are escaped here too
        sys.stdout.write("".join(json.dumps(c)[1:-1] if c != "\n" and unprintable(c) else c for c in text) + "\n")
    else:
        sys.stdout.write("\n\n".join(render_text(r) for r in results) + "\n")
    return 1 if any(r.errors for r in results) else 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="check a system's folder or answer file before scoring: mapping, parsing, shifted reports, refusals",
        description="Map a folder (or answer file) onto a benchmark's tasks by its declared naming rules, parse "
        "every report, and flag what would make scores silently wrong: files that map to no task, reports that "
        "match a neighbouring task's question far better (a shifted run), refusals / plans / not-found reports, "
        "judge-directed text. Exit 1 on errors, 0 with warnings (docs/mapping.md).",
    )
    p.add_argument("path", help="a system's folder, or one answer file (JSON)")
    add_benchmark_argument(p, required=True, help="the benchmark whose tasks the folder answers")
    p.add_argument("--release", help="a release directory or a conf/<b>/release name (default: params.yaml's)")
    p.add_argument("--format", default="auto", help="report format (reportbench ls formats)")
    p.add_argument("--layout", default="auto", help="auto | flat | task_folders | per_model (one check per subfolder)")
    p.add_argument("--prefix", help="DEER task-folder layout: the system's file prefix (<prefix>_<n>.md)")
    p.add_argument("--allow-missing", help="true, false, or the share of tasks that may lack a report")
    p.add_argument("--ignore", action="append", help="file-name glob to skip (repeatable)")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.set_defaults(func=cmd_check)
