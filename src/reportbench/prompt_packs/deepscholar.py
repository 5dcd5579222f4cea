"""DeepScholar-bench authors' pack: guestrin-lab/deepscholar-bench@6ff05aa (+ lotus v1.1.4 framing, nuggetizer).

Every step rebuilds the authors' messages from their pinned files with static extraction (see extract.py):
support validator, relevance rate, organization (+ the permuted call), important-citation filter (the last
three with the LOTUS framing of _lotus.py), and the nuggetizer's creation, scoring and assignment prompts.
Parsers are strict versions of the authors' answer formats: where the authors fall back (support: anything
but '1' counts as 0; lotus filter: default True), we raise ParseError so the judge records a failure.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, create_model

from reportbench.judges.base import ParseError
from reportbench.prompt_packs import AuthorsStep, register_step
from reportbench.prompt_packs import _lotus as lotus
from reportbench.prompt_packs._base import need as _need
from reportbench.prompt_packs._base import norm_inputs as _norm
from reportbench.prompt_packs._base import source_text as _src
from reportbench.prompt_packs.extract import (
    ExtractError,
    Field,
    Template,
    argparse_default,
    assignments_anywhere,
    call_keywords,
    class_literal_fields,
    function_accumulated,
    function_assignments,
    function_defaults,
    function_fstrings,
    function_messages,
    function_return,
    literal_assignments,
    module_constant,
)
from reportbench.prompt_packs.sources import SourceRef, pinned

BENCHMARK = "DeepScholar-bench"
REPO = "guestrin-lab/deepscholar-bench"
COMMIT = "6ff05aa53db6dc5f94e7342084293d36b0153f99"


_ref = pinned(REPO, COMMIT)


LICENSE = _ref("LICENSE", "30abf207c6f5619b0cf62e06ce5f69c707b3bad72fadad0d50163185da7deb89")
SUPPORT = _ref("eval/prompts/support.py", "957e2c168411d90193c23553c047fd56d1573ba5a05bb975e48fd7216bb6bc36")
CITE_P = _ref("eval/evaluator/cite_p.py", "3f1bb36c8969161c0c1dbb98f36a6732455060f82797ef23cf347d00f030dc9e")
RELEVANCE = _ref(
    "eval/prompts/citation_relevance_judge_instruction.py",
    "bc36e496a019d973ed0fa12715f023a91e727a5ad3acecba3b4e89713c9236b9",
)
COVERAGE_RELEVANCE_RATE = _ref(
    "eval/evaluator/coverage_relevance_rate.py", "e6bb0d3cb838be141ca8c61268ddcc9325711e15403fcc1c97fa86172a9957fb"
)
UTILS = _ref("eval/utils.py", "3d4951bab30b5559ac42175d070569be7c99f8e46b5e65c0f86e971edab6710a")
ORGANIZATION = _ref(
    "eval/prompts/organization_judge_instruction.py",
    "57929d7b3a4d5d7f783db921522f2b0d1e58c32c4ac2b380afcc19f030f438bb",
)
ORGANIZATION_EVAL = _ref(
    "eval/evaluator/organization.py", "e965300f607c489514ca596af9f2196ee8d48aafafdc924bb8d0a232e6e8033d"
)
IMPORTANT = _ref(
    "data_pipeline/get_important_citations.py", "1e1e8d916bf4c30fb23b4e5be658d78bad5cb5f46c9c88466bb9acf5917f48b8"
)
GEN_NUGGETS = _ref(
    "data_pipeline/generate_nuggets_from_reports.py", "ddfd5d226fdd8e989017f289499791eed8a19617d6ffdee43dfe3f71356f1586"
)
_NZ = "eval/nuggetizer/src/nuggetizer/"
CREATOR = _ref(_NZ + "prompts/creator_prompts.py", "e332560b76198ecfe440fdd94d61205e0bda8e49c9efd433f19b3e48d3c4c462")
SCORER = _ref(_NZ + "prompts/scorer_prompts.py", "1742d64e4ee0eb27441fe5485f4b8552c6b2a4af8af6b338802e66d6cfc3347f")
ASSIGNER = _ref(_NZ + "prompts/assigner_prompts.py", "42c56d9a427706a3fd87be177137bdeac7c62014d14f21b1ad03bae2e3a8c619")
NUGGETIZER = _ref(_NZ + "models/nuggetizer.py", "efdec3ff29ec9f7f5029087be4cc1101fab13778cac5d80cf9b55a0ccbc25fdf")
NZ_LLM = _ref(_NZ + "core/llm.py", "18cdede9db444a1acae67eb45b06f005b48d604c38aa5e0e3e7580b6a6ca8e6d")
NUGGET_COVERAGE = _ref(
    "eval/evaluator/nugget_coverage.py", "957cf663243d824906431b83bb830247e19340003cc3b08d1a1c425dbadef4e3"
)


def _escape_braces(text: str) -> str:
    """eval/utils.py escape_braces: double every brace so `.format` leaves the text as is."""
    return text.replace("{", "{{").replace("}", "}}")


# -- strict parsers -------------------------------------------------------------------------------------


def parse_bare_binary(raw: str) -> int:
    """Exactly '1' or '0' (surrounding whitespace allowed). The authors map anything else to 0; we refuse."""
    text = raw.strip()
    if text not in ("0", "1"):
        raise ParseError(f"expected a bare '1' or '0', got {raw[:80]!r}")
    return int(text)


def _strict_json_object(raw: str) -> dict[str, Any]:
    def no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ParseError(f"duplicate keys in {keys}")
        return dict(pairs)

    try:
        obj = json.loads(raw.strip(), object_pairs_hook=no_dupes)
    except json.JSONDecodeError as exc:
        raise ParseError(f"not a JSON object: {exc}") from exc
    if not isinstance(obj, dict):
        raise ParseError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _literal_model(name: str, fields: Mapping[str, tuple[Any, ...] | str]) -> type[BaseModel]:
    """A strict pydantic model equivalent to the authors' response class (Literal fields and `str`)."""
    spec: dict[str, Any] = {}
    for fname, ann in fields.items():
        if isinstance(ann, tuple):
            spec[fname] = (Literal[ann], ...)  # type: ignore[valid-type]
        elif ann == "str":
            spec[fname] = (str, ...)
        else:
            raise ExtractError(f"{name}.{fname}: unsupported annotation {ann!r}")
    return create_model(name, __config__=ConfigDict(extra="forbid", strict=True), **spec)


