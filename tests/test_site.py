"""Scorecard site: leaderboard statistics (intervals, FDR, blank rank), bar scaling on the metric's own range,
every number on a benchmark page traced to a metrics file, judge card and flagged reports rendered, index."""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import reportbench.protocols.deepscholar.metrics as dsm  # registers the seven metrics
from reportbench.metrics.leaderboard import build_leaderboard, from_scores, to_html, write_leaderboard
from reportbench.metrics.stats import bootstrap_ci, fdr_adjust, stratified_bootstrap_ci
from reportbench.protocols.deepscholar.metrics import METRIC_NAMES, SystemScores, summarise
from reportbench.site.build import build_site
from reportbench.site.html import fmt_number, fmt_p, resolve_pointer

pytestmark = pytest.mark.core

BENCH, REL = "deepscholar", "toyrel"
TASKS = ["t1", "t2", "t3", "t4", "t5"]


def _scores(system: str, values: dict[str, list[float]]) -> SystemScores:
    rows = []
    for m in METRIC_NAMES:
        for tid, v in zip(TASKS, values.get(m, [0.5, 0.6, 0.4, 0.5, 0.55]), strict=True):
            rows.append(
                {
                    "system": system,
                    "task_id": tid,
                    "report_id": f"{system}/{tid}",
                    "metric": m,
                    "value": v,
                    "n_items": 2,
                    "n_failed": int(math.isnan(v)),
                    "reason": "judgment_failed" if math.isnan(v) else None,
                    "details": "{}",
                }
            )
    per_task = pl.DataFrame(rows, schema=dsm.PER_TASK_SCHEMA, orient="row")
    return SystemScores(system, per_task, summarise(system, per_task))


def three_systems() -> list[SystemScores]:
    return [
        _scores("strong", {"organization": [0.9, 1.0, 0.8, 0.9, 0.95], "nugget_coverage": [0.333] * 5}),
        _scores("weak", {"organization": [0.1, 0.2, 0.1, 0.2, 0.0], "nugget_coverage": [0.1, 0.2, 0.3, 0.1, 0.2]}),
        _scores(
            "undef",
            {"claim_coverage": [math.nan] * 5, "nugget_coverage": [math.nan, math.nan, 0.5, math.nan, math.nan]},
        ),
    ]


def make_repo(root: Path, *, judge_card: bool = True, flagged: bool = True) -> dict[str, Any]:
    """A repository as `dvc repro` leaves it for one benchmark: metrics files (+ judge card, usage) and
    params; the data folders are optional for the benchmark page (the viewer tests add them)."""
    scores = three_systems()
    summaries = []
    for sc in scores:
        s = dict(sc.summary)
        s.update(
            {
                "benchmark": BENCH,
                "release": REL,
                "members": ["main"],
                "judge": {"name": "offline", "backend": "offline", "model": "offline-lexical-v1"},
            }
        )
        if flagged:
            s["flagged_reports"] = 2 if sc.system == "weak" else 0
        summaries.append(s)
    frames = [sc.per_task.select(["system", "task_id", "metric", "value"]) for sc in scores]
    lb = build_leaderboard(summaries, pl.concat(frames), protocol=BENCH)
    mdir = root / "metrics" / BENCH / REL
    write_leaderboard(lb, mdir)
    systems = {s["system"]: s for s in summaries}
    systems["strong"]["metrics"]["organization"]["groups"] = {"vision": 0.85, "nlp": 0.95}
    systems["weak"]["metrics"]["organization"]["groups"] = {"vision": 0.1, "nlp": 0.2}
    (mdir / "systems.json").write_text(json.dumps(systems, default=str))
    (mdir / "extra.json").write_text(
        json.dumps({"coverage_by_domain": {"strong": {"a": 61.25, "b": 12.5}, "weak": {"a": 5.0}}})
    )
    if judge_card:
        card = {
            "benchmark": BENCH,
            "release": REL,
            "summary": "Agreement of the offline judge with labels.",
            "sections": [
                {
                    "title": "Agreement by step",
                    "note": "n = labelled items",
                    "columns": ["step", "n", "accuracy", "kappa"],
                    "rows": [["support", 40, 0.825, None], ["relevance", 12, 0.75, 0.41]],
                }
            ],
        }
        (mdir / "judge_card.json").write_text(json.dumps(card))
    (mdir / "usage").mkdir()
    (mdir / "usage" / "strong.main.json").write_text(
        json.dumps(
            {
                "benchmark": BENCH,
                "member": "main",
                "steps": {
                    "support": {
                        "items": 7,
                        "calls": 7,
                        "cache_hits": 1,
                        "failed": 1,
                        "prompt_tokens": 1234,
                        "completion_tokens": 56,
                        "cost_usd": 0.0123,
                        "judge": "offline",
                        "model": "offline-lexical-v1",
                    }
                },
            }
        )
    )
    params = {
        "plan": {"benchmarks": {BENCH: {"release": REL, "systems": ["strong", "weak", "undef"], "members": ["main"]}}},
        "judge": {"name": "offline", "backend": "offline", "model": "offline-lexical-v1", "prompts": "ours"},
        "benchmarks": {BENCH: {"judges": {"main": {}}}},
    }
    return params


