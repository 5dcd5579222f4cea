"""DeepEval judge tasks (our wording, prompts/liveresearchbench/): presentation and coverage checklists,
consistency and citation association (issue lists), depth pairwise, and the two judge steps of our citation
accuracy reconstruction (relevance gate, support check).

Parsers are strict: the whole answer must be the JSON object of the task. Checklist keys are normalised only
in spelling ('P1' -> 'p1', 'q01' -> 'q1'); which keys are missing or extra is decided by the scorer (mode
paper | code), never guessed here. A depth answer whose `total` is not the sum of its dimensions fails.

Offline rules are deterministic lexical/structural heuristics (judge card: docs/liveresearchbench.md). Each
ensemble member gets its own offline thresholds through the `rule_params` input field (JSON, not shown to an
LLM), so two offline members can disagree the way two LLM judges do.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reportbench.fetch.urls import normalise_url
from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.tasks._parsing import extract_json_object, validate_output
from reportbench.protocols.liveresearchbench.rules import DEPTH_DIMENSIONS, issue_bin_score, tie_rule
from reportbench.reports.references import parse_reference_entries, split_reference_section

PROMPT_DIR = "liveresearchbench"

# Offline thresholds (defaults; members override them under benchmarks.liveresearchbench.judging.offline).
DEFAULT_RULES: dict[str, float] = {
    "coverage_recall": 0.6,  # share of an item's content words the report must contain
    "claim_min_words": 8,  # citation association: a sentence this long with a figure needs a citation
    "depth_scale": 1.0,  # multiplies the cue counts behind each depth dimension
    "relevance_overlap": 0.15,  # share of the task's content words in the page title + opening
    "support_recall": 0.6,  # share of a claim's content words found in the page
}

_STOP = frozenset(
    """a an and are as at be been by can could did do does each either for from has have how in include includes
    including into is it its it's of on or report the their them these they this those to was were what when
    where which while who why will with within would any all about also than that there then such per via more
    most other answer provide provides provided give given state states list lists name names describe explain
    least""".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9\-']*")
_NUM = re.compile(r"(?<![\w.])(\d+(?:[.,]\d+)*)(?![\w])")


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP and (len(w) > 2 or w.isdigit())]


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in _NUM.findall(text) if not re.fullmatch(r"(19|20)\d\d", n)}


def rules(rule_params: str) -> dict[str, float]:
    """Defaults overridden by the member's JSON; an unknown name is an error (a typo must not pass silently)."""
    out = dict(DEFAULT_RULES)
    if rule_params:
        given = json.loads(rule_params)
        unknown = set(given) - set(out)
        if unknown:
            raise ValueError(f"unknown liveresearchbench offline rule(s) {sorted(unknown)}; known {sorted(out)}")
        out.update({k: float(v) for k, v in given.items()})
    return out


class _Input(JudgeInput):
    """Two member-specific fields that are never shown to a judge: the offline thresholds and, for
    `judge.prompts=authors`, which of the authors' provider paths (OpenAI or Gemini framing) this member uses."""

    rule_params: str = Field(default="", description="offline thresholds of this member (JSON); not in prompts")
    authors_path: Literal["openai", "gemini"] = Field(default="openai", description="authors' pack provider path")

    def prompt_values(self) -> dict[str, Any]:
        values = self.model_dump()
        values.pop("rule_params", None)
        values.pop("authors_path", None)
        return values


