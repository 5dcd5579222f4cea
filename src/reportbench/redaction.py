"""One place that keeps secrets out of everything reportbench writes (records, outcomes, raw outputs, logs).

Why more than exact matching: programs under test and providers echo keys in pieces — a suffix in an auth
error ("...f3a9c1d2"), a masked middle, the key reversed, base64 in a Basic auth header, URL- or hex-encoded
in a dumped request. So every *secret-looking* environment variable value is expanded into its common
encodings (itself, reversed, base64 / url-safe base64, URL-quoted, hex) and any run of >= `MIN_FRAGMENT`
characters of any of them is replaced by `***`.

What counts as secret-looking (kept narrow, because redaction rewrites text that reaches the judges): the
variable's name mentions key / token / secret / password / credential / auth, and its value is at least
`MIN_FRAGMENT` characters, has no whitespace, is not a path or URL, and mixes letters with digits (so
`PYTHON_KEYRING_BACKEND=keyring.backends.null.Keyring` is not one, an `sk-...` key is).
Key-shaped tokens (`sk-...`, `Bearer ...`, `abc****wxyz`) are redacted whatever the environment holds.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import quote

MIN_FRAGMENT = 8
MASK = "***"
SECRET_ENV_NAME = re.compile(r"(?i)(?:key|token|secret|passw(?:or)?d|credential|auth)")
_KEYISH = re.compile(r"\b(?:sk|pk|rk|key|api)[-_][A-Za-z0-9_\-\*\.]{6,}|Bearer\s+\S+", re.IGNORECASE)
_PARTIAL_ECHO = re.compile(r"[A-Za-z0-9_\-]{2,}\*{3,}[A-Za-z0-9_\-]{2,}")  # "abc*****wxyz": a key's ends


def looks_secret(name: str, value: str) -> bool:
    """Whether an environment variable is treated as a secret (see the module docstring for the rule)."""
    if not value or len(value) < MIN_FRAGMENT or not SECRET_ENV_NAME.search(name):
        return False
    if any(c.isspace() for c in value) or value.startswith(("/", "~", ".")) or "://" in value:
        return False
    return any(c.isalpha() for c in value) and any(c.isdigit() for c in value)


def secret_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Values of the secret-looking variables in `env` (default: this process's environment), longest first."""
    env = os.environ if env is None else env
    return tuple(sorted({v for k, v in env.items() if looks_secret(k, v)}, key=len, reverse=True))


def encodings(secret: str) -> set[str]:
    """The spellings of one secret that leak in practice: as is, reversed, base64, URL-quoted, hex."""
    raw = secret.encode("utf-8")
    forms = {
        secret,
        secret[::-1],
        base64.b64encode(raw).decode("ascii"),
        base64.urlsafe_b64encode(raw).decode("ascii"),
        quote(secret, safe=""),
        raw.hex(),
        raw.hex().upper(),
    }
    return {f.rstrip("=") for f in forms if f}


@lru_cache(maxsize=64)
def _fragments(secrets: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """Every MIN_FRAGMENT-long window of every encoding of every secret, and a regex for the runs of text made
    only of characters those encodings use: a fragment can only occur inside such a run (whitespace never
    does), so the search looks at windows of long runs instead of the whole text once per window."""
    grams: set[str] = set()
    for secret in secrets:
        if len(secret) < MIN_FRAGMENT:
            continue
        for form in encodings(secret):
            grams.update(form[i : i + MIN_FRAGMENT] for i in range(len(form) - MIN_FRAGMENT + 1))
    if not grams:
        return frozenset(), None
    alphabet = "".join(sorted({c for g in grams for c in g}))
    runs = re.compile(f"[{re.escape(alphabet)}]{{{MIN_FRAGMENT},}}")  # re.escape covers ] ^ - and backslash
    return frozenset(grams), runs


def _exact_short(secrets: Iterable[str]) -> list[str]:
    """Secrets shorter than MIN_FRAGMENT (passed explicitly) are still removed when they appear whole."""
    return [s for s in secrets if s and 4 <= len(s) < MIN_FRAGMENT]


def leaked_spans(text: str, secrets: tuple[str, ...]) -> list[tuple[int, int]]:
    """Merged (start, end) spans of `text` made of secret fragments."""
    grams, runs = _fragments(secrets)
    spans: list[tuple[int, int]] = []
    if runs is not None:
        n = MIN_FRAGMENT
        for m in runs.finditer(text):
            run, base = m.group(), m.start()
            for i in range(len(run) - n + 1):
                if run[i : i + n] in grams:
                    spans.append((base + i, base + i + n))
    for short in _exact_short(secrets):
        start = text.find(short)
        while start >= 0:
            spans.append((start, start + len(short)))
            start = text.find(short, start + 1)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def redact(text: str, secrets: Iterable[str] | None = None, *, patterns: bool = True) -> str:
    """`text` without any >= 8-character fragment of any secret (in any common encoding) and, with
    `patterns`, without key-shaped tokens. `secrets` defaults to the environment's secret-looking values;
    explicit secrets are added to those."""
    if not text:
        return text
    found = set(secret_values())
    if secrets is not None:
        found.update(s for s in secrets if s)
    ordered = tuple(sorted(found, key=lambda s: (-len(s), s)))
    spans = leaked_spans(text, ordered)
    if spans:
        parts, last = [], 0
        for s, e in spans:
            parts.append(text[last:s])
            parts.append(MASK)
            last = e
        parts.append(text[last:])
        text = "".join(parts)
    if patterns:
        text = _PARTIAL_ECHO.sub(MASK, _KEYISH.sub(MASK, text))
    return text


def contains_secret(text: str, secrets: Iterable[str] | None = None) -> bool:
    """Whether `text` holds a fragment of a secret (the check `redact_tree` and the file scrubber use)."""
    found = set(secret_values())
    if secrets is not None:
        found.update(s for s in secrets if s)
    return bool(text) and bool(leaked_spans(text, tuple(sorted(found, key=lambda s: (-len(s), s)))))


def redact_tree(value: Any, secrets: Iterable[str] | None = None) -> Any:
    """A JSON-like value with every string redacted (dict keys included); other leaves unchanged."""
    if isinstance(value, str):
        return redact(value, secrets, patterns=False)
    if isinstance(value, dict):
        return {redact(str(k), secrets, patterns=False): redact_tree(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v, secrets) for v in value]
    return value


def scrub_file(path: os.PathLike[str] | str, secrets: Iterable[str] | None = None) -> bool:
    """Rewrite a text file in place when it holds a secret fragment; True if it did. Binary files that do not
    decode as UTF-8 are scanned as latin-1 so a key inside them is still found and masked."""
    from pathlib import Path

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError:
        return False
    try:
        text, enc = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, enc = data.decode("latin-1"), "latin-1"
    if not contains_secret(text, secrets):
        return False
    p.write_bytes(redact(text, secrets, patterns=False).encode(enc))
    return True


class RedactingFilter(logging.Filter):
    """A logging filter that redacts every record's formatted message (attach it to handlers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is left for logging to report
            return True
        cleaned = redact(message, patterns=False)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            if contains_secret(text):
                record.msg = f"{cleaned}\n{redact(text, patterns=False)}"
                record.exc_info, record.exc_text = None, None
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Attach one RedactingFilter to every handler of `logger` (default: the root logger); idempotent."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
