"""DeepResearch Bench: the authors' answer parsers (pure, no mirror needed), the offline rules the demo relies
on, and the benchmark's switches (one clear error for a bad value)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from reportbench_deepresearch_bench import pack
from reportbench_deepresearch_bench.benchmark import judging, scoring
from reportbench_deepresearch_bench.tasks import (
    ExtractInput,
    _extract_offline,
    offline_clean,
    parse_dedup,
    parse_validate,
)

from reportbench.config import ConfigError
from reportbench.judges.base import BelowBoundAnswer, ParseError

pytestmark = pytest.mark.core


def test_extract_parser_follows_the_authors_steps() -> None:
    raw = '```json\n[{"fact": "See [the page](https://x.org/a) \\> 3", "ref_idx": 2, "url": "https://x.org/a"}]\n```'
    got = pack.parse_extract_authors(raw)
    assert got == [{"fact": "See [the page] > 3", "ref_idx": "2", "url": "https://x.org/a"}]
    with pytest.raises(ParseError):
        pack.parse_extract_authors('{"fact": "x"}')


def test_dedup_and_validate_outputs_check_what_the_authors_check() -> None:
    inp = SimpleNamespace(statements=["a", "b", "c"])
    assert pack._dedup_output(pack.parse_dedup_authors("[1, 3]"), inp) == {"keep": [1, 3]}
    for bad in ("[0, 1]", "[1, 2, 3, 4]", "[]"):
        with pytest.raises(ParseError):
            pack._dedup_output(pack.parse_dedup_authors(bad), inp)
    verdicts = json.dumps([{"idx": 1, "result": "supported"}, {"idx": 2, "result": "unknown"}])
    with pytest.raises(ParseError, match="2 verdicts for 3 statements"):
        pack._validate_output(pack.parse_validate_authors(verdicts), inp)
    with pytest.raises(BelowBoundAnswer, match=r"has 9 characters \(< 100"):  # undefined (too_short), not parse
        pack.parse_clean_authors("too short")


def test_our_parsers_are_strict() -> None:
    inp = SimpleNamespace(statements=["a", "b"])
    with pytest.raises(ParseError, match="verdicts for"):
        parse_validate('{"results": [{"idx": 1, "result": "supported"}, {"idx": 1, "result": "unknown"}]}', inp)
    with pytest.raises(ParseError, match="distinct statement numbers"):
        parse_dedup('{"keep": [1, 1]}', inp)
    assert parse_dedup('{"keep": [2]}', inp).keep == [2]


def test_offline_rules_clean_and_extract() -> None:
    art = "Heat pumps move heat [1]. They are efficient [1, 2].\n\n## References\n[1] A https://x.org/a\n[2] B https://x.org/b\n"
    assert offline_clean(art) == "Heat pumps move heat. They are efficient."
    pairs = [(c.fact, c.url) for c in _extract_offline(ExtractInput(article=art, language="en"), {}).output.citations]
    assert pairs == [("Heat pumps move heat.", "https://x.org/a"), ("They are efficient.", "https://x.org/a"),
                     ("They are efficient.", "https://x.org/b")]  # fmt: skip


def test_switches_reject_unknown_keys_and_values() -> None:
    assert judging({})["race"]["parser"] == "strict" and scoring({})["fact"] == "paper"
    assert judging({"judging": {"fact": {"fetch_failure": "judge"}}})["fact"] == {
        "dedup_failure": "fail",
        "fetch_failure": "judge",
    }
    with pytest.raises(ConfigError, match="race.parser"):
        judging({"judging": {"race": {"parser": "lenient"}}})
    with pytest.raises(ConfigError, match="not a known key"):
        scoring({"scoring": {"diversity": "code"}})


SAMPLES = {
    "drb_clean": {"article": "Text [1].", "language": "en"},
    "drb_race": {
        "task_prompt": "Q {x}",
        "criteria": '{"insight": []}',
        "article_1": "A",
        "article_2": "B",
        "language": "zh",
        "parser": "strict",
    },  # fmt: skip
    "drb_fact_extract": {"article": "Text [1].", "language": "en"},
    "drb_fact_dedup": {"statements": ["a", "b"], "language": "en"},
    "drb_fact_validate": {"reference": "page", "statements": ["a"], "language": "zh"},
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_our_prompts_render_from_the_typed_inputs(name: str) -> None:
    from reportbench_deepresearch_bench.tasks import PROMPTS

    from reportbench.judges.tasks import get_task
    from reportbench.prompts import load_prompt

    task = get_task(name)
    assert task.prompt_id.startswith("deepresearch_bench/")
    template = load_prompt(task.prompt_id.split("/", 1)[1], PROMPTS)
    values = task.input_model(**SAMPLES[name]).prompt_values()
    assert template.placeholders <= set(values), template.placeholders - set(values)
    text = template.render(**values)[-1]["content"]
    if name != "drb_clean":  # every other step asks for one JSON object (cleaning returns the article itself)
        assert "JSON" in template.system and '{"' in text
