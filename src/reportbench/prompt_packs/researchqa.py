"""ResearchQA authors' pack: realliyifei/ResearchQA@747a9a1 (no licence stated; read at run time, never copied).

- `coverage`: `compute_coverage.py::build_prompt(response, questions)` — implicit string concatenation and
  f-strings, then `+ '\\n'.join(questions) + "\\n\\nOutput:"`; extracted with `ast` (the join separator too) and
  sent as one user message. Model and temperature come from the same file (argparse default, `call_gpt`).
- `pairwise`: the whole prompt file with `[QUERY]`, `[RESPONSE_1]`, `[RESPONSE_2]` replaced one after another
  (`src/utils.py::LLM.call`, the markers from `src/judge_systems_by_gpt.py::initialize_gpt_judge`); both
  responses first lose their `[link](url)` links (the file's `remove_markdown_links` pattern). The sequential
  replace reproduces the authors' substitution bug on purpose (this pack only). `render_swapped` is the second
  call with the responses swapped.

Parsers: coverage answers are read line by line with our whole-line label matcher (decoration stripped, never
a substring; the authors' exact dict lookup raises KeyError on "Completely." and aborts their run), and the
count must equal the number of questions. Pairwise answers need the authors' two regexes to match; the verdict
must be Response 1/2 (their A/B), anything else is a ParseError.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from reportbench.judges.base import ParseError
from reportbench.prompt_packs import AuthorsStep, register_step
from reportbench.prompt_packs._base import need as _need
from reportbench.prompt_packs._base import norm_inputs as _norm
from reportbench.prompt_packs.extract import (
    ExtractError,
    argparse_default,
    call_keywords,
    function_assignments,
    function_node,
    sequential_replace,
)
from reportbench.prompt_packs.sources import pinned, read_ref
from reportbench.protocols.researchqa.labels import check_count, extract_labels

BENCHMARK = "ResearchQA"
REPO = "realliyifei/ResearchQA"
COMMIT = "747a9a1330f097a0e20672240cb47e3cf02500ae"


_ref = pinned(REPO, COMMIT)


COVERAGE_PY = _ref("compute_coverage.py", "a4546344837f5e3d7f686e4fd572f145e82edf84037a8e9d0c72c25ec9478b5e")
PAIRWISE_PROMPT = _ref(
    "prompts/response_preference/response_pairwise_judge_binary.prompt",
    "00657ffb0b00b018c6a822b57903af7f58214f24de47ff47813690236387cbf0",
)
UTILS_PY = _ref("src/utils.py", "de8928a2479bd1fbdafe0e2b8de8a98db47b054fc365e3ffdb9e62c23585b8fa")
JUDGE_PY = _ref("src/judge_systems_by_gpt.py", "3f38bade6de110b435fd70e319cfbdaaa3ec5a4ef958b1f0d0a649e3b84607ee")


# -- coverage ----------------------------------------------------------------------------------------------
def _concat_parts(node: ast.expr) -> list[str | tuple[str, str]]:
    """The `prompt = (...)` expression as literal text, `response` fields and `'<sep>'.join(questions)`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out: list[str | tuple[str, str]] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out.append(v.value)
            elif isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None:
                out.append(("field", ast.unparse(v.value)))
            else:
                raise ExtractError(f"unexpected f-string part {ast.unparse(v)}")
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _concat_parts(node.left) + _concat_parts(node.right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
    ):
        return [("join:" + node.func.value.value, node.args[0].id)]
    raise ExtractError(f"build_prompt: unsupported expression {ast.unparse(node)[:80]}")


def _coverage_parts() -> list[str | tuple[str, str]]:
    fn = function_node(read_ref(COVERAGE_PY), "build_prompt")
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == ["prompt"]:
            return _concat_parts(stmt.value)
    raise ExtractError("build_prompt: no `prompt = ...` assignment")


