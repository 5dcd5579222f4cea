"""One benchmark × release page: the leaderboard (sortable; every metric named, defined and directed; 95 %
intervals; defined/total tasks and failed judgments per cell; blank rank where the overall score is undefined),
the pairwise comparisons with FDR-adjusted p-values, plots, the judge card, judge usage and provenance.

Input is the score stage's files as plain dicts (`leaderboard.json`, `systems.json`, `extra.json`,
`judge_card.json`, `usage/*.json`), so the same renderer writes `metrics/<b>/<R>/leaderboard.html` (from the
leaderboard alone) and the site's page (with everything, and links into the per-sample viewer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from reportbench.metrics.registry import REASON_CODES, short_failure
from reportbench.site.html import (
    attrs,
    dl,
    esc,
    is_number,
    num,
    page,
    pointer,
    sort_value,
    table,
    th,
)
from reportbench.site.svg import Bar, bar_chart, grouped_chart
from reportbench.types import system_label

DIGITS_BY_UNIT = {"fraction": 3, "percent": 2, "points": 2, "score": 2, "elo": 0, "count": 2}


def digits_for(info: Mapping[str, Any]) -> int:
    return DIGITS_BY_UNIT.get(str(info.get("unit")), 3)


@dataclass
class BenchmarkData:
    """Everything one benchmark page shows; `metrics_rel` is the repo-relative metrics folder (`data-src`)."""

    benchmark: str
    release: str
    metrics_rel: str
    leaderboard: dict[str, Any]
    systems: dict[str, Any] | None = None
    extra: dict[str, Any] | None = None
    judge_card: dict[str, Any] | None = None
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)  # "usage/<S>.<m>.json" -> content
    provenance: dict[str, str] = field(default_factory=dict)  # label -> plain text
    sample_href: Callable[[str, str | None], str] | None = None  # (system, metric|None) -> relative URL
    crumbs: list[tuple[str, str | None]] = field(default_factory=list)

    def src(self, file: str, *parts: Any) -> str:
        return f"{self.metrics_rel}/{file}#{pointer(*parts)}"


def _info(d: BenchmarkData, m: str) -> dict[str, Any]:
    return (d.leaderboard.get("metric_info") or {}).get(m) or {
        "name": m,
        "label": m,
        "full_name": m,
        "description": "",
        "higher_is_better": True,
    }


def _overall_label(lb: Mapping[str, Any], d: BenchmarkData) -> str | None:
    rows = lb.get("rows") or []
    overall = rows[0].get("overall", "geomean") if rows else "geomean"
    if overall is None:
        return None
    parts = rows[0].get("overall_metrics") if rows else None  # a geomean over a subset names its metrics
    if overall == "geomean" and parts:
        shown = ", ".join(str(_info(d, m).get("label", m)) for m in parts)
        return f"GeoMean ({len(parts)} of {len(lb.get('metrics') or [])}: {shown})"
    if overall == "geomean":
        return "GeoMean"
    if overall == "mean":
        return "Mean"
    return f"Overall ({_info(d, overall).get('label', overall)})"


def _flagged(d: BenchmarkData, i: int, row: Mapping[str, Any]) -> tuple[Any, str] | None:
    """(count, data-src) of a system's flagged reports (input15), from the leaderboard row or systems.json."""
    if "flagged_reports" in row:
        return row["flagged_reports"], d.src("leaderboard.json", "rows", i, "flagged_reports")
    s = (d.systems or {}).get(row["system"]) or {}
    if "flagged_reports" in s:
        return s["flagged_reports"], d.src("systems.json", row["system"], "flagged_reports")
    return None


def _breakable(label: str) -> str:
    """A header may wrap after an underscore (`cit_not_<wbr>checked`): wide leaderboards fit 1,400 px."""
    return esc(label).replace("_", "_<wbr>")


def _bar_width(v: Any, info: Mapping[str, Any]) -> float | None:
    """Share of the metric's own declared range (never the column maximum); None without a declared range."""
    rng = info.get("value_range")
    if not is_number(v) or not rng or len(rng) != 2 or rng[1] <= rng[0]:
        return None
    return max(0.0, min(1.0, (float(v) - rng[0]) / (rng[1] - rng[0])))


