"""LiveResearchBench authors' pack: SalesforceAIResearch/LiveResearchBench@79a19d7 (criteria/*.py + the
provider framing of common/model_clients.py).

Ten steps: presentation, coverage, consistency, citation association and depth (with the position-swapped
call), each on the OpenAI path (`[system, user]`, JSON-schema response format) and on the Gemini path (one user
turn "System: …\\n\\nUser: …" with the schema pasted after the user prompt). Everything is rebuilt at run time
from the pinned files by static extraction; no prompt text lives here.

Binding to our judge tasks: a third step per criterion (key `<criterion>`) is bound (`judge_task`) and renders
the OpenAI or the Gemini framing according to the input's `authors_path`, which the benchmark sets per ensemble
member from `judging.authors_path.<member>` (the spine picks one authors' step per judge task, not per member).
Parsers are strict: the whole answer is the JSON object (a ``` fence allowed); on the Gemini path the authors'
backslash un-escaping runs first, as their client does (the per-member step accepts either form).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from reportbench.judges.base import ParseError
from reportbench.judges.tasks import get_task
from reportbench.judges.tasks._parsing import extract_json_object
from reportbench.prompt_packs import AuthorsStep, register_step
from reportbench.prompt_packs._base import norm_inputs as _norm
from reportbench.prompt_packs._base import source_text as _src
from reportbench.prompt_packs.extract import (
    ExtractError,
    Template,
    function_assignments,
    function_fstrings,
    function_return,
    module_constant,
)
from reportbench.prompt_packs.sources import SourceRef, pinned
from reportbench.prompts import load_prompt

BENCHMARK = "LiveResearchBench"
REPO = "SalesforceAIResearch/LiveResearchBench"
COMMIT = "79a19d7cb9404a7be8c03e35fb4bc7c1146cd8a9"
_C = "liveresearchbench/criteria/"


_ref = pinned(REPO, COMMIT)


PRESENTATION = _ref(_C + "presentation.py", "1853ee21f13c555d7a29f4cd6f33ea8bb26dbb8b5707ffa56bc3e7db8243b456")
COVERAGE = _ref(_C + "coverage.py", "d7912e77e8b64d0a091cd535233a03258192b5e684b60dbf2497e41e835bf650")
CONSISTENCY = _ref(_C + "consistency.py", "293ee18a6edcb2dd391d80b60109edd28230e67c93a880f02cf13c7eddba2b94")
CITATION = _ref(_C + "citation.py", "d48777b4d3970d7a0e3de55b8e9fd043071341222b74e43ed3d46dfd52f10981")
DEPTH = _ref(_C + "depth.py", "3e4efa0dc09e9b90acea8bfbd6225c2f4c3c193f72b6e06a7efdf0f68083b46b")
CLIENTS = _ref(
    "liveresearchbench/common/model_clients.py", "19447a637916e239f5a4ee338cf4024796f925059f234793c3eab4c9325ee93b"
)

OPENAI_MODEL = "gpt-5-2025-08-07"
GEMINI_MODEL = "gemini-2.5-pro"


def _module_literal(source: str, name: str) -> Any:
    """A module-level `NAME = <literal>` (dicts of the schemas and the presentation questions)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise ExtractError(f"no module-level literal {name!r}")


