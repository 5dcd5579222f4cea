"""Judge task specs: registry, typed outputs, and the strict parsers (a malformed answer is never guessed)."""

from __future__ import annotations

import json

import pytest

from reportbench.judges.base import JudgeOutput, JudgeTask, ParseError, dump_parsed
from reportbench.judges.tasks import TASKS, get_task, register_task
from reportbench.judges.tasks.important_reference import ImportantReferenceInput, first_author_surname
from reportbench.judges.tasks.nugget_assign import NuggetAssignInput
from reportbench.judges.tasks.nugget_create import NuggetCreateInput
from reportbench.judges.tasks.nugget_score import NuggetScoreInput
from reportbench.judges.tasks.organization import OrganizationInput
from reportbench.judges.tasks.relevance import RelevanceInput
from reportbench.judges.tasks.support import SupportInput

pytestmark = pytest.mark.core

EXPECTED_TASKS = {
    "support",
    "relevance",
    "organization",
    "nugget_assign",
    "nugget_create",
    "nugget_score",
    "important_reference",
}

NUGGETS = ["BM25 is a strong sparse baseline", "dense retrieval uses dual encoders", "RAG adds memory"]

SUPPORT_IN = SupportInput(claim="c", reference="Title: t\nabstract")
RELEVANCE_IN = RelevanceInput(paper_title="p", paper_abstract="a", exemplar="e", ref_title="r")
ORGANIZATION_IN = OrganizationInput(paper_title="p", paper_abstract="a", section_a="x", section_b="y")
ASSIGN_IN = NuggetAssignInput(query="q", passage="p", nuggets=NUGGETS)
CREATE_IN = NuggetCreateInput(query="q", passage="p", max_nuggets=2)
SCORE_IN = NuggetScoreInput(query="q", nuggets=NUGGETS)
IMPORTANT_IN = ImportantReferenceInput(
    paper_title="p",
    paper_abstract="a",
    related_work="r",
    cited_title="t",
    cited_authors="A",
    cited_content="c",
)

# (task, inputs, a valid answer, expected value, expected label)
VALID_ANSWERS = [
    ("support", SUPPORT_IN, '{"supported": 1}', 1.0, "supported"),
    ("support", SUPPORT_IN, '{"supported": 0}', 0.0, "not_supported"),
    ("relevance", RELEVANCE_IN, '{"score": 2, "explanation": "on topic"}', 2.0, "2"),
    ("organization", ORGANIZATION_IN, '{"explanation": "clearer", "decision": "B"}', 0.0, "B"),
    ("organization", ORGANIZATION_IN, '{"decision": "A", "explanation": "clearer"}', 1.0, "A"),
    (
        "nugget_assign",
        ASSIGN_IN,
        '{"labels": ["support", "partial_support", "not_support"]}',
        1 / 3,
        None,
    ),
    ("nugget_create", CREATE_IN, '{"nuggets": ["a nugget", "another nugget"]}', 2.0, None),
    ("nugget_score", SCORE_IN, '{"importance": ["vital", "okay", "vital"]}', 2 / 3, None),
    ("important_reference", IMPORTANT_IN, '{"important": true, "explanation": "key work"}', 1.0, "important"),
]