# ------------------------------------------------------------------------------------------ checklists
class ChecklistLine(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    text: str


def render_checklist(lines: list[ChecklistLine]) -> str:
    return "\n".join(f"- {c.id}: {c.text}" for c in lines)


class ChecklistInput(_Input):
    query: str
    report: str
    criteria: list[ChecklistLine]
    eval_date: str

    def prompt_values(self) -> dict[str, Any]:
        values = super().prompt_values()
        values["criteria"] = render_checklist(self.criteria)
        return values


class ItemVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    score: Literal[0, 1] = Field(json_schema_extra={"strict_int": True})
    justification: str

    @classmethod
    def strict(cls, data: Any, where: str) -> ItemVerdict:
        if not isinstance(data, dict):
            raise ParseError(f"{where}: expected an object with score and justification")
        score = data.get("score")
        if isinstance(score, bool) or not isinstance(score, int) or score not in (0, 1):
            raise ParseError(f"{where}: score must be the integer 0 or 1, got {score!r}")
        if not isinstance(data.get("justification"), str):
            raise ParseError(f"{where}: justification must be a string")
        if set(data) != {"score", "justification"}:
            raise ParseError(f"{where}: unexpected keys {sorted(set(data) - {'score', 'justification'})}")
        return cls(score=score, justification=data["justification"])


class ChecklistOutput(JudgeOutput):
    evaluations: dict[str, ItemVerdict]

    def value(self) -> float:
        return float(sum(v.score for v in self.evaluations.values()))

    def scores(self) -> dict[str, int]:
        return {k: v.score for k, v in self.evaluations.items()}


_KEY_RE = re.compile(r"^([pqPQ])0*(\d+)$")


def normalise_key(key: str) -> str:
    """'P1' -> 'p1', 'q01' -> 'q1'; anything else unchanged (the scorer flags it as extra)."""
    m = _KEY_RE.match(key.strip())
    return f"{m.group(1).lower()}{m.group(2)}" if m else key


def parse_checklist(raw: str, inputs: Any = None) -> ChecklistOutput:
    data = extract_json_object(raw)
    if set(data) != {"evaluations"} or not isinstance(data["evaluations"], dict):
        raise ParseError('expected exactly {"evaluations": {<id>: {score, justification}, ...}}')
    out: dict[str, ItemVerdict] = {}
    for key, verdict in data["evaluations"].items():
        k = normalise_key(str(key))
        if k in out:
            raise ParseError(f"key {key!r} duplicates {k!r} after normalisation")
        out[k] = ItemVerdict.strict(verdict, f"evaluations.{key}")
    return ChecklistOutput(evaluations=out)


# -- offline: presentation
_HEADING = re.compile(r"^#{1,6}\s+\S", re.MULTILINE)
_REF_HEADING = re.compile(r"^#{1,6}\s*(sources|references|bibliography|works cited)\b", re.IGNORECASE | re.MULTILINE)
_MARKER = re.compile(r"\[(\d+(?:\s*[,–-]\s*\d+)*)\]")
_MD_LINK = re.compile(r"\]\((https?://[^)]+)\)")
_BARE = re.compile(r"(?<!\()https?://\S+")


def _marker_keys(text: str) -> set[str]:
    keys = set()
    for m in _MARKER.finditer(text):
        for part in re.split(r"\s*,\s*", m.group(1)):
            r = re.match(r"(\d+)\s*[–-]\s*(\d+)$", part)
            keys.update(str(i) for i in range(int(r.group(1)), int(r.group(2)) + 1)) if r else keys.add(part)
    return keys


def presentation_checks(report: str) -> dict[str, tuple[int, str]]:
    """Structural checks standing in for p1..p10 (what a lexical rule can see; grammar only crudely)."""
    body, section = split_reference_section(report)
    entries, _warn = parse_reference_entries(section) if section else ([], [])
    entry_keys = [e.label for e in entries if e.label]
    cited = _marker_keys(body)
    tables = [ln for ln in report.splitlines() if ln.strip().startswith("|")]
    out: dict[str, tuple[int, str]] = {}
    n_head = len(_HEADING.findall(body))
    out["p1"] = (int(n_head >= 2), f"{n_head} headings")
    lower_starts = [x for x in _sentences(report) if x[:1].islower()]
    doubled = re.findall(r"\b(\w+)\s+\1\b", body, re.IGNORECASE)
    out["p2"] = (int(not lower_starts and not doubled), f"{len(lower_starts)} lowercase starts, {len(doubled)} doubled")
    uncited = [k for k in entry_keys if k not in cited]
    out["p3"] = (int(bool(entries) and not uncited), f"uncited entries {uncited[:5]}" if entries else "no list")
    dangling = sorted(cited - set(entry_keys), key=lambda k: int(k))
    out["p4"] = (int(not dangling and (bool(cited) or not entries)), f"markers without entry {dangling[:5]}")
    n_ref = len(_REF_HEADING.findall(report))
    out["p5"] = (int(n_ref == 1), f"{n_ref} reference headings")
    styles = sum(bool(x) for x in (cited, _MD_LINK.findall(body), _BARE.findall(body)))
    out["p6"] = (int(styles == 1), f"{styles} citation styles")
    broken = re.findall(r"\]\s+[a-z]", body)
    out["p7"] = (int(bool(cited) and not broken), f"{len(broken)} markers inside a clause")
    rows = [ln for ln in tables if not re.match(r"^\|[\s|:-]+\|$", ln.strip())]
    widths = {ln.strip().strip("|").count("|") for ln in rows}
    empty = [ln for ln in rows if re.search(r"\|\s*\|", ln)]
    out["p8"] = (int(len(widths) <= 1 and not empty), f"{len(rows)} table rows, {len(empty)} with empty cells")
    seps = [ln for ln in tables if re.match(r"^\|[\s|:-]+\|$", ln.strip())]
    out["p9"] = (int(n_head >= 1 and (not tables or bool(seps))), "markdown headings/tables")
    nums = [int(k) for k in entry_keys if k.isdigit()]
    urls = [normalise_url(m.group(0).rstrip(".,;)")) for e in entries for m in [_BARE.search(e.text)] if m]
    ok10 = bool(nums) and sorted(nums) == list(range(1, len(nums) + 1)) and len(set(urls)) == len(urls)
    out["p10"] = (int(ok10), f"numbers {nums[:3]}..., {len(urls) - len(set(urls))} duplicate URLs")
    return out


def _presentation_offline(inputs: ChecklistInput, params: dict[str, Any]) -> OfflineVerdict:
    checks = presentation_checks(inputs.report)
    ev = {
        c.id: ItemVerdict(score=checks[c.id][0], justification=checks[c.id][1]) if c.id in checks else None
        for c in inputs.criteria
    }
    ev = {k: v for k, v in ev.items() if v is not None}
    return OfflineVerdict(ChecklistOutput(evaluations=ev), "structural presentation checks")


def _coverage_offline(inputs: ChecklistInput, params: dict[str, Any]) -> OfflineVerdict:
    r = rules(inputs.rule_params)
    report_words = set(_words(inputs.report))
    report_nums = _numbers(inputs.report)
    ev = {}
    for c in inputs.criteria:
        words = set(_words(re.sub(r"\*\*", "", c.text)))
        recall = len(words & report_words) / len(words) if words else 0.0
        nums_ok = _numbers(c.text) <= report_nums
        ok = int(recall >= r["coverage_recall"] and nums_ok)
        ev[c.id] = ItemVerdict(score=ok, justification=f"content-word recall {recall:.2f}; numbers present {nums_ok}")
    return OfflineVerdict(ChecklistOutput(evaluations=ev), "lexical coverage", {"threshold": r["coverage_recall"]})


# ------------------------------------------------------------------------------------------- pointwise
class PointwiseInput(_Input):
    query: str
    report: str
    eval_date: str


class PointwiseOutput(JudgeOutput):
    specific_issues: list[str]
    total_issues: int = Field(ge=0)
    score: int = Field(ge=10, le=100)
    justification: str

    def value(self) -> float:
        return float(self.score)


def parse_pointwise(raw: str, inputs: Any = None) -> PointwiseOutput:
    data = extract_json_object(raw)
    for key in ("total_issues", "score"):
        v = data.get(key)
        if isinstance(v, bool) or (v is not None and not isinstance(v, int)):
            raise ParseError(f"{key} must be a JSON integer, got {v!r}")
    return validate_output(data, PointwiseOutput)


def _sentences(text: str) -> list[str]:
    body, _ = split_reference_section(text)
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "|"))]
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(lines)) if s.strip()]


