"""Build the static scorecard site from the pipeline's files (the `site` DVC stage, `stages/build_site.py`).

Layout (every page self-contained, relative links, opens from file:// with the network off):

    site/index.html                                   every benchmark × release leaderboard, with its leader
    site/<b>/<R>/index.html                           the benchmark page (leaderboard_page.py)
    site/<b>/<R>/samples/<S>/index.html               per-task values of one system (cells link here)
    site/<b>/<R>/samples/<S>/<task>.html              the per-sample viewer (samples.py)

Benchmarks come from `plan.benchmarks` in params.yaml, never from globbing `metrics/`, so stale folders of
a removed release are never shown. Provenance shown per page: release manifest, judges and ensemble members,
models that answered (usage files), prompt pack, prompt ids and hashes (judgment records), a hash of the code
that computed the numbers (`code_hash`) and the reportbench version.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.benchmarks import benchmark_files
from reportbench.digest import tree_digest
from reportbench.site import page_reuse
from reportbench.site.html import esc, num, page, pointer, slug, table, th
from reportbench.site.leaderboard_page import BenchmarkData, render_benchmark_page
from reportbench.site.samples import (
    attach_messages,
    load_system,
    render_sample_page,
    render_system_page,
    task_file,
)

log = logging.getLogger("reportbench")

DEFAULT_MAX_SAMPLES = 500  # per (benchmark, system): sample pages beyond it are left to `reportbench view`


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        log.warning("%s: not valid JSON (%s); skipped", path, exc)
        return None


# The code that computes what a page shows (every path is a dep of the `site` stage, so a change reruns it and
# the page never shows a stale hash; a plug-in's package reaches it through score@<b>'s `code.json`). `{code}`
# is the benchmark's package.
CODE_PATHS = (
    "stages/build_site.py",
    "src/reportbench/site",
    "src/reportbench/metrics",
    "src/reportbench/benchmarks.py",
    "src/reportbench/protocols/__init__.py",
    "{code}",  # the benchmark's own package (built-in or a plug-in's; benchmarks.benchmark_files)
    "src/reportbench/reports",
    "src/reportbench/release",
)


INDEX_CODE_PATHS = ("stages/build_site.py", "src/reportbench/site")  # the code of the index page


def code_hash(root: Path | str = ".", benchmark: str | None = None, code_paths: tuple[str, ...] = CODE_PATHS) -> str:
    """`tree_digest` of `CODE_PATHS` (Why: provenance that changes only when the code that computed the numbers
    changes; a commit date moved with every config-only commit and made `dvc repro` rewrite byte-identical pages)."""
    paths = []
    for p in code_paths:
        if "{code}" in p:
            if benchmark:
                paths.append(benchmark_files(benchmark).code)
            continue
        paths.append(p)
    return tree_digest(paths, root)


def version_string(root: Path) -> str:
    """The package version. No commit id: the lock that records these pages is committed after they are built,
    so a commit id on the page could never match a fresh clone's rebuild."""
    from reportbench import __version__  # lazy: +0 ms to import (python -X importtime)

    return f"reportbench {__version__}"


def prompt_hashes(judgments_dir: Path) -> list[tuple[str, str]]:
    """Distinct (prompt_id, prompt_hash) over every judgment record of a benchmark × release."""
    seen: set[tuple[str, str]] = set()
    for path in sorted(judgments_dir.glob("*/*/*.parquet")):
        try:
            df = pl.read_parquet(path, columns=["prompt_id", "prompt_hash"], glob=False).unique()
        except Exception:  # noqa: BLE001 - the viewer reports unreadable tables; here they add nothing
            continue
        seen.update((str(a), str(b or "")) for a, b in df.iter_rows() if a is not None)
    return sorted(seen)


