"""The small framework both opt-in release builders run on (`live_builder`, `survey_builder`).

Why one: the live DeepScholar builder and the survey-mined ResearchQA builder are the same machine with other
stages — a typed `<key>:` params section that fails at start-up naming the key, a work folder per build
(`<key>/work/<name>/`), one polite caching HTTP session per network stage (the caller's, or one that is closed
when the stage ends), a per-run item store when the persistent cache is off, and a stage table that DVC's
`run.py <stage>` dispatches into. Each builder keeps only its stages, its records and its release.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from reportbench.http_cache import CacheMode, CachingSession, HttpCache, make_cached_session

log = logging.getLogger(__name__)

ARXIV_MIN_INTERVAL_S = 3.0  # arXiv API terms of use
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # a build's name becomes a directory name


class Strict(BaseModel):
    """A params model that rejects unknown keys (a typo fails at start-up, not after hours of downloads)."""

    model_config = ConfigDict(extra="forbid")


class Window(Strict):
    """Date window (arXiv `submittedDate` / OpenAlex publication date), inclusive, UTC days."""

    start: dt.date
    end: dt.date

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.end < self.start:
            raise ValueError(f"window.end {self.end} is before window.start {self.start}")
        return self


class HttpParams(Strict):
    """Operational: not DVC params, never change the content of a release. Both builders share one cache and
    one politeness policy."""

    cache_dir: str = ".reportbench/cache/http"
    mode: CacheMode = "use"
    timeout_s: float = Field(30.0, gt=0)
    retries: int = Field(4, ge=0)
    backoff_factor: float = Field(1.0, ge=0)
    arxiv_interval_s: float = Field(ARXIV_MIN_INTERVAL_S, ge=0)
    openalex_interval_s: float = Field(0.1, ge=0)
    max_body_mb: float = Field(100.0, gt=0)
    mailto_env: str = "OPENALEX_MAILTO"
    api_key_env: str = "OPENALEX_API_KEY"

    def min_interval(self) -> dict[str, float]:
        if self.arxiv_interval_s < ARXIV_MIN_INTERVAL_S:
            log.warning(
                "live.http.arxiv_interval_s=%s is below arXiv's 3 s guidance; use it only against a stub",
                self.arxiv_interval_s,
            )
        return {
            "export.arxiv.org": self.arxiv_interval_s,
            "arxiv.org": self.arxiv_interval_s,
            "api.openalex.org": self.openalex_interval_s,
        }

    def mailto(self) -> str | None:
        return (os.environ.get(self.mailto_env) or os.environ.get("REPORTBENCH_MAILTO") or "").strip() or None

    def api_key(self) -> str | None:
        return (os.environ.get(self.api_key_env) or "").strip() or None


def check_name(value: str, prefix: str = "") -> str:
    """A build name that is safe as a directory name; `prefix` names the key in the message."""
    if not NAME_RE.match(value):
        raise ValueError(f"{prefix}{value!r} must match {NAME_RE.pattern} (it becomes a directory name)")
    return value


class BuildConfig(Strict):
    """What every build's params carry: its name (a directory name), release date, licence and window."""

    name_key: ClassVar[str] = ""  # how a bad name's message names the key ("live.name ")

    name: str
    created_at: dt.date | None = Field(None, description="release date in release.json; None = window.end")
    licence: str = "mixed; see CARD.md"
    description: str = ""
    window: Window

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        return check_name(v, cls.name_key)

    @property
    def release_date(self) -> str:
        return (self.created_at or self.window.end).isoformat()


M = TypeVar("M", bound=BaseModel)


def load_section(params: dict[str, Any], key: str, model: type[M], error: type[Exception]) -> M:
    """Validate `params[key]` as `model`; every message names the offending `<key>.*` param."""
    raw = params.get(key)
    if not isinstance(raw, dict):
        raise error(
            f"params.yaml: missing mapping {key!r}: the `{key}` config group is opt-in (conf/{key}/*.yaml); the "
            f"pipeline's `init` selects it, or `reportbench compose {key}=default` / `dvc exp run -S {key}=default`"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        lines = [f"{key}.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise error(f"params.yaml: invalid {key} config:\n  " + "\n  ".join(lines)) from exc


def work_dir(key: str, name: str, root: Path = Path(".")) -> Path:
    """`<key>/work/<name>`: a build's intermediate stage outputs."""
    return root / key / "work" / name


def open_session(http: HttpParams, root: Path = Path(".")) -> CachingSession:
    """The polite caching session of a network stage (a relative cache dir is under `root`)."""
    cache_dir = Path(http.cache_dir)
    if not cache_dir.is_absolute():
        cache_dir = root / cache_dir
    return make_cached_session(
        cache_dir,
        mode=http.mode,
        timeout=http.timeout_s,
        retries=http.retries,
        backoff_factor=http.backoff_factor,
        min_interval=http.min_interval(),
        mailto=http.mailto(),
        max_body_bytes=int(http.max_body_mb * (1 << 20)),
    )


@contextmanager
def stage_session(http: HttpParams, root: Path, session: CachingSession | None) -> Iterator[CachingSession]:
    """The caller's session, or a new one that is closed when the stage is done with it."""
    if session is not None:
        yield session
        return
    own = open_session(http, root)
    try:
        yield own
    finally:
        own.close()


@contextmanager
def item_store(session: CachingSession) -> Iterator[HttpCache]:
    """The session's persistent cache; with `http.mode=off` (no cache at all) a throw-away store that still
    de-duplicates lookups within this run."""
    if session.cache is not None:
        yield session.cache
        return
    with tempfile.TemporaryDirectory(prefix="reportbench-items-") as tmp:
        cache = HttpCache(tmp)
        try:
            yield cache
        finally:
            cache.close()


StageFn = Callable[..., dict[str, Any]]


def run_named_stage(
    stages: Mapping[str, StageFn], name: str, params: dict[str, Any], root: Path, what: str
) -> dict[str, Any]:
    """Run stage `name` of a builder (`what` names the builder in the error)."""
    if name not in stages:
        raise ValueError(f"unknown {what} stage {name!r}; expected one of {tuple(stages)}")
    return stages[name](params, root)