_TOKEN = re.compile(r"\d+(?:[.,]\d+)*%?|[a-z][a-z\-']*")


def consistency_issues(report: str) -> list[str]:
    """Conflicting figures: the same two content words and unit around different numbers ('growth rate ... 8
    percent' vs 'growth rate is 6 percent'). Walking back from a number skips stop words and years; any other
    token ends the walk, so list rows ('weight 11 kg, range 60 km') do not pair up."""
    seen: dict[tuple[str, ...], dict[str, str]] = {}
    for s in _sentences(report):
        tokens = _TOKEN.findall(s.lower())
        for i, tok in enumerate(tokens):
            if not tok[0].isdigit() or re.fullmatch(r"(19|20)\d\d", tok):
                continue
            ctx: list[str] = []
            for t in reversed(tokens[:i]):
                if t in _STOP or re.fullmatch(r"(19|20)\d\d", t):
                    continue
                if t[0].isdigit() or len(t) <= 2:
                    break
                ctx.insert(0, t)
                if len(ctx) == 2:
                    break
            if len(ctx) < 2:
                continue
            unit = "percent" if tok.endswith("%") else (tokens[i + 1] if i + 1 < len(tokens) else "")
            if unit[:1].isdigit():
                unit = ""
            value = tok.rstrip("%").replace(",", "")
            seen.setdefault((*ctx, unit), {}).setdefault(value, s)
    issues = []
    for key, values in sorted(seen.items()):
        vals = sorted(values)
        for v in vals[1:]:
            issues.append(f"'{' '.join(key[:2])}' is given as {vals[0]} and as {v} {key[2]}".rstrip())
    return issues


