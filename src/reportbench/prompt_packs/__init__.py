"""Prompt packs: the benchmark authors' exact judge messages, rebuilt at run time from their pinned sources.

Why: `judge.prompts=authors` must send byte-for-byte what the authors' code sends (including their
framing and substitution quirks) without copying their text into this repository. A pack is one module
per benchmark (`prompt_packs/<benchmark>.py`) that registers `AuthorsStep`s; every module in this package
is imported by `load_all()` (pkgutil), so adding a file is enough. See docs/prompt-packs.md.
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reportbench.prompt_packs.sources import (
    AuthorsSourceError,
    AuthorsSourceMismatch,
    AuthorsSourceUnavailable,
    SourceRef,
    authors_source,
    available,
)

__all__ = [
    "AuthorsSourceError",
    "AuthorsSourceMismatch",
    "AuthorsSourceUnavailable",
    "AuthorsStep",
    "SourceRef",
    "authors_source",
    "available",
    "benchmark_slug",
    "get_step",
    "load_all",
    "pack_hash",
    "pack_id",
    "register_step",
    "step_for_task",
    "steps_for",
]

Messages = list[dict[str, Any]]


@dataclass(frozen=True)
class AuthorsStep:
    """One judge step of one benchmark, reproduced from the authors' code.

    - `benchmark`/`step`: the goldens' names (e.g. 'DeepScholar-bench', 'support / attribution validator ...').
    - `key`: a short id unique within the benchmark ('support'); `get_step` accepts it as well.
    - `render(inputs)`: the chat messages exactly as the authors' code sends them for these inputs.
    - `render_swapped`: the second call of a position-swapped pair, when the authors make one.
    - `parse(raw)`: strict parser of the authors' answer format; raises ParseError on anything malformed.
    - `request_kwargs`: what the authors pass with the messages (temperature, response_format name, ...).
    - `judge_task`/`from_task`/`to_output`: optional binding to one of our judge tasks: our typed input ->
      the authors' inputs, and (parsed answer, our typed input) -> a dict for the task's output model.
    - `response_model`: zero-arg factory of a pydantic model of the structured answer the authors request
      (built statically from their class on first use, so registering needs no source files).
    """

    benchmark: str
    step: str
    sources: tuple[SourceRef, ...]
    render: Callable[[Mapping[str, Any]], Messages]
    render_swapped: Callable[[Mapping[str, Any]], Messages] | None
    parse: Callable[[str], Any]
    request_kwargs: Mapping[str, Any] = field(default_factory=dict)
    key: str = ""
    judge_task: str | None = None
    from_task: Callable[[Any], Mapping[str, Any]] | None = None
    to_output: Callable[[Any, Any], Mapping[str, Any]] | None = None
    response_model: Callable[[], type] | None = None
    description: str = ""

    @property
    def step_id(self) -> str:
        """Stable id for records: '<benchmark slug>/<key>', e.g. 'deepscholar/support'."""
        return f"{benchmark_slug(self.benchmark)}/{self.key or _slug(self.step)}"

    @property
    def sources_hash(self) -> str:
        """sha256 over this step's pinned source sha256s: changes iff any source file changes."""
        return _hash_refs(self.sources)

    def available(self) -> bool:
        """All sources are in the mirror or the cache (no download needed)."""
        return all(available(r) for r in self.sources)


_STEPS: dict[tuple[str, str], AuthorsStep] = {}
_LOADED = False


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def benchmark_slug(benchmark: str) -> str:
    """'DeepScholar-bench' -> 'deepscholar', 'LiveResearchBench' -> 'liveresearchbench', 'DEER' -> 'deer'."""
    s = benchmark.lower()
    s = re.sub(r"[-_ ]bench$", "", s)
    return re.sub(r"[^a-z0-9]+", "", s)


def _hash_refs(refs: tuple[SourceRef, ...] | list[SourceRef]) -> str:
    lines = sorted({f"{r.repo}@{r.commit}:{r.path}={r.sha256}" for r in refs})
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def register_step(step: AuthorsStep) -> None:
    """Add a step; the same (benchmark, step) or (benchmark, key) twice with a different object is an error."""
    bslug = benchmark_slug(step.benchmark)
    for k in {step.step, step.key} - {""}:
        prev = _STEPS.get((bslug, k))
        if prev is not None and prev is not step:
            if prev.step == step.step and prev.key == step.key and prev.sources == step.sources:
                continue  # a module re-imported (e.g. importlib.reload in tests): keep the first
            raise ValueError(f"authors' step {step.benchmark}/{k} is already registered")
        _STEPS[(bslug, k)] = step


def load_all() -> None:
    """Import every module of this package once, so each pack registers its steps."""
    global _LOADED
    if _LOADED:
        return
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")
    _LOADED = True


def get_step(benchmark: str, step: str) -> AuthorsStep:
    """By the goldens' names, or by slug + key ('deepscholar', 'support')."""
    load_all()
    try:
        return _STEPS[(benchmark_slug(benchmark), step)]
    except KeyError:
        known = sorted(f"{b}/{s.key}" for (b, _), s in _STEPS.items())
        raise KeyError(f"no authors' step {benchmark!r}/{step!r}; known: {sorted(set(known))}") from None


def steps_for(benchmark: str) -> list[AuthorsStep]:
    """The benchmark's steps in registration order (each once)."""
    load_all()
    b = benchmark_slug(benchmark)
    seen: dict[int, AuthorsStep] = {}
    for (bs, _), s in _STEPS.items():
        if bs == b:
            seen.setdefault(id(s), s)
    return list(seen.values())


def step_for_task(task_name: str, benchmark: str | None = None) -> AuthorsStep | None:
    """The step bound to our judge task `task_name` (via AuthorsStep.judge_task), if any."""
    load_all()
    found = {id(s): s for s in _STEPS.values() if s.judge_task == task_name}
    if benchmark is not None:
        found = {k: s for k, s in found.items() if benchmark_slug(s.benchmark) == benchmark_slug(benchmark)}
    if len(found) > 1:
        raise KeyError(f"several authors' steps bind judge task {task_name!r}: {[s.step_id for s in found.values()]}")
    return next(iter(found.values()), None)


def pack_id(benchmark: str) -> str:
    """'authors:<repo>@<commit[:7]>' of the benchmark's main repository (the first source of its first step)."""
    steps = steps_for(benchmark)
    if not steps:
        raise KeyError(f"no authors' pack for {benchmark!r}")
    ref = steps[0].sources[0]
    return f"authors:{ref.repo}@{ref.commit[:7]}"


def pack_hash(benchmark: str) -> str:
    """sha256 over every pinned source sha256 of the benchmark's pack (for judge records)."""
    steps = steps_for(benchmark)
    if not steps:
        raise KeyError(f"no authors' pack for {benchmark!r}")
    return _hash_refs([r for s in steps for r in s.sources])