class _Collector(HTMLParser):
    """Collects every element with class "num" (its attributes and text) and the text of <td> cells by table id."""

    def __init__(self) -> None:
        super().__init__()
        self.nums: list[dict[str, str]] = []
        self._stack: list[dict[str, Any]] = []
        self.cells: dict[str, list[str]] = {}
        self._table: list[str] = []
        self._td: list[str] | None = None
        self._td_cls = ""
        self._num_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._table.append(a.get("id", ""))
        if tag == "td":
            self._td, self._td_cls = [], a.get("class", "")
        if "num" in a.get("class", "").split():
            self._stack.append({"attrs": a, "text": []})
            self._num_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self._stack and tag in ("span", "text"):
            item = self._stack.pop()
            self._num_depth -= 1
            self.nums.append({**item["attrs"], "text": "".join(item["text"])})
        if tag == "td" and self._td is not None:
            if self._td_cls != "s":  # string cells (system names, notes) may hold digits
                self.cells.setdefault(self._table[-1] if self._table else "", []).append("".join(self._td))
            self._td = None
        if tag == "table" and self._table:
            self._table.pop()

    def handle_data(self, data: str) -> None:
        if self._stack:
            self._stack[-1]["text"].append(data)
        elif self._td is not None:
            self._td.append(data)


def check_traced(html_text: str, root: Path) -> int:
    """Every `.num` names a metrics file + JSON pointer whose value, formatted, is the text shown; numeric table
    cells hold no digit outside such spans. Returns how many numbers were checked."""
    c = _Collector()
    c.feed(html_text)
    docs: dict[str, Any] = {}
    for n in c.nums:
        file, _, ptr = n["data-src"].partition("#")
        assert file.startswith("metrics/") or file.startswith("./"), file
        if file not in docs:
            docs[file] = json.loads((root / file).read_text())
        value = resolve_pointer(docs[file], ptr)
        shown = fmt_p(value) if n.get("data-p") else fmt_number(value, int(n["data-d"]))
        assert shown == n["text"], (n, value)
    for table_id, cells in c.cells.items():
        for text in cells:
            stray = re.sub(r"(no CI|tasks|failed|—|\s|[\[\],/·])", "", text)
            assert not re.search(r"\d", stray), (table_id, text)
    return len(c.nums)


# ------------------------------------------------------------------------------------------------ statistics


def test_intervals_contain_the_mean_and_match_a_plain_bootstrap() -> None:
    lb = from_scores(three_systems())
    strong = next(r for r in lb.rows if r["system"] == "strong")
    lo, hi = strong["ci"]["organization"]
    assert lo <= strong["metrics"]["organization"] <= hi
    assert (lo, hi) == pytest.approx(bootstrap_ci([0.9, 1.0, 0.8, 0.9, 0.95], n_boot=2000, seed=0))
    assert strong["ci_method"]["organization"] == "bootstrap over tasks"
    undef = next(r for r in lb.rows if r["system"] == "undef")
    assert undef["ci"]["nugget_coverage"] is None and "fewer than 2" in undef["ci_method"]["nugget_coverage"]
    assert undef["ci"]["claim_coverage"] is None and "undefined" in undef["ci_method"]["claim_coverage"]
    assert lb.stats["ci_level"] == 0.95 and lb.metric_info["organization"]["higher_is_better"] is True


def test_rank_is_blank_where_the_overall_score_is_undefined() -> None:
    lb = from_scores(three_systems())
    ranks = {r["system"]: r["rank"] for r in lb.rows}
    assert ranks == {"strong": 1, "weak": 2, "undef": None}
    none = build_leaderboard([s.summary for s in three_systems()], overall=None)
    assert all(r["rank"] is None for r in none.rows)


