"""Fatal errors: failures that no retry can fix, and how a stage stops on them (fail fast).

Most failures are values: a judgment or a task outcome records `failed` with its reason and the run goes
on. Four classes are different, because every remaining call would fail the same way and a run would
end minutes later with an empty leaderboard:

- `auth`            missing or invalid credentials (401 / AuthenticationError, 403 PermissionDenied,
                    the SDK's "Missing credentials", a key variable that is not set)
- `model_not_found` unknown model (404 NotFoundError, "model not found"/`model_not_found`, litellm's
                    "LLM Provider NOT provided")
- `quota`           the account has no quota/credit left (`insufficient_quota`, billing messages, 402).
                    Ordinary rate limiting (429 without those markers) stays retryable.
- `context_length`  the prompt does not fit the model (ContextWindowExceededError,
                    `context_length_exceeded`). This is a property of one item, so it is that item's
                    failure record (`call: context_length: ...`), *unless* the first `fatal_after` calls
                    that finish all fail that way (no call got through yet): then the prompt/model
                    pairing itself is wrong and the stage stops.

The client never retries these (`client.classify`). The judge runner (and the `endpoint` system kind)
counts them with a `FatalTripwire`: once `runtime.fatal_after` (default 3) calls failed with the same
fatal kind, it cancels the remaining work and raises `FatalJudgeError` / `FatalSystemError` with one
line naming the judge (config name), the model, the kind and the fix. Work already answered is in the
response cache, so a rerun after the fix only pays for the rest.

Stage scripts wrap their body in `exit_on_fatal()` (or call `run_stage(fn, ...)`): a `FatalError`
becomes one line on stderr, no traceback, exit code 2. `reportbench check-judge [overrides...]` runs the
credential preflight (no network call) for every judge role without starting a stage.

This module imports neither litellm (but lazily, to name a key variable) nor the client, which builds on it;
the preflight lives in judges/client.py and the command in reportbench/check_judge.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, TypeVar

FatalKind = Literal["auth", "model_not_found", "quota", "context_length"]
FATAL_KINDS: tuple[FatalKind, ...] = ("auth", "model_not_found", "quota", "context_length")
PER_ITEM_KINDS: frozenset[str] = frozenset({"context_length"})
"""Fatal only when nothing has got through yet; otherwise a per-item failure value."""
DEFAULT_FATAL_AFTER = 3
EXIT_CODE = 2

KIND_TITLES: dict[str, str] = {
    "auth": "missing or invalid credentials",
    "model_not_found": "unknown model",
    "quota": "quota or credit exhausted",
    "context_length": "prompt longer than the model's context window",
}

T = TypeVar("T")

# ------------------------------------------------------------------------------------------------
# Classification (pure: exception class names, status codes and message text)
# ------------------------------------------------------------------------------------------------

_CONTEXT = re.compile(
    r"context_length_exceeded|maximum context length|context window|contextwindowexceeded"
    r"|prompt is too long|input is too long for requested model|too many input tokens",
)
_QUOTA = re.compile(
    r"insufficient_quota|credit balance is too low|billing_hard_limit|billing hard limit"
    r"|payment required|out of credits|insufficient credits|insufficient balance",
)
_QUOTA_SOFT = re.compile(r"exceeded your current quota")
_PER_MINUTE = re.compile(r"per minute|per_minute|perminute|retrydelay|retry in |tokens per min|requests per min")
_AUTH = re.compile(
    r"missing credentials|api_key client option must be set|no api key provided|incorrect api key"
    r"|invalid_api_key|invalid api key|invalid x-api-key|authentication_error|api key not valid"
    r"|unauthorized|permission_denied|permissiondenied",
)
_MODEL = re.compile(
    r"model_not_found|model not found|llm provider not provided|unknown model|no such model"
    r"|the model `[^`]*` does not exist|model [^ ]+ does not exist|notfounderror",
)


def _class_names(exc: BaseException) -> str:
    return " ".join(c.__name__ for c in type(exc).__mro__)


def _text(exc: BaseException) -> str:
    parts = [str(exc)]
    for attr in ("body", "code", "type", "message"):
        value = getattr(exc, attr, None)
        if value is not None and not callable(value):
            parts.append(str(value))
    return " ".join(parts).lower()


def fatal_kind(exc: BaseException) -> FatalKind | None:
    """The fatal class of a provider exception, or None when it is ordinary (maybe retryable)."""
    names = _class_names(exc)
    code = getattr(exc, "status_code", None)
    code = code if isinstance(code, int) else None
    text = _text(exc)
    if "ContextWindowExceeded" in names or (code != 429 and _CONTEXT.search(text)):
        return "context_length"
    if code == 402 or _QUOTA.search(text):
        return "quota"
    if _QUOTA_SOFT.search(text) and not _PER_MINUTE.search(text):
        return "quota"
    if code in (401, 403) or "AuthenticationError" in names or "PermissionDenied" in names or _AUTH.search(text):
        return "auth"
    if "NotFoundError" in names or _MODEL.search(text):
        return "model_not_found"
    return None


def fatal_kind_of_error(error: str | None) -> FatalKind | None:
    """The fatal class of a record's error string, e.g. 'call: auth: ...' -> 'auth'."""
    if not error:
        return None
    head, _, rest = error.partition(":")
    if head.strip() != "call":
        return None
    kind = rest.strip().partition(":")[0].strip()
    return kind if kind in FATAL_KINDS else None  # type: ignore[return-value]