def _consistency_offline(inputs: PointwiseInput, params: dict[str, Any]) -> OfflineVerdict:
    issues = consistency_issues(inputs.report)
    out = PointwiseOutput(
        specific_issues=issues,
        total_issues=len(issues),
        score=issue_bin_score(len(issues)),
        justification="conflicting figures found by lexical matching",
    )
    return OfflineVerdict(out, f"{len(issues)} conflicting figures")


def uncited_claims(report: str, min_words: int) -> list[str]:
    """Sentences of at least `min_words` words stating a figure, with no citation marker or link."""
    out = []
    for s in _sentences(report):
        if len(s.split()) < min_words or not re.search(r"\d", s):
            continue
        if _MARKER.search(s) or "http" in s:
            continue
        out.append(s[:200])
    return out


def _citation_offline(inputs: PointwiseInput, params: dict[str, Any]) -> OfflineVerdict:
    r = rules(inputs.rule_params)
    issues = uncited_claims(inputs.report, int(r["claim_min_words"]))
    out = PointwiseOutput(
        specific_issues=issues,
        total_issues=len(issues),
        score=issue_bin_score(len(issues)),
        justification="sentences with figures and no citation",
    )
    return OfflineVerdict(out, f"{len(issues)} uncited figure sentences")


# ----------------------------------------------------------------------------------------------- depth
class DepthInput(_Input):
    query: str
    report_a: str
    report_b: str


class DimScores(BaseModel):
    model_config = ConfigDict(extra="forbid")
    granularity: int = Field(ge=0, le=5)
    insight: int = Field(ge=0, le=5)
    critique: int = Field(ge=0, le=5)
    evidence: int = Field(ge=0, le=5)
    density: int = Field(ge=0, le=5)
    total: int = Field(ge=0, le=25)

    def dims(self) -> dict[str, int]:
        return {d: getattr(self, d) for d in DEPTH_DIMENSIONS}

    @model_validator(mode="after")
    def _total_is_the_sum(self) -> DimScores:
        if self.total != sum(self.dims().values()):
            raise ValueError(f"total={self.total} is not the sum of its dimensions ({sum(self.dims().values())})")
        return self


