"""DEER authors' pack: hanjanghoon/DEER@f81bd9c (MIT code).

Steps: the five rubric judge calls J1-J5 (`prompts/prompt_report.py`: a literal SYSTEM_PROMPT and an f-string
USER_PROMPT per call), claim extraction (`prompts/claim_classification_v10.txt` + the fixed JSON note and the
user f-string of `claim_processor.extract_claims`) and claim verification (`prompts/claim_verification_v2.txt`
filled with `str.format`, one user message). Everything is extracted statically from the pinned files at run
time; no authors' text is stored here. Parsers are strict versions of the authors' formats: the rubric answer
must carry exactly the call's factor set with integer scores 1-10 or "N/A" (the authors' pydantic schema
accepts any int), extraction claims must be well-formed, verification labels must be one of the four.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from reportbench.judges.base import ParseError
from reportbench.judges.tasks._parsing import validate_output
from reportbench.prompt_packs import AuthorsStep, register_step
from reportbench.prompt_packs.extract import (
    ExtractError,
    Template,
    _as_template,
    function_assignments,
    function_node,
)
from reportbench.prompt_packs.sources import pinned, read_ref

BENCHMARK = "DEER"
REPO = "hanjanghoon/DEER"
COMMIT = "f81bd9ce0afdecfe7389336731a4599cb4b02d2c"


_ref = pinned(REPO, COMMIT)


PROMPT_REPORT = _ref("prompts/prompt_report.py", "b8a078708021d0821260d7dcf2370954259d29bf10888266be95f1ff16501bcb")
SCHEMAS = _ref("prompts/schemas.py", "3cdf31f9997a6976693ec7ca6d648de374b8e447eb42fe594c16f8bfbded24d5")
RUN_EVAL = _ref("run_report_evaluation.py", "81e966035d0457d81fb4a40987caf1b21f825b476d3c55e03e5acdec49699b23")
CLASSIFY = _ref(
    "prompts/claim_classification_v10.txt", "3102678e6a19b0b68f62754d3a85169e16cccd21d6f7de198537c1a877c492fe"
)
PROCESSOR = _ref(
    "info_verification/claim_processor.py", "46d5488c462eda186076e7178f97e5c05d7c1d4134d9c246b7781e3bd2ceb4f5"
)
EVAL_MAIN = _ref("info_verification/eval_main.py", "5e83f47f854512cb28e8ea933d06e21db93ebc8ce69a3a71611821de6ad0f262")
VERIFY = _ref("prompts/claim_verification_v2.txt", "1e1bc72e58a91279eaa9f8a6800df6107512a0c18e7576902ffcdc11564a2a59")
VERIFIER = _ref(
    "info_verification/claim_verifier.py", "583aa58e6a182892755ed10c05115fa6956b78f4baff7714020756f927336a45"
)
SOURCE_FILTER = _ref(
    "info_verification/source_filter.py", "dd33d7d0e7e69efc49dd795e20fb9642c318132018a87522571528bdad87f573"
)

# call -> (goldens' step name, key, builder function in prompt_report.py, takes the EG)
RUBRIC_CALLS: dict[str, tuple[str, str, str, bool]] = {
    "request_fulfillment": ("rubric judge J1 Request Fulfillment", "j1", "get_prompt_request_fulfillment", True),
    "analytical_soundness": ("rubric judge J2 Analytical Soundness", "j2", "get_prompt_analytical_soundness", True),
    "structural_coherence": ("rubric judge J3 Structural Coherence", "j3", "get_prompt_structural_coherence", True),
    "format_style": ("rubric judge J4 Format & Style", "j4", "get_prompt_format_style", False),
    "information_ethics": (
        "rubric judge J5 Information Integrity + Ethics & Compliance",
        "j5",
        "get_prompt_information_ethics",
        False,
    ),
}


def _value(inputs: Mapping[str, Any], prefix: str) -> Any:
    """The input whose name is `prefix` or starts with it (the goldens annotate some names)."""
    if prefix in inputs:
        return inputs[prefix]
    for k, v in inputs.items():
        if k.startswith(prefix):
            return v
    raise KeyError(f"no input {prefix!r} in {sorted(inputs)}")


# ------------------------------------------------------------------------------------------ rubric calls
@cache
def _rubric_templates(func: str) -> tuple[Template, Template]:
    src = read_ref(PROMPT_REPORT)
    return function_assignments(src, func, "SYSTEM_PROMPT")[0], function_assignments(src, func, "USER_PROMPT")[0]


def _render_rubric(call: str) -> Any:
    func, uses_eg = RUBRIC_CALLS[call][2], RUBRIC_CALLS[call][3]

    def render(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
        system, user = _rubric_templates(func)
        values = {"query": _value(inputs, "query"), "doc": _value(inputs, "doc")}
        if uses_eg:
            values["core_criteria"] = _value(inputs, "core_criteria")
        return [{"role": "system", "content": system.render({})}, {"role": "user", "content": user.render(values)}]

    return render


_FENCED = re.compile(r"```json\s*(.*?)```", re.DOTALL)


def _authors_json(raw: str) -> Any:
    """The authors' `_llm_call`: the first ```json fenced block if any, else the stripped text; then strict JSON."""
    if raw is None or not raw.strip():
        raise ParseError("empty answer")
    m = _FENCED.search(raw)
    text = (m.group(1) if m else raw).strip()

    def pairs(kv: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in kv]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise ParseError(f"duplicate key(s) {dup}")
        return dict(kv)

    try:
        return json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} at char {exc.pos}") from exc


