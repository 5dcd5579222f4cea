"""ResearcherBench authors' pack: GAIR-NLP/ResearcherBench@a95807d (and the older rubric wording of fa75041).

Rebuilt at run time from the pinned files (never copied here):
- rubric coverage: the f-string assigned in `get_single_rubric_evaluation_prompt` (code/prompt.py) and the
  inline system message of `evaluate_single_rubric` (code/rubric_eval/evaluator.py); HEAD and fa75041 wording;
- claim extraction / verification: the `EXTRACT_CLAIMS_PROMPT` / `VERIFY_CLAIM_PROMPT` constants filled like
  the authors' `generate_prompt` (sequential `str.replace`, so their substitution bug is reproduced here
  and only here), with the `CLAIM_EXTRACTOR_SYSTEM` / `CLAIM_VERIFIER_SYSTEM` constants.

Parsers are strict versions of the authors' formats: the rubric answer must start with yes/no (their
substring fallback is our `researcherbench_rubric_compat` task, not this parser); claims and verdicts must be
JSON arrays (verdicts are mapped by id and their count checked, where the authors map by position).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from reportbench.judges.base import ParseError
from reportbench.prompt_packs import AuthorsStep, register_step
from reportbench.prompt_packs._base import norm_inputs as _norm
from reportbench.prompt_packs._base import source_text as _src
from reportbench.prompt_packs.extract import (
    Template,
    function_assignments,
    function_messages,
    module_constant,
    sequential_replace,
)
from reportbench.prompt_packs.judging import register_task_parser
from reportbench.prompt_packs.sources import SourceRef

BENCHMARK = "ResearcherBench"
REPO = "GAIR-NLP/ResearcherBench"
HEAD = "a95807decfb044c496e6e78d95d6977ed5240cb0"
OLD = "fa750417a6670c8a0cf79e84e5669ac030fd53f9"

PROMPT = SourceRef(REPO, HEAD, "code/prompt.py", "2a0d1566db56f827dd52a035691f4aee4a52123c9c27d2e9424114d42a57b6a4")
PROMPT_OLD = SourceRef(REPO, OLD, "code/prompt.py", "4a174faaf6b863368bdbfd55db27d14be8279d5f524f62e511e042f790d00091")
EVALUATOR = SourceRef(
    REPO, HEAD, "code/rubric_eval/evaluator.py", "98a9a5132e3055307b147c2af0edb363af32294b3e203afeb43f50112f33b77f"
)
EVALUATOR_OLD = SourceRef(
    REPO, OLD, "code/rubric_eval/evaluator.py", "98a9a5132e3055307b147c2af0edb363af32294b3e203afeb43f50112f33b77f"
)
FAITHFUL = SourceRef(
    REPO,
    HEAD,
    "code/faithfulness_eval/faithful_evaluator.py",
    "424eb9e1e3391824554163602a54996e57e7be27a127b164813241713b677ba2",
)
RUBRIC_FUNC = "get_single_rubric_evaluation_prompt"


# -------------------------------------------------------------------------------------------- rubric
@lru_cache(maxsize=4)
def _rubric_parts(prompt: SourceRef, evaluator: SourceRef) -> tuple[Template, str]:
    user = function_assignments(_src(prompt), RUBRIC_FUNC, "prompt")[0]
    msgs = function_messages(_src(evaluator), "evaluate_single_rubric")
    system = next(t for role, t in msgs if role == "system")
    assert system is not None
    return user, system.text


def _render_rubric(prompt: SourceRef, evaluator: SourceRef, inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The evaluator passes (question, rubric['point'], rubric.get('weight', 1), ai_response) positionally."""
    inp = _norm(inputs)
    user, system = _rubric_parts(prompt, evaluator)
    rubric = inp["rubric"]
    point, weight = (rubric["point"], rubric.get("weight", 1)) if isinstance(rubric, Mapping) else (rubric, 1)
    weight_field = next(f for f in user.fields if "weight" in f)  # 'weight' at HEAD, 'rubric_weight' before
    values = {"question": inp["question"], "rubric": point, weight_field: weight, "ai_response": inp["ai_response"]}
    return [{"role": "system", "content": system}, {"role": "user", "content": user.render(values)}]


_VERDICT_RE = re.compile(r"^(yes|no)(?:[:\s]|$)", re.IGNORECASE)


def parse_rubric(raw: str) -> dict[str, Any]:
    """'yes: …' / 'no …' (the authors' startswith cases, plus a bare verdict); anything else is a ParseError."""
    text = (raw or "").strip()
    m = _VERDICT_RE.match(text)
    if not m:
        raise ParseError(f"the answer does not begin with 'yes' or 'no': {text[:60]!r}")
    return {"covered": m.group(1).lower() == "yes", "justification": text[m.end() :].strip()}


def parse_rubric_authors(raw: str) -> dict[str, Any]:
    """The authors' whole rule (evaluator's `startswith` cases, then the substring fallback): 'yes:'/'yes ' ->
    covered, 'no:'/'no ' -> not, else 'yes' anywhere -> covered, else not. So "Yes." and "**Yes**" are covered,
    as in their code. Never a ParseError (that is the rule); used for `judging.rubric.compat_authors_parsing`."""
    text = (raw or "").strip()
    low = text.lower()
    if low.startswith(("yes:", "yes ")):
        covered = True
    elif low.startswith(("no:", "no ")):
        covered = False
    else:
        covered = "yes" in low
    return {"covered": covered, "justification": text}


def _rubric_from_task(inp: Any) -> dict[str, Any]:
    return {
        "question": inp.question,
        "rubric": {"point": inp.item, "weight": inp.weight},
        "ai_response": inp.response,
    }


