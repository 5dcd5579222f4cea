"""A sixth benchmark as a distribution of its own (the plug-in proof, docs/plugins.md): its own release table,
two chained judge tasks (claims extracted from a report, then verified against the page the fetch stage got for
its citation: a derived table), a third judge task over its table, a two-member judge ensemble and a cross-system
stage (pairwise battles). Everything is self-authored; reportbench finds it only through the entry point
`reportbench.benchmarks: toy = reportbench_toy:BENCHMARK` of this package's pyproject.toml, with its config tree
(`conf/`) and prompts (`prompts/`) shipped inside the package.

Importing it registers its release table, judge tasks and metrics (what a built-in protocol package does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import Field

from reportbench.benchmarks import (
    BenchmarkSpec,
    CrossContext,
    JudgeContext,
    JudgeStep,
    ScoreContext,
    ScoreResult,
    SystemScore,
    register_benchmark,
)
from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict
from reportbench.judges.tasks import register_task
from reportbench.judges.tasks._parsing import parse_json_output
from reportbench.metrics.aggregate import metric_row, rows_frame, summarise_rows
from reportbench.metrics.registry import MetricSpec, register_metric
from reportbench.protocols import JudgeItem, content_hash
from reportbench.release.format import Release, ReleaseMeta, TableSpec, register_table
from reportbench.types import Record, Task

NAME = "toy"
HERE = Path(__file__).resolve().parent


# ------------------------------------------------------------------------------------------ own table
class ToyCheck(Record):
    """One checklist line of a toy task (the benchmark's own release table)."""

    task_id: str
    item_id: str
    index: int
    text: str
    weight: float = Field(default=1.0)


register_table(TableSpec("toy_checks", ToyCheck, ("task_id", "item_id")), order=lambda r: r.index)


def build_release(cfg: Mapping[str, Any]) -> Release:
    tasks = [
        Task(task_id="t1", title="Why is the sky blue?", task_prompt="Explain why the sky is blue. Cite sources."),
        Task(task_id="t2", title="Why do leaves fall?", task_prompt="Explain why leaves fall in autumn."),
    ]
    checks = [
        ToyCheck(task_id="t1", item_id="c1", index=0, text="scattering of sunlight by air molecules"),
        ToyCheck(task_id="t1", item_id="c2", index=1, text="shorter blue wavelengths scatter more", weight=2.0),
        ToyCheck(task_id="t2", item_id="c1", index=0, text="trees shed leaves to save water in winter"),
    ]
    meta = ReleaseMeta(
        name=str(cfg.get("name", "toy")),
        created_at="2026-01-01",
        source="reportbench_toy",
        licence="CC0 (self-authored test data)",
        synthetic=True,
        benchmark=NAME,
    )
    return Release(meta=meta, tasks=tasks, extra={"toy_checks": checks})


# --------------------------------------------------------------------------------------- judge tasks
_WORD = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 3}


class ExtractInput(JudgeInput):
    report: str


class ExtractOutput(JudgeOutput):
    claims: list[str]

    def value(self) -> float:
        return float(len(self.claims))


def _extract_offline(inputs: ExtractInput, params: dict[str, Any]) -> OfflineVerdict:
    claims = [s.strip() for s in re.split(r"(?<=[.!?])\s+", inputs.report) if "[" in s]
    return OfflineVerdict(ExtractOutput(claims=claims), "cited sentences are claims")


class VerifyInput(JudgeInput):
    claim: str
    source: str


class VerdictOutput(JudgeOutput):
    supported: int

    def value(self) -> float:
        return float(self.supported)


def _verify_offline(inputs: VerifyInput, params: dict[str, Any]) -> OfflineVerdict:
    shared = _words(inputs.claim) & _words(inputs.source)
    return OfflineVerdict(VerdictOutput(supported=int(len(shared) >= 2)), f"{len(shared)} shared words")


class CheckInput(JudgeInput):
    item: str
    report: str


def _check_offline(inputs: CheckInput, params: dict[str, Any]) -> OfflineVerdict:
    covered = _words(inputs.item) <= _words(inputs.report) | {"more", "save"}
    return OfflineVerdict(VerdictOutput(supported=int(covered)), "all item words present" if covered else "missing")


