"""Variant tags (issue 35): how a configured agent departs from the agent as published is part of its identity,
derived by rule from its config and shown next to its name wherever a score appears (leaderboard md/csv/json/html,
`dvc metrics show`'s summary files and the brief); two runs that differ in a variant never share a row."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import reportbench.protocols.deepscholar.metrics as dsm  # noqa: F401 - registers DeepScholar's metrics
from reportbench.agents.protocol import AgentSystemConfig
from reportbench.agents.variant import declare_variant, departures, variant_tag
from reportbench.dvc_metrics import brief, write_dvc_metrics
from reportbench.metrics.leaderboard import build_leaderboard, write_leaderboard
from reportbench.protocols.deepscholar.metrics import METRIC_NAMES
from test_leaderboard import _scores

pytestmark = pytest.mark.core


def _cfg(kind: str, **options: object) -> AgentSystemConfig:
    return AgentSystemConfig(kind=kind, model="openai/gpt-4.1-mini", options=dict(options))


def test_the_tag_is_derived_by_rule_from_the_config() -> None:
    assert variant_tag(_cfg("storm")) is None  # STORM as published: sentence-transformers
    assert variant_tag(_cfg("storm", encoder="sentence-transformers")) is None
    assert variant_tag(_cfg("storm", encoder="hashed")) == "encoder: hashed"
    assert variant_tag(_cfg("smolagents_deep_research")) == "tools: 2 of ours; prompt: ours"  # always a rebuild
    assert variant_tag(_cfg("open_deep_research")) is None
    assert variant_tag(_cfg("gpt_researcher")) is None
    assert variant_tag(_cfg("search_llm")) is None  # ours: nothing published to depart from


def test_a_kind_declares_its_rule_through_the_hook() -> None:
    """The hook provider backends use: departures are listed in the fixed aspect order, whatever the rule's."""

    @declare_variant("test_kind_for_hook")
    def rule(cfg: object) -> list[tuple[str, str]]:
        return [("model", "o4-mini-deep-research"), ("encoder", "x"), ("tools", "")]  # an empty value is no tag

    class Cfg:
        kind = "test_kind_for_hook"

    assert departures(Cfg()) == [("encoder", "x"), ("model", "o4-mini-deep-research")]
    assert variant_tag(Cfg()) == "encoder: x; model: o4-mini-deep-research"


SCORES = [_scores("storm", {"organization": [0.9, 1.0, 0.8, 0.9]}),
          _scores("baseline", {"organization": [0.1, 0.2, 0.1, 0.2]})]  # fmt: skip


def _summaries() -> list[dict]:
    storm, plain = (dict(s.summary) for s in SCORES)
    storm.update(variant="encoder: hashed", label="storm [encoder: hashed]")
    plain.update(variant=None, label="baseline")
    return [storm, plain]


def test_the_label_is_on_every_leaderboard_file(tmp_path: Path) -> None:
    per_task = pl.concat([s.per_task for s in SCORES])
    paths = write_leaderboard(build_leaderboard(_summaries(), per_task), tmp_path)
    md = paths["md"].read_text()
    assert "| storm [encoder: hashed] |" in md and "| baseline |" in md
    assert "| storm [encoder: hashed] | baseline |" in md or "| baseline | storm [encoder: hashed] |" in md  # t-tests
    csv = pl.read_csv(paths["csv"])
    assert dict(zip(csv["system"], csv["variant"].fill_null(""), strict=True)) == {
        "storm [encoder: hashed]": "encoder: hashed", "baseline": ""}  # fmt: skip
    rows = {r["system"]: r for r in json.loads(paths["json"].read_text())["rows"]}
    assert rows["storm"]["variant"] == "encoder: hashed" and rows["storm"]["label"] == "storm [encoder: hashed]"
    assert "variant" not in rows["baseline"]
    assert ">storm [encoder: hashed]<" in paths["html"].read_text()


def test_dvc_rows_are_keyed_by_the_label_so_variants_never_share_one(tmp_path: Path) -> None:
    summaries = {s["system"]: s for s in _summaries()}
    write_dvc_metrics(tmp_path, summaries, METRIC_NAMES)
    assert sorted(p.name for p in (tmp_path / "summary").glob("*.json")) == [
        "baseline.json", "storm [encoder: hashed].json"]  # fmt: skip
    # the same system name as published (another experiment): another file, the variant's is gone
    summaries["storm"] = {**summaries["storm"], "variant": None, "label": "storm"}
    write_dvc_metrics(tmp_path, summaries, METRIC_NAMES)
    assert sorted(p.name for p in (tmp_path / "summary").glob("*.json")) == ["baseline.json", "storm.json"]
    tagged = {s["system"]: s for s in _summaries()}
    assert set(brief("deepscholar", tagged, METRIC_NAMES, None)["ds"]) == {"storm [encoder: hashed]", "baseline"}