def ncell(v: Any, src: str, digits: int = 3, *, p_value: bool = False, cls: str = "", why: Any = None) -> str:
    """A table cell holding one traced number, sortable by its raw value; "— (why)" when it is undefined and its
    reason is known (never a bare dash then)."""
    if why and not is_number(v):
        return f'<td{attrs(class_=cls or None)} data-sort=""><span class="na">— ({esc(str(why))})</span></td>'
    return f'<td{attrs(class_=cls or None)} data-sort="{sort_value(v)}">{num(v, src, digits, p_value=p_value)}</td>'


def leaderboard_table(d: BenchmarkData) -> str:
    lb = d.leaderboard
    lsrc = partial(d.src, "leaderboard.json")
    metrics: list[str] = list(lb.get("metrics") or [])
    rows: list[dict[str, Any]] = list(lb.get("rows") or [])
    olabel = _overall_label(lb, d)
    flagged = [_flagged(d, i, r) for i, r in enumerate(rows)]
    overall = rows[0].get("overall") if rows else None
    overall_digits = digits_for(_info(d, overall)) if overall in metrics else 3
    show_flags = any(f is not None for f in flagged)
    # no rank column for a benchmark without an overall score (the page says why above the table)
    head = [th("#", title="rank by the overall score; — with the reason where a row is not ranked")] if olabel else []
    head.append(th("system", kind="text", cls="s"))
    for m in metrics:
        info = _info(d, m)
        arrow = "↑" if info.get("higher_is_better", True) else "↓"
        better = "higher" if arrow == "↑" else "lower"
        tip = f"{info.get('full_name', m)}: {info.get('description', '')} ({better} is better)"
        head.append(
            f'<th data-kind="num" data-metric="{esc(m)}" title="{esc(tip)}">{_breakable(str(info.get("label", m)))} '
            f"{arrow}</th>"
        )
    if olabel:
        head.append(th(esc(olabel) + " ↑", title="the benchmark's overall score; rows without one are not ranked"))
    head += [
        th("tasks"),
        th("failed tasks", title="tasks the system itself failed on (crash, exit code, timeout): no report"),
        th("no report", title="tasks the system supplied no report for (without failing)"),
        th("failed items", title="judgments that failed after retries (NaN, excluded, never 0)"),
    ]
    if show_flags:
        head.append(th("flagged reports", title=(
            "reports flagged at ingestion: text addressed to the judge, or a report matching another task's "
            "question far better than its own (mapping_suspect)"
        )))
    body = []
    for i, r in enumerate(rows):
        sysname = str(r["system"])
        rank = r.get("rank")
        tie = "=" if r.get("tied") else ""
        why_unranked = str(r.get("unranked_reason") or "no overall score")
        cells = (
            [
                f'<td data-sort="{sort_value(rank)}">{tie}{num(rank, d.src("leaderboard.json", "rows", i, "rank"), 0)}'
                "</td>"
                if rank is not None
                else f'<td data-sort="" title="not ranked: {esc(why_unranked)}"><span class="na">— '
                f"{'partial' if r.get('partial') else 'unranked'}</span></td>"
            ]
            if olabel
            else []
        )
        name_html = esc(system_label(sysname, r.get("variant")))  # `storm [encoder: hashed]` (agents.variant)
        partial_html = (
            f' <span class="cnt" title="evaluated on part of the release\'s tasks">partial '
            f"{esc(str(r.get('n_answered')))}/{esc(str(r.get('n_release_tasks')))}</span>"
            if r.get("partial")
            else ""
        )
        if r.get("sandbox") == "unsandboxed":  # its code ran outside the sandbox (`sandbox: none`)
            partial_html += ' <span class="cnt" title="sandbox: none: its code ran unsandboxed">unsandboxed</span>'
        if d.sample_href:
            name_html = f'<a href="{esc(d.sample_href(sysname, None))}">{name_html}</a>'
        cells.append(f'<td class="s" data-sort="{esc(sysname)}">{name_html}{partial_html}</td>')
        for m in metrics:
            info = _info(d, m)
            digits = digits_for(info)
            v = (r.get("metrics") or {}).get(m)
            w = _bar_width(v, info)
            bar = f'<span class="bar" style="width:{100 * w:.1f}%"></span>' if w is not None else ""
            value = num(v, d.src("leaderboard.json", "rows", i, "metrics", m), digits)
            why = (r.get("undefined_reason") or {}).get(m)
            if why and not is_number(v):  # undefined: "—" with its reason code, never a number
                value = f'<span class="na" title="undefined: {esc(why)} (docs/reading-scores.md)">— {esc(why)}</span>'
            if d.sample_href:
                value = f'<a href="{esc(d.sample_href(sysname, m))}" title="per-task values and samples">{value}</a>'
            ci = (r.get("ci") or {}).get(m)
            if ci and is_number(ci[0]) and is_number(ci[1]):
                lo = num(ci[0], lsrc("rows", i, "ci", m, 0), digits)
                hi = num(ci[1], lsrc("rows", i, "ci", m, 1), digits)
                ci_html = f'<span class="ci" title="95 % bootstrap interval">[{lo}, {hi}]</span>'
            else:
                why = (r.get("ci_method") or {}).get(m) or "no interval"
                ci_html = f'<span class="ci" title="{esc(why)}">no CI</span>'
            n_def = (r.get("n_defined") or {}).get(m)
            n_fail = (r.get("n_failed") or {}).get(m, 0)
            if info.get("aggregation") == "rating":  # one value per system from a cross stage, not per task
                cnt = '<span class="cnt" title="computed across systems by the cross stage">rating'
            else:
                cnt = (
                    f'<span class="cnt" title="tasks with a defined value / tasks">'
                    f"{num(n_def, d.src('leaderboard.json', 'rows', i, 'n_defined', m), 0)}/"
                    f"{num(r.get('n_tasks'), d.src('leaderboard.json', 'rows', i, 'n_tasks'), 0)} tasks"
                )
            if n_fail:
                cnt += (
                    f' · <span class="fail">{num(n_fail, d.src("leaderboard.json", "rows", i, "n_failed", m), 0)}'
                    " failed</span>"
                )
            cnt += "</span>"
            cells.append(
                f'<td class="cell" data-metric="{esc(m)}" data-sort="{sort_value(v)}">{bar}{value}{ci_html}{cnt}</td>'
            )
        if olabel:
            key = "overall_value" if "overall_value" in r else "geomean"
            cells.append(ncell(r.get(key), lsrc("rows", i, key), overall_digits, why=r.get("overall_reason")))
        cells.append(ncell(r.get("n_tasks"), lsrc("rows", i, "n_tasks"), 0))
        n_failed_tasks = r.get("n_failed_tasks") or 0
        if n_failed_tasks:  # "k failed" with the first reason, never a bare count
            first = r.get("first_failure") or {}
            cells.append(
                f'<td class="fail" data-sort="{sort_value(n_failed_tasks)}" title="{esc(_failure_title(r))}">'
                f'{num(n_failed_tasks, lsrc("rows", i, "n_failed_tasks"), 0)} failed '
                f'<span class="cnt">{esc(short_failure(first.get("reason")))}</span></td>'
            )
        elif "n_failed_tasks" in r:
            cells.append(ncell(n_failed_tasks, lsrc("rows", i, "n_failed_tasks"), 0))
        else:  # a leaderboard written before failed tasks were counted
            cells.append('<td data-sort="" title="not recorded by this leaderboard"><span class="na">—</span></td>')
        no_report = r.get("n_no_report", r.get("n_missing_reports"))
        cells.append(ncell(no_report, lsrc("rows", i, "n_no_report" if "n_no_report" in r else "n_missing_reports"), 0))
        v = r.get("n_failed_items")
        cells.append(ncell(v, lsrc("rows", i, "n_failed_items"), 0, cls="fail" if v else ""))
        if show_flags:
            f = flagged[i]
            if f is None:
                cells.append('<td data-sort=""><span class="na">—</span></td>')
            else:
                cls = ' class="fail"' if is_number(f[0]) and f[0] else ""
                cells.append(f'<td{cls} data-sort="{sort_value(f[0])}">{num(f[0], f[1], 0)}</td>')
        body.append(f'<tr data-system="{esc(sysname)}">{"".join(cells)}</tr>')
    return table(head, body, id_="leaderboard")


