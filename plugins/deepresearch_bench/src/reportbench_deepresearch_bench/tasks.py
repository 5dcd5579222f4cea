"""DeepResearch Bench judge tasks: article cleaning, RACE scoring, and FACT extraction / de-duplication /
validation. Each has a strict parser (our prompts in prompts/) and a deterministic offline rule (the demo).

The offline rules are lexical stand-ins so the pipeline runs without a model; their numbers mean nothing about
report quality and are labelled offline in every record (judge_id).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from reportbench.judges.base import (
    BelowBoundAnswer,
    JudgeInput,
    JudgeOutput,
    JudgeTask,
    OfflineVerdict,
    ParseError,
)
from reportbench.judges.tasks._parsing import parse_json_output, validate_output
from reportbench_deepresearch_bench.authors_json import extract_json
from reportbench_deepresearch_bench.race import DIMENSIONS

PROMPTS = Path(__file__).resolve().parent / "prompts"
MIN_CLEAN_CHARS = 100  # the authors' ArticleCleaner.min_valid_length


def prompt_path(name: str) -> str:
    """Our prompt id `deepresearch_bench/<file>`: the spine reads it from the spec's `prompts_dir` (PROMPTS)."""
    return f"deepresearch_bench/{name}"


# -------------------------------------------------------------------------------------------- tokens
_LATIN = re.compile(r"[a-z0-9]{4,}")
_CJK = re.compile(r"[\u4e00-\u9fff]+")


def tokens(text: str) -> set[str]:
    """Latin words of 4+ characters and CJK character bigrams: a language-neutral bag for the offline rules."""
    low = (text or "").lower()
    out = set(_LATIN.findall(low))
    for run in _CJK.findall(low):
        out.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return out


def overlap(needle: str, hay: set[str]) -> float:
    t = tokens(needle)
    return len(t & hay) / len(t) if t else 0.0


# --------------------------------------------------------------------------------------------- clean
_MARKER = re.compile(r"\s?(\[\d+(?:[,，\s-]+\d+)*\]|【\d+】)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^)]+)\)")
_REFS_HEAD = re.compile(r"^#{1,6}\s*(references|sources|bibliography|参考文献|参考资料)\s*$", re.I | re.M)


def offline_clean(article: str) -> str:
    """Drop the reference section, inline citation markers and link targets (what the clean step is for)."""
    m = _REFS_HEAD.search(article)
    body = article[: m.start()] if m else article
    body = _LINK.sub(r"\1", body)
    return _MARKER.sub("", body).strip()


class CleanInput(JudgeInput):
    article: str
    language: Literal["zh", "en"]


class CleanOutput(JudgeOutput):
    article: str

    def value(self) -> float:
        return float(len(self.article))


def parse_clean(raw: str, inputs: Any = None) -> CleanOutput:
    """The whole answer is the cleaned article (as the authors use it). Under the authors' 100-character bound
    (ArticleCleaner.min_valid_length) they re-ask, then record "Failed to clean article" and leave the task out
    of the scores: here a BelowBoundAnswer, re-asked, then the task's RACE is undefined with this reason."""
    text = (raw or "").strip()
    if len(text) < MIN_CLEAN_CHARS:
        raise BelowBoundAnswer(
            f"cleaned article has {len(text)} characters (< {MIN_CLEAN_CHARS}, the authors' validity bound: "
            "they leave the task unscored)"
        )
    return CleanOutput(article=text)


def _clean_offline(inputs: CleanInput, params: dict[str, Any]) -> OfflineVerdict:
    return OfflineVerdict(CleanOutput(article=offline_clean(inputs.article)), "references and markers removed")


# ---------------------------------------------------------------------------------------------- race
class RaceItem(JudgeOutput):
    criterion: str
    article_1_score: float
    article_2_score: float

    def value(self) -> float:
        return self.article_1_score


class RaceInput(JudgeInput):
    task_prompt: str
    criteria: str  # the authors' format_criteria_list JSON (criterion + explanation per dimension, no weights)
    article_1: str  # the target report
    article_2: str  # the reference report
    language: Literal["zh", "en"]
    parser: Literal["strict", "authors"] = "strict"


class RaceOutput(JudgeOutput):
    comprehensiveness: list[RaceItem]
    insight: list[RaceItem]
    instruction_following: list[RaceItem]
    readability: list[RaceItem]

    def value(self) -> float | None:
        vals = [i.article_1_score for d in DIMENSIONS for i in getattr(self, d)]
        return sum(vals) / len(vals) if vals else None