# (task, inputs, a malformed answer, a fragment of the expected reason)
INVALID_ANSWERS = [
    ("support", SUPPORT_IN, '{"supported": 2}', "SupportOutput"),
    ("support", SUPPORT_IN, '{"supported": true}', "integer"),
    ("support", SUPPORT_IN, '{"supported": "1"}', "integer"),
    ("support", SUPPORT_IN, '{"supported": 1.0}', "integer"),
    ("support", SUPPORT_IN, "1", "not a bare JSON object"),
    ("support", SUPPORT_IN, "Answer: 1", "not a bare JSON object"),
    ("support", SUPPORT_IN, '{"supported": 1, "why": "x"}', "why"),
    ("support", SUPPORT_IN, '{"supported": 1, "supported": 0}', "duplicate"),
    ("support", SUPPORT_IN, "", "empty"),
    ("support", SUPPORT_IN, '{"supported": NaN}', "NaN"),
    ("relevance", RELEVANCE_IN, '{"score": 3, "explanation": "x"}', "score"),
    ("relevance", RELEVANCE_IN, '{"score": 1}', "explanation"),
    ("relevance", RELEVANCE_IN, '{"score": 1, "explanation_text": "x"}', "explanation"),
    ("relevance", RELEVANCE_IN, 'Here you go: {"score": 1, "explanation": "x"}', "not a bare JSON object"),
    (
        "relevance",
        RELEVANCE_IN,
        '{"score": 1, "explanation": "x"}\nHope this helps!',
        "not a bare JSON object",
    ),
    ("organization", ORGANIZATION_IN, '{"explanation": "x", "decision": "a"}', "decision"),
    ("organization", ORGANIZATION_IN, '{"explanation": "x", "decision": "tie"}', "decision"),
    ("organization", ORGANIZATION_IN, '{"decision": "A"}', "explanation"),
    ("organization", ORGANIZATION_IN, '{"explanation": "x", "decision": "A"', "truncated"),
    ("organization", ORGANIZATION_IN, '{"explanation": "x", "decision": A}', "invalid JSON"),
    ("organization", ORGANIZATION_IN, "{'explanation': 'x', 'decision': 'A'}", "invalid JSON"),
    ("nugget_assign", ASSIGN_IN, '{"labels": ["support", "support"]}', "expected 3 labels"),
    ("nugget_assign", ASSIGN_IN, '{"labels": ["support", "support", "support", "support"]}', "expected 3"),
    ("nugget_assign", ASSIGN_IN, '{"labels": ["support", "partial", "not_support"]}', "labels.1"),
    ("nugget_assign", ASSIGN_IN, '["support", "support", "support"]', "not a bare JSON object"),
    ("nugget_create", CREATE_IN, '{"nuggets": ["a", "b", "c"]}', "max_nuggets=2"),
    ("nugget_create", CREATE_IN, '{"nuggets": ["a", "  "]}', "empty"),
    ("nugget_create", CREATE_IN, '{"nuggets": "a, b"}', "nuggets"),
    ("nugget_score", SCORE_IN, '{"importance": ["vital", "okay"]}', "expected 3 importance labels"),
    ("nugget_score", SCORE_IN, '{"importance": ["vital", "okay", "important"]}', "importance.2"),
    ("nugget_score", SCORE_IN, '{"labels": ["vital", "okay", "okay"]}', "importance"),
    ("important_reference", IMPORTANT_IN, '{"important": "true", "explanation": "x"}', "important"),
    ("important_reference", IMPORTANT_IN, '{"important": 1, "explanation": "x"}', "important"),
    ("important_reference", IMPORTANT_IN, '{"important": true}', "explanation"),
]


def test_registry_holds_every_task_with_its_prompt_id() -> None:
    # protocol packages (researcherbench, ...) register their own tasks when imported
    assert EXPECTED_TASKS <= set(TASKS)
    for name, task in TASKS.items():
        assert task.name == name
        if name in EXPECTED_TASKS:
            assert task.prompt_id == f"deepscholar/{name}.yaml"
        assert get_task(name) is task


def test_get_task_unknown_name_lists_known_tasks() -> None:
    with pytest.raises(KeyError, match="support"):
        get_task("no_such_task")


def test_register_task_refuses_silent_overwrite() -> None:
    original = get_task("support")
    clone = JudgeTask(
        name="support",
        prompt_id=original.prompt_id,
        input_model=original.input_model,
        output_model=original.output_model,
        parse=original.parse,
        offline=original.offline,
    )
    with pytest.raises(ValueError, match="already registered"):
        register_task(clone)
    assert register_task(original) is original  # re-registering the same object is harmless
    try:
        assert register_task(clone, replace=True) is clone
    finally:
        register_task(original, replace=True)
    assert get_task("support") is original