def provenance(
    params: Mapping[str, Any],
    root: Path,
    benchmark: str,
    release: str,
    usage: Mapping[str, Any],
    code: str,
    version: str,
) -> dict[str, str]:
    out: dict[str, str] = {}
    manifest = _read_json(root / "data" / "releases" / benchmark / release / "release.json") or {}
    rel = f"{release}"
    if manifest:
        rel += (
            f" (created {manifest.get('created_at')}, source {manifest.get('source')}, "
            f"licence {manifest.get('licence')})"
        )
        if manifest.get("synthetic"):
            rel += " — SYNTHETIC demo data"
    out["release"] = rel
    judge = params.get("judge") or {}
    members = ((params.get("benchmarks") or {}).get(benchmark) or {}).get("judges") or {}
    member_txt = []
    for m, over in members.items():
        over = over or {}
        desc = ", ".join(f"{k}={v}" for k, v in sorted(over.items()) if not isinstance(v, Mapping))
        member_txt.append(f"{m}" + (f" ({desc})" if desc else ""))
    out["judge"] = f"{judge.get('name')} (backend {judge.get('backend')}, model {judge.get('model')})"
    if member_txt:
        out["ensemble members"] = "; ".join(member_txt)
    models = sorted(
        {
            str(m)
            for u in usage.values()
            for s in (u.get("steps") or {}).values()
            for m in (s.get("model") if isinstance(s.get("model"), list) else [s.get("model")])
            if m
        }
    )
    if models:
        out["models that answered"] = ", ".join(models)
    out["prompt pack"] = str(judge.get("prompts") or "ours")
    hashes = prompt_hashes(root / "data" / "judgments" / benchmark / release)
    if hashes:
        out["prompts (id sha256)"] = "; ".join(f"{pid} {h[:12]}" for pid, h in hashes)
    out["code (sha256 of the scoring and page code)"] = code
    out["version"] = version
    return out


def load_benchmark(
    params: Mapping[str, Any], root: Path, benchmark: str, release: str, code: str, version: str
) -> BenchmarkData | None:
    mdir = root / "metrics" / benchmark / release
    lb = _read_json(mdir / "leaderboard.json")
    if not isinstance(lb, dict):
        log.warning("%s: no leaderboard.json; %s/%s is left out of the site", mdir, benchmark, release)
        return None
    usage = {
        f"usage/{p.name}": u for p in sorted((mdir / "usage").glob("*.json")) if isinstance(u := _read_json(p), dict)
    }
    return BenchmarkData(
        benchmark=benchmark,
        release=release,
        metrics_rel=f"metrics/{benchmark}/{release}",
        leaderboard=lb,
        systems=_read_json(mdir / "systems.json"),
        extra=_read_json(mdir / "extra.json"),
        judge_card=_read_json(mdir / "judge_card.json"),
        usage=usage,
        provenance=provenance(params, root, benchmark, release, usage, code, version),
    )


BENCHMARKS_DIR = "benchmarks"  # site/benchmarks/<b>/<R>/: one folder per benchmark (stage `site`)
SUMMARY_FILE = "summary.json"  # what the index needs from a benchmark folder (so the index reads no metrics)