def parse_race(raw: str, inputs: Any = None) -> RaceOutput:
    """strict: one JSON object with the four dimensions, nothing else; authors: their lenient extractor."""
    if getattr(inputs, "parser", "strict") == "authors":
        return parse_race_authors(raw)
    return parse_json_output(raw, RaceOutput)


def parse_race_authors(raw: str) -> RaceOutput:
    """The authors' path: extract_json_from_markdown, json.loads, all four dimensions present (else a retry:
    here a ParseError); items they would skip (non-dicts, no criterion text, non-numeric scores) are dropped."""
    got = extract_json(raw)
    if not got:
        raise ParseError("the authors' extractor found no JSON in the answer")
    data = json.loads(got)
    if not isinstance(data, dict) or not all(d in data for d in DIMENSIONS):
        missing = [d for d in DIMENSIONS if not isinstance(data, dict) or d not in data]
        raise ParseError(f"missing expected dimensions: {missing}")
    out: dict[str, list[dict[str, Any]]] = {}
    for d in DIMENSIONS:
        lst = data[d] if isinstance(data[d], list) else []
        keep = []
        for it in lst:
            if not isinstance(it, dict) or not isinstance(it.get("criterion"), str):
                continue
            a1 = it.get("article_1_score", it.get("target_score"))
            a2 = it.get("article_2_score")
            try:
                keep.append(
                    {"criterion": it["criterion"].strip(), "article_1_score": float(a1), "article_2_score": float(a2)}
                )
            except (TypeError, ValueError):
                continue
        out[d] = keep
    return validate_output(out, RaceOutput)


def _race_offline(inputs: RaceInput, params: dict[str, Any]) -> OfflineVerdict:
    """Each criterion scores 10 x the share of its words (criterion + explanation) found in each article."""
    crit = json.loads(inputs.criteria)
    t1, t2 = tokens(inputs.article_1), tokens(inputs.article_2)
    out: dict[str, list[RaceItem]] = {}
    for d in DIMENSIONS:
        out[d] = [
            RaceItem(
                criterion=c["criterion"],
                article_1_score=round(10 * overlap(c["criterion"] + " " + c["explanation"], t1), 1),
                article_2_score=round(10 * overlap(c["criterion"] + " " + c["explanation"], t2), 1),
            )
            for c in crit.get(d, [])
        ]
    return OfflineVerdict(RaceOutput(**out), "criterion word overlap with each article")


# -------------------------------------------------------------------------------------- fact: extract
class Citation(JudgeOutput):
    fact: str
    ref_idx: str
    url: str

    def value(self) -> float:
        return 1.0


class ExtractInput(JudgeInput):
    article: str
    language: Literal["zh", "en"]


class ExtractOutput(JudgeOutput):
    citations: list[Citation]

    def value(self) -> float:
        return float(len(self.citations))


def parse_extract(raw: str, inputs: Any = None) -> ExtractOutput:
    return parse_json_output(raw, ExtractOutput)


_REF_LINE = re.compile(r"^\s*\[(\d+)\][^\n]*?(https?://\S+)", re.M)
_SENT = re.compile(r"[^.!?。！？\n]+[.!?。！？]?(?:\s*\[\d+(?:[,，\s]+\d+)*\])*")


def _extract_offline(inputs: ExtractInput, params: dict[str, Any]) -> OfflineVerdict:
    """Sentences with [n] markers, paired with the URL of entry [n] of the reference list (markers without an
    entry or URL are not pairs)."""
    m = _REFS_HEAD.search(inputs.article)
    refs = {k: u.rstrip(").,") for k, u in _REF_LINE.findall(inputs.article[m.start() :] if m else "")}
    body = inputs.article[: m.start()] if m else inputs.article
    out = []
    for s in _SENT.findall(body):
        keys = re.findall(r"\[(\d+)\]", s) + [
            k for g in re.findall(r"\[(\d+(?:[,，]\s*\d+)+)\]", s) for k in re.split(r"[,，]\s*", g)
        ]
        fact = _MARKER.sub("", s).strip()
        for k in dict.fromkeys(keys):
            if k in refs and fact:
                out.append(Citation(fact=fact, ref_idx=k, url=refs[k]))
    return OfflineVerdict(ExtractOutput(citations=out), f"{len(out)} cited sentence-URL pairs")