def _json_parser(model_fn: Any) -> Any:
    def parse(raw: str) -> dict[str, Any]:
        model = model_fn()
        obj = _strict_json_object(raw)
        try:
            return model.model_validate(obj).model_dump()
        except ValueError as exc:
            raise ParseError(f"does not match {model.__name__}: {exc}") from exc

    return parse


def _python_list_parser(allowed: tuple[str, ...] | None) -> Any:
    """The nuggetizer's format: a Python list literal, after removing ```python / ``` fences as the authors do."""

    def parse(raw: str) -> list[str]:
        text = raw.replace("```python", "").replace("```", "").strip()
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            raise ParseError(f"not a Python list literal: {type(exc).__name__}: {exc}") from exc
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ParseError(f"expected a list of strings, got {type(value).__name__}")
        if allowed is not None:
            bad = [v for v in value if v not in allowed]
            if bad:
                raise ParseError(f"labels {bad[:5]} not in {list(allowed)}")
        return value

    return parse


def parse_filter_answer(raw: str) -> bool:
    """lotus sem_filter format, strictly: one 'Answer:' followed by exactly True or False (nothing after)."""
    if raw.count("Answer:") != 1:
        raise ParseError(f"expected exactly one 'Answer:' cue, got {raw.count('Answer:')}")
    tail = raw.split("Answer:", 1)[1].strip()
    if tail not in ("True", "False"):
        raise ParseError(f"expected 'Answer: True' or 'Answer: False', got {tail[:40]!r}")
    return tail == "True"


