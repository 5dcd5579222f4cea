"""The OSS adapters' shared helpers (adapters/_oss_common.py, stdlib only): numbering, rendering, outcome mapping.

Loaded by file path, as the adapters load it, so these run in reportbench's own environment without any agent venv.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from agent_stubs import ADAPTERS

pytestmark = pytest.mark.core


@pytest.fixture(scope="module")
def common() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_oss_common_test", ADAPTERS / "_oss_common.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_sources_keep_first_seen_numbers(common: ModuleType) -> None:
    s = common.Sources()
    assert [s.add("https://a"), s.add("https://b", "B"), s.add("https://a", "A")] == [1, 2, 1]
    assert s.references() == [{"n": 1, "url": "https://a", "title": "A"}, {"n": 2, "url": "https://b", "title": "B"}]
    assert s.references({2}) == [{"n": 2, "url": "https://b", "title": "B"}]


def test_cited_numbers_reads_lists_and_ranges(common: ModuleType) -> None:
    assert common.cited_numbers("a [1]. b [2, 4]. c [6-8]. d [x] [2026-1999]") == {1, 2, 4, 6, 7, 8}


def test_render_appends_numbered_references(common: ModuleType) -> None:
    out = common.render("Body [1].\n", [{"n": 1, "url": "https://a", "title": "T"}, {"n": 3, "url": "https://c"}])
    assert out == "Body [1].\n\n## References\n\n[1] T. https://a\n[3] https://c\n"


def test_classify_budget_refusal_and_redaction(common: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_API_KEY", "sk-secret-value-123456")
    exc = RuntimeError("Error code: 402 {'type': 'budget_exceeded'} sk-secret-value-123456")
    outcome, reason = common.classify(exc)
    assert outcome == "over_budget" and "sk-secret-value-123456" not in reason
    assert common.classify(ValueError("boom"))[0] == "failed"