# ---------------------------------------------------------------------------------------- fact: dedup
class DedupInput(JudgeInput):
    statements: list[str]
    language: Literal["zh", "en"]

    def prompt_values(self) -> dict[str, Any]:
        return {
            "statements": "\n".join(f"{i + 1}. {s}" for i, s in enumerate(self.statements)),
            "language": self.language,
        }


class DedupOutput(JudgeOutput):
    keep: list[int]

    def value(self) -> float:
        return float(len(self.keep))


def parse_dedup(raw: str, inputs: Any = None) -> DedupOutput:
    out = parse_json_output(raw, DedupOutput)
    n = len(getattr(inputs, "statements", []) or [])
    if n and (not out.keep or any(not 1 <= k <= n for k in out.keep) or len(set(out.keep)) != len(out.keep)):
        raise ParseError(f"keep must be distinct statement numbers in 1..{n}, got {out.keep}")
    return out


def _dedup_offline(inputs: DedupInput, params: dict[str, Any]) -> OfflineVerdict:
    seen: dict[frozenset[str], int] = {}
    for i, s in enumerate(inputs.statements, start=1):
        seen.setdefault(frozenset(tokens(s)), i)
    keep = sorted(seen.values())
    return OfflineVerdict(DedupOutput(keep=keep), "statements with the same word bag are duplicates")


# ------------------------------------------------------------------------------------- fact: validate
class ValidateInput(JudgeInput):
    reference: str
    statements: list[str]
    language: Literal["zh", "en"]

    def prompt_values(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "statements": "\n".join(f"{i + 1}. {s}" for i, s in enumerate(self.statements)),
            "language": self.language,
        }


class Verdict(JudgeOutput):
    idx: int
    result: Literal["supported", "unsupported", "unknown"]

    def value(self) -> float:
        return 1.0 if self.result == "supported" else 0.0


class ValidateOutput(JudgeOutput):
    results: list[Verdict]

    def value(self) -> float | None:
        judged = [r for r in self.results if r.result != "unknown"]
        return sum(r.value() for r in judged) / len(judged) if judged else None


def parse_validate(raw: str, inputs: Any = None) -> ValidateOutput:
    """One verdict per statement, numbered 1..n (the authors assert the count too)."""
    out = parse_json_output(raw, ValidateOutput)
    n = len(getattr(inputs, "statements", []) or [])
    if n and sorted(r.idx for r in out.results) != list(range(1, n + 1)):
        raise ParseError(f"verdicts for {sorted(r.idx for r in out.results)} but there are {n} statements")
    return out


def _validate_offline(inputs: ValidateInput, params: dict[str, Any]) -> OfflineVerdict:
    page = tokens(inputs.reference)
    res = []
    for i, s in enumerate(inputs.statements, start=1):
        if len(page) < 5:
            r = "unknown"
        else:
            r = "supported" if overlap(s, page) >= 0.5 else "unsupported"
        res.append(Verdict(idx=i, result=r))
    return OfflineVerdict(ValidateOutput(results=res), "half of a statement's words on the page")


TASKS = (
    JudgeTask(
        "drb_clean",
        prompt_path("clean.yaml"),
        CleanInput,
        CleanOutput,
        parse_clean,
        _clean_offline,
        structured=False,
        authors_step="deepresearch/clean",
    ),
    JudgeTask(
        "drb_race",
        prompt_path("race.yaml"),
        RaceInput,
        RaceOutput,
        parse_race,
        _race_offline,
        authors_step="deepresearch/race",
    ),
    JudgeTask(
        "drb_fact_extract",
        prompt_path("fact_extract.yaml"),
        ExtractInput,
        ExtractOutput,
        parse_extract,
        _extract_offline,
        authors_step="deepresearch/fact_extract",
    ),
    JudgeTask(
        "drb_fact_dedup",
        prompt_path("fact_dedup.yaml"),
        DedupInput,
        DedupOutput,
        parse_dedup,
        _dedup_offline,
        authors_step="deepresearch/fact_dedup",
    ),
    JudgeTask(
        "drb_fact_validate",
        prompt_path("fact_validate.yaml"),
        ValidateInput,
        ValidateOutput,
        parse_validate,
        _validate_offline,
        authors_step="deepresearch/fact_validate",
    ),
)
