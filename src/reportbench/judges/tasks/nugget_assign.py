"""`nugget_assign`: is each nugget captured by the passage? (nuggetizer 3-grade assigner).

Nugget Coverage reports strict_all = share labelled `support` (partial counts 0 there; nuggetizer's
`all`/`vital` scores count it 0.5 — that is the metric's business, the judge only labels).
"""

from __future__ import annotations

from typing import Any, Literal

from reportbench.bounds import InputTooLargeError
from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.lexical import split_sentences
from reportbench.judges.offline import section_params, support_params
from reportbench.judges.scores import support_score
from reportbench.judges.tasks._parsing import numbered, parse_json_output

AssignmentLabel = Literal["support", "partial_support", "not_support"]


class NuggetAssignInput(JudgeInput):
    query: str
    passage: str
    nuggets: list[str]

    def prompt_values(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "passage": self.passage,
            "nuggets": numbered(self.nuggets),
            "num_nuggets": len(self.nuggets),
        }


class NuggetAssignOutput(JudgeOutput):
    labels: list[AssignmentLabel]

    def value(self) -> float | None:
        """Share of nuggets labelled `support`; undefined (None -> NaN) when there are no nuggets."""
        if not self.labels:
            return None
        return sum(1 for x in self.labels if x == "support") / len(self.labels)


def parse(raw: str, inputs: NuggetAssignInput) -> NuggetAssignOutput:
    output = parse_json_output(raw, NuggetAssignOutput)
    if len(output.labels) != len(inputs.nuggets):
        raise ParseError(f"expected {len(inputs.nuggets)} labels (one per nugget), got {len(output.labels)}")
    return output


def check_work(inputs: NuggetAssignInput, thresholds: dict[str, Any], window_sentences: int) -> None:
    """Refuse an item whose scoring would be too costly: each nugget is scored against every window of the
    passage (~40 µs each), so the work is windows x nuggets; a passage of 1 MB of short sentences made
    ~25 s per nugget. Counted from the passage's sentence split alone (the windows' tokens are never built for
    a refused item)."""
    limit = int(thresholds["max_window_scores"])
    n = len(split_sentences(inputs.passage))
    windows = sum(max(0, n - size + 1) for size in range(1, max(1, window_sentences) + 1))  # sentence_windows
    if windows * len(inputs.nuggets) > limit:
        raise InputTooLargeError(
            f"nugget_assign window scores ({windows:,} passage windows x {len(inputs.nuggets)} nuggets)",
            windows * len(inputs.nuggets), "max_window_scores", limit,
            "judge.offline.nugget_assign.max_window_scores",
        )


def offline(inputs: NuggetAssignInput, params: dict[str, Any]) -> OfflineVerdict:
    """Per nugget, S(nugget, passage) maxed over windows: support >= hi, partial_support >= lo."""
    thresholds = section_params(params, "nugget_assign")
    hi, lo = float(thresholds["support"]), float(thresholds["partial"])
    if not inputs.passage.strip():
        labels: list[AssignmentLabel] = ["not_support"] * len(inputs.nuggets)
        return OfflineVerdict(
            output=NuggetAssignOutput(labels=labels),
            explanation="empty passage: every nugget is not_support",
            signals={"support_share": 0.0} if labels else {},
        )
    sp = support_params(params)
    check_work(inputs, thresholds, sp.window_sentences)
    labels = []
    parts: list[str] = []
    scores: list[float] = []
    for i, nugget in enumerate(inputs.nuggets, start=1):
        s = support_score(nugget, inputs.passage, sp)
        label: AssignmentLabel = (
            "support" if s.score >= hi else "partial_support" if s.score >= lo else "not_support"
        )
        labels.append(label)
        scores.append(s.score)
        parts.append(f"{i}. {label} (S={s.score:.4f}, guard={s.guard:.4f})")
    output = NuggetAssignOutput(labels=labels)
    share = output.value()
    signals = (
        {"support_share": round(share, 4), "mean_S": round(sum(scores) / len(scores), 4)} if scores else {}
    )
    return OfflineVerdict(
        output=output,
        explanation=f"thresholds support>={hi:.4f}, partial>={lo:.4f}: " + "; ".join(parts),
        signals=signals,
    )


TASK = JudgeTask(
    name="nugget_assign",
    prompt_id="deepscholar/nugget_assign.yaml",
    input_model=NuggetAssignInput,
    output_model=NuggetAssignOutput,
    parse=parse,
    offline=offline,
    description="Label each nugget support / partial_support / not_support against a passage.",
)