class DepthScores(BaseModel):
    model_config = ConfigDict(extra="forbid")
    A: DimScores
    B: DimScores


class DepthFlaws(BaseModel):
    model_config = ConfigDict(extra="forbid")
    A: list[str]
    B: list[str]


class DepthOutput(JudgeOutput):
    winner: Literal["A", "B", "tie"]
    scores: DepthScores
    justification: str
    major_flaws: DepthFlaws

    def value(self) -> float:
        return float(self.scores.A.total - self.scores.B.total)

    def label(self) -> str:
        return self.winner

    def winner_from_totals(self, margin: float = 1.0) -> str:
        t = tie_rule(self.scores.A.total, self.scores.B.total, margin)
        return {"eval": "A", "ref": "B", "tie": "tie"}[t]


def parse_depth(raw: str, inputs: Any = None) -> DepthOutput:
    out = validate_output(extract_json_object(raw), DepthOutput)
    for side in ("A", "B"):
        s = getattr(out.scores, side)
        if s.total != sum(s.dims().values()):
            raise ParseError(
                f"scores.{side}.total={s.total} is not the sum of its dimensions ({sum(s.dims().values())})"
            )
    return out


_CUES = {
    "granularity": ("because", "due to", "as a result", "leads to", "therefore", "driven by"),
    "insight": ("trade-off", "tradeoff", "implies", "implication", "suggests", "means that"),
    "critique": ("limitation", "assumption", "however", "uncertain", "caveat", "risk"),
}


_DEPTH_MEMO: dict[bytes, dict[str, int]] = {}  # sha256 of a report -> its unscaled dimension counts
_DEPTH_MEMO_MAX = 1 << 16


def _depth_counts(report: str) -> dict[str, int]:
    """A report's unscaled dimension counts, remembered by its sha256 within a process: `cross@` compares the
    reference's report of a task with every system's, in both orders and for every member (8 × at 3 systems and
    2 members), and each system's twice per member; counted once each (issue 36)."""
    key = hashlib.sha256(report.encode("utf-8", "surrogatepass")).digest()
    got = _DEPTH_MEMO.get(key)
    if got is None:
        low = report.lower()
        got = {d: sum(low.count(c) for c in cues) for d, cues in _CUES.items()}
        sentences = _sentences(report)
        got["evidence"] = sum(1 for s in sentences if _MARKER.search(s) and _numbers(s)) // 2
        got["density"] = round(10 * sum(got[d] for d in _CUES) / max(1, len(sentences)))
        if len(_DEPTH_MEMO) >= _DEPTH_MEMO_MAX:
            _DEPTH_MEMO.clear()
        _DEPTH_MEMO[key] = got
    return got


def depth_dimensions(report: str, scale: float = 1.0) -> dict[str, int]:
    dims = _depth_counts(report)
    return {d: max(0, min(5, round(dims[d] * scale))) for d in DEPTH_DIMENSIONS}


def _depth_offline(inputs: DepthInput, params: dict[str, Any]) -> OfflineVerdict:
    r = rules(inputs.rule_params)
    a, b = depth_dimensions(inputs.report_a, r["depth_scale"]), depth_dimensions(inputs.report_b, r["depth_scale"])
    sa, sb = DimScores(**a, total=sum(a.values())), DimScores(**b, total=sum(b.values()))
    out = DepthOutput(
        winner="tie",
        scores=DepthScores(A=sa, B=sb),
        justification="analytic cue counts",
        major_flaws=DepthFlaws(A=[], B=[]),
    )
    out = out.model_copy(update={"winner": out.winner_from_totals()})
    return OfflineVerdict(out, f"totals A={sa.total} B={sb.total}")


# ------------------------------------------------------------------------- citation accuracy (ours)
class RelevanceInput(_Input):
    query: str
    url: str
    title: str
    opening: str