def reference_html(d: BenchmarkData) -> str:
    """The paper's own rows (leaderboard.json `reference`): a separate table under the ranking, labelled
    "published (paper Table N, judge …), not re-judged here", never ranked, each number linked to its source,
    with the differences that make a comparison unsafe; "" when the leaderboard has none."""
    ref = d.leaderboard.get("reference")
    if not isinstance(ref, Mapping) or not ref.get("rows"):
        return ""
    metrics: list[str] = list(ref.get("shown_metrics") or d.leaderboard.get("metrics") or [])
    overall = ref.get("overall_column")
    head = [th("system (published)", kind="text", cls="s")]
    head += [th(esc(str(_info(d, m).get("label", m)))) for m in metrics]
    head += [th(esc(str(overall)), title="the paper's overall column")] if overall else []
    body = []
    for i, r in enumerate(ref["rows"]):
        note = f' <span class="cnt">{esc(str(r["note"]))}</span>' if r.get("note") else ""
        cells = [f'<td class="s">{esc(str(r.get("system")))} <span class="cnt">published</span>{note}</td>']
        for m in metrics:
            v = (r.get("metrics") or {}).get(m)
            if is_number(v):
                where = (r.get("source") or {}).get(m, "")
                value = num(v, d.src("leaderboard.json", "reference", "rows", i, "metrics", m), digits_for(_info(d, m)))
                cells.append(f'<td data-sort="{sort_value(v)}" title="{esc(where)}">{value}</td>')
            else:
                why = (r.get("not_shown") or {}).get(m, "not published")
                cells.append(f'<td data-sort="" title="{esc(why)}"><span class="na">— {esc(why)}</span></td>')
        if overall:
            src = d.src("leaderboard.json", "reference", "rows", i, "overall_value")
            cells.append(ncell(r.get("overall_value"), src, digits_for(_info(d, metrics[0])) if metrics else 3))
        body.append(f'<tr class="reference">{"".join(cells)}</tr>')
    diffs = "".join(
        f"<li><b>{esc(str(x.get('aspect')))}</b>: paper: {esc(str(x.get('paper')))}"
        + (f"; this run: {esc(str(x.get('this_run')))}" if x.get("this_run") else "")
        + (' <span class="fail">differs</span>' if x.get("same") is False else "")
        + "</li>"
        for x in ref.get("differences") or []
    )
    missing = ", ".join(str(_info(d, m).get("label", m)) for m in ref.get("not_in_paper") or [])
    return (
        f'<h2 id="reference-h">Reference rows: {esc(str(ref.get("label")))}</h2>'
        f'<p class="note">The paper\'s own numbers ({esc(str(ref.get("location")))}; file '
        f"<code>{esc(str(ref.get('source_file')))}</code>). Never ranked with the measured rows above; hover a "
        "number for its table, row and column.</p>"
        + table(head, body, id_="reference")
        + (f'<p class="note">Not columns of the paper\'s {esc(str(ref.get("table")))} (no published value): '
           f"{esc(missing)}.</p>" if missing else "")
        + f'<p class="warn">Differences that make a comparison unsafe:</p><ul id="reference-differences">{diffs}</ul>'
    )