def _method_source(source: str, cls: str, method: str) -> str:
    """One class's method as standalone source (the two clients share method names)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == method:
                    return ast.unparse(item)
    raise ExtractError(f"no method {cls}.{method}")


def _field_template(templates: list[Template], *fields: str) -> Template:
    for t in templates:
        if t.fields and set(t.fields) == set(fields):
            return t
    raise ExtractError(f"no template with fields {fields}")


# ----------------------------------------------------------------------------------------- provider framing
def _openai(system: str, user: str) -> list[dict[str, Any]]:
    """OpenAIClient: [system, user] (the system message only when non-empty)."""
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]


def _gemini(system: str, user: str, schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """GeminiClient: schema text appended to the user prompt, then one merged user turn."""
    clients = _src(CLIENTS)
    schema_t = [
        t
        for t in function_assignments(
            _method_source(clients, "GeminiClient", "_generate_with_schema_async_impl"),
            "_generate_with_schema_async_impl",
            "schema_prompt",
        )
        if t.fields
    ][0]
    full_user = user + schema_t.render({"json.dumps(schema, indent=2)": json.dumps(schema, indent=2)})
    merged = function_assignments(
        _method_source(clients, "GeminiClient", "_generate_sync"), "_generate_sync", "full_prompt"
    )
    framed = [t for t in merged if set(t.fields) == {"system_prompt", "user_prompt"}][0]
    content = framed.render(system_prompt=system, user_prompt=full_user) if system else full_user
    return [{"role": "user", "content": content}]


# ------------------------------------------------------------------------------------------ criterion prompts
def _presentation(inputs: Mapping[str, Any]) -> tuple[str, str, Any]:
    src = _src(PRESENTATION)
    inp = _norm(inputs)
    fn = "create_presentation_prompt"
    questions = _module_literal(src, "PRESENTATION_QUESTIONS")
    line = _field_template(function_fstrings(src, fn), "item_id", "item_text")
    section = "\n".join(line.render(item_id=k, item_text=v) for k, v in questions.items())
    system = function_assignments(src, fn, "system_prompt")[-1].render(current_date=inp.get("current_date"))
    user = function_assignments(src, fn, "user_prompt")[-1].render(
        query=inp["query"], report_content=inp["report_content"], checklist_section=section
    )
    return system, user, _module_literal(src, "PRESENTATION_EVALUATION_SCHEMA")


def _coverage(inputs: Mapping[str, Any]) -> tuple[str, str, Any]:
    src = _src(COVERAGE)
    inp = _norm(inputs)
    fn = "create_coverage_prompt"
    line = _field_template(function_fstrings(src, fn), "i", "checklist_text")
    section = "\n".join(line.render(i=i, checklist_text=c) for i, c in enumerate(inp["checklists"], 1))
    system = function_assignments(src, fn, "system_prompt")[-1].render(current_date=inp.get("current_date"))
    user = function_assignments(src, fn, "user_prompt")[-1].render(
        query=inp["query"], report_content=inp["report_content"], checklist_section=section
    )
    return system, user, _module_literal(src, "COVERAGE_EVALUATION_SCHEMA")


def _pointwise(ref: SourceRef, fn: str, rubric: str, schema: str) -> Any:
    def build(inputs: Mapping[str, Any]) -> tuple[str, str, Any]:
        src = _src(ref)
        inp = _norm(inputs)
        values = {"current_date": inp["current_date"], rubric: module_constant(src, rubric)}
        system = function_assignments(src, fn, "system_prompt")[-1].render(values)
        user = function_assignments(src, fn, "user_prompt")[-1].render(
            query=inp["query"], report_content=inp["report_content"]
        )
        return system, user, _module_literal(src, schema)

    return build


def _depth(inputs: Mapping[str, Any], swapped: bool = False) -> tuple[str, str, Any]:
    src = _src(DEPTH)
    inp = _norm(inputs)
    a, b = (inp["report_b"], inp["report_a"]) if swapped else (inp["report_a"], inp["report_b"])
    system = function_return(src, "create_depth_comparison_prompt").text
    user = function_return(src, "create_depth_user_prompt").render(query=inp["query"], report_a=a, report_b=b)
    return system, user, _module_literal(src, "DEPTH_COMPARISON_SCHEMA")


# -------------------------------------------------------------------------------------------- parsers
_GEMINI_UNESCAPES = ("\\+", "\\&", "\\%", "\\:", "\\=", "\\?", "\\#", "\\~")


def _unescape(raw: str) -> str:
    """The Gemini client's backslash un-escaping (applied before json.loads, as the authors do)."""
    for seq in _GEMINI_UNESCAPES:
        raw = raw.replace(seq, seq[1])
    return raw


def parse_checklist_answer(raw: str, ids: re.Pattern[str]) -> dict[str, Any]:
    data = extract_json_object(raw)
    ev = data.get("evaluations")
    if set(data) != {"evaluations"} or not isinstance(ev, dict):
        raise ParseError('expected exactly {"evaluations": {...}}')
    for k, v in ev.items():
        if not ids.match(k):
            raise ParseError(f"key {k!r} does not match {ids.pattern}")
        if not isinstance(v, dict) or set(v) != {"score", "justification"}:
            raise ParseError(f"evaluations.{k} must have exactly score and justification")
        if isinstance(v["score"], bool) or v["score"] not in (0, 1) or not isinstance(v["score"], int):
            raise ParseError(f"evaluations.{k}.score must be 0 or 1")
        if not isinstance(v["justification"], str):
            raise ParseError(f"evaluations.{k}.justification must be a string")
    return data