class RelevanceOutput(JudgeOutput):
    relevant: int = Field(ge=0, le=1)
    reason: str

    def value(self) -> float:
        return float(self.relevant)


def parse_relevance(raw: str, inputs: Any = None) -> RelevanceOutput:
    data = extract_json_object(raw)
    if isinstance(data.get("relevant"), bool):
        raise ParseError("relevant must be the integer 0 or 1")
    return validate_output(data, RelevanceOutput)


def _relevance_offline(inputs: RelevanceInput, params: dict[str, Any]) -> OfflineVerdict:
    r = rules(inputs.rule_params)
    q = set(_words(inputs.query))
    page = set(_words(f"{inputs.title} {inputs.opening}"))
    overlap = len(q & page) / len(q) if q else 0.0
    ok = int(overlap >= r["relevance_overlap"])
    return OfflineVerdict(RelevanceOutput(relevant=ok, reason=f"task-word overlap {overlap:.2f}"), "lexical gate")


class SupportInput(_Input):
    query: str
    claim: str
    url: str
    page_text: str


class SupportOutput(JudgeOutput):
    supported: int = Field(ge=0, le=1)
    evidence: str

    def value(self) -> float:
        return float(self.supported)


def parse_support(raw: str, inputs: Any = None) -> SupportOutput:
    data = extract_json_object(raw)
    if isinstance(data.get("supported"), bool):
        raise ParseError("supported must be the integer 0 or 1")
    return validate_output(data, SupportOutput)


def _support_offline(inputs: SupportInput, params: dict[str, Any]) -> OfflineVerdict:
    r = rules(inputs.rule_params)
    claim = re.sub(r"\[\d[^\]]*\]", " ", inputs.claim)
    words = set(_words(claim))
    page = set(_words(inputs.page_text))
    recall = len(words & page) / len(words) if words else 0.0
    nums_ok = _numbers(claim) <= _numbers(inputs.page_text)
    ok = int(recall >= r["support_recall"] and nums_ok)
    return OfflineVerdict(
        SupportOutput(supported=ok, evidence=f"content-word recall {recall:.2f}; numbers found {nums_ok}"),
        "lexical support",
    )


def _task(name: str, prompt: str, inp: type, out: type, parse: Any, offline: Any, desc: str) -> JudgeTask:
    return JudgeTask(name, f"{PROMPT_DIR}/{prompt}.yaml", inp, out, parse, offline, description=desc)


TASKS: tuple[JudgeTask, ...] = (
    _task(
        "lrb_presentation",
        "presentation",
        ChecklistInput,
        ChecklistOutput,
        parse_checklist,
        _presentation_offline,
        "LiveResearchBench presentation checklist p1-p10",
    ),
    _task(
        "lrb_coverage",
        "coverage",
        ChecklistInput,
        ChecklistOutput,
        parse_checklist,
        _coverage_offline,
        "LiveResearchBench per-task coverage checklist",
    ),
    _task(
        "lrb_consistency",
        "consistency",
        PointwiseInput,
        PointwiseOutput,
        parse_pointwise,
        _consistency_offline,
        "LiveResearchBench factual & logical consistency (issue list)",
    ),
    _task(
        "lrb_citation",
        "citation",
        PointwiseInput,
        PointwiseOutput,
        parse_pointwise,
        _citation_offline,
        "LiveResearchBench citation association (uncited claims)",
    ),
    _task(
        "lrb_depth",
        "depth",
        DepthInput,
        DepthOutput,
        parse_depth,
        _depth_offline,
        "LiveResearchBench analysis depth, pairwise vs the reference",
    ),
    _task(
        "lrb_relevance",
        "relevance",
        RelevanceInput,
        RelevanceOutput,
        parse_relevance,
        _relevance_offline,
        "citation accuracy E2 gate (our reconstruction)",
    ),
    _task(
        "lrb_support",
        "support",
        SupportInput,
        SupportOutput,
        parse_support,
        _support_offline,
        "citation accuracy E3 support check (our reconstruction)",
    ),
)