def _failure_title(r: Mapping[str, Any]) -> str:
    first = r.get("first_failure") or {}
    return f"first failed task {first.get('task_id', '?')}: {first.get('reason') or 'no reason recorded'}"


def warnings_html(d: BenchmarkData) -> str:
    """What a reader must know before reading a number: thin coverage, unranked rows, an offline judge."""
    lb = d.leaderboard
    out = []
    thin_items = []  # one banner for every system (it used to repeat the same sentence per system)
    for i, r in enumerate(lb.get("rows") or []):
        n_tasks = r.get("n_tasks") or 0
        thin = [
            m
            for m, k in (r.get("n_defined") or {}).items()
            if is_number(k) and k < n_tasks and _info(d, m).get("aggregation") != "rating"
        ]
        if thin:
            m = min(thin, key=lambda m: r["n_defined"][m])
            thin_items.append(
                f"<li><b>{esc(r['system'])}</b>: e.g. "
                f"{esc(str(_info(d, m).get('label', m)))} on "
                f"{num(r['n_defined'][m], d.src('leaderboard.json', 'rows', i, 'n_defined', m), 0)} of "
                f"{num(n_tasks, d.src('leaderboard.json', 'rows', i, 'n_tasks'), 0)} tasks "
                f"({len(thin)} metric(s) affected)</li>"
            )
    if thin_items:
        out.append(
            "Some means rest on fewer tasks than the release has (a task without a defined value is left out of "
            f'that mean, never counted as 0):<ul class="thin">{"".join(thin_items)}</ul>'
        )
    rows = lb.get("rows") or []
    unranked = [r for r in rows if r.get("rank") is None]
    if unranked and _overall_label(lb, d):
        out.append(
            "Not ranked: "
            + "; ".join(
                f"<b>{esc(r['system'])}</b> ({esc(str(r.get('unranked_reason') or 'overall score undefined'))})"
                for r in unranked
            )
            + "."
        )
    elif unranked:  # a benchmark without an overall score: no rank column, and this says why
        partial = [r for r in rows if r.get("partial")]
        out.append(
            f"Not ranked: {esc(d.benchmark)} has no overall score (its protocol combines no metrics); compare the "
            "systems metric by metric."
            + (
                " Partial task sets: "
                + "; ".join(f"<b>{esc(r['system'])}</b> ({esc(str(r.get('task_note') or ''))})" for r in partial)
                + "."
                if partial
                else ""
            )
        )
    failed = [r for r in rows if r.get("n_failed_tasks")]
    if failed:
        out.append(
            "Failed tasks (the system itself failed, so there is no report; each such task is scored as the protocol "
            "scores a missing report, shown with its reason): "
            + "; ".join(
                f"<b>{esc(r['system'])}</b>: {esc(str(r['n_failed_tasks']))} of {esc(str(r.get('n_tasks')))} tasks, "
                f"{esc(_failure_title(r))}"
                for r in failed
            )
            + "."
        )
    if any(r.get("tied") for r in lb.get("rows") or []):
        out.append("Equal overall scores share a rank (=k); no unstated tie-break is applied.")
    judge = (lb.get("meta") or {}).get("judge") or {}
    if judge.get("backend") == "offline":
        out.append(
            "Graded by the <b>offline lexical judge</b> (deterministic, no LLM): fine for plumbing and "
            "regression checks, <b>not</b> for publishing (docs/offline-judge.md)."
        )
    return "".join(f'<div class="warn">{w}</div>' for w in out)