def build_benchmark_site(
    params: Mapping[str, Any],
    benchmark: str,
    root: Path | str = ".",
    site_dir: Path | str = "site",
    *,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    version: str | None = None,
    reuse: bool = False,
) -> dict[str, int]:
    """Write `site/benchmarks/<b>/<R>/` (benchmark page, system pages, sample pages, summary.json). With `reuse`
    (the `site` stage), a sample page whose inputs did not change is copied from the page cache (page_reuse)."""
    # lazy: +75 ms to import (python -X importtime)
    from reportbench.pipeline import _unit_release as read_release_once

    root, site_dir = Path(root), Path(site_dir)
    entry = ((params.get("plan") or {}).get("benchmarks") or {}).get(benchmark)
    if entry is None:
        raise ValueError(
            f"benchmark {benchmark!r} is not in plan.benchmarks (enabled: "
            f"{sorted((params.get('plan') or {}).get('benchmarks') or {})})"
        )
    version = version or version_string(root)
    counts = {"benchmark_pages": 0, "system_pages": 0, "sample_pages": 0, "reused_pages": 0}
    release = str(entry.get("release"))
    bdir = site_dir / BENCHMARKS_DIR / benchmark / release  # the DVC out path: the raw names
    if bdir.exists():
        shutil.rmtree(bdir)
    bdir.mkdir(parents=True)
    data = load_benchmark(params, root, benchmark, release, code_hash(root, benchmark), version)
    if data is None:
        (bdir / SUMMARY_FILE).write_text(
            json.dumps({"benchmark": benchmark, "release": release, "missing": True}, indent=1) + "\n", encoding="utf-8"
        )
        return counts
    metrics = list(data.leaderboard.get("metrics") or [])
    info = data.leaderboard.get("metric_info") or {}
    top = "../../../index.html"  # from site/benchmarks/<b>/<R>/
    data.sample_href = lambda s, m: f"samples/{slug(s)}/index.html" + (f"#m-{m}" if m else "")
    data.crumbs = [("scorecard", top), (f"{benchmark} · {release}", None)]
    (bdir / "index.html").write_text(render_benchmark_page(data), encoding="utf-8")
    counts["benchmark_pages"] += 1
    try:
        # the one release object the messages' re-rendering reads too (pipeline.judge_context): read once per
        # process, not a second copy (~15 KB a task at LiveResearchBench's rubric sizes, issue 36)
        rel = read_release_once(root / "data" / "releases" / benchmark / release, benchmark)
    except Exception as exc:  # noqa: BLE001 - pages still render without task titles
        log.warning("%s/%s: release not readable for the viewer (%s)", benchmark, release, exc)
        rel = None
    systems = [str(s) for s in entry.get("systems") or []]
    members = [str(m) for m in entry.get("members") or []] or None
    base = page_reuse.benchmark_digest(params, root, benchmark, release) if reuse else ""
    for s in systems:
        # ids only: a report is parsed for its page; claims for the pages written
        sd = load_system(root, benchmark, release, s, members, ledger_tasks=max_samples, full_records=max_samples)
        tids = sd.task_ids
        shown = tids[:max_samples]
        sdir = bdir / "samples" / slug(s)
        sdir.mkdir(parents=True, exist_ok=True)
        crumbs = [("scorecard", "../../" + top), (f"{benchmark} · {release}", "../../index.html"), (s, None)]
        others = [o for o in systems if o != s]
        keys = _page_keys(sd, root, base, shown, {"info": info, "others": others, "crumbs": crumbs}) if reuse else {}
        store = page_reuse.PageStore(root, benchmark, release, slug(s))
        stored = {tid for tid, key in keys.items() if store.has(key)}
        todo = [tid for tid in shown if tid not in stored]
        attach_messages(sd, params, root, tasks=todo)  # what each judge was sent (re-rendered), for pages rendered
        rows = list(data.leaderboard.get("rows") or [])
        at = next((i for i, r in enumerate(rows) if str(r.get("system")) == s), None)
        (sdir / "index.html").write_text(
            render_system_page(
                sd, metrics, info, release=rel, crumbs=crumbs, rendered=set(shown),
                board_row=rows[at] if at is not None else None,
                board_src=data.src("leaderboard.json", "rows", at) if at is not None else "",
            ),  # fmt: skip
            encoding="utf-8",
        )
        counts["system_pages"] += 1
        for k, tid in enumerate(shown):
            path = sdir / task_file(tid)
            counts["sample_pages"] += 1
            if tid in stored and store.copy_to(keys[tid], path):
                counts["reused_pages"] += 1
                continue
            html_ = render_sample_page(
                sd, tid, release=rel, metric_info=info, other_systems=others, prev_next=_prev_next(shown, k),
                crumbs=[*crumbs[:2], (s, "index.html"), (tid, None)],
            )  # fmt: skip
            path.write_text(html_, encoding="utf-8")
            if tid in keys:
                store.put(keys[tid], path)
        if reuse:
            store.keep_only(set(keys.values()))
        del sd  # one system's records, scores and messages held at a time (the next load_system would overlap it)
    summary = {
        "benchmark": benchmark,
        "release": release,
        "href": f"{BENCHMARKS_DIR}/{benchmark}/{release}/index.html",
        "row": _index_row(data, f"{BENCHMARKS_DIR}/{benchmark}/{release}/index.html"),
        "counts": {k: v for k, v in counts.items() if k != "reused_pages"},  # the same whether pages were reused
        "offline_judge": ((data.leaderboard.get("meta") or {}).get("judge") or {}).get("backend") == "offline",
    }
    (bdir / SUMMARY_FILE).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return counts