FINAL_CALL_KINDS: frozenset[str] = frozenset({"bad_request", "context_length"})
"""Call failures that are a property of the request itself: asking again gets the same refusal."""

UNDEFINED_HEADS: frozenset[str] = frozenset({"too_large", "too_short"})
"""Error heads of records whose value the protocol leaves undefined (a bound), not failures."""

FailureClass = Literal["ok", "unanswered", "parse", "final", "undefined"]


def failure_class(status: str, error: str | None) -> FailureClass:
    """What a record's failure means for a rerun (docs/reliability.md):

    - `unanswered`: the call got no answer (rate limit, 5xx, timeout, connection, a fatal class the user
      must fix, an unknown error) -- not a result; a rerun asks again.
    - `parse`: an answer that did not parse -- a result; its raw answers are kept and a deterministic
      judge is not re-asked unless the user says so.
    - `final`: a refusal that is a property of the request (bad request, context too long) or an
      internal error of the task's code -- a result until the request or the code changes.
    - `undefined`: the item is over a documented size bound (`too_large: ...`, reportbench.bounds) or its
      answer is under a protocol's validity bound (`too_short: ...`, judges.base.BelowBoundAnswer): no retry
      changes it, so it is a recorded per-item outcome (its value undefined, with the reason) and never counts
      against `max_failure_rate` (one oversized report must not keep a stage incomplete on every rerun).
    """
    if status == "ok":
        return "ok"
    head, _, rest = (error or "").partition(":")
    head = head.strip()
    if head in UNDEFINED_HEADS:
        return "undefined"
    if head == "parse":
        return "parse"
    if head == "truncated":  # the answer hit the step's output budget: a result until the budget changes
        return "final"
    if head == "call":
        kind = rest.strip().partition(":")[0].strip()
        return "final" if kind in FINAL_CALL_KINDS else "unanswered"
    if head == "internal":
        return "final"
    return "unanswered"  # no reason recorded: never treat it as a result


# ------------------------------------------------------------------------------------------------
# The errors
# ------------------------------------------------------------------------------------------------


class FatalError(Exception):
    """A failure that stops a stage: `str()` is one line for stderr; `exit_on_fatal` exits with 2."""

    exit_code = EXIT_CODE
    # what a judge run got before this stopped it (set by the runner / the budget check), so the judge stage
    # still writes the usage of the calls actually paid
    judgments: list[Any] | None = None

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class FatalJudgeError(FatalError):
    """A judge cannot work as configured (credentials, model, quota, context window)."""

    def __init__(
        self,
        *,
        judge: str | None,
        model: str | None,
        kind: str,
        fix: str,
        detail: str = "",
        count: int = 0,
        where: str = "judge",
    ) -> None:
        self.judge, self.model, self.kind, self.fix, self.detail, self.count = judge, model, kind, fix, detail, count
        who = f"{where} {judge!r}" if judge else where
        calls = f" ({count} items failed the same way; the rest were cancelled)" if count else ""
        detail = f": {detail}" if detail else ""
        super().__init__(
            f"{who} (model {model}) cannot run: {kind}, {KIND_TITLES.get(kind, kind)}{calls}{detail}. Fix: {fix}"
        )