# ----------------------------------------------------------------------------------- claims (shared)
def _constant(name: str) -> str:
    return module_constant(_src(PROMPT), name)


def _render_extract(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """generate_prompt(EXTRACT_CLAIMS_PROMPT, {QUESTION, CONTENT, REFERENCES}): replaces in that order."""
    inp = _norm(inputs)
    section, references = inp.get("section"), inp.get("references")
    if section is None or references is None:  # cut the response the way the authors' code does
        # lazy: +1129 ms to import (python -X importtime)
        from reportbench.protocols.researcherbench.text import sections, split_authors

        content, references = split_authors(str(inp["response"]))
        section = sections(content, 5, "authors", authors_strip=True)[0]
    user = sequential_replace(
        _constant("EXTRACT_CLAIMS_PROMPT"),
        [("[QUESTION]", str(inp["question"])), ("[CONTENT]", str(section)), ("[REFERENCES]", str(references))],
    )
    return [{"role": "system", "content": _constant("CLAIM_EXTRACTOR_SYSTEM")}, {"role": "user", "content": user}]


def authors_claim_list(claims: list[Mapping[str, Any]]) -> str:
    """The evaluator's CLAIM_LIST layout (faithful_evaluator.py L327): '[i]\\nClaim: …\\nContext: …\\n' joined."""
    return "\n".join(f"[{i + 1}]\nClaim: {c['claim']}\nContext: {c['context']}\n" for i, c in enumerate(claims))


def _render_verify(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """generate_prompt(VERIFY_CLAIM_PROMPT, {SOURCE, CLAIM_LIST}): the page first, so a '[CLAIM_LIST]' in it is
    replaced too (the authors' bug)."""
    inp = _norm(inputs)
    claim_list = inp.get("claim_list")
    if claim_list is None:
        claim_list = authors_claim_list(inp["claims"])
    user = sequential_replace(
        _constant("VERIFY_CLAIM_PROMPT"), [("[SOURCE]", str(inp["page_content"])), ("[CLAIM_LIST]", str(claim_list))]
    )
    return [{"role": "system", "content": _constant("CLAIM_VERIFIER_SYSTEM")}, {"role": "user", "content": user}]


def parse_claims(raw: str) -> list[dict[str, str]]:
    """A JSON array of {claim, context, source} (a ```json fence allowed); no repairs, no silent []."""
    # lazy: +411 ms to import (python -X importtime)
    from reportbench.protocols.researcherbench.tasks import parse_extract

    return [c.model_dump() for c in parse_extract(raw).claims]


def parse_verdicts(raw: str) -> list[dict[str, Any]]:
    """A JSON array of {id, result}; results case-normalised to yes/no/unknown."""
    # lazy: +411 ms to import (python -X importtime)
    from reportbench.protocols.researcherbench.tasks import parse_verify

    return [r.model_dump() for r in parse_verify(raw).results]


def _verify_from_task(inp: Any) -> dict[str, Any]:
    claims = [{"claim": c.claim, "context": c.context} for c in inp.claims]
    return {"page_content": inp.source, "claims": claims, "claim_list": authors_claim_list(claims)}


def _verify_to_output(parsed: list[dict[str, Any]], inp: Any) -> dict[str, Any]:
    want = sorted(c.id for c in inp.claims)
    if sorted(r["id"] for r in parsed) != want:
        raise ParseError(f"verdicts for ids {sorted(r['id'] for r in parsed)} but the claims are {want}")
    return {"results": parsed}


# ------------------------------------------------------------------------------------------- register
RUBRIC_HEAD = AuthorsStep(
    benchmark=BENCHMARK,
    step="rubric coverage judge (HEAD a95807d)",
    key="rubric",
    sources=(PROMPT, EVALUATOR),
    render=lambda inputs: _render_rubric(PROMPT, EVALUATOR, inputs),
    render_swapped=None,
    parse=parse_rubric,
    request_kwargs={"model": "o3-mini"},
    from_task=_rubric_from_task,
    description="one call per rubric item; [system, user]; no temperature",
)
RUBRIC_OLD = AuthorsStep(
    benchmark=BENCHMARK,
    step="rubric coverage judge (fa75041 (initial commit; older wording))",
    key="rubric@fa75041",
    sources=(PROMPT_OLD, EVALUATOR_OLD),
    render=lambda inputs: _render_rubric(PROMPT_OLD, EVALUATOR_OLD, inputs),
    render_swapped=None,
    parse=parse_rubric,
    request_kwargs={"model": "o3-mini"},
    from_task=_rubric_from_task,
    description="the paper-era wording ('rubric item'), most likely what produced the paper's numbers",
)
EXTRACTION = AuthorsStep(
    benchmark=BENCHMARK,
    step="claim extraction (faithfulness / groundedness)",
    key="claim_extraction",
    sources=(PROMPT, FAITHFUL),
    render=_render_extract,
    render_swapped=None,
    parse=parse_claims,
    request_kwargs={"temperature": 0.0},
    from_task=lambda inp: {"question": inp.question, "section": inp.section, "references": inp.references},
    to_output=lambda parsed, inp: {"claims": parsed},
)
VERIFICATION = AuthorsStep(
    benchmark=BENCHMARK,
    step="claim verification against the fetched URL content",
    key="claim_verification",
    sources=(PROMPT, FAITHFUL),
    render=_render_verify,
    render_swapped=None,
    parse=parse_verdicts,
    request_kwargs={"temperature": 0.0},
    from_task=_verify_from_task,
    to_output=_verify_to_output,
)

for _step in (RUBRIC_HEAD, RUBRIC_OLD, EXTRACTION, VERIFICATION):
    register_step(_step)
register_task_parser("researcherbench_rubric_compat", parse_rubric_authors)
