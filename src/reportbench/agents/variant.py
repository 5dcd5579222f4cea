"""Variant tags: how a configured agent system departs from the agent as its authors published it.

Why: a row that reads `storm` must be STORM. A run with our hashed word encoder, our tools or our report prompt
is a different system, so the departure is part of its identity: a short tag (`encoder: hashed`) shown next to
its name wherever a score appears (leaderboard md/csv/json/html, the site, `systems.json`, `dvc metrics show`)
and recorded with every task. Two runs that differ in a variant never share a row: the tag is part of the label
the DVC summary file and the brief are keyed by.

The tag is derived by rule, never typed per row: each agent kind declares one function of its validated config
(`AgentSystemConfig`) returning the departures as (aspect, value) pairs, in a fixed order (encoder, tools,
prompt, search content, model). A kind with no rule, or a config that departs in nothing, has no tag.

    @declare_variant("provider_deep_research")     # e.g. in agents/provider.py (imported on demand, see below)
    def _provider_variant(cfg): return [("model", "o4-mini-deep-research")] if ... else []
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from reportbench.types import system_label

Departures = list[tuple[str, str]]
VariantRule = Callable[[Any], Departures]

# aspects in the order a tag lists them
ASPECTS = ("encoder", "tools", "prompt", "search content", "model")
_RULES: dict[str, VariantRule] = {}
# kinds whose rule lives in a module imported only when needed (it registers itself with `declare_variant`)
_RULE_MODULES = {"provider_deep_research": "reportbench.agents.provider"}


def declare_variant(kind: str) -> Callable[[VariantRule], VariantRule]:
    """Register `kind`'s rule: config -> [(aspect, value)] (aspects from ASPECTS)."""

    def wrap(fn: VariantRule) -> VariantRule:
        _RULES[kind] = fn
        return fn

    return wrap


def departures(cfg: Any) -> Departures:
    """The config's departures from the published agent, in ASPECTS order (unknown aspects last)."""
    kind = str(getattr(cfg, "kind", "") or "")
    if kind not in _RULES and kind in _RULE_MODULES:
        importlib.import_module(_RULE_MODULES[kind])
    rule = _RULES.get(kind)
    if rule is None:
        return []
    found = [(str(a), str(v)) for a, v in rule(cfg) if str(v)]
    return sorted(found, key=lambda av: ASPECTS.index(av[0]) if av[0] in ASPECTS else len(ASPECTS))


def variant_tag(cfg: Any) -> str | None:
    """`encoder: hashed`, `tools: 2 of ours; prompt: ours`, or None (the agent as published)."""
    parts = departures(cfg)
    return "; ".join(f"{a}: {v}" for a, v in parts) or None


def labelled(system: str, variant: str | None) -> str:
    """`storm [encoder: hashed]` (the system's name alone when it has no variant)."""
    return system_label(system, variant)


# ------------------------------------------------------------------------------------------ the kinds' rules
@declare_variant("storm")
def _storm(cfg: Any) -> Departures:
    """STORM ranks collected snippets for each section with sentence-transformers' paraphrase-MiniLM-L6-v2;
    `options.encoder: hashed` swaps in our hashed bag of words (adapters/storm.py)."""
    encoder = (cfg.options or {}).get("encoder", "sentence-transformers")
    return [("encoder", str(encoder))] if encoder != "sentence-transformers" else []


@declare_variant("smolagents_deep_research")
def _smolagents(cfg: Any) -> Departures:
    """Always a reconstruction: Hugging Face's example (examples/open_deep_research) gives its search agent an
    8-tool text browser (SerpAPI search, page up/down, find, archive search, ...) and its own prompts; the wheel
    ships neither, so our adapter gives it 2 tools of ours (`web_search` through our search proxy, `visit_page`)
    and our report prompt (adapters/smolagents_deep_research.py)."""
    return [("tools", "2 of ours"), ("prompt", "ours")]


@declare_variant("open_deep_research")
def _open_deep_research(cfg: Any) -> Departures:
    """open_deep_research as published searches Tavily and summarises each result page's raw content; other
    `search_api` values (configurable) are another agent's search."""
    api = ((cfg.options or {}).get("configurable") or {}).get("search_api", "tavily")
    return [("search content", f"search_api {api}")] if api != "tavily" else []