TOY_TASKS = (
    JudgeTask(
        "toy_extract",
        "toy/extract.yaml",
        ExtractInput,
        ExtractOutput,
        lambda raw, i=None: parse_json_output(raw, ExtractOutput),
        _extract_offline,
    ),
    JudgeTask(
        "toy_verify",
        "toy/verify.yaml",
        VerifyInput,
        VerdictOutput,
        lambda raw, i=None: parse_json_output(raw, VerdictOutput),
        _verify_offline,
    ),
    JudgeTask(
        "toy_check",
        "toy/check.yaml",
        CheckInput,
        VerdictOutput,
        lambda raw, i=None: parse_json_output(raw, VerdictOutput),
        _check_offline,
    ),
)


# ---------------------------------------------------------------------------------------- judge steps
def extract_items(ctx: JudgeContext) -> list[JudgeItem]:
    return [
        JudgeItem(
            "toy_extract",
            f"{r.report_id}:extract",
            {"report": r.body},
            {"task_id": r.task_id, "report_id": r.report_id},
        )
        for r in ctx.reports
    ]


CLAIM_SCHEMA = {
    "claim_id": pl.String,
    "task_id": pl.String,
    "report_id": pl.String,
    "text": pl.String,
    "source": pl.String,
}


def claims_table(ctx: JudgeContext, judgments: list[Any]) -> pl.DataFrame:
    """The derived table: one row per extracted claim, with the source its markers point to."""
    by_report = {r.report_id: r for r in ctx.reports}
    rows = []
    for j in judgments:
        if not j.ok:
            continue
        report = by_report[j.input_ids["report_id"]]
        for n, claim in enumerate(json.loads(j.parsed)["claims"]):
            keys = re.findall(r"\[(\d+)\]", claim)
            src = report.sources.get(keys[0]) if keys else None
            text = (src.title or "") + " " + (src.abstract or "") if src else ""
            page = ctx.page(src.url) if src else None
            if page is not None and page.error_class == "ok":
                text = page.text or ""  # the fetched page, when the fetch stage has it
            rows.append(
                {
                    "claim_id": f"{report.report_id}:c{n}",
                    "task_id": report.task_id,
                    "report_id": report.report_id,
                    "text": claim,
                    "source": text,
                }
            )
    return pl.DataFrame(rows, schema=CLAIM_SCHEMA, orient="row")


def verify_items(ctx: JudgeContext) -> list[JudgeItem]:
    claims = ctx.derived["claims"]
    return [
        JudgeItem(
            "toy_verify",
            f"{c['claim_id']}:verify",
            {"claim": c["text"], "source": c["source"]},
            {"task_id": c["task_id"], "report_id": c["report_id"], "claim_id": c["claim_id"]},
        )
        for c in claims.iter_rows(named=True)
    ]


def check_items(ctx: JudgeContext) -> list[JudgeItem]:
    checks = [c for c in ctx.release.table("toy_checks")]
    items = []
    for r in ctx.reports:
        for c in checks:
            if c.task_id == r.task_id:
                iid = f"{r.report_id}:{c.item_id}:{content_hash(c.text, r.body, n=8)}"
                items.append(
                    JudgeItem(
                        "toy_check",
                        iid,
                        {"item": c.text, "report": r.body},
                        {"task_id": r.task_id, "report_id": r.report_id, "check": c.item_id},
                    )
                )
    return items


# --------------------------------------------------------------------------------------------- cross
BATTLE_SCHEMA = {"task_id": pl.String, "system_a": pl.String, "system_b": pl.String, "winner": pl.String}


def battles(ctx: CrossContext) -> dict[str, pl.DataFrame]:
    """Every pair of systems on every task: the longer report wins; a missing report is a loss."""
    rows = []
    lengths = {s: {r.task_id: len(r.body) for r in reps} for s, reps in ctx.reports.items()}
    for t in ctx.release.tasks:
        for a, b in combinations(sorted(ctx.systems), 2):
            la, lb = lengths[a].get(t.task_id, -1), lengths[b].get(t.task_id, -1)
            winner = "tie" if la == lb else (a if la > lb else b)
            rows.append({"task_id": t.task_id, "system_a": a, "system_b": b, "winner": winner})
    return {"battles": pl.DataFrame(rows, schema=BATTLE_SCHEMA, orient="row")}


# --------------------------------------------------------------------------------------------- score
METRICS = [
    MetricSpec("coverage", NAME, "weighted share of checklist lines covered", missing_report="zero"),
    MetricSpec("claim_support", NAME, "share of extracted claims their source supports"),
    MetricSpec("win_rate", NAME, "W/(W+L) in pairwise battles", aggregation="win_rate"),
]


