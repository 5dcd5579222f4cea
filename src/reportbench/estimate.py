"""`reportbench estimate`: what a real judge run would cost, before it runs, with no network call.

How it counts: it runs the real stage functions (`run_judge_stage` for every judge stage of the plan, and the
cross stages that judge) with `make_judge` swapped for an *estimating* judge. For each item that judge
renders the exact messages the configured LLM judge would send, looks their cache key up in the response
cache (a hit costs nothing), counts prompt tokens with tiktoken (o200k_base, read from the tokenizer files
litellm ships: no download), and answers with the offline judge so later steps and cross stages get inputs.
Releases and system runs that `dvc repro` has not built yet are built into a temporary directory with the
same functions (offline system kinds only).

What is exact and what is estimated, said in the output:
- items, calls and cache hits of a benchmark's *first* judge step are exact for the config; steps that read an
  earlier step's answers (claims extracted, then verified) get their item counts from the offline judge's
  answers: an estimate of how many claims an LLM would extract.
- prompt tokens are exact for OpenAI's o200k tokenizer and an approximation for other providers.
- completion tokens are the size of the offline judge's typed answer as JSON (a floor: an LLM explains more),
  unless `--completion-tokens` gives a number per call. Parse re-asks are not counted. The ceiling prices every
  call at its step's whole output budget (judges/budgets.py): `budget_tokens`, `usd_online_max`, `usd_batch_max`.
- prices: litellm's local cost map (online and batch), or the judge's configured `input_cost_per_token`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import sqlite3
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportbench.benchmark_arg import add_benchmark_argument
from reportbench.judges.pricing import Price, o200k_tokenizer, price_for
from reportbench.plan import build_plan, judge_units

# ------------------------------------------------------------------------------------------------
# Token counting (offline)
# ------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=65536)
def count_text(text: str) -> int:
    enc = o200k_tokenizer()
    if enc is None:
        return max(1, len(text) // 4)
    return len(enc.encode(text, disallowed_special=()))


def count_messages(messages: list[dict[str, Any]]) -> int:
    """Prompt tokens of a chat request as OpenAI counts them (3 per message + 3 for the reply primer)."""
    return 3 + sum(3 + count_text(str(m.get("content", ""))) for m in messages)


# ------------------------------------------------------------------------------------------------
# The ledger
# ------------------------------------------------------------------------------------------------


@dataclass
class StepCost:
    """One (stage, judge task, model): items, cache hits, calls and tokens."""

    stage: str
    task: str
    model: str
    items: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    budget_tokens: int = 0  # calls x the step's output budget (judges/budgets.py): the most a run can bill
    budget: int = 0  # the step's output budget per call
    cached_prompt_tokens: int = 0
    exact_items: bool = True

    @property
    def calls(self) -> int:
        return self.items - self.cache_hits

    def dollars(self, price: Price | None, *, batch: bool) -> float | None:
        if price is None:
            return None
        return price.cost(self.prompt_tokens, self.completion_tokens, batch=batch)

    def dollars_max(self, price: Price | None, *, batch: bool) -> float | None:
        """The ceiling: every call answers with its whole output budget."""
        if price is None:
            return None
        return price.cost(self.prompt_tokens, self.budget_tokens, batch=batch)


@dataclass
class Ledger:
    steps: dict[tuple[str, str, str], StepCost] = field(default_factory=dict)
    completion_tokens: int | None = None  # --completion-tokens
    offline_only: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    agents: list[dict[str, Any]] = field(default_factory=list)  # agent systems' worst case from their budgets

    def step(self, stage: str, task: str, model: str) -> StepCost:
        key = (stage, task, model)
        if key not in self.steps:
            self.steps[key] = StepCost(stage, task, model)
        return self.steps[key]


# ------------------------------------------------------------------------------------------------
# The estimating judge
# ------------------------------------------------------------------------------------------------


class _CacheProbe:
    """Read-only lookups in the response cache (never creates the file)."""

    def __init__(self, path: str | None) -> None:
        self.db: sqlite3.Connection | None = None
        if path and Path(path).is_file():
            self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)

    def has(self, key: str, *, deterministic: bool = False) -> bool:
        """A stored answer; for a temperature-0 judge also stored unparseable answers (never re-asked: cache.py)."""
        if self.db is None:
            return False
        if self.db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None:
            return True
        if not deterministic:
            return False
        try:
            row = self.db.execute("SELECT 1 FROM parse_failures WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # a cache written before parse failures were stored
            return False
        return row is not None


class EstimatingJudge:
    """Renders what the LLM judge would send, counts it, and answers with the offline judge."""

    def __init__(self, task: Any, cfg: Mapping[str, Any], ledger: Ledger, stage: str, probe: _CacheProbe) -> None:
        from reportbench.judges.llm import LLMJudge  # lazy: +294 ms to import (python -X importtime)
        from reportbench.judges.offline import OfflineJudge  # lazy: +233 ms to import (python -X importtime)

        self.llm = LLMJudge(task, cfg, cache=False)
        self.offline = OfflineJudge(task, {**cfg, "backend": "offline"})
        self.task = task
        self.cfg = self.llm.cfg
        self.judge_id = self.llm.judge_id
        self.max_concurrency = 64
        self.progress = False
        self.entry = ledger.step(stage, task.name, self.cfg.model)
        self.ledger = ledger
        self.probe = probe

    async def __call__(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Any:
        from reportbench.prompt_packs.judging import AuthorsPrompt  # lazy: +158 ms to import (python -X importtime)

        prompt = self.llm.prompt
        if isinstance(prompt, AuthorsPrompt):
            messages = prompt.messages(inputs)
        else:
            messages = prompt.render(**inputs.prompt_values())
        pt = count_messages(messages)
        judgment = await self.offline(item_id, inputs, input_ids)
        e = self.entry
        e.items += 1
        deterministic = bool(getattr(self.llm, "deterministic", False)) and not getattr(
            self.llm, "reask_parse_failures", False
        )
        if self.probe.has(self.llm.key_for(messages), deterministic=deterministic):
            e.cache_hits += 1
            e.cached_prompt_tokens += pt
        else:
            e.prompt_tokens += pt
            e.budget = int(getattr(self.llm, "budget", 0) or 0)
            e.budget_tokens += e.budget
            if self.ledger.completion_tokens is not None:
                e.completion_tokens += self.ledger.completion_tokens
            else:
                e.completion_tokens += count_text((judgment.parsed or "") + (judgment.explanation or ""))
        return judgment


# ------------------------------------------------------------------------------------------------
# Driving the real stages
# ------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _estimating(ledger: Ledger, probe: _CacheProbe, stage: list[str]) -> Iterator[None]:
    """Swap `make_judge` for the estimating judge while the stage functions run (they import it lazily)."""
    from reportbench.judges import factory  # lazy: +153 ms to import (python -X importtime)

    original = factory.make_judge

    def make(task: Any, cfg: Mapping[str, Any], **kwargs: Any) -> Any:
        if isinstance(task, str):
            from reportbench.judges.tasks import get_task  # lazy: +673 ms to import (python -X importtime)

            task = get_task(task)
        if str(cfg.get("backend", "offline")) != "litellm":
            ledger.offline_only.append(stage[0])
            return original(task, cfg, **kwargs)
        return EstimatingJudge(task, cfg, ledger, stage[0], probe)

    factory.make_judge = make  # type: ignore[assignment]
    try:
        yield
    finally:
        factory.make_judge = original  # type: ignore[assignment]


def _ensure_built(params: dict[str, Any], b: str, work: Path, log: list[str]) -> tuple[Path, Path, Path | None]:
    """(release dir, runs dir, pages dir) for benchmark b: DVC's outputs when present, else built in `work`."""
    from reportbench import pipeline  # lazy: +379 ms to import (python -X importtime)

    plan = params["plan"]["benchmarks"][b]
    rel = plan["release"]
    release = Path("data/releases") / b / rel
    runs = Path("data/runs") / b / rel
    if not (release / "release.json").is_file():
        release = work / b / "release"
        if not (release / "release.json").is_file():
            pipeline.build_release(params, b, release)
            log.append(f"{b}: release {rel!r} built in a temp dir (not in data/releases yet)")
    from reportbench.agents.budget_estimate import is_agent  # lazy: +83 ms to import (python -X importtime)

    # an agent is never run to estimate (it would spend its budget): its judge stages wait for its real run
    not_run = [s for s in plan["systems"] if is_agent(pipeline.system_spec(params, b, s))
               and not (runs / s / "outcomes.jsonl").is_file()]
    if not_run:
        log.append(f"{b}: agent systems {not_run} not run yet: their budgets are listed, their judging is not")
    systems = [s for s in plan["systems"] if s not in not_run]
    missing = [s for s in systems if not (runs / s / "outcomes.jsonl").is_file()]
    if missing:
        tmp_runs = work / b / "runs"
        for s in systems:
            src = runs / s
            dst = tmp_runs / s
            if (src / "outcomes.jsonl").is_file() or (dst / "outcomes.jsonl").is_file():
                continue
            pipeline.run_system(params, b, s, release, dst)
        for s in systems:
            if (runs / s / "outcomes.jsonl").is_file() and not (tmp_runs / s).exists():
                (tmp_runs / s).parent.mkdir(parents=True, exist_ok=True)
                (tmp_runs / s).symlink_to((runs / s).resolve())
        runs = tmp_runs
        log.append(f"{b}: system runs {missing} built in a temp dir")
    pages: Path | None = None
    if b in params["plan"]["fetch"]:
        pages = Path("data/pages") / b / rel
        if not (pages / "pages.parquet").is_file():
            pages = work / b / "pages"
            if not (pages / "pages.parquet").is_file():
                pipeline.fetch_stage(params, b, runs, release, pages / "pages.parquet")
    return release, runs, pages


