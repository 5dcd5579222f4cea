"""Heavy optional imports stay out of module top levels on the offline path.

Why: every DVC stage is a fresh process, so a top-level `import scipy.stats` (~0.6 s) or `import nltk`
(~0.7 s, it pulls scipy too) is paid by every judge and score stage even when it never runs a t-test or
splits a sentence. Each check runs in a subprocess so the test session's own imports cannot hide a regression.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.core

HEAVY = ("scipy", "nltk", "litellm", "openai", "sklearn", "pandas")


def _loaded_after(modules: list[str]) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print(json.dumps(sorted(h for h in {HEAVY!r} if h in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "modules",
    [
        ["reportbench.metrics.stats"],
        ["reportbench.reports.sentences"],
        ["reportbench.reports"],
        ["reportbench.metrics.leaderboard"],
        ["reportbench.systems.offline_baseline", "reportbench.systems.retrieval"],
    ],
    ids=lambda m: m[0],
)
def test_no_heavy_import_at_module_level(modules: list[str]) -> None:
    assert _loaded_after(modules) == set()


def test_lazy_imports_still_work() -> None:
    """The moved imports happen on first use and give the same answers."""
    from reportbench.metrics.stats import paired_ttest
    from reportbench.reports.sentences import split_sentences

    assert split_sentences("We use e.g. BM25 here. Then we stop.") == ["We use e.g. BM25 here.", "Then we stop."]
    t = paired_ttest({"a": 1.0, "b": 2.0, "c": 3.5}, {"a": 0.5, "b": 1.0, "c": 1.0})
    assert t.n == 3 and 0.0 < t.p < 1.0
