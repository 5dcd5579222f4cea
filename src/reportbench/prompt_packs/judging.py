"""`judge.prompts=authors`: the adapter the LLM judge uses in place of our YAML prompt template.

Why here and not in judges/: the judge backends stay ignorant of packs; they only see an object with
`prompt_id`, `sha256`, `messages(inputs)`, `parse(raw, inputs)` and `response_model`, built by
`authors_prompt(task)` and handed in when this module is imported (judges/prompt_modes.py). Records get
prompt_id 'authors:<benchmark>/<key>' and prompt_hash = sha256 over the step's pinned source sha256s, so a
verdict names the pack version that produced it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reportbench.judges.prompt_modes import PROMPT_MODES, PromptsConfigError, prompts_mode, provide_authors_prompts
from reportbench.prompt_packs import AuthorsStep, get_step, step_for_task
from reportbench.prompt_packs.sources import read_ref

__all__ = [
    "PROMPT_MODES",
    "AuthorsPrompt",
    "PromptsConfigError",
    "authors_prompt",
    "prompts_mode",
    "record_ids",
    "register_task_parser",
]

_TASK_PARSERS: dict[str, Any] = {}
"""judge task name -> the authors' parser for that task's parsing mode, when it differs from the step's strict
parser (e.g. ResearcherBench `researcherbench_rubric_compat`: their substring fallback). Without it a task that
selects the authors' parsing would still get the pack's strict parser under `judge.prompts=authors`."""


def register_task_parser(task_name: str, parse: Any) -> None:
    """Bind an authors' parsing mode to one of our judge tasks (called by the pack modules)."""
    _TASK_PARSERS[task_name] = parse


def _benchmark_of(task: Any) -> str | None:
    """'deepscholar/support.yaml' -> 'deepscholar' (our prompt files live under prompts/<benchmark>/)."""
    pid = str(getattr(task, "prompt_id", "") or "")
    return pid.split("/", 1)[0] if "/" in pid else None


def resolve_step(task: Any) -> AuthorsStep:
    """The authors' step for our judge task: `task.authors_step` if set, else the step bound to its name."""
    name = getattr(task, "authors_step", None)
    if name:
        bench, sep, key = str(name).partition("/")
        if not sep:
            raise PromptsConfigError(f"JudgeTask.authors_step must be '<benchmark>/<key>', got {name!r}")
        try:
            return get_step(bench, key)
        except KeyError as exc:
            raise PromptsConfigError(str(exc)) from None
    step = step_for_task(task.name, _benchmark_of(task)) or step_for_task(task.name)
    if step is None:
        raise PromptsConfigError(
            f"judge task {task.name!r} has no authors' prompt step: set JudgeTask.authors_step or bind a pack "
            "step to it (AuthorsStep.judge_task); see docs/prompt-packs.md"
        )
    return step


def record_ids(task: Any) -> tuple[str, str]:
    """(prompt_id, prompt_hash) for records made with the authors' pack; needs no source files."""
    step = resolve_step(task)
    return f"authors:{step.step_id}", step.sources_hash


@dataclass(frozen=True)
class AuthorsPrompt:
    """Stands in for PromptTemplate in the LLM judge."""

    task: Any
    step: AuthorsStep

    @property
    def prompt_id(self) -> str:
        return f"authors:{self.step.step_id}"

    @property
    def sha256(self) -> str:
        return self.step.sources_hash

    @property
    def response_model(self) -> type | None:
        return self.step.response_model() if self.step.response_model is not None else None

    def messages(self, inputs: Any) -> list[dict[str, Any]]:
        mapper = self.task.authors_inputs or self.step.from_task
        if mapper is None:
            raise PromptsConfigError(
                f"{self.prompt_id}: no mapping from {type(inputs).__name__} to the authors' inputs"
            )
        return self.step.render(mapper(inputs))

    def parse(self, raw: str, inputs: Any) -> Any:
        """Authors' strict parser, then (parsed, inputs) -> our task's output model."""
        parsed = _TASK_PARSERS.get(getattr(self.task, "name", ""), self.step.parse)(raw)
        to_output = self.task.authors_output or self.step.to_output
        data = to_output(parsed, inputs) if to_output is not None else parsed
        return self.task.output_model.model_validate(data)


def authors_prompt(task: Any) -> AuthorsPrompt:
    """Resolve the step and read (and sha-check) its sources now, so a missing mirror fails before any call."""
    step = resolve_step(task)
    for ref in step.sources:
        read_ref(ref)
    return AuthorsPrompt(task, step)


provide_authors_prompts(authors_prompt, record_ids)  # the judges ask for the authors' wording through this