# -- support ----------------------------------------------------------------------------------------------


def render_support(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """get_support(premise, hypothesis) -> lotus LM.get_completion(system, user) -> [system, user]."""
    inp = _norm(inputs)
    premise, hypothesis = _need(inp, "premise", "hypothesis")
    src = _src(SUPPORT)
    system = function_assignments(src, "get_support", "system_prompt")[0].text
    user = function_accumulated(src, "get_support", "user_prompt").render(premise=premise, hypothesis=hypothesis)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# -- relevance rate ----------------------------------------------------------------------------------------


def _relevance_instruction(inp: Mapping[str, Any]) -> str:
    """coverage_relevance_rate.py: the constant `.format()`ed with escape_braces(exemplar fields) and the
    literal '{title}'/'{sent}' column placeholders that lotus later rewrites."""
    const = module_constant(_src(RELEVANCE), "citation_relevance_judge_instruction")
    calls = call_keywords(_src(COVERAGE_RELEVANCE_RATE), "_calculate", "format")
    if len(calls) != 1:
        raise ExtractError(f"expected one .format() call in _calculate, found {len(calls)}")
    values: dict[str, Any] = {}
    for name, v in calls[0].items():
        if isinstance(v, Field):
            if "escape_braces(" not in v.expr:
                raise ExtractError(f"unexpected .format argument {name}={v.expr}")
            values[name] = _escape_braces(str(_need(inp, name)[0]))
        else:
            values[name] = v
    return Template.from_format_string(const).render(values)


def render_relevance(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    inp = _norm(inputs)
    title, sent = _need(inp, "doc_title", "doc_sent")
    system = function_assignments(_src(COVERAGE_RELEVANCE_RATE), "_calculate", "system_prompt")[0].text
    return lotus.map_messages({"title": title, "sent": sent}, _relevance_instruction(inp), system)


@lru_cache(maxsize=1)
def relevance_model() -> type[BaseModel]:
    return _literal_model(
        "CitationRelevanceResponse", class_literal_fields(_src(RELEVANCE), "CitationRelevanceResponse")
    )


# -- organization ------------------------------------------------------------------------------------------


def _org_call() -> tuple[str, str, str]:
    calls = call_keywords(_src(ORGANIZATION_EVAL), "calculate", "pairwise_judge")
    if len(calls) != 1:
        raise ExtractError(f"expected one pairwise_judge call, found {len(calls)}")
    c = calls[0]
    system = function_assignments(_src(ORGANIZATION_EVAL), "calculate", "system_prompt")[0].text
    return str(c["col1"]), str(c["col2"]), system


def _render_org(inputs: Mapping[str, Any], swapped: bool) -> list[dict[str, str]]:
    """pairwise_judge(col1, col2, permute_cols=True): trial 0 lists (col1, col2), trial 1 (col2, col1); the
    instruction text (and so its A/B labels) is the same in both."""
    inp = _norm(inputs)
    col1, col2, system = _org_call()
    instruction = module_constant(_src(ORGANIZATION), "organization_judge_instruction")
    order = [col2, col1] if swapped else [col1, col2]
    return lotus.map_messages(inp, instruction, system, extra_cols_to_include=order)


def render_organization(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    return _render_org(inputs, swapped=False)


def render_organization_swapped(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    return _render_org(inputs, swapped=True)


@lru_cache(maxsize=1)
def organization_model() -> type[BaseModel]:
    return _literal_model("OrganizationResponse", class_literal_fields(_src(ORGANIZATION), "OrganizationResponse"))


# -- important-citation filter -----------------------------------------------------------------------------


def render_important(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """joined_df.sem_filter(query_in) for one joined row."""
    return lotus.filter_messages(_norm(inputs), module_constant(_src(IMPORTANT), "query_in"))


# -- nuggetizer ---------------------------------------------------------------------------------------------


def _query_text(inp: Mapping[str, Any]) -> str:
    """res.json's query: the f-string of generate_nuggets_from_reports.py over the paper abstract."""
    if "query_text" in inp:
        return str(inp["query_text"])
    if "query" in inp:
        return str(inp["query"])
    (abstract,) = _need(inp, "abstract")
    ts = assignments_anywhere(_src(GEN_NUGGETS), "query_text")
    return ts[0].render(abstract=abstract)


def _texts(nuggets: Sequence[Any]) -> list[str]:
    return [n["text"] if isinstance(n, Mapping) else str(n) for n in nuggets]


def _window(inp: Mapping[str, Any], items: Sequence[Any], size_param: str) -> list[Any]:
    size = int(function_defaults(_src(NUGGETIZER), "__init__")[size_param])
    start = int(inp.get("start", 0))
    return list(items[start : start + size])


def _system_and_user(ref: SourceRef, func: str) -> tuple[str, Template | None]:
    msgs = function_messages(_src(ref), func)
    if [r for r, _ in msgs] != ["system", "user"] or msgs[0][1] is None:
        raise ExtractError(f"{func}: expected [system literal, user] messages")
    return msgs[0][1].text, msgs[1][1]


def render_nugget_create(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """Nuggetizer.create -> create_nugget_prompt(request, start, end, nuggets) for one document window."""
    inp = _norm(inputs)
    (documents,) = _need(inp, "documents")
    src = _src(CREATOR)
    system, _ = _system_and_user(CREATOR, "create_nugget_prompt")
    window = _window(inp, documents, "creator_window_size")
    seg_t = function_fstrings(src, "get_nugget_prompt_content")[0]
    context = "\n".join(
        seg_t.render({"i + 1": i + 1, "doc.segment": d["segment"] if isinstance(d, Mapping) else str(d)})
        for i, d in enumerate(window)
    )
    nuggets = list(inp.get("nuggets", []))
    max_n = inp.get("creator_max_nuggets", function_defaults(src, "get_nugget_prompt_content")["creator_max_nuggets"])
    user = function_return(src, "get_nugget_prompt_content").render(
        {
            "creator_max_nuggets": max_n,
            "request.query.text": _query_text(inp),
            "context": context,
            "nuggets": nuggets,
            "len(nuggets)": len(nuggets),
        }
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def render_nugget_score(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """Nuggetizer.create's scoring loop -> create_score_prompt(query, window of nuggets)."""
    inp = _norm(inputs)
    (nuggets,) = _need(inp, "nuggets")
    system, user_t = _system_and_user(SCORER, "create_score_prompt")
    assert user_t is not None
    window = _texts(_window(inp, nuggets, "scorer_window_size"))
    user = user_t.render(
        {"len(nuggets)": len(window), "query": _query_text(inp), "[nugget.text for nugget in nuggets]": window}
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def render_nugget_assign(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """Nuggetizer.assign -> create_assign_prompt(query, context, window) with the default SUPPORT_GRADE_3."""
    inp = _norm(inputs)
    context, nuggets = _need(inp, "context", "nuggets")
    src = _src(ASSIGNER)
    system, _ = _system_and_user(ASSIGNER, "create_assign_prompt")
    window = _window(inp, nuggets, "assigner_window_size")
    # `instruction` is assigned in the if (SUPPORT_GRADE_2) and else (default SUPPORT_GRADE_3) branches.
    instruction = function_assignments(src, "get_assign_prompt_content", "instruction")[-1].render(
        {"len(nuggets)": len(window)}
    )
    user = function_return(src, "get_assign_prompt_content").render(
        instruction=instruction, query=_query_text(inp), context=context, nugget_texts=_texts(window)
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@lru_cache(maxsize=1)
def _nuggetizer_kwargs() -> dict[str, Any]:
    """LLMHandler.run's chat.completions.create constants + the temperature Nuggetizer passes first."""
    calls = call_keywords(_src(NZ_LLM), "run", "create")
    consts = {k: v for k, v in calls[0].items() if not isinstance(v, Field)} if calls else {}
    temperature = literal_assignments(_src(NUGGETIZER), "create", "temperature")[0]
    return {"temperature": temperature, **consts}


def _build_kwargs() -> dict[str, Any]:
    return {"model": argparse_default(_src(GEN_NUGGETS), "--model"), **_nuggetizer_kwargs()}


class _LazyKwargs(Mapping[str, Any]):
    """request_kwargs read from the sources on first use (registration must not need the sources)."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def _d(self) -> Mapping[str, Any]:
        return self._fn()

    def __getitem__(self, k: str) -> Any:
        return self._d()[k]

    def __iter__(self) -> Any:
        return iter(self._d())

    def __len__(self) -> int:
        return len(self._d())

    def __repr__(self) -> str:
        return f"_LazyKwargs({self._fn.__name__})"


# -- bindings to our judge tasks -----------------------------------------------------------------------------


def _labels_for(parsed: list[str], expected: int, what: str) -> list[str]:
    if len(parsed) != expected:
        raise ParseError(f"expected {expected} {what} labels, got {len(parsed)}")
    return parsed


def _one_window(nuggets: Sequence[str], size_param: str) -> list[str]:
    size = int(function_defaults(_src(NUGGETIZER), "__init__")[size_param])
    if len(nuggets) > size:
        raise ValueError(
            f"the authors' nuggetizer sends windows of {size} nuggets; this item has {len(nuggets)} "
            "(split it into windows before judging with judge.prompts=authors)"
        )
    return list(nuggets)


_MAP = lotus.MAP_SOURCES
STEPS = (
    AuthorsStep(
        benchmark=BENCHMARK,
        step="support / attribution validator (Citation Precision and Claim Coverage)",
        key="support",
        sources=(SUPPORT, CITE_P, lotus.LM),
        render=render_support,
        render_swapped=None,
        parse=parse_bare_binary,
        request_kwargs={},
        judge_task="support",
        from_task=lambda x: {"premise": x.reference, "hypothesis": x.claim},
        to_output=lambda p, x: {"supported": p},
        description="bare 1/0 after 'Answer:'; sent through lotus get_completion as [system, user]",
    ),
    AuthorsStep(
        benchmark=BENCHMARK,
        step="relevance rate (graded relevance of each cited reference), with lotus framing",
        key="relevance",
        sources=(RELEVANCE, COVERAGE_RELEVANCE_RATE, UTILS, *_MAP),
        render=render_relevance,
        render_swapped=None,
        parse=_json_parser(relevance_model),
        request_kwargs={"response_format": "CitationRelevanceResponse", "n_trials": 2},
        judge_task="relevance",
        from_task=lambda x: {
            "paper_title": x.paper_title,
            "paper_abstract": x.paper_abstract,
            "paper_related_work": x.exemplar,
            "doc_title": x.ref_title,
            "doc_sent": x.ref_abstract,
        },
        to_output=lambda p, x: {"score": p["score"], "explanation": ""},
        response_model=relevance_model,
        description="lotus llm_as_judge; only the second trial's answer is used by the authors",
    ),
    AuthorsStep(
        benchmark=BENCHMARK,
        step="organization (pairwise, generated vs exemplar), with lotus framing",
        key="organization",
        sources=(ORGANIZATION, ORGANIZATION_EVAL, *lotus.PAIRWISE_SOURCES),
        render=render_organization,
        render_swapped=render_organization_swapped,
        parse=_json_parser(organization_model),
        request_kwargs={"response_format": "OrganizationResponse", "n_trials": 2, "permute_cols": True},
        judge_task="organization",
        from_task=lambda x: {
            "paper_title": x.paper_title,
            "paper_abstract": x.paper_abstract,
            "related_work_a": x.section_a,
            "related_work_b": x.section_b,
        },
        to_output=lambda p, x: {"decision": p["decision"], "explanation": p["explanation"]},
        response_model=organization_model,
        description="lotus pairwise_judge with permute_cols=True; the swapped call keeps the A/B labels",
    ),
    AuthorsStep(
        benchmark=BENCHMARK,
        step="important-citation filter (dataset construction; defines Reference Coverage's target set), "
        "with lotus framing",
        key="important_citations",
        sources=(IMPORTANT, *lotus.FILTER_SOURCES),
        render=render_important,
        render_swapped=None,
        parse=parse_filter_answer,
        request_kwargs={},
        judge_task="important_reference",
        from_task=lambda x: {
            "title": x.paper_title,
            "abstract": x.paper_abstract,
            "related_work_section": x.related_work,
            "cited_paper_title": x.cited_title,
            "cited_paper_authors": x.cited_authors,
            "cited_paper_content": x.cited_content,
        },
        to_output=lambda p, x: {"important": p, "explanation": ""},
        description="lotus sem_filter: fixed system prompt, 'Claim:' user tag, Answer: True/False",
    ),
    AuthorsStep(
        benchmark=BENCHMARK,
        step="nugget creation (exemplar nuggets; dataset build)",
        key="nugget_create",
        sources=(CREATOR, GEN_NUGGETS, NUGGETIZER, NZ_LLM),
        render=render_nugget_create,
        render_swapped=None,
        parse=_python_list_parser(None),
        request_kwargs=_LazyKwargs(_build_kwargs),
        judge_task="nugget_create",
        from_task=lambda x: {
            "query_text": x.query,
            "documents": [{"docid": "passage", "segment": x.passage}],
            "creator_max_nuggets": x.max_nuggets,
        },
        to_output=lambda p, x: {"nuggets": p[: x.max_nuggets]},
        description="nuggetizer creator prompt, first window; Python list answer",
    ),
    AuthorsStep(
        benchmark=BENCHMARK,
        step="nugget importance scoring (vital/okay; dataset build)",
        key="nugget_score",
        sources=(SCORER, GEN_NUGGETS, NUGGETIZER, NZ_LLM),
        render=render_nugget_score,
        render_swapped=None,
        parse=_python_list_parser(("vital", "okay")),
        request_kwargs=_LazyKwargs(_build_kwargs),
        judge_task="nugget_score",
        from_task=lambda x: {"query_text": x.query, "nuggets": _one_window(x.nuggets, "scorer_window_size")},
        to_output=lambda p, x: {"importance": _labels_for(p, len(x.nuggets), "importance")},
        description="nuggetizer scorer prompt (windows of 10); Python list of vital/okay",
    ),
    AuthorsStep(
        benchmark=BENCHMARK,
        step="nugget assignment (Nugget Coverage at eval time; also dataset build)",
        key="nugget_assign",
        sources=(ASSIGNER, NUGGET_COVERAGE, NUGGETIZER, NZ_LLM),
        render=render_nugget_assign,
        render_swapped=None,
        parse=_python_list_parser(("support", "partial_support", "not_support")),
        request_kwargs=_LazyKwargs(_nuggetizer_kwargs),
        judge_task="nugget_assign",
        from_task=lambda x: {
            "query": x.query,
            "context": x.passage,
            "nuggets": _one_window(x.nuggets, "assigner_window_size"),
        },
        to_output=lambda p, x: {"labels": _labels_for(p, len(x.nuggets), "assignment")},
        description="nuggetizer assigner prompt, SUPPORT_GRADE_3 (windows of 10); Python list of labels",
    ),
)

for _step in STEPS:
    register_step(_step)
