"""`support`: does the cited reference support the claim? (DeepScholar attribution validator, Box 3).

Used by Citation Precision (one call per claim-citation link) and Claim Coverage. The reference text is
"Title: {title}\\n{abstract}", as the benchmark formats cited documents.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict
from reportbench.judges.offline import section_params, support_params
from reportbench.judges.scores import support_score
from reportbench.judges.tasks._parsing import ExactInt, parse_json_output


class SupportInput(JudgeInput):
    claim: str
    reference: str


class SupportOutput(JudgeOutput):
    supported: Annotated[Literal[0, 1], ExactInt]

    def value(self) -> float:
        return float(self.supported)

    def label(self) -> str:
        return "supported" if self.supported == 1 else "not_supported"


def parse(raw: str, inputs: SupportInput | None = None) -> SupportOutput:
    return parse_json_output(raw, SupportOutput)


def offline(inputs: SupportInput, params: dict[str, Any]) -> OfflineVerdict:
    """Supported iff S(claim, reference) >= support.threshold (S maxed over 1–2 sentence windows)."""
    threshold = float(section_params(params, "support")["threshold"])
    s = support_score(inputs.claim, inputs.reference, support_params(params))
    supported = 1 if s.score >= threshold else 0
    verdict = "supported" if supported else "not supported"
    return OfflineVerdict(
        output=SupportOutput(supported=supported),
        explanation=f"{verdict}: {s.describe()} vs threshold {threshold:.4f}",
        signals=s.signals(),
    )


TASK = JudgeTask(
    name="support",
    prompt_id="deepscholar/support.yaml",
    input_model=SupportInput,
    output_model=SupportOutput,
    parse=parse,
    offline=offline,
    description="Binary attribution: does the reference (title + abstract) support the claim? 1/0.",
)