def _prev_next(shown: list[str], k: int) -> tuple[str | None, str | None]:
    return (shown[k - 1] if k > 0 else None, shown[k + 1] if k + 1 < len(shown) else None)


def _page_keys(sd: Any, root: Path, base: str, shown: list[str], extra: Any) -> dict[str, str]:
    """task -> the key of its sample page (page_reuse): what the page reads, hashed."""
    system_key = page_reuse.system_digest(base, root, sd, extra)
    return {tid: page_reuse.page_key(system_key, sd, tid, _prev_next(shown, k)) for k, tid in enumerate(shown)}


def build_index(params: Mapping[str, Any], root: Path | str = ".", site_dir: Path | str = "site") -> Path:
    """Write `site/index.html`: one row per enabled benchmark × release, from each folder's summary.json."""
    root, site_dir = Path(root), Path(site_dir)
    plan = (params.get("plan") or {}).get("benchmarks") or {}
    rows, missing, offline = [], [], []
    for b, entry in plan.items():
        release = str(entry.get("release"))
        summary = _read_json(site_dir / BENCHMARKS_DIR / b / release / SUMMARY_FILE)
        if not isinstance(summary, dict) or summary.get("missing") or "row" not in summary:
            missing.append(f"{b} · {release}")
            continue
        rows.append(summary["row"])
        if summary.get("offline_judge"):
            offline.append(f"{b} · {release}")
    head = [
        th("benchmark", kind="text", cls="s"),
        th("release", kind="text", cls="s"),
        th("systems", kind="text", cls="s"),
        th("tasks"),
        th("leader", kind="text", cls="s"),
        th("overall of the leader (its scale)", title="each benchmark's own overall score and range"),
        th("judge", kind="text", cls="s"),
    ]
    version = version_string(root)
    site_code = code_hash(root, code_paths=INDEX_CODE_PATHS)
    miss = (
        (f'<div class="warn">No leaderboard yet for: {esc(", ".join(missing))} (run <code>dvc repro</code>).</div>')
        if missing
        else ""
    )
    if offline:
        miss += (
            f'<div class="warn">Graded by the <b>offline lexical judge</b>: {esc(", ".join(offline))}. Deterministic, '
            "no LLM: fine for plumbing and regression checks, <b>not</b> for publishing (docs/offline-judge.md).</div>"
        )
    body = (
        f'<h1>reportbench scorecard</h1><p class="note">Built by {esc(version)} (site code {esc(site_code)}). '
        "One leaderboard per benchmark × release; click a benchmark for its leaderboard, metric definitions, "
        "intervals, pairwise comparisons and the per-sample viewer. Overall scores are not comparable across "
        "benchmarks: each is on its own scale, named next to it. How to read a score: a number only where something "
        "was judged, fetched or measured, otherwise “— <i>reason</i>”, never 0; only systems on the same task set "
        "are ranked (<code>docs/reading-scores.md</code>).</p>" + miss + table(head, rows, id_="benchmarks")
    )
    site_dir.mkdir(parents=True, exist_ok=True)
    path = site_dir / "index.html"
    path.write_text(page("reportbench scorecard", body), encoding="utf-8")
    return path


def build_site(
    params: Mapping[str, Any],
    root: Path | str = ".",
    out: Path | str = "site",
    *,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    benchmarks: list[str] | None = None,
    reuse: bool = False,
) -> dict[str, int]:
    """The whole site in one call (the `site` stage with `reuse`, tests, `reportbench view --site`): every
    benchmark folder, then the index."""
    root, out = Path(root), Path(out)
    plan = (params.get("plan") or {}).get("benchmarks") or {}
    version = version_string(root)
    counts = {"benchmark_pages": 0, "system_pages": 0, "sample_pages": 0, "reused_pages": 0}
    for b in plan:
        if benchmarks is not None and b not in benchmarks:
            continue
        built = build_benchmark_site(params, b, root, out, max_samples=max_samples, version=version, reuse=reuse)
        for k, v in built.items():
            counts[k] += v
    build_index(params, root, out)
    return counts