def test_fdr_matches_benjamini_hochberg_by_hand() -> None:
    lb = from_scores(three_systems())
    ps = np.array([pw["p"] for pw in lb.pairwise], dtype=float)
    ok = ~np.isnan(ps)
    m = ok.sum()
    order = np.argsort(ps[ok])
    ranked = ps[ok][order] * m / np.arange(1, m + 1)
    bh = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1.0)
    expected = np.empty(m)
    expected[order] = bh
    got = np.array([pw["p_fdr"] for pw in lb.pairwise], dtype=float)
    assert np.allclose(got[ok], expected) and np.isnan(got[~ok]).all()
    assert all(pw["p_fdr"] >= pw["p"] for pw in lb.pairwise if not math.isnan(pw["p"]))
    assert lb.stats["n_tests"] == int(m)
    hl = next(
        p for p in lb.pairwise if p["metric"] == "organization" and {p["system_a"], p["system_b"]} == {"strong", "weak"}
    )
    assert hl["diff_ci"][0] <= hl["mean_diff"] <= hl["diff_ci"][1]
    assert fdr_adjust([math.nan, None]) == [pytest.approx(math.nan, nan_ok=True)] * 2


def test_stratified_interval_keeps_groups_and_needs_variation() -> None:
    lo, hi = stratified_bootstrap_ci({"a": [1.0, 3.0], "b": [10.0]}, n_boot=500)
    assert (1.0 + 10.0) / 2 <= hi and lo <= (3.0 + 10.0) / 2 and lo >= 5.5 - 1e-9 and hi <= 6.5 + 1e-9
    assert all(math.isnan(x) for x in stratified_bootstrap_ci({"a": [1.0]}))


# ------------------------------------------------------------------------------------------------ pages


def test_bars_use_the_metrics_own_range_not_the_column_max(tmp_path: Path) -> None:
    make_repo(tmp_path)
    page = (tmp_path / "metrics" / BENCH / REL / "leaderboard.html").read_text()
    # nugget coverage of "strong" is 0.333 everywhere and the column's maximum: a third of a bar, not a full one
    row = page.split('data-system="strong"')[1].split("</tr>")[0]
    cell = row.split('data-metric="nugget_coverage"')[1]
    assert re.match(r'[^>]*><span class="bar" style="width:33\.3%">', cell), cell[:200]


def test_every_number_on_the_benchmark_page_traces_to_a_metrics_file(tmp_path: Path) -> None:
    params = make_repo(tmp_path)
    counts = build_site(params, tmp_path, tmp_path / "site")
    assert counts["benchmark_pages"] == 1 and counts["system_pages"] == 3
    page = (tmp_path / "site" / "benchmarks" / BENCH / REL / "index.html").read_text()
    n = check_traced(page, tmp_path)
    lb = json.loads((tmp_path / "metrics" / BENCH / REL / "leaderboard.json").read_text())
    # at least: every metric mean, both interval ends, defined/total per cell and every pairwise statistic
    assert n >= len(lb["rows"]) * len(lb["metrics"]) * 2 + 5 * len([p for p in lb["pairwise"] if p["n"]])
    for word in (
        "Organization",
        "higher is better",
        "95 % bootstrap interval",
        "p (FDR)",
        "Benjamini",
        "offline lexical judge",
        "prompt pack",
        "code (sha256 of the scoring and page code)",
        "reportbench 0.1.0",
    ):
        assert word in page, word
    assert "not ranked" in page.lower()
    # the undefined system has no rank cell value; the defined ones link to their samples
    assert 'href="samples/strong/index.html#m-organization"' in page


def test_judge_card_flagged_reports_and_category_plots_are_rendered(tmp_path: Path) -> None:
    params = make_repo(tmp_path)
    build_site(params, tmp_path, tmp_path / "site")
    page = (tmp_path / "site" / "benchmarks" / BENCH / REL / "index.html").read_text()
    assert 'id="judge-card"' in page and "Agreement by step" in page and "Agreement of the offline judge" in page
    assert 'data-src="metrics/deepscholar/toyrel/judge_card.json#/sections/0/rows/0/2"' in page
    assert "flagged reports" in page and "leaderboard.json#/rows/1/flagged_reports" in page  # weak: 2 flagged
    assert "Org by group" in page and "coverage by domain" in page
    assert page.count("<svg") >= len(METRIC_NAMES) + 2