def _parse_rubric(call: str) -> Any:
    def parse(raw: str) -> Any:
        from reportbench.protocols.deer.tasks import parse_rubric_data  # lazy: +564 ms to import (python -X importtime)

        return parse_rubric_data(_authors_json(raw), call)

    return parse


def _rubric_response_model(call: str) -> Any:
    """The authors' response schema for this call, rebuilt from the factor keys (schemas.py has no text)."""

    def build() -> type:
        from reportbench.protocols.deer.rubric import skeleton  # lazy: +603 ms to import (python -X importtime)

        factor = create_model(
            "ScoreFactor",
            __config__=ConfigDict(extra="forbid"),
            description=(str, ...),
            score=(int | Literal["N/A"], ...),
        )

        def obj(name: str, fields: Mapping[str, Any]) -> type:
            spec = {f"f_{re.sub(r'[^A-Za-z0-9]', '_', k)}": (t, Field(..., alias=k)) for k, t in fields.items()}
            return create_model(name, __config__=ConfigDict(extra="forbid", populate_by_name=True), **spec)

        groups = {}
        for g, subs in skeleton(call).items():
            subs_m = {}
            for s, els in subs.items():
                els_m = {e: obj(f"{s}_{e}", {fid: factor for fid in fids}) for e, fids in els.items()}
                subs_m[s] = obj(f"{g}_{s}", els_m)
            groups[g] = obj(g, subs_m)
        scores = obj(f"{call}_scores", groups)
        return obj(f"{call}_response", {"scores": scores})

    return build


# ------------------------------------------------------------------------------------------- extraction
@lru_cache(maxsize=1)
def _extraction_templates() -> tuple[Template, Template]:
    """(system f-string with field `prompt_content`, user f-string before `+ "\\n".join(targets)`)."""
    src = read_ref(PROCESSOR)
    system = function_assignments(src, "extract_claims", "system_prompt")[0]
    for node in ast.walk(function_node(src, "extract_claims")):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "user_text" for t in node.targets):
            value = node.value
            if (
                isinstance(value, ast.BinOp)
                and isinstance(value.op, ast.Add)
                and ast.unparse(value.right) == "'\\n'.join(target_sentenecs)"
            ):
                return system, _as_template(value.left)
    raise ExtractError("extract_claims: user_text is not `<f-string> + '\\n'.join(target_sentenecs)`")


def render_extraction(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    system, user = _extraction_templates()
    prompt = read_ref(CLASSIFY)
    targets = list(_value(inputs, "target_sentences"))
    return [
        {"role": "system", "content": system.render({"prompt_content": prompt})},
        {"role": "user", "content": user.render({"report_text": _value(inputs, "report_text")}) + "\n".join(targets)},
    ]


def _json_object(raw: str | None) -> dict[str, Any]:
    """json.loads of the whole content (the authors' code strips no fences): one JSON object, else ParseError."""
    if raw is None or not raw.strip():
        raise ParseError("empty answer")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} at char {exc.pos}") from exc
    if not isinstance(data, dict):
        raise ParseError("answer is not a JSON object")
    return data


def parse_extraction(raw: str) -> Any:
    """json.loads of the whole content (no fences in the authors' code), then the claim schema, strictly."""
    from reportbench.protocols.deer.tasks import ExtractOutput  # lazy: +564 ms to import (python -X importtime)

    # the authors return [] for an empty answer; an empty answer is a failure for us
    return validate_output(_json_object(raw), ExtractOutput)


def _extraction_output(parsed: Any, inputs: Any) -> dict[str, Any]:
    from reportbench.protocols.deer.tasks import parse_extract  # lazy: +564 ms to import (python -X importtime)

    return parse_extract(parsed.model_dump_json(), inputs).model_dump()


@lru_cache(maxsize=1)
def _claim_descriptions() -> dict[str, str]:
    """Field descriptions of the authors' `Claim` model (they reach the model through the schema)."""
    src = read_ref(PROCESSOR)
    tree = ast.parse(src)
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Claim":
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    call = stmt.value
                    if isinstance(call, ast.Call):
                        for kw in call.keywords:
                            if kw.arg == "description" and isinstance(kw.value, ast.Constant):
                                out[stmt.target.id] = str(kw.value.value)
    return out


