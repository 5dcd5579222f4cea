"""Importance labels for an imported DeepScholar release (the public snapshot ships without them).

The public `guestrin-lab/deepscholar-bench` data lacks `important_citations.csv`, so Reference Coverage has no
target set. This labels every exemplar reference with the live builder's importance judgment (paper Fig. 4,
`important_reference` task; `judge.prompts=authors` sends the authors' exact LOTUS sem_filter messages) and
writes a NEW release directory (the input release is never modified) whose card says which judge labelled it.

Rules:
- The release format keeps labels all-or-none, so a paper with a failed judgment (after the judge's retries)
  is dropped from the labelled release, with the reason listed in `labelling/dropped.json` and on the card.
- Content shown for a cited paper: its abstract when the release has one (arXiv references), else nothing
  (the authors showed a Tavily snippet for non-arXiv references; the release does not carry snippets).
- The offline judge's importance rule is a lexical stand-in, not a label anyone should publish: labelling with
  it needs `allow_offline=True`, and the card then says so.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reportbench.config import ConfigError
from reportbench.judges.base import Judgment
from reportbench.judges.factory import make_judge
from reportbench.judges.offline import OFFLINE_JUDGE_ID
from reportbench.judges.runner import usage_summary, write_judgments
from reportbench.judges.tasks.important_reference import ImportanceQuestion, is_important, judge_importance
from reportbench.types import ExemplarRef
from reportbench.validate import judge_config

log = logging.getLogger(__name__)


class LabellingError(ConfigError):
    """What no retry fixes: an offline judge without allow_offline, a release that is not DeepScholar's."""


@dataclass
class LabellingResult:
    release: Any  # reportbench.release.format.Release, labelled
    judgments: list[Judgment] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)  # task_id -> reason
    labelled_by: str = ""

    def summary(self) -> dict[str, Any]:
        refs = self.release.exemplar_ref_rows
        return {
            "labelled_by": self.labelled_by,
            "n_tasks": len(self.release.tasks),
            "n_refs": len(refs),
            "n_important": sum(1 for r in refs if r.is_important),
            "n_important_arxiv": sum(1 for r in refs if r.is_important and r.arxiv_id),
            "n_judgments": len(self.judgments),
            "n_failed": sum(1 for j in self.judgments if not j.ok),
            "dropped": dict(sorted(self.dropped.items())),
        }


def questions_for(release: Any) -> list[Any]:
    """One ImportanceQuestion per exemplar reference, in task then exemplar order."""

    tasks = {t.task_id: t for t in release.tasks}
    out = []
    order = {tid: i for i, tid in enumerate(release.task_ids)}
    for r in sorted(release.exemplar_ref_rows, key=lambda r: (order[r.task_id], r.position)):
        t = tasks[r.task_id]
        out.append(
            ImportanceQuestion(
                task_id=r.task_id,
                ref_key=r.ref_key,
                paper_title=t.title,
                paper_abstract=t.abstract or "",
                related_work=t.exemplar or "",
                cited_title=r.title or r.ref_key,
                cited_authors=r.authors or "",
                cited_content=r.abstract or "",
            )
        )
    return out


def describe_judge(judgments: list[Judgment], judge: Any) -> str:
    """'<judge_id> (model <m>, prompt <id> sha <12 hex>)' from the records (what actually answered)."""
    ok = next((j for j in judgments if j.ok), None) or (judgments[0] if judgments else None)
    judge_id = getattr(judge, "judge_id", None) or (ok.judge_id if ok else "?")
    if ok is None:
        return str(judge_id)
    parts = [f"model {ok.model}" if ok.model else None, f"prompt {ok.prompt_id}" if ok.prompt_id else None]
    if ok.prompt_hash:
        parts.append(f"sha {ok.prompt_hash[:12]}")
    shown = ", ".join(p for p in parts if p)
    return f"{ok.judge_id} ({shown})" if shown else ok.judge_id