def score(ctx: ScoreContext) -> ScoreResult:
    weights = {(c.task_id, c.item_id): c.weight for c in ctx.release.table("toy_checks")}
    battles_df = ctx.cross.get("battles")
    out = []
    for s in ctx.systems:
        rows = []
        reported = {r.task_id for r in ctx.reports[s]}
        for t in ctx.release.tasks:
            if t.task_id not in reported:
                for m in METRICS[:2]:
                    rows.append(metric_row(s, t.task_id, m.name, float("nan"), "no_report"))
                continue
            # ensemble: each member's task value, then the mean across members (a failed member is NaN)
            cov, sup = [], []
            for _member, steps in sorted(ctx.judgments[s].items()):
                checks = [j for j in steps.get("check", []) if j.input_ids["task_id"] == t.task_id]
                if any(not j.ok for j in checks):
                    cov.append(float("nan"))
                else:
                    w = sum(weights[(t.task_id, j.input_ids["check"])] for j in checks)
                    cov.append(sum(weights[(t.task_id, j.input_ids["check"])] * j.score for j in checks) / w)
                ver = [j for j in steps.get("verify", []) if j.input_ids["task_id"] == t.task_id]
                sup.append(sum(j.score for j in ver) / len(ver) if ver else float("nan"))
            for name, vals in (("coverage", cov), ("claim_support", sup)):
                if any(v != v for v in vals):
                    status = "failed" if name == "coverage" else "undefined"
                    rows.append(metric_row(s, t.task_id, name, float("nan"), status, "no value"))
                else:
                    rows.append(metric_row(s, t.task_id, name, sum(vals) / len(vals)))
        games = None
        if battles_df is not None:
            games = battles_df.filter((pl.col("system_a") == s) | (pl.col("system_b") == s))
        for t in ctx.release.tasks:
            g = games.filter(pl.col("task_id") == t.task_id) if games is not None else pl.DataFrame()
            w = int((g["winner"] == s).sum()) if g.height else 0
            lost = int(((g["winner"] != s) & (g["winner"] != "tie")).sum()) if g.height else 0
            if w + lost == 0:
                rows.append(metric_row(s, t.task_id, "win_rate", float("nan"), "undefined", "no decisive game"))
            else:
                rows.append(metric_row(s, t.task_id, "win_rate", w / (w + lost), n_items=w + lost))
        per_task = rows_frame(rows)
        out.append(SystemScore(s, per_task, summarise_rows(s, NAME, per_task, METRICS)))
    return ScoreResult(out, overall="mean")


for _task in TOY_TASKS:
    register_task(_task, replace=True)
for _metric in METRICS:
    register_metric(_metric, replace=True)

BENCHMARK = BenchmarkSpec(
    name=NAME,
    title="Toy benchmark (a plug-in distribution, tests only)",
    build_release=build_release,
    judge_steps=(
        JudgeStep("extract", task="toy_extract", items=extract_items, derive=claims_table, derived_table="claims"),
        JudgeStep("verify", task="toy_verify", items=verify_items),
        JudgeStep("check", task="toy_check", items=check_items),
    ),
    score=score,
    metric_names=tuple(m.name for m in METRICS),
    cross=battles,
    conf_dir=HERE / "conf",
    prompts_dir=HERE / "prompts",
)


def install() -> None:
    """Register the toy benchmark, its judge tasks and metrics in-process (tests that do not install the
    distribution; `uninstall` leaves the registries as they were)."""
    for task in TOY_TASKS:
        register_task(task, replace=True)
    for spec in METRICS:
        register_metric(spec, replace=True)
    register_benchmark(BENCHMARK, replace=True)


def uninstall() -> None:
    """Leave the process-wide registries as they were (other tests enumerate them)."""
    from reportbench import benchmarks
    from reportbench.judges.tasks import TASKS
    from reportbench.metrics import registry
    from reportbench.prompts import _PROMPT_DIRS

    _PROMPT_DIRS.pop(NAME, None)
    for task in TOY_TASKS:
        TASKS.pop(task.name, None)
    for spec in METRICS:
        registry._METRICS.pop(spec.key, None)
    benchmarks._BENCHMARKS.pop(NAME, None)
    benchmarks._MODULES.pop(NAME, None)


def get_task_for_tests(name: str) -> JudgeTask:
    from reportbench.judges.tasks import get_task

    return get_task(name)
