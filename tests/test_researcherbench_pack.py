"""Our ResearcherBench judge tasks through the authors' pack (`judge.prompts=authors`): the mapping from our
typed inputs to the authors' inputs, and their answer formats back to our outputs. Needs the authors' sources
in the mirror or cache (REPORTBENCH_AUTHORS_MIRROR); skips otherwise. Also: question source and item wiring."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from reportbench.judges.base import ParseError
from reportbench.judges.tasks import get_task
from reportbench.prompt_packs import get_step
from reportbench.prompt_packs.judging import authors_prompt
from reportbench.protocols.researcherbench.benchmark import extract_items, question_text, rubric_items
from reportbench.protocols.researcherbench.release import build_release
from reportbench.protocols.researcherbench.responses import parse_response
from reportbench.protocols.researcherbench.tasks import (
    EXTRACT_TASK,
    RUBRIC_COMPAT_TASK,
    RUBRIC_TASK,
    VERIFY_TASK,
    ExtractInput,
    RubricInput,
    VerifyInput,
)


def _available() -> None:
    if not get_step("researcherbench", "rubric").available():
        pytest.skip("authors' sources not in the mirror/cache (set REPORTBENCH_AUTHORS_MIRROR)")


def test_rubric_through_the_authors_pack() -> None:
    _available()
    for name in (RUBRIC_TASK, RUBRIC_COMPAT_TASK):
        prompt = authors_prompt(get_task(name))
        inp = RubricInput(question="Q {x}?", item="Explains [CONTENT] markers", weight=3, response="R {y}")
        msgs = prompt.messages(inp)
        assert [m["role"] for m in msgs] == ["system", "user"]
        assert "Explains [CONTENT] markers" in msgs[1]["content"] and "R {y}" in msgs[1]["content"]
        assert prompt.parse("yes: it does", inp).covered is True
        assert prompt.parse("No - absent", inp).covered is False
        if name == RUBRIC_TASK:  # strict: an answer that does not begin with the verdict is a parse failure
            with pytest.raises(ParseError):
                prompt.parse("It is covered, yes.", inp)
        else:  # compat_authors_parsing: the authors' substring fallback ('yes' anywhere -> covered), never an error
            assert prompt.parse("It is covered, yes.", inp).covered is True
            assert prompt.parse("Not at all.", inp).covered is False


def test_claims_and_verification_through_the_authors_pack() -> None:
    _available()
    ext = authors_prompt(get_task(EXTRACT_TASK))
    inp = ExtractInput(question="Q", section="A is B [1].", references="[1] https://a.org")
    assert "A is B [1]." in ext.messages(inp)[1]["content"]
    out = ext.parse('[{"claim": "A is B", "context": "A is B [1].", "source": "https://a.org"}]', inp)
    assert out.claims[0].source == "https://a.org"
    ver = authors_prompt(get_task(VERIFY_TASK))
    vin = VerifyInput(
        source="page text", claims=[{"id": 1, "claim": "c1", "context": "x"}, {"id": 2, "claim": "c2", "context": "y"}]
    )
    assert "[2]\nClaim: c2\nContext: y\n" in ver.messages(vin)[1]["content"]
    got = ver.parse('[{"id": 2, "result": "No"}, {"id": 1, "result": "yes"}]', vin)
    assert got.by_id() == {1: "yes", 2: "no"}
    with pytest.raises(ParseError):
        ver.parse('[{"id": 1, "result": "yes"}]', vin)  # one verdict for two claims


@pytest.mark.core
def test_question_source_and_item_ids(repo_root: Path, tmp_path: Path) -> None:
    release = build_release({"kind": "demo", "source": str(repo_root / "data/demo/researcherbench")})
    f = tmp_path / "sys.json"
    f.write_text(json.dumps([{"id": 1, "question": "mojibake 鈥檚 copy", "response": "A is B ([a](https://a.org))."}]))
    report = parse_response("A is B ([a](https://a.org)).", "q1", "sys", str(f))
    ctx = SimpleNamespace(release=release, reports=[report], judging={})
    assert question_text(ctx, report) == release.task("q1").task_prompt
    items = rubric_items(ctx)
    assert len(items) == 4 and {i.input_ids["item_id"] for i in items} == {"1", "2", "3", "4"}
    assert items[0].inputs["response"] == "A is B ([a](https://a.org))."  # the raw response from the file
    ctx.judging = {"question_source": "response_file"}
    assert question_text(ctx, report) == "mojibake 鈥檚 copy"
    assert rubric_items(ctx)[0].inputs["question"] == "mojibake 鈥檚 copy"
    assert rubric_items(ctx)[0].item_id != items[0].item_id  # a different prompt is a different item
    ctx.judging = {"rubric": {"compat_authors_parsing": True}}
    assert rubric_items(ctx) == []
    ctx.judging = {"extraction": {"claims_step_size": 1}}
    assert [i.inputs["section"] for i in extract_items(ctx)] == ["A is B ([a](https://a.org))."]