class IncompleteJudgeStage(FatalError):
    """A judge stage wrote its records but is not a result DVC may record: unanswered calls remain, or
    more items failed than `runtime.max_failure_rate` allows. Exit code 3, so DVC neither locks the stage
    nor stores it in its run-cache, and the next `dvc repro` runs it again (answered items are free)."""

    exit_code = 3


class FatalSystemError(FatalJudgeError):
    """The `endpoint` system kind's equivalent: the system's model cannot answer as configured."""

    def __init__(self, *, system: str, **kwargs: Any) -> None:
        super().__init__(judge=system, where="system", **kwargs)
        self.system = system


# ------------------------------------------------------------------------------------------------
# Messages: which variable, which fix (secrets never appear)
# ------------------------------------------------------------------------------------------------


def key_env_names(model: str | None, api_key_env: str | None = None, api_base: str | None = None) -> list[str]:
    """The environment variable(s) that hold the key for `model`: `api_key_env` if set; none for a
    self-hosted `api_base`; else litellm's view (`validate_environment`'s missing keys, or the
    provider's `<PROVIDER>_API_KEY` when the key is present)."""
    if api_key_env:
        return [api_key_env]
    if api_base or not model:
        return []
    # lazy: +5 ms to import (python -X importtime); litellm itself (~3.5 s) only to name a key
    from reportbench.judges.litellm_loader import _litellm

    litellm = _litellm()
    try:
        missing = list(litellm.validate_environment(model=model).get("missing_keys") or [])
    except Exception:  # noqa: BLE001 - an unknown provider has no key to name
        missing = []
    if missing:
        return missing
    try:
        provider = litellm.get_llm_provider(model)[1]
    except Exception:  # noqa: BLE001
        return []
    return [f"{str(provider).upper()}_API_KEY"] if provider else []


def _env_phrase(names: list[str]) -> str:
    if set(names) == {"GOOGLE_API_KEY", "GEMINI_API_KEY"}:
        return "GEMINI_API_KEY (or GOOGLE_API_KEY)"
    return " and ".join(names)


def fix_for(
    kind: str,
    *,
    model: str | None,
    api_key_env: str | None = None,
    api_base: str | None = None,
    reason: str = "",
    prefix: str = "judge",
) -> str:
    """The one-sentence fix for a fatal kind (names the variable, never its value)."""
    names = key_env_names(model, api_key_env, api_base) if kind in ("auth", "quota") else []
    env = _env_phrase(names)
    if kind == "auth":
        missing = re.search(r"not set|missing credentials|api_key client option|no api key", reason.lower())
        if missing or not reason:
            if api_key_env:
                return f"set {api_key_env} in the environment ({prefix}.api_key_env names it)"
            if env:
                return f"set {env} in the environment (or name the variable holding the key in {prefix}.api_key_env)"
            return f"set {prefix}.api_key_env to the name of the variable holding the key for {api_base}"
        if env:
            return f"the provider rejected the key in {env}: set a valid key with access to {model}"
        return f"the endpoint {api_base} rejected the key: set {prefix}.api_key_env to a variable holding a valid key"
    if kind == "model_not_found":
        base = f" and {prefix}.api_base ({api_base})" if api_base else ""
        return (
            f"check the model string in {prefix}.model"
            + (" / judge.task_models" if prefix == "judge" else "")
            + f"{base}: a litellm model with its provider prefix, e.g. openai/gpt-4o"
        )
    if kind == "quota":
        who = f"the account behind {env}" if env else "the account"
        return f"{who} has no quota or credit left: add credit or raise its spending limit, or use another key"
    if kind == "context_length":
        return (
            f"the prompts do not fit {model}'s context window: use a model with a longer context, or shorten "
            f"the inputs (and {prefix}.max_tokens)"
        )
    return "see the reason above"


def _secrets(names: list[str], api_key_env: str | None) -> tuple[str, ...]:
    values = [os.environ.get(n, "") for n in [*names, *([api_key_env] if api_key_env else [])]]
    return tuple(v for v in values if v)


def mask(
    text: str, *, api_key_env: str | None = None, names: list[str] | None = None, patterns: bool = True
) -> str:
    """Scrub key values (from the named variables) and, with `patterns`, key-shaped tokens out of a
    message. Variable *names* (and config paths like judge.api_key_env) survive the pattern pass."""
    from reportbench.redaction import redact  # lazy: +35 ms to import (python -X importtime)

    secrets = _secrets(names or [], api_key_env)
    if not patterns:
        for secret in secrets:
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return text
    keep = sorted({*(names or []), *([api_key_env] if api_key_env else []), "api_key_env"}, key=len, reverse=True)
    for i, word in enumerate(keep):
        text = text.replace(word, f"\x00{i}\x00")
    text = redact(text, secrets)
    for i, word in enumerate(keep):
        text = text.replace(f"\x00{i}\x00", word)
    return text