def label_release(
    release: Any, judge: Any, *, allow_offline: bool = False, progress: bool = False, name: str | None = None
) -> LabellingResult:
    """Judge every exemplar reference; return a labelled copy of the release (failed papers dropped)."""
    from reportbench.release.format import Release  # lazy: +43 ms to import (python -X importtime)

    if release.meta.benchmark != "deepscholar":
        raise LabellingError(f"release {release.meta.name!r} is a {release.meta.benchmark} release, not deepscholar")
    offline = str(getattr(judge, "judge_id", "")).startswith(OFFLINE_JUDGE_ID)
    if offline and not allow_offline:
        raise LabellingError(
            "importance labelling needs an LLM judge (the offline rule is a lexical stand-in): run with "
            "-S judge=llm -S judge.model=<litellm model> and its API key in the environment, or pass "
            "--allow-offline-judge to produce stand-in labels for testing"
        )
    js = judge_importance(questions_for(release), judge, progress=progress)
    verdict: dict[tuple[str, str], bool] = {}
    dropped: dict[str, str] = {}
    for j in js:
        tid, key = j.input_ids["task_id"], j.input_ids["ref_key"]
        if j.ok:
            verdict[(tid, key)] = is_important(j)
        else:
            dropped.setdefault(tid, f"important_reference for {key!r} failed: {j.error}")
    kept = [t for t in release.tasks if t.task_id not in dropped]
    refs: list[ExemplarRef] = [
        r.model_copy(update={"is_important": verdict[(r.task_id, r.ref_key)]})
        for r in release.exemplar_ref_rows
        if r.task_id not in dropped
    ]
    labelled_by = describe_judge(js, judge)
    offline_note = " (offline lexical stand-in: NOT for publication)" if offline else ""
    n_imp = sum(1 for r in refs if r.is_important)
    note = (
        f" Important-reference labels added by reportbench (paper Fig. 4 judgment) with judge {labelled_by}"
        f"{offline_note}: {n_imp} of {len(refs)} references important"
        + (f"; {len(dropped)} paper(s) dropped because a judgment failed." if dropped else ".")
    )
    kept_ids = {t.task_id for t in kept}
    meta = replace(
        release.meta,
        name=name or f"{release.meta.name}-labelled",
        description=(release.meta.description or "").rstrip() + note,
        provenance={
            **release.meta.provenance,
            "important_refs.labelled_by": labelled_by + offline_note,
            "important_refs.source_release": release.meta.name,
        },
    )
    out = Release(
        meta=meta,
        tasks=kept,
        exemplar_ref_rows=refs,
        nugget_rows=[n for n in release.nugget_rows if n.task_id in kept_ids],
        corpus=list(release.corpus),
        citation_counts=list(release.citation_counts),
        extra=dict(release.extra),
    )
    return LabellingResult(out, js, dropped, labelled_by + offline_note)


def write_labelled(result: LabellingResult, out_dir: Path) -> dict[str, Any]:
    """The labelled release (release format) plus `labelling/`: judgments, dropped papers, summary."""
    from reportbench.release.format import write_release  # lazy: +43 ms to import (python -X importtime)

    manifest = write_release(result.release, out_dir)
    side = Path(out_dir) / "labelling"
    side.mkdir(parents=True, exist_ok=True)
    write_judgments(side / "important_reference.parquet", result.judgments)
    summary = {**result.summary(), "usage": usage_summary(result.judgments)}
    (side / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n")
    log.info("labelled %s: %s", out_dir, {k: v for k, v in summary.items() if k != "usage"})
    return manifest


def run_label_importance(
    params: dict[str, Any],
    release_dir: Path | None,
    out_dir: Path,
    *,
    allow_offline: bool = False,
    judge_factory: Callable[[str], Any] | None = None,
    release: Any = None,
) -> dict[str, Any]:
    """Stage entry: the root `judge` group judges every reference of `release` (built by the caller from the
    release config `label init` froze) or of the release at `release_dir`."""
    from reportbench.release.format import read_release  # lazy: +43 ms to import (python -X importtime)

    if release is None:
        if release_dir is None:
            raise ValueError("run_label_importance: give a release or its folder")
        release = read_release(release_dir)
    judge = (judge_factory or (lambda t: make_judge(t, judge_config(params, t))))("important_reference")
    progress = bool(((params.get("judge") or {}).get("runtime") or {}).get("progress", False))
    result = label_release(release, judge, allow_offline=allow_offline, progress=progress)
    write_labelled(result, out_dir)
    return result.summary()