@pytest.mark.parametrize(("name", "inputs", "raw", "value", "label"), VALID_ANSWERS)
def test_valid_answer_parses_to_typed_output(
    name: str, inputs: object, raw: str, value: float, label: str | None
) -> None:
    task = get_task(name)
    output = task.parse(raw, inputs)
    assert isinstance(output, task.output_model)
    assert output.value() == pytest.approx(value)
    assert output.label() == label
    # The parsed record round-trips through the strict parser (what the cache and re-parsing rely on).
    assert task.parse(dump_parsed(output), inputs) == output


@pytest.mark.parametrize(("name", "inputs", "raw", "value", "label"), VALID_ANSWERS)
@pytest.mark.parametrize("fence", ["```json\n{}\n```", "```\n{}\n```", "  ```JSON\n{}```  \n"])
def test_fenced_answer_is_accepted(
    name: str, inputs: object, raw: str, value: float, label: str | None, fence: str
) -> None:
    output = get_task(name).parse(fence.replace("{}", raw), inputs)
    assert output.value() == pytest.approx(value)


@pytest.mark.parametrize(("name", "inputs", "raw", "reason"), INVALID_ANSWERS)
def test_malformed_answer_is_a_parse_error_with_a_reason(
    name: str, inputs: object, raw: str, reason: str
) -> None:
    with pytest.raises(ParseError, match=reason):
        get_task(name).parse(raw, inputs)


@pytest.mark.parametrize(
    "raw",
    [
        'Sure!\n```json\n{"supported": 1}\n```',
        '```json\n{"supported": 1}\n```\nThe claim is supported.',
        '```json\n{"supported": 1}',
        '```python\n{"supported": 1}\n```',
    ],
)
def test_prose_around_fences_or_broken_fences_are_rejected(raw: str) -> None:
    with pytest.raises(ParseError):
        get_task("support").parse(raw, SUPPORT_IN)


def test_explanation_field_keeps_its_json_name_and_the_accessor() -> None:
    out = get_task("relevance").parse('{"score": 1, "explanation": "tangential"}', RELEVANCE_IN)
    assert out.explanation() == "tangential"
    assert json.loads(dump_parsed(out)) == {"score": 1, "explanation": "tangential"}
    schema = get_task("organization").output_model.model_json_schema()
    assert set(schema["properties"]) == {"explanation", "decision"}
    assert schema["additionalProperties"] is False


def test_empty_nugget_lists_have_undefined_value_not_zero() -> None:
    empty_assign = NuggetAssignInput(query="q", passage="p", nuggets=[])
    out = get_task("nugget_assign").parse('{"labels": []}', empty_assign)
    assert out.value() is None
    out = get_task("nugget_score").parse('{"importance": []}', NuggetScoreInput(query="q", nuggets=[]))
    assert out.value() is None


def test_list_inputs_render_as_numbered_lists_with_counts() -> None:
    values = ASSIGN_IN.prompt_values()
    assert values["nuggets"].splitlines() == [f"{i}. {n}" for i, n in enumerate(NUGGETS, start=1)]
    assert values["num_nuggets"] == 3
    assert SCORE_IN.prompt_values()["num_nuggets"] == 3


def test_output_models_are_judge_outputs_and_inputs_forbid_unknown_fields() -> None:
    for task in TASKS.values():
        assert issubclass(task.output_model, JudgeOutput)
        with pytest.raises(ValueError):
            task.input_model.model_validate({"unexpected_field": "x"})


@pytest.mark.parametrize(
    ("authors", "surname"),
    [
        ("Hoynes, Hilary W and Patel, Ankur J", "Hoynes"),
        ("Ashish Vaswani, Noam Shazeer", "Vaswani"),
        ("Saez, Emmanuel", "Saez"),
        ("Devlin, Jacob; Chang, Ming-Wei", "Devlin"),
        ("", ""),
    ],
)
def test_first_author_surname(authors: str, surname: str) -> None:
    assert first_author_surname(authors) == surname
