"""DEER's judge tasks: five rubric calls, batched claim extraction, grouped claim verification.

Each has a typed input, a strict parser (anything off the exact answer shape is a ParseError: the LLM
backend re-asks, then records a failure) and a deterministic offline rule. The offline rules are crude
lexical/structural stand-ins (docs/deer.md, "offline judge"), good for running the pipeline, not for ranking.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.offline import section_params, support_params
from reportbench.judges.scores import support_score
from reportbench.judges.tasks._parsing import extract_json_object, numbered, validate_output
from reportbench.protocols.deer.ivm import parse_position
from reportbench.protocols.deer.rubric import CALLS, FACTORS, Factor, call_factors, skeleton

# ------------------------------------------------------------------------------------------- rubric
RUBRIC_TASKS = {call: f"deer_{call}" for call in CALLS}
AUTHORS_KEYS = dict(zip(CALLS, ("j1", "j2", "j3", "j4", "j5"), strict=True))
CALL_TITLES = {
    "request_fulfillment": "Request Fulfillment",
    "analytical_soundness": "Analytical Soundness",
    "structural_coherence": "Structural Coherence",
    "format_style": "Format and Style",
    "information_ethics": "Information Integrity (recency) and Ethics Compliance",
}


class RubricInput(JudgeInput):
    call: str
    query: str
    report: str
    guidance: str = ""  # the Expert Evaluation Guidance, "" when this call does not get it

    def prompt_values(self) -> dict[str, Any]:
        return {
            "call_title": CALL_TITLES[self.call],
            "rubric": rubric_text(self.call),
            "answer_skeleton": answer_skeleton(self.call),
            "query": self.query,
            "report": self.report,
            "guidance_block": guidance_block(self.guidance),
        }


def rubric_text(call: str) -> str:
    lines: list[str] = []
    last: tuple[str, str] | None = None
    for f in call_factors(call):
        if (f.group, f.sub) != last:
            lines.append(f"## {f.group} / {f.sub}")
            last = (f.group, f.sub)
        kind = "Coverage" if f.kind == "C" else "Quality"
        lines.append(f"- element {f.element}, {f.fid} ({kind}): {f.text}")
    return "\n".join(lines)


def answer_skeleton(call: str) -> str:
    sk = {
        g: {
            s: {e: {fid: {"description": "...", "score": "1-10 or N/A"} for fid in fids} for e, fids in els.items()}
            for s, els in subs.items()
        }
        for g, subs in skeleton(call).items()
    }
    return json.dumps({"scores": sk}, indent=1)


def guidance_block(guidance: str) -> str:
    if not guidance:
        return ""
    return (
        "Expert Evaluation Guidance (EG) for this task. It takes priority over everything else: if any EG "
        "requirement is not met, no factor it bears on may score 7 or more.\n\n"
        f"<guidance>\n{guidance}\n</guidance>\n\n"
    )


class RubricOutput(JudgeOutput):
    call: str
    scores: dict[str, int | None]  # factor key -> 1..10, None = N/A
    rationales: dict[str, str]

    def value(self) -> float | None:
        vals = [v for v in self.scores.values() if v is not None]
        return sum(vals) / len(vals) if vals else None


def _strict_score(v: Any, where: str) -> int | None:
    if v == "N/A":
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ParseError(f'{where}: score must be an integer 1-10 or "N/A", got {v!r}')
    if not 1 <= v <= 10:
        raise ParseError(f"{where}: score {v} is outside 1-10")
    return v


def _parse_record_form(data: dict[str, Any], call: str) -> RubricOutput:
    """Our own record form ({call, scores: {key: 1-10 | null}, rationales}), as stored in `parsed`: accepted with
    the same exact-factor-set and range checks, so stored records re-parse strictly."""
    if data.get("call") != call:
        raise ParseError(f"record is for call {data.get('call')!r}, expected {call!r}")
    want = {f.key for f in call_factors(call)}
    scores, rationales = data.get("scores"), data.get("rationales")
    if (
        not isinstance(scores, dict)
        or not isinstance(rationales, dict)
        or set(scores) != want
        or set(rationales) != want
    ):
        raise ParseError("record scores/rationales must cover exactly the call's factors")
    out = {k: None if v is None else _strict_score(v, k) for k, v in scores.items()}
    if not all(isinstance(v, str) for v in rationales.values()):
        raise ParseError("record rationales must be strings")
    return RubricOutput(call=call, scores=out, rationales=dict(rationales))


def parse_rubric_data(data: Any, call: str) -> RubricOutput:
    """Validate a decoded answer against the exact factor set of `call` (no missing, no extra keys)."""
    if isinstance(data, dict) and set(data) == {"call", "scores", "rationales"}:
        return _parse_record_form(data, call)
    if not isinstance(data, dict) or set(data) != {"scores"}:
        raise ParseError('answer must be an object with exactly the key "scores"')
    sk = skeleton(call)
    got = data["scores"]
    scores: dict[str, int | None] = {}
    rationales: dict[str, str] = {}

    def same_keys(obj: Any, want: set[str], where: str) -> None:
        if not isinstance(obj, dict):
            raise ParseError(f"{where}: expected an object")
        if set(obj) != want:
            missing, extra = sorted(want - set(obj)), sorted(set(obj) - want)
            raise ParseError(f"{where}: missing {missing}, unexpected {extra}")

    same_keys(got, set(sk), "scores")
    for g, subs in sk.items():
        same_keys(got[g], set(subs), f"scores.{g}")
        for s, els in subs.items():
            same_keys(got[g][s], set(els), f"scores.{g}.{s}")
            for e, fids in els.items():
                same_keys(got[g][s][e], set(fids), f"scores.{g}.{s}.{e}")
                for fid in fids:
                    where = f"scores.{g}.{s}.{e}.{fid}"
                    cell = got[g][s][e][fid]
                    same_keys(cell, {"description", "score"}, where)
                    if not isinstance(cell["description"], str):
                        raise ParseError(f"{where}.description must be a string")
                    key = f"{g}.{s}.{e}.{fid}"
                    scores[key] = _strict_score(cell["score"], where)
                    rationales[key] = cell["description"]
    return RubricOutput(call=call, scores=scores, rationales=rationales)


def _parse_rubric_for(call: str) -> Any:
    def parse(raw: str, inputs: RubricInput | None = None) -> RubricOutput:
        return parse_rubric_data(extract_json_object(raw), call)

    return parse


# Offline rubric rule: one signal in [0, 1] per sub-dimension from the report's surface; every factor of the
# sub-dimension gets 1 + round(9 * signal). What it cannot see: correctness, depth, argument quality.
OFFLINE_TARGET_WORDS = 2500  # words at which the length signal saturates
OFFLINE_PARAGRAPH_SENTENCES = 4  # sentences per paragraph at which the paragraph signal saturates
_WORD = re.compile(r"[A-Za-z][A-Za-z\-]{3,}")
_STOP = frozenset(
    "this that with from have will must should report their there which what when where about into "
    "each other such than then them they were been also more most only over these those".split()
)


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _STOP


def report_signals(report: str, query: str, guidance: str) -> dict[str, float]:
    lines = report.splitlines()
    headings = [ln for ln in lines if ln.lstrip().startswith("#")]
    low_heads = " ".join(headings).lower()
    paras = [p for p in re.split(r"\n\s*\n", report) if p.strip() and not p.lstrip().startswith("#")]
    bullets = sum(1 for ln in lines if re.match(r"\s*([-*+]|\d+\.)\s", ln))
    words = len(report.split())
    sent_per_para = [len(re.findall(r"[.!?](\s|$)", p)) for p in paras]
    target = _content_words(guidance or query)
    coverage = len(target & _content_words(report)) / len(target) if target else 0.0
    low = report.lower()

    def has(*ws: str) -> float:
        return min(1.0, sum(1 for w in ws if w in low) / max(1, len(ws) // 2))

    return {
        "coverage": coverage,
        "length": min(1.0, words / OFFLINE_TARGET_WORDS),
        "headings": min(1.0, len(headings) / 5),
        "intro": 1.0 if "intro" in low_heads or "overview" in low_heads else 0.3,
        "conclusion": 1.0 if "conclu" in low_heads or "summary" in low_heads else 0.2,
        "paragraphs": min(1.0, (sum(sent_per_para) / len(sent_per_para) if paras else 0) / OFFLINE_PARAGRAPH_SENTENCES),
        "prose": 1.0 - min(1.0, bullets / max(1, len(lines))),
        "numbers": min(1.0, len(re.findall(r"\d", report)) / 50),
        "has_numbers": 1.0 if re.search(r"\d", report) else 0.0,
        "tables": 1.0 if re.search(r"^\s*\|.*\|\s*$", report, re.MULTILINE) else 0.0,
        "years": 1.0 if re.search(r"\b(19|20)\d{2}\b", report) else 0.0,
        "scope": has("scope", "limitation", "assum", "exclud", "focus"),
        "balance": has("however", "alternative", "contrast", "critic", "on the other hand", "debate"),
        "safety": has("risk", "safety", "harm", "ethic", "impact", "stakeholder"),
        "sensitive": has("gender", "race", "religio", "politic", "ethnic"),
    }


def _sub_signal(sub: str, s: dict[str, float]) -> float | None:
    m = {
        "completeness": (s["coverage"] + s["length"]) / 2,
        "scope": s["scope"],
        "helpfulness": (s["coverage"] + s["conclusion"]) / 2,
        "quantification": s["numbers"] if s["has_numbers"] else None,
        "reasoning": (s["coverage"] + s["paragraphs"]) / 2,
        "introduction": s["intro"],
        "body": (s["coverage"] + s["length"]) / 2,
        "conclusion": s["conclusion"],
        "section": s["headings"],
        "report_format": (s["headings"] + s["prose"]) / 2,
        "writing_quality": (s["paragraphs"] + s["prose"]) / 2,
        "paragraph_quality": s["paragraphs"],
        "readability": s["headings"],
        "recency": 0.5 if s["years"] else None,
        "sensitive_handling": 0.7 if s["sensitive"] else None,
        "safety_impact": s["safety"],
        "perspective_balance": s["balance"],
    }
    return m[sub]


def _offline_rubric_for(call: str) -> Any:
    def offline(inputs: RubricInput, params: dict[str, Any]) -> OfflineVerdict:
        sig = report_signals(inputs.report, inputs.query, inputs.guidance)
        scores: dict[str, int | None] = {}
        rationales: dict[str, str] = {}
        for f in call_factors(call):
            v = _sub_signal(f.sub, sig)
            if v is None or (f.sub == "section" and f.fid == "C3-2" and not sig["tables"]):
                scores[f.key], rationales[f.key] = None, "offline: nothing assessable"
            else:
                scores[f.key] = 1 + round(9 * min(1.0, max(0.0, v)))
                rationales[f.key] = f"offline: {f.sub} signal {v:.2f}"
        return OfflineVerdict(
            RubricOutput(call=call, scores=scores, rationales=rationales),
            "surface signals of the report",
            {k: round(v, 4) for k, v in sig.items()},
        )

    return offline


# ------------------------------------------------------------------------------------- claim extraction
ClaimType = Literal["A", "B", "C", "D", "E", "F"]


class ClaimAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    position: str
    claim: str
    claim_type: ClaimType
    rationale: str
    numeric: bool
    citations: list[str] | None = None
    implicit_citations: list[str] | None = None
    cross_references: list[str] | None = None


class ExtractInput(JudgeInput):
    report: str  # the whole `Lx.Sy:`-labelled report
    targets: list[str]  # "Lx.Sy: sentence" lines of this batch

    def prompt_values(self) -> dict[str, Any]:
        return {"report": self.report, "targets": "\n".join(self.targets)}


class ExtractOutput(JudgeOutput):
    claims: list[ClaimAnswer]

    def value(self) -> float:
        return float(len(self.claims))


def parse_extract(raw: str, inputs: ExtractInput | None = None) -> ExtractOutput:
    out = validate_output(extract_json_object(raw), ExtractOutput)
    allowed = {t.split(":", 1)[0].strip() for t in inputs.targets} if inputs is not None else None
    for i, c in enumerate(out.claims):
        if parse_position(c.position) is None:
            raise ParseError(f"claims.{i}.position {c.position!r} is not of the form Lx.Sy")
        if allowed is not None and c.position not in allowed:
            raise ParseError(f"claims.{i}.position {c.position!r} is not one of this batch's target sentences")
        for ref in c.cross_references or []:
            if parse_position(ref) is None:
                raise ParseError(f"claims.{i}.cross_references: {ref!r} is not of the form Lx.Sy")
        if not c.claim.strip():
            raise ParseError(f"claims.{i}.claim is empty")
    return out


_MARKER = re.compile(r"\[(\d+(?:\s*[-,]\s*\d+)*)\]")


def offline_extract(inputs: ExtractInput, params: dict[str, Any]) -> OfflineVerdict:
    """Each target sentence is one claim: cited -> A (its markers); uncited in a paragraph with a cited
    sentence -> B (evidence = that sentence); uncited with a number -> F; else E. `---` and empty are skipped."""
    parsed = []
    for t in inputs.targets:
        pos, _, text = t.partition(":")
        parsed.append((pos.strip(), text.strip()))
    cited_by_line: dict[str, str] = {}
    for pos, text in parsed:
        if _MARKER.search(text):
            cited_by_line.setdefault(pos.split(".")[0], pos)
    claims = []
    for pos, text in parsed:
        if not re.search(r"[A-Za-z]", text):
            continue
        marks = [m.replace(" ", "") for m in _MARKER.findall(text)]
        cites = [x for m in marks for x in (m.split(",") if "," in m else [m])]
        line = pos.split(".")[0]
        if cites:
            ctype, xref, why = "A", [], "cited in the sentence"
        elif line in cited_by_line:
            ctype, xref, why = "B", [cited_by_line[line]], "uncited; a citation in the same paragraph"
        elif re.search(r"\d", text):
            ctype, xref, why = "F", [], "uncited specific figure"
        else:
            ctype, xref, why = "E", [], "uncited general statement"
        claims.append(
            ClaimAnswer(
                position=pos,
                claim=_MARKER.sub("", text).strip(),
                claim_type=ctype,
                rationale=f"offline: {why}",
                numeric=bool(re.search(r"\d", _MARKER.sub("", text))),
                citations=cites,
                implicit_citations=[],
                cross_references=xref,
            )
        )
    return OfflineVerdict(ExtractOutput(claims=claims), f"{len(claims)} sentence claims")


# ----------------------------------------------------------------------------------- claim verification
class VerifyResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_index: int
    explanation: str
    result: Literal["supported", "not_supported", "conflict", "error"]


class VerifyInput(JudgeInput):
    url: str
    claims: list[str]
    context: str

    def prompt_values(self) -> dict[str, Any]:
        return {"url": self.url, "claims": numbered(self.claims), "context": self.context}


class VerifyOutput(JudgeOutput):
    reliable_explanation: str
    reliable: bool
    results: list[VerifyResult]

    def value(self) -> float:
        return sum(1 for r in self.results if r.result == "supported") / len(self.results) if self.results else 0.0


def parse_verify(raw: str, inputs: VerifyInput | None = None) -> VerifyOutput:
    """Indices must be 1..n and unique; an index left out is allowed and the claim stays `unverified`."""
    out = validate_output(extract_json_object(raw), VerifyOutput)
    seen: set[int] = set()
    n = len(inputs.claims) if inputs is not None else None
    for r in out.results:
        if isinstance(r.claim_index, bool) or r.claim_index < 1 or (n is not None and r.claim_index > n):
            raise ParseError(f"claim_index {r.claim_index} is outside 1..{n}")
        if r.claim_index in seen:
            raise ParseError(f"claim_index {r.claim_index} is answered twice")
        seen.add(r.claim_index)
    return out


RELIABLE_HOSTS = (
    ".gov",
    ".edu",
    "arxiv.org",
    "doi.org",
    "nature.com",
    "acm.org",
    "ieee.org",
    "who.int",
    ".ac.",
    "springer",
    "sciencedirect",
    "nih.gov",
    "example-journal",
)


def offline_verify(inputs: VerifyInput, params: dict[str, Any]) -> OfflineVerdict:
    """Supported iff the lexical support score S(claim, context) >= the judge's support threshold."""

    thr = float(section_params(params, "support")["threshold"])
    sp = support_params(params)
    results = []
    for i, claim in enumerate(inputs.claims, 1):
        s = support_score(claim, inputs.context, sp)
        label = "supported" if s.score >= thr else "not_supported"
        results.append(VerifyResult(claim_index=i, explanation=f"offline: S={s.score:.4f} vs {thr:.4f}", result=label))
    host = inputs.url.lower()
    reliable = any(h in host for h in RELIABLE_HOSTS)
    return OfflineVerdict(
        VerifyOutput(reliable_explanation="offline: host list", reliable=reliable, results=results),
        f"{sum(r.result == 'supported' for r in results)}/{len(results)} supported",
    )