def estimate(
    params: dict[str, Any],
    *,
    benchmarks: list[str] | None = None,
    systems: list[str] | None = None,
    completion_tokens: int | None = None,
    cache_path: str | None = None,
) -> Ledger:
    """Count every judge call the plan in `params` would make (minus cache hits); see the module docstring."""
    from reportbench import pipeline  # lazy: +379 ms to import (python -X importtime)

    ledger = Ledger(completion_tokens=completion_tokens)
    judge = params.get("judge") or {}
    runtime = judge.get("runtime") or {}
    probe = _CacheProbe(cache_path if cache_path is not None else runtime.get("cache_path"))
    stage: list[str] = [""]
    plan = params["plan"]
    wanted = benchmarks or list(plan["benchmarks"])
    log: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="rb-estimate-") as tmp,
        _estimating(ledger, probe, stage),
        contextlib.redirect_stdout(sys.stderr),  # stage functions print progress; stdout is the estimate
    ):
        work = Path(tmp)
        for b in wanted:
            if b not in plan["benchmarks"]:
                raise ValueError(f"benchmark {b!r} is not enabled; enabled: {sorted(plan['benchmarks'])}")
            release, runs, pages = _ensure_built(params, b, work, log)
            for name, j in judge_units(plan).items():
                if j["benchmark"] != b or (systems and j["system"] not in systems):
                    continue
                if not (runs / j["system"] / "outcomes.jsonl").is_file():
                    continue  # an agent not run yet (see _ensure_built's note)
                unit = name.removeprefix(f"{b}.").replace(".", "/")  # system[/member]
                stage[0] = f"judge@{b} ({unit})"  # the DVC stage and its unit, as retry and the stage name them
                out = work / b / "judgments" / j["system"] / j["member"]
                with _quiet():
                    pipeline.run_judge_stage(
                        params, b, j["system"], j["member"], release, runs / j["system"], out,
                        work / b / "usage" / f"{name}.json", pages_dir=pages,
                    )
            ledger.agents.extend(_agent_budgets(params, b, release, systems))
            if b in plan["cross"]:
                stage[0] = f"cross@{b}"
                with _quiet():
                    pipeline.cross_stage(params, b, release, runs, work / b / "cross")
    _mark_chained(ledger)
    ledger.skipped = log
    return ledger


