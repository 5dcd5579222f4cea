"""ResearcherBench judge tasks: rubric coverage, claim extraction, claim verification.

Each has a typed input (the prompt's placeholders), a typed output, a strict parser (ParseError on anything
malformed, never a guess) and a deterministic offline rule (lexical; thresholds are module constants below).
The authors' substring fallback for rubric verdicts lives in a separate task, `researcherbench_rubric_compat`,
selected by `judging.rubric.compat_authors_parsing` (default off).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.tasks._parsing import ExactInt, parse_json_output
from reportbench.protocols.researcherbench.text import (
    content_words,
    first_source,
    reference_urls,
    sentences_of,
    share_present,
    strip_markers,
)

RUBRIC_TASK = "researcherbench_rubric"
RUBRIC_COMPAT_TASK = "researcherbench_rubric_compat"
EXTRACT_TASK = "researcherbench_claims"
VERIFY_TASK = "researcherbench_verify"

# Offline thresholds (lexical stand-ins for an LLM judge; see docs/researcherbench.md).
OFFLINE_RUBRIC_MIN_SHARE = 0.6  # share of the item's content words present in the response -> covered
OFFLINE_CLAIM_MIN_WORDS = 6  # shorter sentences (and headings) are not claims
OFFLINE_VERIFY_MIN_SHARE = 0.6  # share of the claim's content words on the page -> yes
OFFLINE_VERIFY_MIN_PAGE_CHARS = 80  # a page with less text than this cannot tell -> unknown
VERDICTS = ("yes", "no", "unknown")


# ------------------------------------------------------------------------------------------- rubric
class RubricInput(JudgeInput):
    question: str
    item: str
    weight: int
    response: str


class RubricOutput(JudgeOutput):
    covered: bool
    justification: str = ""

    def value(self) -> float:
        return 1.0 if self.covered else 0.0

    def label(self) -> str:
        return "yes" if self.covered else "no"

    def explanation(self) -> str | None:
        return self.justification or None


_LEAD_RE = re.compile(r"^[\s*_#>`\"'“”‘’]*")
_VERDICT_RE = re.compile(r"^(yes|no)(?![a-z0-9])", re.IGNORECASE)


def parse_rubric(raw: str, inputs: Any = None) -> RubricOutput:
    """Leading markdown and quotes stripped, then a leading `yes` or `no` token; anything else fails.

    The exact JSON record form `{"covered": bool, "justification": str}` is accepted too (what a judgment
    stores as `parsed`; the offline rule's output re-parses through the same parser)."""
    if raw is None or not raw.strip():
        raise ParseError("empty answer")
    if raw.strip().startswith("{"):  # the task's own record form (offline output, re-parsed): exact JSON only
        return parse_json_output(raw, RubricOutput)
    text = _LEAD_RE.sub("", raw)
    m = _VERDICT_RE.match(text)
    if not m:
        raise ParseError(f"answer does not begin with yes or no: {raw.strip()[:60]!r}")
    rest = text[m.end() :].lstrip("*_\"'”’ \t").lstrip(":-–—.,").strip()
    return RubricOutput(covered=m.group(1).lower() == "yes", justification=rest)


def parse_rubric_authors(raw: str, inputs: Any = None) -> RubricOutput:
    """The authors' rule (compat only): startswith yes:/yes /no:/no , else 'yes' anywhere -> covered."""
    if (raw or "").strip().startswith('{"covered"'):  # our own record form (see parse_rubric)
        try:
            return parse_json_output(raw, RubricOutput)
        except ParseError:
            pass
    low = (raw or "").strip().lower()
    if low.startswith(("yes:", "yes ")):
        covered = True
    elif low.startswith(("no:", "no ")):
        covered = False
    else:
        covered = "yes" in low
    return RubricOutput(covered=covered, justification=(raw or "").strip())


def offline_rubric(inputs: RubricInput, params: dict[str, Any]) -> OfflineVerdict:
    share, n = share_present(inputs.item, content_words(inputs.response))
    covered = n > 0 and share >= OFFLINE_RUBRIC_MIN_SHARE
    why = f"{share:.2f} of {n} item words in the response (threshold {OFFLINE_RUBRIC_MIN_SHARE})"
    return OfflineVerdict(RubricOutput(covered=covered, justification=why), why, {"share": share, "n_words": n})


# --------------------------------------------------------------------------------------- extraction
class ExtractInput(JudgeInput):
    question: str
    section: str
    references: str


class ExtractedClaim(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim: str
    context: str
    source: str


class ExtractOutput(JudgeOutput):
    claims: list[ExtractedClaim]

    def value(self) -> float:
        return float(len(self.claims))


_FENCE_RE = re.compile(r"^```(?:json|JSON)?[ \t]*\n(?P<body>.*?)\n?[ \t]*```$", re.DOTALL)


def _json_list(raw: str, key: str) -> list[Any]:
    """The answer's list: a bare JSON array, or an object whose single key is `key` (fences allowed)."""
    if raw is None or not raw.strip():
        raise ParseError("empty answer")
    text = raw.strip()
    fence = _FENCE_RE.match(text)
    if fence:
        text = fence.group("body").strip()
    if not text or text[0] not in "[{" or text[-1] not in "]}":
        raise ParseError("answer is not a bare JSON array or object")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} at char {exc.pos}") from exc
    if isinstance(data, dict):
        if list(data) != [key]:
            raise ParseError(f"expected an object with the single key {key!r}, got keys {sorted(data)[:5]}")
        data = data[key]
    if not isinstance(data, list):
        raise ParseError(f"{key!r} is not a list")
    return data


def parse_extract(raw: str, inputs: Any = None) -> ExtractOutput:
    """Each entry exactly {claim, context, source}, all strings, claim non-empty ("" source = uncited)."""
    items = _json_list(raw, "claims")
    claims = []
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise ParseError(f"claims[{i}] is not an object")
        try:
            c = ExtractedClaim.model_validate(it, strict=True)
        except ValidationError as exc:
            raise ParseError(f"claims[{i}]: {exc.errors()[0]['msg']} ({exc.errors()[0]['loc']})") from None
        if not c.claim.strip():
            raise ParseError(f"claims[{i}]: empty claim")
        claims.append(c)
    return ExtractOutput(claims=claims)


def offline_extract(inputs: ExtractInput, params: dict[str, Any]) -> OfflineVerdict:
    """Every sentence of 6+ words that is not a heading is a claim; its source is its own link or marker."""
    refs = reference_urls(inputs.references)
    claims = []
    for sent in sentences_of(inputs.section):
        if sent.lstrip().startswith(("#", "|", "<")):
            continue
        text = strip_markers(sent)
        if len(text.split()) < OFFLINE_CLAIM_MIN_WORDS:
            continue
        claims.append(ExtractedClaim(claim=text, context=sent, source=first_source(sent, refs)))
    cited = sum(1 for c in claims if c.source)
    return OfflineVerdict(ExtractOutput(claims=claims), f"{len(claims)} sentence claims, {cited} with a source")


# ------------------------------------------------------------------------------------- verification
class VerifyClaim(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int
    claim: str
    context: str


class VerifyInput(JudgeInput):
    source: str
    claims: list[VerifyClaim]

    def prompt_values(self) -> dict[str, Any]:
        return {"source": self.source, "claim_list": claim_list(self.claims)}


def claim_list(claims: list[VerifyClaim]) -> str:
    """`[i]\\nClaim: ...\\nContext: ...\\n` blocks (the layout the authors' verifier reads)."""
    return "\n".join(f"[{c.id}]\nClaim: {c.claim}\nContext: {c.context}\n" for c in claims)


class VerifyResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[int, ExactInt]
    result: Literal["yes", "no", "unknown"]


class VerifyOutput(JudgeOutput):
    results: list[VerifyResult]

    def value(self) -> float:
        return sum(r.result == "yes" for r in self.results) / len(self.results) if self.results else 0.0

    def by_id(self) -> dict[int, str]:
        return {r.id: r.result for r in self.results}


def parse_verify(raw: str, inputs: Any = None) -> VerifyOutput:
    """[{id, result}] mapped by id: results case-normalised, one per claim, ids exactly those asked."""
    items = _json_list(raw, "results")
    results = []
    for i, it in enumerate(items):
        if not isinstance(it, dict) or set(it) != {"id", "result"}:
            raise ParseError(f"results[{i}] is not exactly {{id, result}}")
        res = it["result"].strip().lower() if isinstance(it["result"], str) else it["result"]
        try:
            results.append(VerifyResult.model_validate({"id": it["id"], "result": res}, strict=True))
        except ValidationError as exc:
            raise ParseError(f"results[{i}]: {exc.errors()[0]['msg']}") from None
    ids = [r.id for r in results]
    if len(set(ids)) != len(ids):
        raise ParseError(f"duplicate ids in results: {ids}")
    if inputs is not None:
        want = sorted(c.id for c in inputs.claims)
        if sorted(ids) != want:
            raise ParseError(f"results for ids {sorted(ids)} but the claims are {want}")
    return VerifyOutput(results=sorted(results, key=lambda r: r.id))


def offline_verify(inputs: VerifyInput, params: dict[str, Any]) -> OfflineVerdict:
    page = inputs.source
    if len(page.strip()) < OFFLINE_VERIFY_MIN_PAGE_CHARS:
        out = [VerifyResult(id=c.id, result="unknown") for c in inputs.claims]
        return OfflineVerdict(VerifyOutput(results=out), f"page has {len(page.strip())} chars: cannot tell")
    words = content_words(page)
    out = []
    for c in inputs.claims:
        share, n = share_present(c.claim, words)
        out.append(VerifyResult(id=c.id, result="yes" if n and share >= OFFLINE_VERIFY_MIN_SHARE else "no"))
    n_yes = sum(r.result == "yes" for r in out)
    return OfflineVerdict(
        VerifyOutput(results=out), f"{n_yes}/{len(out)} claims with >= {OFFLINE_VERIFY_MIN_SHARE} word share"
    )


# ---------------------------------------------------------------------------------------- the tasks
TASKS = (
    JudgeTask(
        RUBRIC_TASK,
        "researcherbench/rubric.yaml",
        RubricInput,
        RubricOutput,
        parse_rubric,
        offline_rubric,
        structured=False,
        description="Is the weighted rubric item covered by the whole response? leading yes/no",
        authors_step="researcherbench/rubric",
    ),
    JudgeTask(
        RUBRIC_COMPAT_TASK,
        "researcherbench/rubric.yaml",
        RubricInput,
        RubricOutput,
        parse_rubric_authors,
        offline_rubric,
        structured=False,
        description="Rubric coverage with the authors' substring fallback (compat_authors_parsing)",
        authors_step="researcherbench/rubric",
    ),
    JudgeTask(
        EXTRACT_TASK,
        "researcherbench/claims.yaml",
        ExtractInput,
        ExtractOutput,
        parse_extract,
        offline_extract,
        description="Factual claims of one 5-paragraph section, each with its cited URL or ''",
        authors_step="researcherbench/claim_extraction",
    ),
    JudgeTask(
        VERIFY_TASK,
        "researcherbench/verify.yaml",
        VerifyInput,
        VerifyOutput,
        parse_verify,
        offline_verify,
        description="Each claim citing one page: yes / no / unknown against the fetched page text",
        authors_step="researcherbench/claim_verification",
    ),
)