def _tidy(reason: str) -> str:
    """Drop litellm's repeated class prefixes and the final period:
    'AuthenticationError: litellm.AuthenticationError: AuthenticationError: OpenAIException - X.'
    -> 'AuthenticationError: OpenAIException - X'."""
    reason = re.sub(r"\blitellm\.(\w+): ", "", reason)
    reason = re.sub(r"\b(\w+): (?:\1: )+", r"\1: ", reason)
    return reason.strip().rstrip(".")


def fatal_error(
    kind: str,
    *,
    name: str | None,
    cfg: Any,
    reason: str = "",
    count: int = 0,
    system: bool = False,
) -> FatalJudgeError:
    """Build the stage-stopping error for a client config (ClientConfig or mapping with model/api_*)."""
    get = cfg.get if isinstance(cfg, Mapping) else lambda k, d=None: getattr(cfg, k, d)
    model, api_key_env, api_base = get("model"), get("api_key_env"), get("api_base")
    prefix = f"systems.{name}" if system else "judge"
    fix = fix_for(kind, model=model, api_key_env=api_key_env, api_base=api_base, reason=reason, prefix=prefix)
    names = key_env_names(model, api_key_env, api_base) if kind in ("auth", "quota") else []
    detail = _tidy(mask(reason, api_key_env=api_key_env, names=names))[:300]
    fix = mask(fix, api_key_env=api_key_env, names=names, patterns=False)
    if system:
        return FatalSystemError(system=name or "?", model=model, kind=kind, fix=fix, detail=detail, count=count)
    return FatalJudgeError(judge=name, model=model, kind=kind, fix=fix, detail=detail, count=count)


# ------------------------------------------------------------------------------------------------
# Counting: when to stop
# ------------------------------------------------------------------------------------------------


class FatalTripwire:
    """Counts fatal failures of one run and says when to stop.

    - auth / model_not_found / quota: stop once `limit` calls failed with the same kind.
    - context_length: a per-item failure, except that `limit` of them before any call got through
      (nothing answered yet) also stops the run.
    `limit=0` never stops (every failure stays a value).
    """

    def __init__(self, limit: int = DEFAULT_FATAL_AFTER) -> None:
        self.limit = int(limit)
        self.counts: Counter[str] = Counter()
        self.first_reason: dict[str, str] = {}
        self.got_through = False
        self.tripped: str | None = None

    def observe(self, kind: str | None, reason: str = "", *, got_through: bool = False) -> bool:
        """Record one finished call; True when this observation trips the wire."""
        if got_through:
            self.got_through = True
        if kind is None or kind not in FATAL_KINDS or self.tripped is not None or self.limit <= 0:
            return False
        if kind in PER_ITEM_KINDS and self.got_through:
            return False
        self.counts[kind] += 1
        self.first_reason.setdefault(kind, reason)
        if self.counts[kind] >= self.limit:
            self.tripped = kind
            return True
        return False


def observe_judgment(wire: FatalTripwire, judgment: Any) -> bool:
    """Feed one Judgment to the wire (a call got through if it is ok or has a raw answer)."""
    error = getattr(judgment, "error", None)
    kind = fatal_kind_of_error(error)
    reason = ""
    if kind is not None and error:
        reason = error.partition(":")[2].strip().partition(":")[2].strip()
    got_through = bool(getattr(judgment, "ok", False) or getattr(judgment, "raw_output", None) is not None)
    return wire.observe(kind, reason, got_through=got_through)


# ------------------------------------------------------------------------------------------------
# Exit path for stage scripts
# ------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def exit_on_fatal() -> Iterator[None]:
    """`with exit_on_fatal(): run_judge_stage(...)`: a FatalError becomes one stderr line and exit 2."""
    try:
        yield
    except FatalError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(exc.exit_code) from None


def run_stage(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`run_stage(run_judge_stage, params, ...)`: call `fn` under `exit_on_fatal()`."""
    with exit_on_fatal():
        return fn(*args, **kwargs)