def _agent_budgets(params: dict[str, Any], b: str, release: Path, systems: list[str] | None) -> list[dict[str, Any]]:
    """Worst-case rows (tasks × per-task budget) for the benchmark's agent systems (docs/agents.md)."""
    from reportbench import pipeline  # lazy: +154 ms to import (python -X importtime)
    from reportbench.agents.budget_estimate import budget_row, is_agent  # lazy: +83 ms to import (python -X importtime)
    from reportbench.release.format import read_release  # lazy: +260 ms to import (python -X importtime)

    rows = []
    for s in params["plan"]["benchmarks"][b]["systems"]:
        spec = pipeline.system_spec(params, b, s)
        if is_agent(spec) and (not systems or s in systems):
            rows.append(budget_row(f"system@{b}.{s}", spec, len(read_release(release).tasks)))
    return rows


def only_systems(params: dict[str, Any], keep: list[str]) -> dict[str, Any]:
    """The config restricted to these systems (the others are neither built nor judged nor compared)."""

    out = dict(params)
    benchmarks = {}
    for b, cfg in (params.get("benchmarks") or {}).items():
        cfg = dict(cfg)
        cfg["systems"] = {k: v for k, v in (cfg.get("systems") or {}).items() if k in keep}
        benchmarks[b] = cfg
    out["benchmarks"] = benchmarks
    out["agents"] = {k: v for k, v in (params.get("agents") or {}).items() if k in keep}
    out["plan"] = build_plan(out["benchmarks"], out["agents"])
    return out


