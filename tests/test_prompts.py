"""Prompt files: every one loads, renders from its task's typed input, asks for the JSON answer format."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from builtin_tasks import builtin_tasks
from reportbench.judges.base import JudgeInput
from reportbench.judges.tasks import get_task
from reportbench.judges.tasks.important_reference import ImportantReferenceInput
from reportbench.judges.tasks.nugget_assign import NuggetAssignInput
from reportbench.judges.tasks.nugget_create import NuggetCreateInput
from reportbench.judges.tasks.nugget_score import NuggetScoreInput
from reportbench.judges.tasks.organization import OrganizationInput
from reportbench.judges.tasks.relevance import RelevanceInput
from reportbench.judges.tasks.support import SupportInput
from reportbench.prompts import PromptError, iter_prompt_files, load_prompt
from reportbench.protocols.deepscholar import tasks as _deepscholar_tasks  # noqa: F401  (registers citation_support)
from reportbench.protocols.deer import tasks as deer_tasks
from reportbench.protocols.liveresearchbench import tasks as lrb
from reportbench.protocols.researcherbench.tasks import ExtractInput as RBExtractInput
from reportbench.protocols.researcherbench.tasks import RubricInput as RBRubricInput
from reportbench.protocols.researcherbench.tasks import VerifyInput as RBVerifyInput
from reportbench.protocols.researchqa import tasks as rqa

pytestmark = pytest.mark.core

LATEX = r"Prior work~\cite{a,b} uses {braces} and 50% of $x_{i}$ [1]."

SAMPLE_INPUTS: dict[str, JudgeInput] = {
    "support": SupportInput(claim="DPR beats BM25 [1].", reference="Title: DPR\nDense retrieval beats BM25."),
    "citation_support": SupportInput(claim="DPR beats BM25 [1].", reference="Title: DPR\nDense retrieval."),
    "relevance": RelevanceInput(
        paper_title="T", paper_abstract="A", exemplar=LATEX, ref_title="R", ref_abstract="RA"
    ),
    "organization": OrganizationInput(
        paper_title="T", paper_abstract="A", section_a="## A\nx", section_b=LATEX
    ),
    "nugget_assign": NuggetAssignInput(query="Q {x}", passage=LATEX, nuggets=["n1", "n {2}"]),
    "nugget_create": NuggetCreateInput(query="Q", passage=LATEX, max_nuggets=30),
    "nugget_score": NuggetScoreInput(query="Q", nuggets=["n1", "n2", "n3"]),
    "important_reference": ImportantReferenceInput(
        paper_title="T",
        paper_abstract="A",
        related_work=LATEX,
        cited_title="C",
        cited_authors="Doe, Jane",
        cited_content="snippet",
    ),
    "researcherbench_rubric": RBRubricInput(question="Q {x}?", item="Explains [CONTENT]", weight=2, response=LATEX),
    "researcherbench_rubric_compat": RBRubricInput(question="Q?", item="Discusses y", weight=1, response="R"),
    "researcherbench_claims": RBExtractInput(question="Q {x}", section=LATEX, references="[1] https://x.org"),
    "researcherbench_verify": RBVerifyInput(
        source="Page {x} [CLAIM_LIST]", claims=[{"id": 1, "claim": "c {y}", "context": LATEX}]
    ),
    "lrb_presentation": lrb.ChecklistInput(
        query="Q {x}", report=LATEX, criteria=[lrb.ChecklistLine(id="p1", text="Clear [CONTENT]")], eval_date="May 1"
    ),
    "lrb_coverage": lrb.ChecklistInput(
        query="Q", report=LATEX, criteria=[lrb.ChecklistLine(id="q10", text="**12 {x}**")], eval_date="May 01, 2025"
    ),
    "lrb_consistency": lrb.PointwiseInput(query="Q {x}", report=LATEX, eval_date="May 01, 2025"),
    "lrb_citation": lrb.PointwiseInput(query="Q", report=LATEX, eval_date="May 01, 2025"),
    "lrb_depth": lrb.DepthInput(query="Q {x}", report_a=LATEX, report_b="B [CONTENT]"),
    "lrb_relevance": lrb.RelevanceInput(query="Q", url="https://x.org/{a}", title="T", opening=LATEX),
    "lrb_support": lrb.SupportInput(query="Q", claim="c {y} [1]", url="https://x.org", page_text=LATEX),
    "researchqa_coverage": rqa.CoverageInput(response=LATEX, questions=["Does it {x}?", "Does it [RESPONSE_2]?"]),
    "researchqa_pairwise": rqa.PairwiseInput(query="Q {x}", response_1=LATEX, response_2="B [RESPONSE_1]"),
    **deer_tasks.SAMPLE_INPUTS,
}

# The key(s) of each task's JSON answer, which the prompt must spell out (no structured output needed).
ANSWER_KEYS = {
    "support": ['"supported"'],
    "citation_support": ['"supported"'],
    "relevance": ['"score"', '"explanation"'],
    "organization": ['"explanation"', '"decision"'],
    "nugget_assign": ['"labels"', "partial_support", "not_support"],
    "nugget_create": ['"nuggets"'],
    "nugget_score": ['"importance"', "vital", "okay"],
    "important_reference": ['"important"', '"explanation"'],
    "researcherbench_rubric": ["yes", "no"],
    "researcherbench_rubric_compat": ["yes", "no"],
    "researcherbench_claims": ['"claims"', '"claim"', '"context"', '"source"'],
    "researcherbench_verify": ['"results"', '"id"', '"result"', "unknown"],
    "lrb_presentation": ['"evaluations"', '"score"', '"justification"'],
    "lrb_coverage": ['"evaluations"', '"score"', '"justification"'],
    "lrb_consistency": ['"specific_issues"', '"total_issues"', '"score"', '"justification"'],
    "lrb_citation": ['"specific_issues"', '"total_issues"', '"score"', '"justification"'],
    "lrb_depth": ['"winner"', '"scores"', '"total"', '"major_flaws"', '"granularity"'],
    "lrb_relevance": ['"relevant"', '"reason"'],
    "lrb_support": ['"supported"', '"evidence"'],
    "researchqa_coverage": ["Not at all", "Barely", "Moderately", "Mostly", "Completely", "one rating per line"],
    "researchqa_pairwise": ['"better"', '"justification"', "Response 1", "Response 2"],
    **deer_tasks.ANSWER_KEYS,
}

# Tasks whose answer format is not JSON (ResearchQA coverage: one label per line, as the authors' judge).
LINE_FORMAT = {"researchqa_coverage"}


@pytest.fixture(scope="module")
def prompts_dir(repo_root: Path) -> Path:
    return repo_root / "prompts"


def test_every_task_has_a_sample_input() -> None:
    assert set(SAMPLE_INPUTS) == set(builtin_tasks()) == set(ANSWER_KEYS)


def test_every_prompt_file_loads(prompts_dir: Path) -> None:
    files = iter_prompt_files(prompts_dir)
    assert files, "no prompt files found"
    for path in files:
        template = load_prompt(str(path.relative_to(prompts_dir)), prompts_dir)
        assert template.prompt_id and template.version and template.user.strip()
        assert len(template.sha256) == 64


@pytest.mark.parametrize("name", sorted(SAMPLE_INPUTS))
def test_prompt_placeholders_come_from_the_typed_input(name: str, prompts_dir: Path) -> None:
    task = get_task(name)
    inputs = SAMPLE_INPUTS[name]
    assert isinstance(inputs, task.input_model)
    template = load_prompt(task.prompt_id, prompts_dir)
    assert template.prompt_id == task.prompt_id.removesuffix(".yaml")
    values = inputs.prompt_values()
    missing = template.placeholders - values.keys()
    assert not missing, (
        f"{task.prompt_id} needs {sorted(missing)} that {type(inputs).__name__} does not provide"
    )


@pytest.mark.parametrize("name", sorted(SAMPLE_INPUTS))
def test_prompt_renders_and_asks_for_the_json_answer(name: str, prompts_dir: Path) -> None:
    task = get_task(name)
    inputs = SAMPLE_INPUTS[name]
    messages = load_prompt(task.prompt_id, prompts_dir).render(**inputs.prompt_values())
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[-1]["content"]
    for value in inputs.prompt_values().values():
        assert str(value) in user, "every input value reaches the prompt verbatim (braces included)"
    for key in ANSWER_KEYS[name]:
        assert key in user
    if name not in LINE_FORMAT:
        assert "JSON" in user
    assert "{{" not in user and "}}" not in user, "escaped braces must render as single braces"


def test_rendering_without_a_value_is_an_error(prompts_dir: Path) -> None:
    template = load_prompt("deepscholar/support.yaml", prompts_dir)
    with pytest.raises(PromptError, match="reference"):
        template.render(claim="only the claim")


def test_relevance_prompt_uses_the_graded_scale_and_notes_the_binary_box(prompts_dir: Path) -> None:
    path = prompts_dir / "deepscholar" / "relevance.yaml"
    text = path.read_text(encoding="utf-8")
    assert "Box 2" in text and "binary" in text  # the YAML comment about the paper's binary variant
    user = load_prompt("deepscholar/relevance.yaml", prompts_dir).user
    assert "2 - highly relevant" in user and "0 - irrelevant" in user


def test_hash_differs_between_different_prompt_files(tmp_path: Path, prompts_dir: Path) -> None:
    original = prompts_dir / "deepscholar" / "support.yaml"
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    shutil.copy(original, tmp_path / "v1" / "support.yaml")
    edited = original.read_text(encoding="utf-8").replace("fair evaluator", "fair and careful evaluator")
    (tmp_path / "v2" / "support.yaml").write_text(edited, encoding="utf-8")
    same = load_prompt("support.yaml", tmp_path / "v1")
    changed = load_prompt("support.yaml", tmp_path / "v2")
    assert same.sha256 == load_prompt("deepscholar/support.yaml", prompts_dir).sha256
    assert changed.sha256 != same.sha256


def test_hash_changes_when_the_same_file_is_edited_in_process(tmp_path: Path, prompts_dir: Path) -> None:
    path = tmp_path / "support.yaml"
    shutil.copy(prompts_dir / "deepscholar" / "support.yaml", path)
    before = load_prompt("support.yaml", tmp_path).sha256
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert load_prompt("support.yaml", tmp_path).sha256 != before