def definitions_table(d: BenchmarkData) -> str:
    lb = d.leaderboard
    rows = lb.get("rows") or []
    head = [
        th(h, kind="text", cls="s")
        for h in ("column", "metric", "definition", "direction", "range / unit", "aggregation", "interval")
    ]
    body = []
    for m in lb.get("metrics") or []:
        info = _info(d, m)
        rng = info.get("value_range")
        rng_txt = f"{rng[0]:g}–{rng[1]:g}" if rng else "unbounded"
        methods = Counter((r.get("ci_method") or {}).get(m, "") for r in rows)
        method = next((k for k, _ in methods.most_common() if k and not k.startswith("n/a")), "none")
        direction = "higher is better ↑" if info.get("higher_is_better", True) else "lower is better ↓"
        label = esc(str(info.get("label", m)))
        ev = info.get("evidence")
        evidence = f'<br><span class="note">needs: {esc(str(ev))}</span>' if ev else ""
        trng = info.get("task_range")
        task_rng = (
            f'<br><span class="note">per task {trng[0]:g}–{"∞" if trng[1] is None else f"{trng[1]:g}"}</span>'
            if trng
            else ""
        )
        body.append(
            f'<tr id="def-{esc(m)}"><td class="s" data-sort="{label}"><b>{label}</b></td>'
            f'<td class="s">{esc(str(info.get("full_name", m)))} <code>{esc(m)}</code></td>'
            f'<td class="s">{esc(str(info.get("description", "")))}{evidence}</td><td class="s">{direction}</td>'
            f'<td class="s">{esc(rng_txt)} {esc(str(info.get("unit") or ""))}{task_rng}</td>'
            f'<td class="s">{esc(str(info.get("aggregation") or ""))}</td><td class="s">{esc(method)}</td></tr>'
        )
    return table(head, body, cls="defs")