def _mark_chained(ledger: Ledger) -> None:
    """Within a stage, every judge task after the first reads earlier answers: its item count is estimated."""
    seen: set[str] = set()
    for (stage, _task, _model), e in ledger.steps.items():
        e.exact_items = stage not in seen
        seen.add(stage)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    import logging

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        root.setLevel(level)


# ------------------------------------------------------------------------------------------------
# Output
# ------------------------------------------------------------------------------------------------


def summarise(ledger: Ledger, params: Mapping[str, Any]) -> dict[str, Any]:
    judge = params.get("judge") or {}
    rows = []
    totals = {"items": 0, "cache_hits": 0, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "budget_tokens": 0}
    online = batch = online_max = batch_max = 0.0
    unpriced: set[str] = set()
    for e in ledger.steps.values():
        price = price_for(
            e.model,
            input_cost_per_token=judge.get("input_cost_per_token"),
            output_cost_per_token=judge.get("output_cost_per_token"),
        )
        d_on, d_b = e.dollars(price, batch=False), e.dollars(price, batch=True)
        m_on, m_b = e.dollars_max(price, batch=False), e.dollars_max(price, batch=True)
        if price is None:
            unpriced.add(e.model)
        else:
            online += d_on or 0.0
            batch += d_b or 0.0
            online_max += m_on or 0.0
            batch_max += m_b or 0.0
        rows.append(
            {
                "stage": e.stage,
                "task": e.task,
                "model": e.model,
                "items": e.items,
                "items_exact": e.exact_items,
                "cache_hits": e.cache_hits,
                "calls": e.calls,
                "prompt_tokens": e.prompt_tokens,
                "completion_tokens": e.completion_tokens,
                "output_budget": e.budget,
                "budget_tokens": e.budget_tokens,
                "usd_online_max": None if m_on is None else round(m_on, 4),
                "usd_batch_max": None if m_b is None else round(m_b, 4),
                "usd_online": None if d_on is None else round(d_on, 4),
                "usd_batch": None if d_b is None else round(d_b, 4),
                "batch_price": bool(price and price.batch_input is not None),
            }
        )
        for k in totals:
            totals[k] += getattr(e, k)
    return {
        "judge": judge.get("name"),
        "backend": judge.get("backend"),
        "rows": rows,
        "totals": {
            **totals,
            "usd_online": round(online, 4),
            "usd_batch": round(batch, 4),
            "usd_online_max": round(online_max, 4),
            "usd_batch_max": round(batch_max, 4),
        },
        "unpriced_models": sorted(unpriced),
        "offline_stages": sorted(set(ledger.offline_only)),
        "notes": ledger.skipped,
        "agents": ledger.agents,
    }