def overall_scale(lb: Mapping[str, Any]) -> tuple[str, str | None, tuple[float, float] | None]:
    """(what the overall score is, the metric whose declared range it has, that range): ("geometric mean",
    "organization", (0, 1)), ("Avg", "avg", (0, 100)); no range when the parts' ranges differ or are undeclared."""
    rows = lb.get("rows") or []
    kind = rows[0].get("overall") if rows else None
    info = lb.get("metric_info") or {}
    if kind in (None, "geomean", "mean"):
        parts = [str(m) for m in (rows[0].get("overall_metrics") if rows else None) or lb.get("metrics") or []]
        ranges = {tuple((info.get(m) or {}).get("value_range") or ()) for m in parts}
        name = {"geomean": "geometric mean", "mean": "mean"}.get(str(kind), "overall")
        if parts and len(ranges) == 1 and all(ranges):
            lo, hi = next(iter(ranges))
            return name, parts[0], (float(lo), float(hi))
        return name, None, None
    m = info.get(str(kind)) or {}
    rng = m.get("value_range")
    return str(m.get("label") or kind), str(kind), (float(rng[0]), float(rng[1])) if rng else None


def _scale_html(d: BenchmarkData) -> str:
    """The overall's name and range, the range traced to `metric_info.<m>.value_range` (every number is)."""
    name, metric, rng = overall_scale(d.leaderboard)
    if metric is None or rng is None:
        return f'<span class="note">{esc(name)}, range not declared</span>'
    ends = [
        num(v, f"{d.metrics_rel}/leaderboard.json#{pointer('metric_info', metric, 'value_range', k)}", 0)
        for k, v in enumerate(rng)
    ]
    return f'<span class="note">{esc(name)}, {ends[0]}–{ends[1]}</span>'


def _no_leader_reason(d: BenchmarkData) -> str:
    """Why the index has no overall value for a benchmark × release (never a bare dash)."""
    overall = ((d.leaderboard.get("meta") or {}).get("overall") or {}).get("column")
    if not overall:
        return "its protocol combines no metrics: compare them on its page"
    if not d.leaderboard.get("rows"):
        return "no system scored"
    return "no system is ranked (partial task sets or undefined values: its page says which)"


def _index_row(d: BenchmarkData, href: str) -> str:
    rows = d.leaderboard.get("rows") or []
    leader_i = next((i for i, r in enumerate(rows) if r.get("rank") == 1), None)
    n_tasks = max((r.get("n_tasks") or 0 for r in rows), default=0)
    ti = next((i for i, r in enumerate(rows) if (r.get("n_tasks") or 0) == n_tasks), 0)
    judge = (d.leaderboard.get("meta") or {}).get("judge") or {}
    leader = esc(str(rows[leader_i]["system"])) if leader_i is not None else '<span class="na">no overall score</span>'
    overall = (
        num(
            rows[leader_i].get("overall_value"),
            f"{d.metrics_rel}/leaderboard.json#{pointer('rows', leader_i, 'overall_value')}",
        )
        + " "
        + _scale_html(d)
        if leader_i is not None
        else f'<span class="na">— {esc(_no_leader_reason(d))}</span>'
    )
    lead_value = rows[leader_i].get("overall_value") if leader_i is not None else ""
    n_tasks_html = (
        num(n_tasks, f"{d.metrics_rel}/leaderboard.json#{pointer('rows', ti, 'n_tasks')}", 0) if rows else "—"
    )
    subset = (d.leaderboard.get("meta") or {}).get("subset") or {}
    subset_html = (  # a quick subset (metrics/notice.py): said next to the release name
        f'<br><span class="warn">subset {esc(str(subset.get("n")))} of {esc(str(subset.get("of")))}, not comparable '
        "with full runs</span>"
        if subset and subset.get("n") != subset.get("of")
        else ""
    )
    return (
        f'<tr><td class="s"><a href="{esc(href)}">{esc(d.benchmark)}</a></td><td class="s">{esc(d.release)}'
        f"{subset_html}</td>"
        f'<td class="s">{esc(", ".join(str(r["system"]) for r in rows))}</td>'
        f'<td data-sort="{n_tasks}">{n_tasks_html}</td>'
        f'<td class="s">{leader}</td><td data-sort="{lead_value}">'
        f'{overall}</td><td class="s">{esc(str(judge.get("name") or ""))} '
        f"{esc(str(judge.get('model') or ''))}</td></tr>"
    )