# ---------------------------------------------------------------------------------------------- tasks
def _rubric_task(call: str) -> JudgeTask:
    return JudgeTask(
        name=RUBRIC_TASKS[call],
        prompt_id="deer/rubric.yaml",
        input_model=RubricInput,
        output_model=RubricOutput,
        parse=_parse_rubric_for(call),
        offline=_offline_rubric_for(call),
        structured=False,
        description=f"DEER rubric call {call}: {len(call_factors(call))} factors, 1-10 or N/A each",
        authors_step=f"deer/{AUTHORS_KEYS[call]}",
    )


TASKS: tuple[JudgeTask, ...] = (
    *(_rubric_task(c) for c in CALLS),
    JudgeTask(
        "deer_extract",
        "deer/extract.yaml",
        ExtractInput,
        ExtractOutput,
        parse_extract,
        offline_extract,
        description="DEER batched claim extraction with classes A-F",
        authors_step="deer/claim_extraction",
    ),
    JudgeTask(
        "deer_verify",
        "deer/verify.yaml",
        VerifyInput,
        VerifyOutput,
        parse_verify,
        offline_verify,
        description="DEER grouped claim verification against one URL's context",
        authors_step="deer/claim_verification",
    ),
)

SAMPLE_INPUTS: dict[str, JudgeInput] = {
    **{
        RUBRIC_TASKS[c]: RubricInput(call=c, query="Q {x}", report="# R\n\nText [1].", guidance="EG 50% {y}")
        for c in CALLS
    },
    "deer_extract": ExtractInput(report="L1.S1: A {b} [1].", targets=["L1.S1: A {b} [1]."]),
    "deer_verify": VerifyInput(url="https://x.org", claims=["c1", "c {2}"], context="ctx {z}"),
}
ANSWER_KEYS = {
    **{RUBRIC_TASKS[c]: ['"scores"', '"description"', '"score"'] for c in CALLS},
    "deer_extract": ['"claims"', '"position"', '"claim_type"', '"cross_references"'],
    "deer_verify": ['"results"', '"claim_index"', '"reliable"'],
}

__all__ = ["ANSWER_KEYS", "FACTORS", "Factor", "RUBRIC_TASKS", "SAMPLE_INPUTS", "TASKS"]
