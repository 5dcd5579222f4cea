"""`judge.prompts`: which wording a judge sends, ours (prompts/<benchmark>/*.yaml) or the benchmark authors'.

The judge layer knows no prompt pack: packs sit above the protocols (they bind to the protocols' judge tasks),
the judges below them. The pack layer hands its resolver in when it is imported
(`reportbench.prompt_packs.judging` calls `provide_authors_prompts`); a judge configured with
`judge.prompts: authors` asks `authors_prompt(task)` and gets an object with `prompt_id`, `sha256`,
`messages(inputs)`, `parse(raw, inputs)` and `response_model`: a pack is data handed to a judge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PROMPT_MODES = ("ours", "authors")

_AUTHORS: dict[str, Callable[[Any], Any]] = {}  # "prompt" -> task -> AuthorsPrompt, "ids" -> task -> (id, hash)


class PromptsConfigError(ValueError):
    """`judge.prompts` is not one of PROMPT_MODES, or the task has no authors' step."""


def prompts_mode(cfg: Mapping[str, Any] | None) -> str:
    """The `judge.prompts` value ('ours' when absent)."""
    value = str((cfg or {}).get("prompts") or "ours")
    if value not in PROMPT_MODES:
        raise PromptsConfigError(f"judge.prompts must be one of {PROMPT_MODES}, got {value!r}")
    return value


def provide_authors_prompts(prompt: Callable[[Any], Any], record_ids: Callable[[Any], tuple[str, str]]) -> None:
    """The pack layer's resolvers: task -> the authors' prompt, task -> (prompt_id, prompt_hash) for records."""
    _AUTHORS["prompt"], _AUTHORS["ids"] = prompt, record_ids


def _provider(name: str) -> Callable[[Any], Any]:
    try:
        return _AUTHORS[name]
    except KeyError:
        raise PromptsConfigError(
            "judge.prompts=authors: no prompt pack is loaded in this process (import reportbench.prompt_packs.judging "
            "before building the judge; the stages do)"
        ) from None


def authors_prompt(task: Any) -> Any:
    """The authors' prompt for `task` (its sources read and sha-checked now, before any call)."""
    return _provider("prompt")(task)


def authors_record_ids(task: Any) -> tuple[str, str]:
    """(prompt_id, prompt_hash) that records made with the authors' pack carry."""
    return _provider("ids")(task)