def pairwise_table(d: BenchmarkData) -> str:
    lb = d.leaderboard
    lsrc = partial(d.src, "leaderboard.json")
    pw = lb.get("pairwise") or []
    if not pw:
        return '<p class="note">No pairwise comparisons (fewer than two systems, or no per-task values).</p>'
    metrics = list(dict.fromkeys(p["metric"] for p in pw))
    opts = "".join(f'<option value="{esc(m)}">{esc(str(_info(d, m).get("label", m)))}</option>' for m in metrics)
    filters = (
        '<div class="filters"><label>metric <select id="pw-metric" data-filter-for="pairwise" data-field="metric">'
        f'<option value="">all</option>{opts}</select></label>'
        '<label>system <input id="pw-q" data-filter-for="pairwise" placeholder="name"></label></div>'
    )
    head = [
        th("metric", kind="text", cls="s"),
        th("A", kind="text", cls="s"),
        th("B", kind="text", cls="s"),
        th("mean A − B"),
        th("95% CI"),
        th("t"),
        th("p"),
        th("p (FDR)"),
        th("n tasks"),
        th("note", kind="text", cls="s"),
    ]
    body = []
    for j, p in enumerate(pw):
        info = _info(d, p["metric"])
        digits = digits_for(info)
        ci = p.get("diff_ci")
        ci_html = (
            (
                f"[{num(ci[0], d.src('leaderboard.json', 'pairwise', j, 'diff_ci', 0), digits)}, "
                f"{num(ci[1], d.src('leaderboard.json', 'pairwise', j, 'diff_ci', 1), digits)}]"
            )
            if ci
            else "—"
        )
        q = p.get("p_fdr")
        sig = is_number(q) and q < 0.05
        body.append(
            f'<tr data-filter="{esc(p["system_a"] + " " + p["system_b"])}" data-metric="{esc(p["metric"])}"'
            f"{' class=sig' if sig else ''}>"
            f'<td class="s" data-sort="{esc(p["metric"])}">{esc(str(info.get("label", p["metric"])))}</td>'
            f'<td class="s">{esc(p["system_a"])}</td><td class="s">{esc(p["system_b"])}</td>'
            + ncell(p.get("mean_diff"), lsrc("pairwise", j, "mean_diff"), digits)
            + f'<td data-sort="{sort_value(ci[0] if ci else None)}">{ci_html}</td>'
            + ncell(p.get("t"), lsrc("pairwise", j, "t"), 2)
            + ncell(p.get("p"), lsrc("pairwise", j, "p"), 3, p_value=True)
            + ncell(q, lsrc("pairwise", j, "p_fdr"), 3, p_value=True)
            + ncell(p.get("n"), lsrc("pairwise", j, "n"), 0)
            + f'<td class="s">{esc(str(p.get("note") or ""))}</td></tr>'
        )
    stats = lb.get("stats") or {}
    n_tests = stats.get("n_tests")
    note = (
        f'<p class="note">{esc(str(stats.get("pairwise_test", "paired t-test")))}. p (FDR): '
        f"{esc(str(stats.get('fdr', 'Benjamini–Hochberg')))}; family = "
        f"{num(n_tests, d.src('leaderboard.json', 'stats', 'n_tests'), 0)} tests with a p-value. Rows with "
        "p (FDR) &lt; 0.05 are shaded. With few tasks a difference can be large and still not significant.</p>"
    )
    return filters + note + table(head, body, id_="pairwise")


def plots_html(d: BenchmarkData) -> str:
    lb = d.leaderboard
    rows = lb.get("rows") or []
    charts = []
    for m in lb.get("metrics") or []:
        info = _info(d, m)
        digits = digits_for(info)
        bars = []
        for i, r in enumerate(rows):
            ci = (r.get("ci") or {}).get(m) or [None, None]
            bars.append(
                Bar(
                    system_label(str(r["system"]), r.get("variant")),
                    (r.get("metrics") or {}).get(m),
                    d.src("leaderboard.json", "rows", i, "metrics", m),
                    ci[0],
                    ci[1],
                    digits,
                )
            )
        arrow = "↑" if info.get("higher_is_better", True) else "↓"
        charts.append(
            bar_chart(
                f"{info.get('label', m)} {arrow}",
                bars,
                info.get("value_range"),
                note="whiskers: 95 % bootstrap interval",
            )
        )
    out = ['<h3>Per metric, with 95 % intervals</h3><div class="plots">', *charts, "</div>"]
    cat = category_plots(d)
    if cat:
        out += ['<h3>By category / domain</h3><div class="plots">', *cat, "</div>"]
    return "".join(out)


def category_plots(d: BenchmarkData) -> list[str]:
    """Per-group means from systems.json (`metrics.<m>.groups`, DEER's domains) and any extra.json table shaped
    {system: {category: number}} (ResearchQA's coverage by domain)."""
    charts = []
    systems = d.systems or {}
    names = [str(r["system"]) for r in d.leaderboard.get("rows") or []]
    for m in d.leaderboard.get("metrics") or []:
        series = []
        cats: dict[str, None] = {}
        for s in names:
            groups = (((systems.get(s) or {}).get("metrics") or {}).get(m) or {}).get("groups")
            if isinstance(groups, Mapping) and groups:
                vals = {str(g): (v, d.src("systems.json", s, "metrics", m, "groups", g)) for g, v in groups.items()}
                series.append((s, vals))
                cats.update(dict.fromkeys(vals))
        if series and len(cats) > 1:
            info = _info(d, m)
            charts.append(
                grouped_chart(
                    f"{info.get('label', m)} by group", list(cats), series, info.get("value_range"), digits_for(info)
                )
            )
    for key, table_ in sorted((d.extra or {}).items()):
        if not isinstance(table_, Mapping) or not table_ or not set(table_) <= set(names):
            continue
        if not all(isinstance(v, Mapping) and v and all(is_number(x) for x in v.values()) for v in table_.values()):
            continue
        series, cats = [], {}
        for s in names:
            if s in table_:
                vals = {str(c): (v, d.src("extra.json", key, s, c)) for c, v in table_[s].items()}
                series.append((s, vals))
                cats.update(dict.fromkeys(vals))
        charts.append(grouped_chart(key.replace("_", " "), sorted(cats), series, None, 2))
    return charts


