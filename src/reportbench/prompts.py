"""Prompt templates as files (nuggetizer style): YAML with `id`, `version`, `system`, `user`.

`user` and `system` use str.format placeholders; `placeholders` lists them so a test can check that every
template renders from its task's typed input. The template hash (sha256 of the file bytes) goes into the
judge cache key and into every judgment record, so editing a prompt invalidates exactly what used it.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from reportbench import yamlio

DEFAULT_PROMPTS_DIR = Path("prompts")
# benchmark name -> the folder holding its prompts, for benchmarks that ship their own (plug-ins,
# reportbench.benchmarks.BenchmarkSpec.prompts_dir): prompt_id `<name>/<file>` is read from `<folder>/<file>`
_PROMPT_DIRS: dict[str, Path] = {}


class PromptError(ValueError):
    """A prompt file is missing a field or a placeholder value."""


@dataclass(frozen=True)
class PromptTemplate:
    prompt_id: str
    path: Path
    version: str
    system: str
    user: str
    sha256: str

    @property
    def placeholders(self) -> frozenset[str]:
        names: set[str] = set()
        for text in (self.system, self.user):
            for _, field_name, _, _ in string.Formatter().parse(text):
                if field_name:
                    names.add(field_name.split(".")[0].split("[")[0])
        return frozenset(names)

    def render(self, **values: object) -> list[dict[str, str]]:
        """Chat messages with every placeholder filled; a missing value is an error, not a blank."""
        missing = self.placeholders - values.keys()
        if missing:
            raise PromptError(f"{self.path}: no value for placeholder(s) {sorted(missing)}")
        messages = []
        if self.system.strip():
            messages.append({"role": "system", "content": self.system.format(**values)})
        messages.append({"role": "user", "content": self.user.format(**values)})
        return messages


def _load(path: Path) -> PromptTemplate:
    """Read the file every time (prompts are tiny): an edited prompt must get its new hash at once."""
    return _parse(path, path.read_bytes())


@lru_cache(maxsize=256)
def _parse(path: Path, raw: bytes) -> PromptTemplate:
    try:
        data = yamlio.safe_load(raw)
    except yaml.YAMLError as exc:
        raise PromptError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise PromptError(f"{path}: expected a mapping with id/version/system/user")
    for key in ("id", "version", "user"):
        if not isinstance(data.get(key), str | int) or str(data.get(key)).strip() == "":
            raise PromptError(f"{path}: field '{key}' is missing or empty")
    return PromptTemplate(
        prompt_id=str(data["id"]),
        path=path,
        version=str(data["version"]),
        system=str(data.get("system") or ""),
        user=str(data["user"]),
        sha256=hashlib.sha256(raw).hexdigest(),
    )


def register_prompts_dir(benchmark: str, folder: Path) -> None:
    """Prompt ids `<benchmark>/<file>` are read from `folder/<file>` (a plug-in benchmark's own prompts)."""
    _PROMPT_DIRS[benchmark] = Path(folder)


def load_prompt(prompt_id: str, prompts_dir: str | Path = DEFAULT_PROMPTS_DIR) -> PromptTemplate:
    """Load `prompts_dir/prompt_id` (e.g. 'deepscholar/support.yaml'), or the file in the folder a plug-in
    benchmark registered for its name (`register_prompts_dir`)."""
    head, _, rest = prompt_id.partition("/")
    own = _PROMPT_DIRS.get(head) if rest else None
    path = (own / rest if own is not None else Path(prompts_dir) / prompt_id).resolve()
    if not path.is_file():
        raise PromptError(f"prompt file not found: {path}")
    return _load(path)


def iter_prompt_files(prompts_dir: str | Path = DEFAULT_PROMPTS_DIR) -> list[Path]:
    return sorted(Path(prompts_dir).rglob("*.yaml"))
