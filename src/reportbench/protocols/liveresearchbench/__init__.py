"""LiveResearchBench / DeepEval (Wang, Ming et al. 2025): presentation, consistency, coverage, depth vs a
reference system, citation association and (our reconstruction of) citation accuracy, graded by a two-judge
ensemble. Spec: ../shared/specs/liveresearchbench.md; docs/liveresearchbench.md explains every mode."""

from __future__ import annotations

from reportbench.benchmarks import BenchmarkSpec, JudgeStep
from reportbench.judges.tasks import register_task
from reportbench.metrics.registry import register_metric
from reportbench.protocols.liveresearchbench import benchmark as _b
from reportbench.protocols.liveresearchbench.release import NAME, build_release
from reportbench.protocols.liveresearchbench.tasks import TASKS
from reportbench.reports.task_names import TaskNaming

for _task in TASKS:
    register_task(_task)
for _metric in _b.METRICS:
    register_metric(_metric)


def task_payload(task: object) -> dict[str, object]:
    """What command/endpoint systems see: the date-filled question (the release's frozen evaluation date)."""
    return {"task_id": task.task_id, "query": task.task_prompt, "category": (task.categories or [None])[0]}  # type: ignore[attr-defined]


# The authors' report files are `<model_name>/qid_<qid>_report.md`; their qids carry no number.
TASK_NAMING = TaskNaming(spelled="qid_<qid>_report, qid_<qid> or <qid>", prefixes=("qid_",), suffixes=("_report",))

BENCHMARK = BenchmarkSpec(
    name=NAME,
    tag="lrb",  # dvc exp show columns lrb.<system> (dvc_metrics.brief)
    title="LiveResearchBench / DeepEval",
    build_release=build_release,
    judge_steps=(
        JudgeStep("presentation", task="lrb_presentation", items=_b.presentation_items),
        JudgeStep("coverage", task="lrb_coverage", items=_b.coverage_items_for),
        JudgeStep("consistency", task="lrb_consistency", items=_b._pointwise_items("lrb_consistency", "consistency")),
        JudgeStep("citation", task="lrb_citation", items=_b._pointwise_items("lrb_citation", "citation")),
        JudgeStep("claims", kind="compute", compute=_b.claims_table, derived_table="claims"),
        JudgeStep("relevance", task="lrb_relevance", items=_b.relevance_items),
        JudgeStep("support", task="lrb_support", items=_b.support_items),
    ),
    score=_b.score,
    metric_names=tuple(m.name for m in _b.METRICS),
    cross=_b.depth_cross,
    judge_items_per_task=True,  # claims, relevance and support: per report and its own (task, URL) verdicts
    judge_streams_reports=True,  # each step passes over the reports once, keeping only its items
    score_streams_judgments=True,  # a task's records are looked up and built when it is scored
    task_payload=task_payload,
    description="Six DeepEval protocols; depth against the authors' Open Deep Research reports as reference.",
    task_naming=TASK_NAMING,
    flagged_reports="scored as written (the authors' coverage judge grades each checklist item); flagged with the span",
)

__all__ = ["BENCHMARK"]