def judge_card_html(d: BenchmarkData) -> str:
    card = d.judge_card
    if not isinstance(card, Mapping):
        return ""
    parts = ['<h2 id="judge-card">Judge card</h2>']
    if card.get("summary"):
        parts.append(f"<p>{esc(str(card['summary']))}</p>")
    for si, sec in enumerate(card.get("sections") or []):
        if not isinstance(sec, Mapping):
            continue
        parts.append(f"<h3>{esc(str(sec.get('title', '')))}</h3>")
        if sec.get("note"):
            parts.append(f'<p class="note">{esc(str(sec["note"]))}</p>')
        cols = [str(c) for c in sec.get("columns") or []]
        body = []
        for ri, row in enumerate(sec.get("rows") or []):
            tds = []
            for ci, v in enumerate(row if isinstance(row, list) else []):
                if is_number(v):
                    digits = 0 if isinstance(v, int) or float(v).is_integer() else 3
                    tds.append(ncell(v, d.src("judge_card.json", "sections", si, "rows", ri, ci), digits))
                elif v is None:
                    tds.append('<td data-sort=""><span class="na">—</span></td>')
                else:
                    tds.append(f'<td class="s" data-sort="{esc(str(v))}">{esc(str(v))}</td>')
            body.append(f"<tr>{''.join(tds)}</tr>")
        kinds = []
        for ci, c in enumerate(cols):
            numeric = any(isinstance(r, list) and ci < len(r) and is_number(r[ci]) for r in sec.get("rows") or [])
            kinds.append(th(esc(c), kind="num" if numeric else "text", cls="" if numeric else "s"))
        parts.append(table(kinds, body))
    return "".join(parts)


USAGE_FIELDS = ("items", "calls", "cache_hits", "failed", "prompt_tokens", "completion_tokens", "cost_usd")


def usage_html(d: BenchmarkData) -> str:
    if not d.usage:
        return ""
    head = [
        *[th(h, kind="text", cls="s") for h in ("system.member", "step", "judge", "model")],
        *[th(f.replace("_", " ")) for f in USAGE_FIELDS],
    ]
    body = []
    unpaid: dict[str, list[str]] = {}  # a cost's basis when nobody paid it (pipeline._step_usage) -> rows
    for file, u in sorted(d.usage.items()):
        who = file.removeprefix("usage/").removesuffix(".json")
        for step, s in sorted((u.get("steps") or {}).items()):
            if not isinstance(s, Mapping):
                continue
            model = s.get("model")
            model_txt = ", ".join(map(str, model)) if isinstance(model, list) else str(model or "")
            tds = [
                f'<td class="s">{esc(who)}</td>',
                f'<td class="s">{esc(step)}</td>',
                f'<td class="s">{esc(str(s.get("judge") or ""))}</td>',
                f'<td class="s">{esc(model_txt)}</td>',
            ]
            for f in USAGE_FIELDS:
                v = s.get(f)
                digits = 4 if f == "cost_usd" else 0
                tds.append(ncell(v, d.src(file, "steps", step, f), digits))
            if s.get("cost_basis"):
                unpaid.setdefault(str(s["cost_basis"]), []).append(f"{who} {step}")
            body.append(f"<tr>{''.join(tds)}</tr>")
    notes = "".join(
        f'<p class="note">cost usd of {esc(", ".join(rows))}: {esc(basis)}.</p>' for basis, rows in unpaid.items()
    )
    summary = "calls, cache hits, failures, tokens and cost per judge stage and step"
    if unpaid:
        summary += " (some costs are list prices of calls nobody paid for: see the notes)"
    return (
        f'<h2 id="usage">Judge usage</h2><details{" open" if unpaid else ""}><summary>{summary}</summary>'
        + table(head, body)
        + notes
        + "</details>"
    )