def test_without_optional_files_the_page_still_renders(tmp_path: Path) -> None:
    params = make_repo(tmp_path, judge_card=False, flagged=False)
    build_site(params, tmp_path, tmp_path / "site")
    page = (tmp_path / "site" / "benchmarks" / BENCH / REL / "index.html").read_text()
    assert "judge-card" not in page and "flagged reports" not in page
    check_traced(page, tmp_path)


def test_index_lists_every_enabled_benchmark(tmp_path: Path) -> None:
    params = make_repo(tmp_path)
    params["plan"]["benchmarks"]["researchqa"] = {"release": "none", "systems": ["x"], "members": ["main"]}
    build_site(params, tmp_path, tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'href="benchmarks/deepscholar/toyrel/index.html"' in index
    assert "No leaderboard yet for: researchqa · none" in index
    check_traced(index, tmp_path)


def test_standalone_leaderboard_html_is_self_contained(tmp_path: Path) -> None:
    lb = from_scores(three_systems())
    page = to_html(lb)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "@import" not in page
    assert "<script>" in page and 'class="sortable"' in page


@pytest.mark.parametrize("bench", ["deepscholar", "deer", "researcherbench", "researchqa", "liveresearchbench"])
def test_committed_demo_metrics_render_and_trace(bench: str, repo_root: Path, tmp_path: Path) -> None:
    """The repository's own metrics (as `dvc repro` wrote them): every number on the page traces back."""
    from reportbench.config import load_params

    params = load_params(repo_root / "params.yaml")
    entry = params["plan"]["benchmarks"].get(bench)
    if entry is None or not (repo_root / "metrics" / bench / entry["release"] / "leaderboard.json").is_file():
        pytest.skip(f"no metrics for {bench}")
    from reportbench.site.build import build_benchmark_site

    build_benchmark_site(params, bench, repo_root, tmp_path, max_samples=0)
    page = (tmp_path / "benchmarks" / bench / entry["release"] / "index.html").read_text()
    assert check_traced(page, repo_root) > 10


def test_a_system_page_says_why_a_metric_has_no_per_task_cell() -> None:
    """ResearchQA's Elo is one row per system (task `*`): its column showed a bare "—" on every task row."""
    from reportbench.site.samples import SystemData, render_system_page

    def row(task: str, metric: str, value: float, status: str = "ok", reason: str | None = None) -> dict:
        return {"task_id": task, "metric": metric, "value": value, "status": status, "reason": reason}

    sd = SystemData("researchqa", "demo", "sys", outcomes={"t1": {"status": "ok"}, "t2": {"status": "ok"}},
                    scores={"t1": [row("t1", "coverage", 50.0), row("t1", "elo", 1000.0)],
                            "t2": [row("t2", "coverage", 70.0)],
                            "*": [row("*", "elo", math.nan, "undefined", "not_identifiable")]})
    html = render_system_page(sd, ["coverage", "elo", "depth"], {})
    assert '<span class="na">—</span>' not in html  # never a bare dash
    assert "— system-level" not in html.split("t2")[0]  # t1 has its own elo row
    t2 = html.split('data-sort="t2"')[1].split("</tr>")[0]
    assert "— system-level" in t2 and "leaderboard row below" in t2  # elo: the system's row only
    assert "— no row" in t2  # depth: no row at all for this task


def test_the_index_says_why_a_benchmark_has_no_overall_value() -> None:
    """The index showed "no overall score" and a bare "—" for ResearcherBench (no overall metric) and for a
    release where no system is ranked; the cell now says which."""
    from reportbench.site.build import _index_row
    from reportbench.site.leaderboard_page import BenchmarkData

    rows = [{"system": "a", "rank": None, "n_tasks": 3}]
    no_overall = BenchmarkData("researcherbench", "demo", "metrics/researcherbench/demo",
                               {"meta": {"overall": {"column": None}}, "rows": rows})
    unranked = BenchmarkData("researchqa", "demo", "metrics/researchqa/demo",
                             {"meta": {"overall": {"column": "overall_coverage"}}, "rows": rows})
    for d, why in ((no_overall, "its protocol combines no metrics"), (unranked, "no system is ranked")):
        cell = _index_row(d, "x.html")
        assert f"— {why}" in cell