def parse_pointwise_answer(raw: str) -> dict[str, Any]:
    data = extract_json_object(raw)
    need = {"specific_issues", "total_issues", "score", "justification"}
    if set(data) != need:
        raise ParseError(f"expected exactly the keys {sorted(need)}")
    if not isinstance(data["specific_issues"], list) or not all(isinstance(x, str) for x in data["specific_issues"]):
        raise ParseError("specific_issues must be a list of strings")
    for k, lo, hi in (("total_issues", 0, None), ("score", 10, 100)):
        v = data[k]
        if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
            raise ParseError(f"{k} must be an integer in [{lo}, {hi}]")
    if not isinstance(data["justification"], str):
        raise ParseError("justification must be a string")
    return data


def parse_depth_answer(raw: str) -> dict[str, Any]:
    # lazy: +941 ms to import (python -X importtime)
    from reportbench.protocols.liveresearchbench.tasks import parse_depth

    return parse_depth(raw).model_dump()


_P_IDS = re.compile(r"^p[0-9]+$")
_Q_IDS = re.compile(r"^q[0-9]+$")


# ------------------------------------------------------------------------------ mapping to our judge tasks
def _checklist_out(parsed: Mapping[str, Any], inputs: Any) -> dict[str, Any]:
    return {"evaluations": dict(parsed["evaluations"])}


def _coverage_out(parsed: Mapping[str, Any], inputs: Any) -> dict[str, Any]:
    """The authors number the checklist q1..qN by position; map back to our item ids (q2 may be absent)."""
    by_pos = {f"q{i}": c.id for i, c in enumerate(inputs.criteria, 1)}
    return {"evaluations": {by_pos.get(k, k): v for k, v in parsed["evaluations"].items()}}


def _as_is(parsed: Mapping[str, Any], inputs: Any) -> dict[str, Any]:
    return dict(parsed)


_OPENAI_KW = {
    "model": OPENAI_MODEL,
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "grading_response", "schema": "<the criterion's *_SCHEMA dict>"},
    },
}
_GEMINI_KW = {
    "model": GEMINI_MODEL,
    "config": "GenerateContentConfig(thinking_config=ThinkingConfig(thinking_budget=16000))",
    "native_contents": "[{'role': 'user', 'parts': [{'text': <content below>}]}]",
}

_CRITERIA: tuple[tuple[str, str, str, Any, tuple[SourceRef, ...], Any, Any, Any], ...] = (
    # key, goldens step prefix, our task, builder, sources, parser, from_task, to_output
    (
        "presentation",
        "presentation & organization (10 binary checks)",
        "lrb_presentation",
        _presentation,
        (PRESENTATION, CLIENTS),
        lambda raw: parse_checklist_answer(raw, _P_IDS),
        lambda i: {"query": i.query, "report_content": i.report, "current_date": i.eval_date},
        _checklist_out,
    ),
    (
        "coverage",
        "coverage & comprehensiveness (per-task checklist, binary)",
        "lrb_coverage",
        _coverage,
        (COVERAGE, CLIENTS),
        lambda raw: parse_checklist_answer(raw, _Q_IDS),
        lambda i: {
            "query": i.query,
            "report_content": i.report,
            "checklists": [c.text for c in i.criteria],
            "current_date": i.eval_date,
        },
        _coverage_out,
    ),
    (
        "consistency",
        "factual & logical consistency (issue count -> 10-100)",
        "lrb_consistency",
        _pointwise(CONSISTENCY, "create_consistency_prompt", "CONSISTENCY_RUBRIC", "CONSISTENCY_EVALUATION_SCHEMA"),
        (CONSISTENCY, CLIENTS),
        parse_pointwise_answer,
        lambda i: {"query": i.query, "report_content": i.report, "current_date": i.eval_date},
        _as_is,
    ),
    (
        "citation",
        "citation association (uncited major claims -> 10-100)",
        "lrb_citation",
        _pointwise(CITATION, "create_citation_prompt", "CITATION_RUBRIC", "CITATION_EVALUATION_SCHEMA"),
        (CITATION, CLIENTS),
        parse_pointwise_answer,
        lambda i: {"query": i.query, "report_content": i.report, "current_date": i.eval_date},
        _as_is,
    ),
    (
        "depth",
        "analysis depth (pairwise vs reference report, position swap)",
        "lrb_depth",
        _depth,
        (DEPTH, CLIENTS),
        parse_depth_answer,
        lambda i: {"query": i.query, "report_a": i.report_a, "report_b": i.report_b},
        _as_is,
    ),
)