def _extraction_response_model() -> type:
    d = _claim_descriptions()
    claim = create_model(
        "Claim",
        position=(str, Field(..., description=d.get("position"))),
        claim=(str, Field(..., description=d.get("claim"))),
        claim_type=(str, Field(..., description=d.get("claim_type"))),
        rationale=(str, Field(..., description=d.get("rationale"))),
        numeric=(bool, Field(..., description=d.get("numeric"))),
        citations=(list[str] | None, Field(None, description=d.get("citations"))),
        implicit_citations=(list[str] | None, Field(None, description=d.get("implicit_citations"))),
        cross_references=(list[str] | None, Field(None, description=d.get("cross_references"))),
    )
    return create_model("ClaimExtractionResponse", claims=(list[claim], ...))  # type: ignore[valid-type]


# ----------------------------------------------------------------------------------------- verification
def render_verification(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    template = Template.from_format_string(read_ref(VERIFY))
    claims = list(_value(inputs, "claims"))
    joined = "\n".join(f"{i + 1}. {c}" for i, c in enumerate(claims))  # claim_verifier.py `joined_claims`
    return [
        {
            "role": "user",
            "content": template.render(url=_value(inputs, "url"), claims=joined, context=_value(inputs, "context")),
        }
    ]


def parse_verification(raw: str) -> Any:
    from reportbench.protocols.deer.tasks import VerifyOutput  # lazy: +564 ms to import (python -X importtime)

    return validate_output(_json_object(raw), VerifyOutput)


def _verification_output(parsed: Any, inputs: Any) -> dict[str, Any]:
    from reportbench.protocols.deer.tasks import parse_verify  # lazy: +564 ms to import (python -X importtime)

    return parse_verify(parsed.model_dump_json(), inputs).model_dump()


class _VerificationResultSchema(BaseModel):
    claim_index: int = Field(..., ge=1)
    explanation: str
    result: str


class _VerificationResponse(BaseModel):
    reliable_explanation: str
    reliable: bool
    results: list[_VerificationResultSchema]


# ------------------------------------------------------------------------------------------------ steps
for _call, (_step, _key, _func, _eg) in RUBRIC_CALLS.items():
    register_step(
        AuthorsStep(
            benchmark=BENCHMARK,
            step=_step,
            key=_key,
            sources=(PROMPT_REPORT, SCHEMAS, RUN_EVAL),
            render=_render_rubric(_call),
            render_swapped=None,
            parse=_parse_rubric(_call),
            request_kwargs={"response_format": f"schemas.RESPONSE_FORMAT_MAP['{_call}']"},
            judge_task=f"deer_{_call}",
            from_task=(
                (lambda x: {"query": x.query, "doc": x.report, "core_criteria": x.guidance})
                if _eg
                else (lambda x: {"query": x.query, "doc": x.report})  # the authors never send the EG here
            ),
            to_output=lambda p, x: p.model_dump(),
            response_model=_rubric_response_model(_call),
            description="[system, user]; JSON {scores: {group: {sub: {element: {factor: {description, score}}}}}}",
        )
    )

register_step(
    AuthorsStep(
        benchmark=BENCHMARK,
        step="claim extraction + A–F classification",
        key="claim_extraction",
        sources=(CLASSIFY, PROCESSOR, EVAL_MAIN),
        render=render_extraction,
        render_swapped=None,
        parse=parse_extraction,
        request_kwargs={
            "model": "gpt-5-mini",
            "response_format": "ClaimExtractionResponse",
            "max_completion_tokens": 16384,
            "reasoning_effort": "low",
        },
        judge_task="deer_extract",
        from_task=lambda x: {"report_text": x.report, "target_sentences": list(x.targets)},
        to_output=_extraction_output,
        response_model=_extraction_response_model,
        description="system = prompt file + JSON note; user = labelled report + target sentences",
    )
)

register_step(
    AuthorsStep(
        benchmark=BENCHMARK,
        step="claim verification against the retrieved URL context",
        key="claim_verification",
        sources=(VERIFY, VERIFIER, SOURCE_FILTER),
        render=render_verification,
        render_swapped=None,
        parse=parse_verification,
        request_kwargs={
            "model": "gpt-4.1",
            "response_format": "VerificationResponse",
            "reasoning_effort": "low",  # get_model_kwargs(..., reasoning_effort='low'), sent where supported
            "other": "get_model_kwargs(temperature=0.0, max_tokens=4096, reasoning_effort='low'): "
            "max_completion_tokens=128000 instead of max_tokens/temperature when litellm lists "
            "max_completion_tokens for the model",
        },
        judge_task="deer_verify",
        from_task=lambda x: {"url": x.url, "claims": list(x.claims), "context": x.context},
        to_output=_verification_output,
        response_model=lambda: _VerificationResponse,
        description="one user message (str.format); JSON {reliable_explanation, reliable, results[...]}",
    )
)
