"""The authors' prompt pack for `judge.prompts=authors`: Ayanami0730/deep_research_bench@214741e.

Rebuilt at run time from the pinned files (sha256-checked by reportbench.prompt_packs.sources, never copied
here): the module-level prompt strings of prompt/clean_prompt.py, prompt/score_prompt_{en,zh}.py and
utils/{extract,deduplicate,validate}.py, filled with str.format exactly as their scripts do, sent as a single
user message (their `system_prompt=""` adds no system turn). The language of the task picks zh or en.
Parsers follow theirs: the RACE answer through their JSON extractor (authors_json), FACT answers through
`json.loads` after stripping ```json fences (extraction also un-escapes \\> \\< \\+ \\~ and drops link targets
from facts), the cleaned article valid from 100 characters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from reportbench.judges.base import BelowBoundAnswer, ParseError
from reportbench.prompt_packs import AuthorsStep, register_step
from reportbench.prompt_packs.extract import module_constant
from reportbench.prompt_packs.sources import SourceRef, read_ref
from reportbench_deepresearch_bench.tasks import MIN_CLEAN_CHARS, parse_race_authors

BENCHMARK = "DeepResearch Bench"
REPO = "Ayanami0730/deep_research_bench"
COMMIT = "214741e474a5347ea7f869ab79d27e7c8734ede7"


def _ref(path: str, sha: str) -> SourceRef:
    return SourceRef(REPO, COMMIT, path, sha)


CLEAN = _ref("prompt/clean_prompt.py", "28909f551b87459f3725ca6033cf74ffa71bec1f75c459a916a112e375c441e3")
SCORE_EN = _ref("prompt/score_prompt_en.py", "7a63dac448e3ade2b577bcca5e455b46849930c1c2c0c664b287abdfa9b1b813")
SCORE_ZH = _ref("prompt/score_prompt_zh.py", "e8773c834d4351000243f5373ec9878703b8b557ee6c44efd0a0435d1fe26463")
EXTRACT = _ref("utils/extract.py", "82e07eb2f519dcf7d0c216caf8e1dbd29f5ce5b4d3614c65c93a099738389bc8")
DEDUP = _ref("utils/deduplicate.py", "53d72b884a393e5c8a3c478c815b9b37dd7be0cb96e6bcb398ce2dded66c56ee")
VALIDATE = _ref("utils/validate.py", "aa361407b77e0a7df8c1c8572173fea0b512c5aa4e77adb1131d0a88ed8d3a3f")
JSON_EXTRACTOR = _ref("utils/json_extractor.py", "6142892908cbd28d0a3894417b94bd24af7a058fa178790d557686d6f9705b0f")
RACE_SCRIPT = _ref("deepresearch_bench_race.py", "2cd52750b916d77dfdb61c6f846f1aa300649dca0284c3e3c28359c12ceb1f53")


@lru_cache(maxsize=32)
def _const(ref: SourceRef, name: str) -> str:
    return module_constant(read_ref(ref), name)


def _lang(inputs: Mapping[str, Any]) -> str:
    lang = str(inputs.get("language") or "")
    if lang not in ("zh", "en"):
        raise ValueError(f"language must be zh or en, got {lang!r}")
    return lang


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def numbered(items: list[str]) -> str:
    """Their statement list: '1. first\\n2. second'."""
    return "\n".join(f"{i + 1}. {s}" for i, s in enumerate(items))


# ------------------------------------------------------------------------------------------- renders
def render_clean(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    name = "clean_article_prompt_zh" if _lang(inputs) == "zh" else "clean_article_prompt_en"
    return _user(_const(CLEAN, name).format(article=inputs["article"]))


def render_race(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    ref = SCORE_ZH if _lang(inputs) == "zh" else SCORE_EN
    text = _const(ref, "generate_merged_score_prompt").format(
        task_prompt=inputs["task_prompt"],
        article_1=inputs["article_1"],
        article_2=inputs["article_2"],
        criteria_list=inputs["criteria"],
    )
    return _user(text)


def render_extract(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    name = "prompt_template" if _lang(inputs) == "zh" else "prompt_template_en"
    return _user(_const(EXTRACT, name).format(report_text=inputs["article"]))


def render_dedup(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    name = "prompt_template" if _lang(inputs) == "zh" else "prompt_template_en"
    return _user(_const(DEDUP, name).format(statements=numbered(list(inputs["statements"]))))


def render_validate(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    name = "prompt_template" if _lang(inputs) == "zh" else "prompt_template_en"
    return _user(
        _const(VALIDATE, name).format(reference=inputs["reference"], statements=numbered(list(inputs["statements"])))
    )


# ------------------------------------------------------------------------------------------- parsers
def _unfence(raw: str) -> str:
    return (raw or "").replace("```json", "").replace("```", "")


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"not JSON after removing fences: {exc.msg}") from None


def parse_clean_authors(raw: str) -> dict[str, Any]:
    if not raw or len(raw.strip()) < MIN_CLEAN_CHARS:
        raise BelowBoundAnswer(  # the authors re-ask, then leave the task unscored: undefined, not a failure
            f"cleaned article has {len((raw or '').strip())} characters (< {MIN_CLEAN_CHARS}, the authors' validity "
            "bound: they leave the task unscored)"
        )
    return {"article": raw}


_LINK = re.compile(r"\[([^\]]+)\]\(([^)]+)\)")


def parse_extract_authors(raw: str) -> list[dict[str, Any]]:
    """Their steps: strip fences, clean_escape, json.loads; then `remove_urls` on every fact."""
    text = _unfence(raw)
    for a, b in (("\\>", ">"), ("\\<", "<"), ("\\+", "+"), ("\\~", "~")):
        text = text.replace(a, b)
    data = _loads(text)
    if not isinstance(data, list):
        raise ParseError("the extraction answer is not a JSON list")
    out = []
    for c in data:
        if not isinstance(c, dict) or not all(k in c for k in ("fact", "ref_idx", "url")):
            raise ParseError(f"citation entry without fact/ref_idx/url: {str(c)[:80]}")
        out.append({"fact": _LINK.sub(r"[\1]", str(c["fact"])), "ref_idx": str(c["ref_idx"]), "url": str(c["url"])})
    return out


def parse_dedup_authors(raw: str) -> list[int]:
    data = _loads(_unfence(raw))
    if not isinstance(data, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in data):
        raise ParseError("the de-duplication answer is not a list of integers")
    return data


def parse_validate_authors(raw: str) -> list[dict[str, Any]]:
    data = _loads(_unfence(raw))
    if not isinstance(data, list):
        raise ParseError("the validation answer is not a JSON list")
    return data


def _validate_output(parsed: list[dict[str, Any]], inp: Any) -> dict[str, Any]:
    if len(parsed) != len(inp.statements):  # their `assert len(validate_res) == len(facts)`
        raise ParseError(f"{len(parsed)} verdicts for {len(inp.statements)} statements")
    return {"results": [{"idx": v.get("idx"), "result": v.get("result")} for v in parsed]}


def _dedup_output(parsed: list[int], inp: Any) -> dict[str, Any]:
    n = len(inp.statements)
    if not parsed or 0 in parsed or len(parsed) > n or any(not 1 <= i <= n for i in parsed):
        raise ParseError(f"kept indices {parsed} do not fit {n} statements (the authors then keep all)")
    return {"keep": parsed}


def _dump(x: Any) -> dict[str, Any]:
    return dict(x.model_dump())


# What their utils/api.py sends with every prompt (AIClient.generate): the model (RACE and cleaning: `Model`;
# FACT's extraction, de-duplication and validation: `call_model` with `FACT_Model`) and a 16,000-token thinking
# budget; no temperature, no output cap.
_THINKING = "GenerateContentConfig(thinking_config=ThinkingConfig(thinking_budget=16000))"
PRO_KW = {"model": "gemini-2.5-pro-preview-06-05", "config": _THINKING}
FLASH_KW = {"model": "gemini-2.5-flash-preview-05-20", "config": _THINKING}

STEPS = (
    AuthorsStep(
        BENCHMARK,
        "article cleaning (clean_prompt)",
        (CLEAN,),
        render_clean,
        None,
        parse_clean_authors,
        key="clean",
        request_kwargs=PRO_KW,
        judge_task="drb_clean",
        from_task=_dump,
        description="ArticleCleaner._clean_text: one user message, language-specific template",
    ),
    AuthorsStep(
        BENCHMARK,
        "RACE merged scoring (generate_merged_score_prompt)",
        (SCORE_EN, SCORE_ZH, JSON_EXTRACTOR, RACE_SCRIPT),
        render_race,
        None,
        lambda raw: parse_race_authors(raw).model_dump(),
        key="race",
        request_kwargs=PRO_KW,
        judge_task="drb_race",
        from_task=_dump,
        description="criteria via format_criteria_list (no weights); target = article_1",
    ),
    AuthorsStep(
        BENCHMARK,
        "FACT statement-URL extraction",
        (EXTRACT,),
        render_extract,
        None,
        parse_extract_authors,
        key="fact_extract",
        request_kwargs=FLASH_KW,
        judge_task="drb_fact_extract",
        from_task=_dump,
        to_output=lambda parsed, inp: {"citations": parsed},
    ),
    AuthorsStep(
        BENCHMARK,
        "FACT de-duplication per URL",
        (DEDUP,),
        render_dedup,
        None,
        parse_dedup_authors,
        key="fact_dedup",
        request_kwargs=FLASH_KW,
        judge_task="drb_fact_dedup",
        from_task=_dump,
        to_output=_dedup_output,
    ),
    AuthorsStep(
        BENCHMARK,
        "FACT support validation per URL",
        (VALIDATE,),
        render_validate,
        None,
        parse_validate_authors,
        key="fact_validate",
        request_kwargs=FLASH_KW,
        judge_task="drb_fact_validate",
        from_task=_dump,
        to_output=_validate_output,
    ),
)
for _s in STEPS:
    register_step(_s)
