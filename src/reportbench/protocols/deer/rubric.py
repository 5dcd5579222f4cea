"""DEER's 101 rubric factors (authors' code version, `prompts/schemas.py` at f81bd9c): ids, C/Q type and the
hierarchy group -> sub-dimension -> element -> factor, exactly as the authors' schema keys them.

The descriptions are our own short paraphrases (spec §1.4), never the authors' rubric text. The 5 judge calls
and which of them get the Expert Evaluation Guidance (EG) in each mode are defined here too, because the
factor set of a call is what its answer is validated against.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportbench.types import RubricItem


@dataclass(frozen=True)
class Factor:
    group: str  # the judge's top-level group (code key), e.g. request_fulfillment
    sub: str  # sub-dimension ("criterion" in the authors' code)
    element: str  # "1", "2", ...
    fid: str  # "C1-1" / "Q2-1"
    text: str  # our paraphrase

    @property
    def kind(self) -> str:
        return self.fid[0]

    @property
    def key(self) -> str:
        return f"{self.group}.{self.sub}.{self.element}.{self.fid}"


# (group, sub, element, ((fid, paraphrase), ...)) in the authors' schema order.
_SPEC: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...] = (
    # ---------------------------------------------------------------- request_fulfillment (22; EG)
    (
        "request_fulfillment",
        "completeness",
        "1",
        (
            (
                "C1-1",
                "Every element the request and the EG require is present; one explained below the EG bar is missing.",
            ),
            (
                "C1-2",
                "Each major requirement gets enough text (several substantial paragraphs); padding does not count.",
            ),
            ("Q1-1", "The content for each requirement is correct and consistent with the EG."),
            ("Q1-2", "Depth of the requirements that passed the soundness check."),
        ),
    ),
    (
        "request_fulfillment",
        "completeness",
        "2",
        (
            ("C2-1", "Structure and emphasis follow the request's priorities."),
            ("C2-2", "Length and depth are proportional to each part's priority."),
            ("Q2-1", "The prioritisation is recognisable to a reader."),
            ("Q2-2", "The split into core and secondary axes is sound against the EG."),
        ),
    ),
    (
        "request_fulfillment",
        "scope",
        "1",
        (
            ("C1-1", "The report states its scope."),
            ("C1-2", "What is left out is said explicitly."),
            ("C1-3", "Assumptions and limitations are stated."),
            ("C1-4", "The report stays within its declared scope throughout."),
            ("Q1-1", "The scope statement is clear and sufficiently deep."),
            ("Q1-2", "Exclusions and limitations are justified."),
        ),
    ),
    (
        "request_fulfillment",
        "helpfulness",
        "1",
        (
            ("C1-1", "The overall message addresses every item of the request."),
            ("Q1-1", "The message is tailored to the requester."),
            ("Q1-2", "The message is specific and actionable."),
        ),
    ),
    (
        "request_fulfillment",
        "helpfulness",
        "2",
        (
            ("C2-1", "The overall message is explicitly tied to the body's content."),
            ("C2-2", "The overall message does not contradict the body."),
            ("Q2-1", "The message draws on evidence from several sections."),
            ("Q2-2", "The message is rigorous and methodologically consistent."),
        ),
    ),
    (
        "request_fulfillment",
        "helpfulness",
        "3",
        (("C3-1", "Limitations are disclosed and alternatives compared where the request or EG asks for it."),),
    ),
    # ---------------------------------------------------------------- analytical_soundness (24; EG)
    (
        "analytical_soundness",
        "quantification",
        "1",
        (("C1-1", "Calculations are arithmetically and algebraically correct (N/A without calculations)."),),
    ),
    (
        "analytical_soundness",
        "quantification",
        "2",
        (
            ("C2-1", "The quantitative method is named and fits the problem (EG)."),
            ("C2-2", "Method details (variables, assumptions, steps) are complete."),
            ("Q2-1", "The choice of method is justified."),
        ),
    ),
    (
        "analytical_soundness",
        "quantification",
        "3",
        (
            ("C3-1", "Numbers are interpreted objectively, without exaggeration."),
            ("Q3-1", "The numeric interpretation is rigorous (EG)."),
        ),
    ),
    (
        "analytical_soundness",
        "quantification",
        "4",
        (("C4-1", "Comparisons state the metric, the baseline or denominator and the conditions."),),
    ),
    ("analytical_soundness", "quantification", "5", (("C5-1", "Metrics and units follow standard practice."),)),
    (
        "analytical_soundness",
        "reasoning",
        "1",
        (
            ("C1-1", "The argument is logically consistent; factual errors or EG mismatches break it."),
            ("C1-2", "No logical step is missing (the EG's steps first)."),
            ("Q1-1", "The argument hangs together."),
        ),
    ),
    (
        "analytical_soundness",
        "reasoning",
        "2",
        (
            ("C2-1", "Background is provided."),
            ("C2-2", "The background is complete (EG first)."),
            ("Q2-1", "The background is developed in depth."),
        ),
    ),
    (
        "analytical_soundness",
        "reasoning",
        "3",
        (
            ("C3-1", "Assumptions and reasoning are disclosed."),
            ("C3-2", "The disclosure is complete."),
            ("Q3-1", "The disclosed assumptions are sound."),
        ),
    ),
    (
        "analytical_soundness",
        "reasoning",
        "4",
        (
            ("C4-1", "Evidence is analysed rather than listed."),
            ("Q4-1", "The analysis of the evidence is deep."),
        ),
    ),
    (
        "analytical_soundness",
        "reasoning",
        "5",
        (
            ("C5-1", "Conclusions are validly derived, without leaps."),
            ("C5-2", "The EG's core evidence is included."),
            ("Q5-1", "Reasoning and evidence are tightly linked."),
        ),
    ),
    (
        "analytical_soundness",
        "reasoning",
        "6",
        (
            ("C6-1", "Counter-evidence and alternatives are acknowledged."),
            ("Q6-1", "The critical discussion is balanced."),
        ),
    ),
    # ---------------------------------------------------------------- structural_coherence (24; EG)
    (
        "structural_coherence",
        "introduction",
        "1",
        (
            ("C1-1", "The introduction gives topic, problem, significance and motivation."),
            ("Q1-1", "The introduction is substantial in length."),
            ("Q1-2", "The introduction is specific."),
            ("Q1-3", "The introduction flows coherently."),
        ),
    ),
    ("structural_coherence", "introduction", "2", (("Q2-1", "The introduction gives a roadmap of the report."),)),
    (
        "structural_coherence",
        "introduction",
        "3",
        (
            ("C3-1", "The introduction frames scope and boundaries (EG)."),
            ("Q3-1", "That framing is clear."),
        ),
    ),
    ("structural_coherence", "introduction", "4", (("Q4-1", "The introduction has no irrelevant background."),)),
    (
        "structural_coherence",
        "body",
        "1",
        (
            ("C1-1", "The body follows the sequence the introduction announced."),
            ("C1-2", "The body's development suits the report's purpose."),
            ("C1-3", "The body covers every EG component and sub-component."),
            ("C1-4", "Each component gets at least one developed paragraph; inaccurate content counts as undeveloped."),
        ),
    ),
    (
        "structural_coherence",
        "body",
        "2",
        (
            ("C2-1", "The body stays in scope."),
            ("C2-2", "Out-of-scope material is kept apart."),
        ),
    ),
    (
        "structural_coherence",
        "conclusion",
        "1",
        (("Q1-1", "The conclusion synthesises in at least one developed paragraph."),),
    ),
    ("structural_coherence", "conclusion", "2", (("Q2-1", "The conclusion introduces no new unsupported claims."),)),
    ("structural_coherence", "section", "1", (("C1-1", "Each section has an organising principle."),)),
    (
        "structural_coherence",
        "section",
        "2",
        (
            ("C2-1", "Sections do not contradict each other."),
            ("C2-2", "Cross-references between sections are accurate."),
            ("C2-3", "No section repeats another's meaning."),
            ("Q2-1", "The sections build one coherent argument."),
        ),
    ),
    (
        "structural_coherence",
        "section",
        "3",
        (
            ("C3-1", "Each section includes its core points."),
            ("C3-2", "Tables and figures are relevant (N/A without any)."),
            ("Q3-1", "Each point is developed in depth."),
        ),
    ),
    # ---------------------------------------------------------------- format_style (17; no EG)
    (
        "format_style",
        "report_format",
        "1",
        (
            ("C1-1", "Distinct introduction, body (two or more major sections) and conclusion."),
            ("C1-2", "Introduction, body and conclusion reach the expected lengths."),
        ),
    ),
    (
        "format_style",
        "report_format",
        "2",
        (
            ("C2-1", "Headings form a clear hierarchy."),
            ("C2-2", "Prose paragraphs dominate; lists and tables do not replace them."),
        ),
    ),
    ("format_style", "report_format", "3", (("C3-2", "Lists, numbering and tables use one consistent style."),)),
    ("format_style", "writing_quality", "1", (("C1-1", "Sentences are clear."),)),
    ("format_style", "writing_quality", "2", (("C2-1", "Verbs and nouns are precise."),)),
    (
        "format_style",
        "writing_quality",
        "3",
        (
            ("C3-1", "Technical terms are defined."),
            ("C3-2", "Terms are used consistently."),
        ),
    ),
    ("format_style", "writing_quality", "4", (("C4-1", "The style is objective."),)),
    (
        "format_style",
        "paragraph_quality",
        "1",
        (
            ("C1-1", "Paragraphs have several sentences."),
            ("Q1-1", "Paragraphs have an internal structure."),
        ),
    ),
    (
        "format_style",
        "paragraph_quality",
        "2",
        (
            ("C2-1", "Lists and tables are integrated into the text."),
            ("C2-2", "Tables are explained."),
        ),
    ),
    ("format_style", "paragraph_quality", "3", (("C3-1", "Paragraphs do not repeat each other."),)),
    ("format_style", "readability", "1", (("C1-1", "Subheadings, bullets and emphasis aid reading."),)),
    ("format_style", "readability", "2", (("Q2-1", "Examples or analogies clarify hard points."),)),
    # ---------------------------------------------------------------- information_integrity.recency (3; no EG)
    (
        "information_integrity",
        "recency",
        "1",
        (
            ("C1-1", "Regularly updated sources are cited in their latest edition."),
            ("C1-2", "The year or version of such sources is shown."),
            ("C1-3", "Use of an older edition is justified."),
        ),
    ),
    # ---------------------------------------------------------------- ethics_compliance (11; no EG)
    (
        "ethics_compliance",
        "sensitive_handling",
        "1",
        (
            ("Q1-1", "Sensitive topics are treated neutrally."),
            ("Q1-2", "Sensitive topics are treated fairly."),
        ),
    ),
    (
        "ethics_compliance",
        "sensitive_handling",
        "2",
        (
            ("C2-1", "No categorical or disparaging language."),
            ("C2-2", "Generalisations stay within the evidence."),
        ),
    ),
    (
        "ethics_compliance",
        "safety_impact",
        "1",
        (
            ("C1-1", "Side effects are discussed where essential."),
            ("C1-2", "Stakeholders' views are considered where essential."),
            ("Q1-1", "The impact discussion is comprehensive."),
            ("Q1-2", "The impact discussion is deep and evidenced."),
        ),
    ),
    ("ethics_compliance", "safety_impact", "2", (("C2-1", "No harm-enabling methods are given."),)),
    (
        "ethics_compliance",
        "perspective_balance",
        "1",
        (
            ("C1-1", "Several viewpoints are presented."),
            ("Q1-1", "Opposing views are used to strengthen the argument."),
        ),
    ),
)

FACTORS: tuple[Factor, ...] = tuple(Factor(g, s, e, fid, text) for g, s, e, fs in _SPEC for fid, text in fs)

# The five judge calls, the groups each returns, and whether the authors' code gives it the EG.
CALLS: dict[str, tuple[tuple[str, ...], bool]] = {
    "request_fulfillment": (("request_fulfillment",), True),
    "analytical_soundness": (("analytical_soundness",), True),
    "structural_coherence": (("structural_coherence",), True),
    "format_style": (("format_style",), False),
    "information_ethics": (("information_integrity", "ethics_compliance"), False),
}

# Judge groups (code keys), and the seven reported dimensions after integration.
JUDGE_DIMENSIONS = (
    "request_fulfillment",
    "analytical_soundness",
    "structural_coherence",
    "format_style",
    "ethics_compliance",
)
DIMENSIONS = (
    "request_fulfillment",
    "analytical_soundness",
    "structural_coherence",
    "format_style",
    "information_integrity",
    "information_sufficiency",
    "ethics_compliance",
)
PAPER_NAMES = {
    "request_fulfillment": "Request Completeness",
    "analytical_soundness": "Evidence Validity",
    "structural_coherence": "Structure Consistency",
    "format_style": "Narration Style",
    "information_integrity": "Information Integrity",
    "information_sufficiency": "Information Sufficiency",
    "ethics_compliance": "Ethics Compliance",
}
FACT_SUBS = {
    "information_integrity": (
        "claim_factuality",
        "citation_validity",
        "reference_accuracy",
        "reference_quality",
        "reference_diversity",
    ),
    "information_sufficiency": ("source_support", "information", "citations", "references"),
}


def call_factors(call: str) -> tuple[Factor, ...]:
    """The exact factor set one judge call must answer."""
    groups = CALLS[call][0]
    return tuple(f for f in FACTORS if f.group in groups)


def call_uses_eg(call: str, eg_scope: str = "code") -> bool:
    """code: EG only in the three content calls; paper: the EG goes to all five calls (spec §6.3 #2)."""
    if eg_scope == "paper":
        return True
    if eg_scope != "code":
        raise ValueError(f"eg_scope must be code|paper, got {eg_scope!r}")
    return CALLS[call][1]


def skeleton(call: str) -> dict[str, dict[str, dict[str, dict[str, list[str]]]]]:
    """{group: {sub: {element: [fid, ...]}}} of one call, in schema order."""
    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for f in call_factors(call):
        out.setdefault(f.group, {}).setdefault(f.sub, {}).setdefault(f.element, []).append(f.fid)
    return out


def rubric_items() -> list[RubricItem]:
    """The 101 factors as release rows shared by every task (task_id '*')."""
    return [
        RubricItem(task_id="*", item_id=f.key, index=i, text=f.text, kind=f.kind, group=[f.group, f.sub, f.element])
        for i, f in enumerate(FACTORS)
    ]
