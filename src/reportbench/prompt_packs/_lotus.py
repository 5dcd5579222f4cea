"""The LOTUS framing around DeepScholar's relevance, organization and important-citation prompts.

Why: DeepScholar sends those instructions through lotus (`llm_as_judge`, `pairwise_judge`, `sem_filter`),
which rewrites `{col}` placeholders to capitalised column names and wraps the data rows in its own
messages. We rebuild that framing from the pinned lotus source files (static `ast` extraction only): the
row f-string of `df2text`, the user-message f-string, the 'Instruction:'/'Claim:' tags, the filter system
prompt with its answer-format suffix, and the `parse_cols` regex. The few lines of lotus *logic* (column
order, `str.capitalize`, `.format` un-escaping) are reimplemented here and named after the lotus functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from reportbench.prompt_packs.extract import (
    ExtractError,
    Template,
    function_assignments,
    function_fstrings,
    function_return,
)
from reportbench.prompt_packs.sources import pinned, read_ref

LOTUS_REPO = "lotus-data/lotus"
LOTUS_COMMIT = "53bff1eedc37e3c36f922f3c77b20cd404c30512"  # tag v1.1.4


_ref = pinned(LOTUS_REPO, LOTUS_COMMIT)


TASK_INSTRUCTIONS = _ref(
    "lotus/templates/task_instructions.py", "83dd1172a187a62e2fae2db80cdc41694eef38a91aca6afa61872eea0859af51"
)
NL_EXPRESSION = _ref("lotus/nl_expression.py", "e57daebd12ccd391cdb71536ab8b2df03b78e9071fb5ebc8dd42a11e1e4f4bdd")
LLM_AS_JUDGE = _ref("lotus/evals/llm_as_judge.py", "eafcb172ac0bfd765cd2eccd0a94e16804b97c1794a3d51e6ac9c11122deb16f")
PAIRWISE_JUDGE = _ref(
    "lotus/evals/pairwise_judge.py", "e783c49b962032d360a7a83d380bd75e77dc99474b96c52dce52079f7653f144"
)
SEM_MAP = _ref("lotus/sem_ops/sem_map.py", "bfa7465c0cb2c0440e9c0cfb9ea3f394afa60b93c593472c2cab55994a456b16")
SEM_FILTER = _ref("lotus/sem_ops/sem_filter.py", "2a262e54fdaac9842c708fb00a01dd7f2b15a3714b76e5ea31bdada64a6cd113")
LM = _ref("lotus/models/lm.py", "bd9d3667c9c4dff20161aa19bf27464cf97ecbd41a88b3ae9e0554cc38f8da2c")

MAP_SOURCES = (TASK_INSTRUCTIONS, NL_EXPRESSION, LLM_AS_JUDGE, SEM_MAP)
PAIRWISE_SOURCES = (*MAP_SOURCES, PAIRWISE_JUDGE)
FILTER_SOURCES = (TASK_INSTRUCTIONS, NL_EXPRESSION, SEM_FILTER)


def _expect(t: Template, fields: Sequence[str], what: str) -> Template:
    if t.fields != tuple(fields):
        raise ExtractError(f"lotus {what}: expected fields {list(fields)}, found {list(t.fields)}")
    return t


@dataclass(frozen=True)
class LotusFraming:
    """The pieces of lotus text the framing needs, extracted from task_instructions.py and nl_expression.py."""

    row: Template  # df2text.custom_format_row: '[<Col>]: «<value>»\n'
    user: Template  # user_message_formatter: 'Context:\n<rows>\n\n<tagged instruction>'
    map_tag: Template  # map_formatter: 'Instruction: <instruction>'
    filter_tag: Template  # filter_formatter: 'Claim: <instruction>'
    filter_system: str  # filter_formatter's system prompt with the non-CoT answer format appended
    col_pattern: re.Pattern[str]  # nl_expression.parse_cols
    capitalised: Template  # nl_expression.nle2str: f"{col.capitalize()}"


@lru_cache(maxsize=4)
def framing_from(ti_src: str, nl_src: str) -> LotusFraming:
    """Extract the framing from the text of a task_instructions.py and an nl_expression.py."""
    row = _expect(
        function_fstrings(ti_src, "custom_format_row")[0], ["cols[i].capitalize()", "x[cols[i]]"], "df2text row"
    )
    user = _expect(
        function_fstrings(ti_src, "user_message_formatter")[0], ["text", "user_instruction_with_tag"], "user message"
    )
    # The last f-string of each formatter is the one used without examples and without DeepSeek CoT.
    map_tag = _expect(function_fstrings(ti_src, "map_formatter")[-1], ["user_instruction"], "map tag")
    filter_tag = _expect(function_fstrings(ti_src, "filter_formatter")[-1], ["user_instruction"], "filter tag")
    sys_instr = function_assignments(ti_src, "filter_formatter", "sys_instruction")[0].text
    answer_instr = function_assignments(ti_src, "filter_formatter", "answer_instructions")[0].text
    wrapped = _expect(
        function_assignments(ti_src, "non_cot_prompt_formatter", "answer_instructions")[0],
        ["answer_instructions"],
        "non-CoT answer instructions",
    ).render(answer_instructions=answer_instr)
    answer_only = _expect(function_return(ti_src, "answer_only_formatter"), ["answer"], "answer-only format")
    non_cot = _expect(
        function_return(ti_src, "non_cot_prompt_formatter"),
        ["answer_only_formatter(answer_instructions)"],
        "non-CoT prompt",
    )
    # filter_formatter: sys_instruction += non_cot_prompt_formatter(answer_instructions=...) (no strategy given).
    filter_system = sys_instr + non_cot.render(
        {"answer_only_formatter(answer_instructions)": answer_only.render(answer=wrapped)}
    )
    pattern = function_assignments(nl_src, "parse_cols", "pattern")[0].text
    capitalised = _expect(function_fstrings(nl_src, "nle2str")[0], ["col.capitalize()"], "nle2str")
    return LotusFraming(row, user, map_tag, filter_tag, filter_system, re.compile(pattern), capitalised)


def framing() -> LotusFraming:
    return framing_from(read_ref(TASK_INSTRUCTIONS), read_ref(NL_EXPRESSION))


def parse_cols(f: LotusFraming, instruction: str) -> list[str]:
    """lotus parse_cols: every single-braced `{col}` (duplicates kept, as re.findall returns them)."""
    cols = f.col_pattern.findall(instruction)
    if not cols:
        raise ValueError("lotus: language expression contains no parameterized columns")
    return cols


def nle2str(f: LotusFraming, instruction: str, cols: Sequence[str]) -> str:
    """lotus nle2str: `instruction.format(col=<Col>...)`, which also turns `{{`/`}}` back into `{`/`}`."""
    mapping = {c: f.capitalised.render({"col.capitalize()": c.capitalize()}) for c in cols}
    return instruction.format(**mapping)


def df2text_row(f: LotusFraming, row: Mapping[str, Any], cols: Sequence[str]) -> str:
    """lotus df2text for one row (DEFAULT serialization): only columns present in the row, in `cols` order."""
    present = [c for c in cols if c in row]
    return "".join(f.row.render({"cols[i].capitalize()": c.capitalize(), "x[cols[i]]": row[c]}) for c in present)


def _check_columns(row: Mapping[str, Any], cols: Sequence[str]) -> None:
    missing = [c for c in cols if c not in row]
    if missing:
        raise KeyError(f"lotus: column(s) {missing} not found in the row (have {sorted(row)})")


def map_messages(
    row: Mapping[str, Any],
    instruction: str,
    system_prompt: str,
    extra_cols_to_include: Sequence[str] | None = None,
    *,
    f: LotusFraming | None = None,
) -> list[dict[str, str]]:
    """`df.llm_as_judge(instruction, system_prompt=..., extra_cols_to_include=...)` for one row and one trial.

    `f`: the framing to use (default: extracted from the pinned lotus files; tests pass a fake one)."""
    f = f or framing()
    col_li = parse_cols(f, instruction)
    _check_columns(row, col_li)
    if extra_cols_to_include is not None:
        _check_columns(row, extra_cols_to_include)
        col_li = [c for c in col_li if c not in extra_cols_to_include] + list(extra_cols_to_include)
    text = df2text_row(f, row, col_li)
    instr = nle2str(f, instruction, col_li)
    user = f.user.render(text=text, user_instruction_with_tag=f.map_tag.render(user_instruction=instr))
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": user}]


def filter_messages(row: Mapping[str, Any], instruction: str, *, f: LotusFraming | None = None) -> list[dict[str, str]]:
    """`df.sem_filter(instruction)` for one row (no examples, no CoT)."""
    f = f or framing()
    col_li = parse_cols(f, instruction)
    _check_columns(row, col_li)
    text = df2text_row(f, row, col_li)
    instr = nle2str(f, instruction, col_li)
    user = f.user.render(text=text, user_instruction_with_tag=f.filter_tag.render(user_instruction=instr))
    return [{"role": "system", "content": f.filter_system}, {"role": "user", "content": user}]
