"""What a monthly build costs before it runs: generator tokens per 1,000 published queries, from our prompts.

Why a model and not only the measured figure: the publish stage reports the cost of a finished build from the
recorded token counts (`metrics/live_researchqa/release.json -> judge.cost_per_1000_queries_usd`), but a
maintainer needs the order of magnitude before paying. The input side is measured: every prompt file is
rendered with inputs of the stated sizes and counted at 4 characters per token (the usual English average for
GPT tokenizers). The output sizes and the yields (selected sections and review checks per published query) are
stated assumptions, defaulting to the paper's own funnel (54K surveys -> 319K sections -> 21.4K queries).

    python -m reportbench.survey_builder.cost                      # the default table
    python -m reportbench.survey_builder.cost --section-tokens 2500 --sections-per-query 8
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from reportbench.prompts import DEFAULT_PROMPTS_DIR, load_prompt
from reportbench.survey_builder import tasks as T

CHARS_PER_TOKEN = 4.0


@dataclass(frozen=True)
class Assumptions:
    section_tokens: int = 1200  # a selected section (>= 800 characters; most are a few thousand)
    sentences: int = 40
    sections_per_query: float = 14.9  # paper: 319K selected sections -> 21.4K queries
    checks_per_query: float = 6.3  # paper: 134K downloadable candidates -> 21.4K queries
    answer_tokens: int = 300
    references: int = 12
    price_in_per_mtok: float = 0.40  # gpt-4.1-mini list prices (the batch API halves both)
    price_out_per_mtok: float = 1.60


def _tokens(task: T.JudgeTask, inputs: T.JudgeInput, prompts_dir: Path) -> float:
    messages = load_prompt(task.prompt_id, prompts_dir).render(**inputs.prompt_values())
    return sum(len(m["content"]) for m in messages) / CHARS_PER_TOKEN


def estimate(a: Assumptions = Assumptions(), prompts_dir: Path = DEFAULT_PROMPTS_DIR) -> dict[str, float]:
    """Input/output tokens and dollars per published query, by step; every prompt rendered at the stated sizes."""
    word = "word "
    sentence = (word * max(1, int(a.section_tokens * CHARS_PER_TOKEN / 5 / a.sentences))).strip() + "."
    sentences = [sentence] * a.sentences
    answer = (word * int(a.answer_tokens * CHARS_PER_TOKEN / 5)).strip()
    refs = "\n".join(f"[key{i}] First Author, Second Author (2020). A paper title of about ten words here" for i in
                     range(a.references))  # fmt: skip
    query = "How do dense and sparse retrievers compare for finding evidence in scientific papers?"
    tree = "\n".join(f"Q1.{i} A question about part {i} of the section (sentences {i}, {i + 1})" for i in range(12))
    per_section = {  # (input tokens, output tokens) of each call on a selected section
        "question_tree": (_tokens(T.QUESTION_TREE, T.TreeInput(survey_title="S" * 60, section_title="T" * 30,
                                                               sentences=sentences), prompts_dir), 450.0),
        "query_answer": (_tokens(T.QUERY_ANSWER, T.QueryInput(survey_title="S" * 60, section_title="T" * 30, field="F",
                                                              sentences=sentences, tree=tree, min_support=3),
                                 prompts_dir), a.answer_tokens + 60.0),
        "filters": (
            2 * _tokens(T.SELF_CONTAINMENT, T.QAInput(query=query, answer=answer), prompts_dir)
            + _tokens(T.REPHRASE, T.QAInput(query=query, answer=answer), prompts_dir)
            + _tokens(T.CITATION_CHECK, T.QueryOnlyInput(query=query), prompts_dir)
            + _tokens(T.FIELD_ALIGNMENT, T.FieldInput(query=query, general_domain="D", subdomain="S", field="F"),
                      prompts_dir),
            4 * 40.0 + a.answer_tokens + 40.0,
        ),  # upper bound: every filter on every generated query (they run on survivors only)
    }  # fmt: skip
    rubric_in = sum(
        _tokens(task, T.RubricInput(query=query, answer=answer if origin == "survey" else "",
                                    references=refs if origin == "survey" else "", n=4), prompts_dir)
        for (origin, _), task in T.RUBRIC_TASKS.items()
    )  # fmt: skip
    items = [f"Does the response mention concept {i} and why it matters for the question?" for i in range(16)]
    rank_in = _tokens(T.RUBRIC_RANK, T.RankInput(query=query, items=items), prompts_dir)
    check_in = _tokens(T.SURVEY_CHECK, T.SurveyCheckInput(title="T" * 80, abstract=word * 200), prompts_dir)
    tin = a.sections_per_query * sum(v[0] for v in per_section.values()) + rubric_in + rank_in
    tin += a.checks_per_query * check_in
    tout = a.sections_per_query * sum(v[1] for v in per_section.values()) + 2 * (4 + 2) * 30 + 2 * 2 * 60 + 80
    tout += a.checks_per_query * 30
    dollars = (tin * a.price_in_per_mtok + tout * a.price_out_per_mtok) / 1e6
    return {
        "input_tokens_per_query": round(tin),
        "output_tokens_per_query": round(tout),
        "usd_per_1000_queries": round(dollars * 1000, 2),
        "usd_per_1000_queries_batch": round(dollars * 500, 2),
        "rubric_input_tokens_per_query": round(rubric_in + rank_in),
        "section_input_tokens": round(sum(v[0] for v in per_section.values())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Assumptions()
    for name, value in vars(defaults).items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    ap.add_argument("--prompts-dir", type=Path, default=DEFAULT_PROMPTS_DIR)
    args = ap.parse_args(argv)
    a = Assumptions(**{k: getattr(args, k) for k in vars(defaults)})
    for key, value in estimate(a, args.prompts_dir).items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