def render_coverage(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    """build_prompt(response, questions) as one user message (call_gpt)."""
    response, questions = _need(_norm(inputs), "response", "questions")
    values = {"response": response, "questions": list(questions)}
    text: list[str] = []
    for part in _coverage_parts():
        if isinstance(part, str):
            text.append(part)
        elif part[0] == "field":
            if part[1] not in values:
                raise ExtractError(f"build_prompt: no value for field {part[1]!r}")
            text.append(format(values[part[1]]))
        else:
            sep = part[0][len("join:") :]
            text.append(sep.join(str(q) for q in values[part[1]]))
    return [{"role": "user", "content": "".join(text)}]


def parse_coverage(raw: str) -> list[str]:
    """Whole-line labels (the count is checked against the questions in `to_output`)."""
    labels = extract_labels(raw)
    if not labels:
        raise ParseError("no label line")
    return labels


def _coverage_kwargs() -> dict[str, Any]:
    src = read_ref(COVERAGE_PY)
    calls = call_keywords(src, "call_gpt", "create")
    if len(calls) != 1:
        raise ExtractError(f"call_gpt: expected one create() call, found {len(calls)}")
    return {"model": argparse_default(src, "--model"), "temperature": calls[0]["temperature"]}


# -- pairwise ----------------------------------------------------------------------------------------------
def _markers() -> list[str]:
    calls = call_keywords(read_ref(JUDGE_PY), "initialize_gpt_judge", "LLM")
    markers = [c["markers"] for c in calls if isinstance(c.get("markers"), list)]
    if not markers or any(m != markers[0] for m in markers):
        raise ExtractError("initialize_gpt_judge: no (or inconsistent) LLM(markers=[...])")
    return list(markers[0])


def _link_pattern() -> re.Pattern[str]:
    return re.compile(function_assignments(read_ref(JUDGE_PY), "remove_markdown_links", "pattern")[0].text)


def _render_pair(query: str, first: str, second: str) -> list[dict[str, str]]:
    pattern = _link_pattern()
    template = read_ref(PAIRWISE_PROMPT)
    values = [query, pattern.sub("", first), pattern.sub("", second)]
    markers = _markers()
    if len(markers) != len(values):
        raise ExtractError(f"expected 3 markers, found {markers}")
    return [{"role": "user", "content": sequential_replace(template, zip(markers, values, strict=True))}]


def render_pairwise(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    query, a, b = _need(_norm(inputs), "query", "response_A", "response_B")
    return _render_pair(query, a, b)


def render_pairwise_swapped(inputs: Mapping[str, Any]) -> list[dict[str, str]]:
    query, a, b = _need(_norm(inputs), "query", "response_A", "response_B")
    return _render_pair(query, b, a)


_VERDICT = re.compile(r'\*\*output:\s*\{"judgement":\s*"([^"]+)"\s*\}\*\*')
_JUSTIFICATION = re.compile(r"Justification:\s*(.+)", re.DOTALL)


def parse_pairwise(raw: str) -> dict[str, str]:
    """The authors' format: Response 1/2 -> A/B, then both regexes must match; the verdict must be A or B."""
    if raw is None or not raw.strip():
        raise ParseError("empty answer")
    text = raw.replace("Response 1", "Response A").replace("Response 2", "Response B")
    verdict, why = _VERDICT.search(text), _JUSTIFICATION.search(text)
    if verdict is None:
        raise ParseError('no **output: {"judgement": "..."}** block')
    if why is None:
        raise ParseError("no 'Justification:' after the verdict")
    letter = verdict.group(1).replace("Response ", "")
    if letter not in ("A", "B"):
        raise ParseError(f"judgement {verdict.group(1)!r} is neither Response 1 nor Response 2")
    return {"verdict": letter, "justification": why.group(1).strip()}


def _pairwise_kwargs() -> dict[str, Any]:
    model = argparse_default(read_ref(JUDGE_PY), "--judge_model")
    calls = [c for c in call_keywords(read_ref(UTILS_PY), "call", "create") if "top_p" in c]
    if not calls:
        raise ExtractError("LLM.call: no create(..., top_p=...) call")
    return {"model": model, "temperature": _llm_default("temperature"), "top_p": calls[0]["top_p"]}


def _llm_default(name: str) -> Any:
    """A literal default of `LLM.__init__` in src/utils.py (the judge is built without a temperature)."""
    for node in ast.walk(ast.parse(read_ref(UTILS_PY))):
        if isinstance(node, ast.ClassDef) and node.name == "LLM":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    args = fn.args.args
                    for a, d in zip(args[len(args) - len(fn.args.defaults) :], fn.args.defaults, strict=True):
                        if a.arg == name:
                            return ast.literal_eval(d)
    raise ExtractError(f"src/utils.py: no LLM.__init__ default for {name!r}")


class _LazyKwargs(Mapping[str, Any]):
    """request_kwargs read from the sources on first use (registering must not need the sources)."""

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def __getitem__(self, k: str) -> Any:
        return self._fn()[k]

    def __iter__(self) -> Any:
        return iter(self._fn())

    def __len__(self) -> int:
        return len(self._fn())

    def __repr__(self) -> str:
        return f"_LazyKwargs({self._fn.__name__})"


STEPS = (
    AuthorsStep(
        benchmark=BENCHMARK,
        step="rubric coverage judge",
        key="coverage",
        sources=(COVERAGE_PY,),
        render=render_coverage,
        render_swapped=None,
        parse=parse_coverage,
        request_kwargs=_LazyKwargs(_coverage_kwargs),
        judge_task="researchqa_coverage",
        from_task=lambda x: {"response": x.response, "questions": list(x.questions)},
        to_output=lambda p, x: {"labels": check_count(list(p), len(x.questions))},
        description="compute_coverage.build_prompt; one label per line, count = questions",
    ),
    AuthorsStep(
        benchmark=BENCHMARK,
        step="pairwise judge (tournament / Elo)",
        key="pairwise",
        sources=(PAIRWISE_PROMPT, UTILS_PY, JUDGE_PY),
        render=render_pairwise,
        render_swapped=render_pairwise_swapped,
        parse=parse_pairwise,
        request_kwargs=_LazyKwargs(_pairwise_kwargs),
        judge_task="researchqa_pairwise",
        from_task=lambda x: {"query": x.query, "response_A": x.response_1, "response_B": x.response_2},
        to_output=lambda p, x: {
            "better": "Response 1" if p["verdict"] == "A" else "Response 2",
            "justification": p["justification"],
        },
        description="binary pairwise prompt file, sequential [MARKER] replace, [link](url) removed",
    ),
)

for _step in STEPS:
    register_step(_step)