def _register() -> None:
    for key, prefix, task, build, sources, parse, from_task, to_output in _CRITERIA:
        swapped = key == "depth"

        def openai(inputs: Mapping[str, Any], build: Any = build, sw: bool = False) -> list[dict[str, Any]]:
            system, user, _schema = build(inputs, True) if sw else build(inputs)
            return _openai(system, user)

        def gemini(inputs: Mapping[str, Any], build: Any = build, sw: bool = False) -> list[dict[str, Any]]:
            system, user, schema = build(inputs, True) if sw else build(inputs)
            return _gemini(system, user, schema)

        def gemini_parse(raw: str, parse: Any = parse) -> Any:
            return parse(_unescape(raw))

        register_step(
            AuthorsStep(
                benchmark=BENCHMARK,
                step=f"{prefix} [OpenAI path]",
                key=f"{key}/openai",
                sources=sources,
                render=openai,
                render_swapped=(lambda i, f=openai: f(i, sw=True)) if swapped else None,
                parse=parse,
                request_kwargs=_OPENAI_KW,
                from_task=from_task,
                to_output=to_output,
                description="OpenAI chat completions: [system, user] + json_schema response format",
            )
        )
        register_step(
            AuthorsStep(
                benchmark=BENCHMARK,
                step=f"{prefix} [Gemini path: merged single user turn]",
                key=f"{key}/gemini",
                sources=sources,
                render=gemini,
                render_swapped=(lambda i, f=gemini: f(i, sw=True)) if swapped else None,
                parse=gemini_parse,
                request_kwargs=_GEMINI_KW,
                from_task=from_task,
                to_output=to_output,
                description="google-genai: one user turn 'System: ...\\n\\nUser: ...' + schema text; thinking 16000",
            )
        )

        def per_member(inputs: Mapping[str, Any], openai: Any = openai, gemini: Any = gemini) -> list[dict[str, Any]]:
            return (gemini if inputs.get("_path") == "gemini" else openai)(inputs)

        def either_parse(raw: str, parse: Any = parse) -> Any:
            """What one of the two clients accepts: plain JSON (OpenAI), else after the Gemini un-escaping."""
            try:
                return parse(raw)
            except ParseError as first:
                try:
                    return parse(_unescape(raw))
                except ParseError:
                    raise first from None

        register_step(
            AuthorsStep(
                benchmark=BENCHMARK,
                step=f"{prefix} [provider path chosen per ensemble member]",
                key=key,
                sources=sources,
                render=per_member,
                render_swapped=None,
                parse=either_parse,
                # the judge sends the kwargs of its own provider's client (judges/llm.py `_step_kwargs`)
                request_kwargs={"per_provider": {"openai": _OPENAI_KW, "gemini": _GEMINI_KW}},
                judge_task=task,
                from_task=lambda i, f=from_task: {**f(i), "_path": i.authors_path},
                to_output=to_output,
                description="OpenAI or Gemini framing by the member's judging.authors_path (default openai)",
            )
        )


_register()


# ------------------------------------------------------------- citation accuracy: no authors' prompt exists
def _ours(task_name: str) -> AuthorsStep:
    """The authors describe citation accuracy but released no prompt or code, so with judge.prompts=authors these
    two steps send OUR prompt (prompts/liveresearchbench/) instead of failing the run; records say so in their
    prompt id ('authors:liveresearchbench/<x>_ours_no_authors_prompt')."""

    short = task_name.removeprefix("lrb_")

    def render(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
        return load_prompt(get_task(task_name).prompt_id).render(**inputs)

    def parse(raw: str) -> Any:
        return get_task(task_name).parse(raw, None).model_dump()

    return AuthorsStep(
        benchmark=BENCHMARK,
        step=f"citation accuracy {short} (no authors' prompt: ours)",
        key=f"{short}_ours_no_authors_prompt",
        sources=(),
        render=render,
        render_swapped=None,
        parse=parse,
        judge_task=task_name,
        from_task=lambda i: i.prompt_values(),
        to_output=lambda parsed, i: parsed,
        description="our reconstruction's prompt; the authors released none",
    )


register_step(_ours("lrb_relevance"))
register_step(_ours("lrb_support"))