def format_table(summary: Mapping[str, Any]) -> str:
    tw = max([24, *(len(str(r["task"])) for r in summary["rows"])])  # task names are never cut
    head = (
        f"{'stage':<52} {'task':<{tw}} {'model':<28} {'items':>7} {'hits':>6} {'calls':>7} {'prompt tok':>11} "
        f"{'compl tok':>10} {'$ online':>9} {'$ batch':>9}"
    )
    lines = [head, "-" * len(head)]

    def usd(x: float | None) -> str:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "n/a"
        return f"{x:.4f}" if x < 10 else f"{x:,.2f}"

    for r in summary["rows"]:
        if r["items"] == 0:
            continue
        items = f"{r['items']}" + ("" if r["items_exact"] else "~")
        lines.append(
            f"{r['stage'][:52]:<52} {r['task']:<{tw}} {r['model'][:28]:<28} {items:>7} {r['cache_hits']:>6} "
            f"{r['calls']:>7} {r['prompt_tokens']:>11,} {r['completion_tokens']:>10,} {usd(r['usd_online']):>9} "
            f"{usd(r['usd_batch']):>9}"
        )
    t = summary["totals"]
    lines.append("-" * len(head))
    lines.append(
        f"{'total':<52} {'':<{tw}} {'':<28} {t['items']:>7} {t['cache_hits']:>6} {t['calls']:>7} "
        f"{t['prompt_tokens']:>11,} {t['completion_tokens']:>10,} {usd(t['usd_online']):>9} {usd(t['usd_batch']):>9}"
    )
    notes = ["~ = a later step of its stage: its items may depend on earlier answers (counted with the offline judge)"]
    if summary["unpriced_models"]:
        notes.append(f"no price known for {summary['unpriced_models']}: set judge.input_cost_per_token/output_...")
    if summary["offline_stages"]:
        notes.append(f"offline judge (no cost): {', '.join(summary['offline_stages'][:5])}")
    notes += summary["notes"]
    notes.append("completion tokens: the offline answer's size (a floor) unless --completion-tokens is given")
    if t.get("budget_tokens"):
        notes.append(
            f"ceiling (every call answers with its step's whole output budget, judges/budgets.py): "
            f"{t['budget_tokens']:,} completion tokens, ${usd(t.get('usd_online_max'))} online, "
            f"${usd(t.get('usd_batch_max'))} batch"
        )
    from reportbench.agents.budget_estimate import format_rows  # lazy: +83 ms to import (python -X importtime)

    agents = format_rows(list(summary.get("agents") or []))
    return "\n".join(lines + [f"note: {n}" for n in notes]) + (("\n" + agents) if agents else "")


def _unknown_names(params: dict[str, Any], benchmarks: list[str], systems: list[str]) -> str | None:
    """The first --benchmark/--system name the config does not have, with the valid choices (else None)."""
    plan = (params.get("plan") or {}).get("benchmarks") or {}
    for b in benchmarks:
        if b not in plan:
            return (f"--benchmark {b!r} is installed but not enabled in this config; enabled: {', '.join(plan)} "
                    f"(add it with e.g. -S 'benchmarks=[{b}]')")
    chosen = [e for b, e in plan.items() if not benchmarks or b in benchmarks]
    names = sorted({str(s) for e in chosen for s in e.get("systems") or []})
    for s in systems:
        if s not in names:
            return f"unknown --system {s!r}; choices: {', '.join(names)}"
    return None


def _cmd_estimate(args: argparse.Namespace) -> int:
    from reportbench.config import ConfigError, composed_params  # lazy: +34 ms to import (python -X importtime)

    overrides = [*(args.overrides or []), *(o for group in args.set or [] for o in group)]
    try:
        params = composed_params(overrides)  # on top of the overrides `reportbench compose` remembered
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - Hydra's errors are long: one line naming the override
        print(f"error: cannot compose the config with {overrides}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    unknown = _unknown_names(params, args.benchmark or [], args.system or [])
    if unknown:
        print(f"error: {unknown}", file=sys.stderr)
        return 2
    if (params.get("judge") or {}).get("backend") != "litellm":
        print(
            f"note: judge={params.get('judge', {}).get('name')} is the offline judge (no calls, $0); "
            "estimate a real judge with e.g. -S judge=llm -S judge.model=openai/gpt-4.1",
            file=sys.stderr,
        )
    if args.system:
        params = only_systems(params, args.system)
    try:
        ledger = estimate(
            params,
            benchmarks=args.benchmark or None,
            systems=args.system or None,
            completion_tokens=args.completion_tokens,
            cache_path=args.cache,
        )
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = summarise(ledger, params)
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "estimate", help="judge calls, tokens and dollars (online and batch) for the current config, no network"
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides, as for `reportbench compose` (e.g. judge=llm)")
    p.add_argument("-S", "--set", action="append", nargs="+", metavar="OVERRIDE",
                   help="Hydra overrides, as for `dvc exp run -S` (e.g. -S judge=llm -S judge.model=openai/gpt-4.1)")
    add_benchmark_argument(p, repeatable=True)
    p.add_argument("--system", action="append", help="only this system (repeatable)")
    p.add_argument("--completion-tokens", type=int, default=None, help="assumed completion tokens per call")
    p.add_argument("--cache", default=None, help="response cache to subtract hits from (default: judge.runtime)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_estimate)