def reading_html(d: BenchmarkData) -> str:
    """"How to read a score" under the leaderboard: the rule, the reason codes this page shows, the ranking
    rule and the shared-task comparison for partial submissions (docs/reading-scores.md)."""
    lb = d.leaderboard
    codes = sorted({c for r in lb.get("rows") or [] for c in (r.get("undefined_reason") or {}).values()})
    items = "".join(f"<li><code>{esc(c)}</code>: {esc(REASON_CODES.get(c, 'undefined'))}</li>" for c in codes)
    out = [
        '<h3 id="reading">How to read a score</h3><p class="note">A number is shown only when it was computed from '
        "something actually judged, fetched or measured; otherwise the cell is “— <i>code</i>” (undefined, with "
        "its reason), never 0. What the protocol itself scores as 0 stays 0. Only systems evaluated on the same "
        "task set are ranked; equal overall scores share a rank (=k). Every reason code: "
        "<code>docs/reading-scores.md</code>.</p>"
    ]
    if items:
        out.append(f"<ul class=\"note\">{items}</ul>")
    shared = lb.get("shared_tasks")
    left = "".join(
        f" <b>{esc(s)}</b> is left out ({esc(str(why))})." for s, why in ((shared or {}).get("left_out") or {}).items()
    )
    if shared and not shared.get("n_tasks"):
        why = shared.get("why_no_tasks") or "no task in common"
        out.append(f'<h3 id="shared-tasks">Shared-task comparison</h3><p class="note">None: {esc(str(why))}.{left}</p>')
    elif shared and shared.get("metrics"):
        ms = list(shared["metrics"])
        head = [th("system", kind="text", cls="s"), *[th(esc(str(_info(d, m).get("label", m)))) for m in ms]]
        body = []
        for sys_name, vals in (shared.get("values") or {}).items():
            cells = [f'<td class="s">{esc(sys_name)}</td>']
            for m in ms:
                digits = digits_for(_info(d, m))
                src = d.src("leaderboard.json", "shared_tasks", "values", sys_name, m)
                why = ((shared.get("why") or {}).get(sys_name) or {}).get(m)
                cells.append(ncell(vals.get(m), src, digits, why=why))
            body.append(f"<tr>{''.join(cells)}</tr>")
        n = num(shared.get("n_tasks"), d.src("leaderboard.json", "shared_tasks", "n_tasks"), 0)
        out.append(
            f'<h3 id="shared-tasks">Shared-task comparison</h3><p class="note">Means over the {n} task(s) every '
            f"listed system has a report for (systems answered different task sets).{left}</p>" + table(head, body)
        )
    return "".join(out)


def subset_banner(d: BenchmarkData) -> str:
    """The leaderboard's release notice (a quick subset: "subset n of M, not comparable with full runs"), read
    from `meta.notice` of leaderboard.json (metrics/notice.py), or "" for a full release."""
    text = (d.leaderboard.get("meta") or {}).get("notice")
    if not text:
        return ""
    src = d.src("leaderboard.json", "meta", "notice")
    return f'<div class="warn" id="subset" data-src="{esc(src)}"><b>{esc(str(text))}</b></div>'


def render_benchmark_page(d: BenchmarkData) -> str:
    title = f"{d.benchmark} · {d.release}"
    meta = dict(d.provenance)
    body = [f"<h1>{esc(title)}</h1>", subset_banner(d)]
    if meta:
        body.append(dl({k: esc(v) for k, v in meta.items()}))
    body.append(warnings_html(d))
    body.append('<h2 id="leaderboard-h">Leaderboard</h2>')
    body.append(
        '<p class="note">Click a column header to sort. Each cell: the mean over tasks with a defined value, its 95 % '
        "bootstrap interval, tasks defined / total and failed judgments (NaN, excluded, never counted as 0). Bars "
        "are drawn on the metric's own range. "
        + ("Click a value to see its per-task scores and samples." if d.sample_href else "")
        + "</p>"
    )
    body.append(leaderboard_table(d))
    body.append(reference_html(d))
    body.append(reading_html(d))
    body.append('<h2 id="definitions">Metrics</h2>' + definitions_table(d))
    body.append('<h2 id="plots">Plots</h2>' + plots_html(d))
    body.append('<h2 id="pairwise-h">Pairwise comparisons</h2>' + pairwise_table(d))
    body.append(judge_card_html(d))
    body.append(usage_html(d))
    body.append(
        '<p class="note">Every number on this page is read from the metrics files named in its '
        "<code>data-src</code> attribute (leaderboard.json, systems.json, extra.json, judge_card.json, "
        "usage/*.json).</p>"
    )
    return page(f"{title} — reportbench", "".join(body), crumbs=d.crumbs)
