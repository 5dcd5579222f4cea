"""Redaction (reportbench.redaction): any >= 8-character fragment of a secret-looking environment value, reversed
or encoded, is removed from everything a run writes. Regression for issue 15 defect 6 (a `command` system that
printed a key's suffix or the key reversed to stderr had that text stored in outcomes.jsonl)."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote

import polars as pl
import pytest

from reportbench.redaction import (
    MASK,
    contains_secret,
    encodings,
    install_log_redaction,
    looks_secret,
    redact,
    scrub_file,
    secret_values,
)

# built at run time so that no key-shaped literal sits in the repository (mixed case and digits, like a real key)
_DIGEST = base64.b32encode(hashlib.sha256(b"reportbench redaction test").digest()).decode()
SECRET = "sk-" + "proj-" + _DIGEST[:20] + "x9Q"
SECRET_ENV = "REPORTBENCH_TEST_API_KEY"


def fragments(secret: str = SECRET, size: int = 8) -> set[str]:
    """Every `size`-long window of every encoding: what must never appear in an output."""
    return {f[i : i + size] for f in encodings(secret) for i in range(len(f) - size + 1)}


def leaks(text: str) -> list[str]:
    return sorted(g for g in fragments() if g in text)


@pytest.mark.core
@pytest.mark.parametrize(
    "leak",
    [
        SECRET,
        SECRET[-12:],  # a suffix, as in "key ending in ..."
        SECRET[5:19],  # a middle piece
        SECRET[::-1],  # reversed
        SECRET[::-1][3:15],
        base64.b64encode(SECRET.encode()).decode(),  # Basic auth header
        base64.urlsafe_b64encode(SECRET.encode()).decode()[:20],
        quote(SECRET, safe=""),
        SECRET.encode().hex(),
        SECRET.encode().hex().upper()[10:40],
    ],
)
def test_every_fragment_spelling_is_redacted(leak: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    text = f"error: auth failed for {leak} (retrying)"
    cleaned = redact(text)
    assert leaks(cleaned) == [] and MASK in cleaned
    assert cleaned.startswith("error: auth failed for ") and cleaned.endswith(" (retrying)")


@pytest.mark.core
def test_short_pieces_and_non_secrets_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")  # not a secret value
    monkeypatch.setenv("SOME_TOKEN_PATH", "/home/user/.config/token.json")  # a path, not a secret
    assert redact(f"the key ends in {SECRET[-7:]}") == f"the key ends in {SECRET[-7:]}"  # < 8 characters
    assert redact("keyring backends are configured") == "keyring backends are configured"
    assert secret_values() == (SECRET,)
    assert looks_secret("OPENAI_API_KEY", "sk-abc123def456") and not looks_secret("HOME", "sk-abc123def456")
    assert not looks_secret("API_KEY", "short1")


@pytest.mark.core
def test_judge_client_redact_uses_the_shared_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from reportbench.judges.client import redact as client_redact

    monkeypatch.setenv(SECRET_ENV, SECRET)
    assert leaks(client_redact(f"401: invalid key {SECRET[::-1]}")) == []
    assert leaks(client_redact("401", (SECRET,))) == []


@pytest.mark.core
def test_logs_and_files_are_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    stream = tmp_path / "log.txt"
    logger = logging.getLogger("reportbench.test_redaction")
    handler = logging.FileHandler(stream)
    logger.addHandler(handler)
    install_log_redaction(logger)
    try:
        logger.warning("stderr said %s", SECRET[4:30])
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert leaks(stream.read_text()) == [] and MASK in stream.read_text()
    f = tmp_path / "raw.md"
    f.write_text(f"report text {base64.b64encode(SECRET.encode()).decode()} end\n")
    assert scrub_file(f) and not contains_secret(f.read_text()) and f.read_text().startswith("report text ")


AGENT = textwrap.dedent(
    """
    import base64, json, os, sys
    task = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    key = os.environ["REPORTBENCH_TEST_API_KEY"]
    if task["task_id"].endswith("1"):
        sys.stderr.write("auth error, key ends in " + key[-14:] + " reversed " + key[::-1] + "\\n")
        sys.exit(3)
    with open(out + ".log", "w") as f:  # a side file in the DVC-tracked run folder
        f.write("debug: " + base64.b64encode(key.encode()).decode() + "\\n")
    with open(out, "w") as f:
        f.write("## Related Work\\n\\nRetrieval helps question answering [1]. Debug token " + key[3:20] + ".\\n\\n"
                "## References\\n\\n[1] Dense Passage Retrieval. arXiv:2004.04906\\n")
    """
)


@pytest.mark.integration
def test_no_output_of_a_run_holds_a_secret_fragment(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A command system leaks its key (suffix and reversed on stderr, base64 in a side file, a piece in the
    report): the whole DeepScholar demo pipeline runs, and every file it wrote (parquet cells included) and
    every log line is scanned for any 8-character fragment of any encoding of the key."""
    from reportbench.config import composed_params
    from reportbench.redaction import RedactingFilter
    from reportbench.systems import read_outcomes
    from spine_helpers import run_benchmark

    monkeypatch.chdir(repo_root)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    script = tmp_path / "leaky_agent.py"
    script.write_text(AGENT, encoding="utf-8")
    params = composed_params(conf_dir=repo_root / "conf")
    params["benchmarks"]["deepscholar"]["judging"]["citations"]["cache_path"] = str(tmp_path / "oa.sqlite")
    params["judge"]["runtime"]["progress"] = False
    params["benchmarks"]["deepscholar"]["systems"] = {
        "leaky": {
            "kind": "command",
            "path": str(script),
            "cmd": [sys.executable, str(script), "{task_json}", "{output}"],
            "pass_env": [SECRET_ENV],  # a command sees only the variables its config names
        }
    }
    caplog.handler.addFilter(RedactingFilter())  # what setup_logging installs on the stage's handlers
    root = tmp_path / "run"
    with caplog.at_level(logging.INFO):
        run_benchmark(params, "deepscholar", root)

    outcomes = read_outcomes(root / "runs" / "leaky")
    failed = [o for o in outcomes if o.status == "failed"]
    assert len(failed) == 1 and "exit code 3; stderr: auth error, key ends in ***" in (failed[0].reason or "")
    assert any(o.status == "ok" for o in outcomes)
    scanned = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        scanned += 1
        if path.suffix == ".parquet":
            frame = pl.read_parquet(path)
            text = json.dumps(frame.to_dicts(), default=str, ensure_ascii=False)
        else:
            text = path.read_bytes().decode("utf-8", errors="replace")
        assert leaks(text) == [], f"{path.relative_to(root)} holds a fragment of the key"
    assert scanned > 10
    assert leaks("\n".join(r.getMessage() for r in caplog.records)) == []
    raw = root / "runs" / "leaky" / "raw"
    assert any(MASK in p.read_text() for p in raw.glob("*.md")), "the report's leaked piece was masked"
