"""`reportbench estimate`: what a real judge run would cost, before it runs, with no network call.

How it counts: it runs the real stage functions (`run_judge_stage` for every judge stage of the plan, and the
cross stages that judge) with `make_judge` swapped for an *estimating* judge. For each item that judge
renders the exact messages the configured LLM judge would send, looks their cache key up in the response
cache (a hit costs nothing), counts prompt tokens with tiktoken (o200k_base, read from the tokenizer files
litellm ships: no download), and answers with the offline judge so later steps and cross stages get inputs.
Releases and system runs that `dvc repro` has not built yet are built into a temporary directory with the
same functions (offline system kinds only).

An estimate never touches the network and writes no cache (docs/scale.md "Estimate first"): every socket connect
and name lookup in the process is refused (and counted, then shown), the page fetcher runs in `offline` mode on a
read-only page cache, the authors' prompts are read from the mirror or cache only (`REPORTBENCH_AUTHORS_OFFLINE`),
and systems whose run could call a model or run a program (command, endpoint, deepscholar_ref, agents) are not
run. What it therefore cannot know is said first, on stderr, then the rest is estimated:
- cited pages not in the page cache: their verification calls are counted (one per call the benchmark would make
  if the page were fetched: an upper bound, since some pages fail to fetch) with the page text unknown (their
  prompt tokens leave it out: a floor); rows marked `pages?`;
- the authors' prompts not in the mirror or cache: that benchmark is counted with our wording (`judge.prompts:
  ours`): calls are the same, tokens approximate;
- a release whose data is not on this machine, or systems that were not run: not estimated, named.

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
import copy
import dataclasses
import functools
import json
import math
import os
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from reportbench.benchmark_arg import add_benchmark_argument
from reportbench.digest import speed_caches_read_only
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
    unknown_page_items: int = 0  # calls whose cited page is not in the page cache (its text left out of the count)

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
    unknowns: list[str] = field(default_factory=list)  # what the estimate cannot know here, and why
    network_refused: list[str] = field(default_factory=list)  # connects/lookups refused (should stay empty)
    pages_not_cached: set[str] = field(default_factory=set)  # cited URLs not in the page cache
    pages_fetched_by_run: bool = False  # fetch.mode use/refresh: the real run fetches what the cache lacks

    def step(self, stage: str, task: str, model: str) -> StepCost:
        key = (stage, task, model)
        if key not in self.steps:
            self.steps[key] = StepCost(stage, task, model)
        return self.steps[key]


# ------------------------------------------------------------------------------------------------
# The estimating judge
# ------------------------------------------------------------------------------------------------


def read_only_sqlite(path: Path) -> sqlite3.Connection:
    """A cache opened for reading without creating a file beside it: `immutable` when no writer left a -wal file
    (a plain read-only open of a WAL database creates -wal and -shm), else read-only (both files exist)."""
    wal = path.with_name(path.name + "-wal").exists() and path.with_name(path.name + "-shm").exists()
    return sqlite3.connect(f"file:{path}?mode=ro{'' if wal else '&immutable=1'}", uri=True, check_same_thread=False)


class _CacheProbe:
    """Read-only lookups in the response cache (never creates the file)."""

    def __init__(self, path: str | None) -> None:
        self.db: sqlite3.Connection | None = None
        if path and Path(path).is_file():
            self.db = read_only_sqlite(Path(path))

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
        if any(PAGE_NOT_CACHED in str(m.get("content", "")) for m in messages):
            e.unknown_page_items += 1
            pt -= count_text(PAGE_NOT_CACHED)  # the page's text is unknown: counted as nothing (a floor)
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
# Offline: no network, no cache written
# ------------------------------------------------------------------------------------------------

# the text a cited page not in the page cache gets, so its verification calls are still counted
PAGE_NOT_CACHED = "[reportbench estimate: this page is not in the page cache; its text is unknown]"
# system kinds whose run could call a model, search the web or run a program: never run by an estimate
NETWORK_KINDS = ("command", "endpoint", "deepscholar_ref")


class NetworkRefused(ConnectionRefusedError):
    """A connection or name lookup attempted while estimating (an estimate makes no network request)."""


@contextlib.contextmanager
def no_network(ledger: Ledger) -> Iterator[None]:
    """Refuse every socket connect and name lookup of this process (loopback included), counting each attempt:
    whatever code path tries the network fails at once instead of waiting on it (docs/scale.md)."""
    import socket

    saved = (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo, socket.create_connection)

    def refuse(what: object) -> NoReturn:
        ledger.network_refused.append(str(what)[:200])
        raise NetworkRefused(f"reportbench estimate makes no network request (refused: {what})")

    def connect(self: socket.socket, address: object) -> None:
        refuse(address)

    def connect_ex(self: socket.socket, address: object) -> int:
        refuse(address)

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> Any:
        refuse(host)

    def create_connection(address: object, *args: object, **kwargs: object) -> Any:
        refuse(address)

    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo, socket.create_connection = getaddrinfo, create_connection  # type: ignore[assignment]
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex = saved[0], saved[1]  # type: ignore[method-assign]
        socket.getaddrinfo, socket.create_connection = saved[2], saved[3]  # type: ignore[assignment]


class _ReadOnlyPageCache:
    """The page cache for the fetch stage's offline lookups, opened read-only: nothing is created or stored."""

    def __init__(self, path: Path) -> None:
        self.db = read_only_sqlite(path) if path.is_file() else None

    def get(self, backend: str, url: str) -> Any:
        from reportbench.fetch.cache import PageCache  # lazy: +293 ms to import (python -X importtime)
        from reportbench.fetch.snapshot import PageSnapshot  # lazy: +0 ms to import (python -X importtime)

        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT record FROM pages WHERE key = ?", (PageCache.key(backend, url),)).fetchone()
        except sqlite3.DatabaseError:  # not a page cache: as if empty
            return None
        return None if row is None else PageSnapshot.from_row(json.loads(row[0]))

    def put(self, backend: str, snap: Any) -> None:
        """An estimate stores nothing."""

    def close(self) -> None:
        if self.db is not None:
            self.db.close()


@contextlib.contextmanager
def _read_only(ledger: Ledger) -> Iterator[None]:
    """The stage functions as an estimate runs them: nothing written or deleted outside its temp dir. The fetch
    stage reads a read-only page cache; a cited page it does not hold reaches the judge steps as a fetched page
    whose text is PAGE_NOT_CACHED, so the calls that would verify claims against it are counted; no stage prunes
    the outputs of systems the estimate leaves out (`--system`)."""
    from reportbench import pipeline  # lazy: +379 ms to import (python -X importtime)
    from reportbench.fetch import stage as fetch_stage  # lazy: +293 ms to import (python -X importtime)

    original_cache, original_load, original_prune = fetch_stage.PageCache, pipeline._load_pages, pipeline._prune_stale

    def load_pages(pages_dir: Path | None) -> dict[str, Any] | None:
        pages = original_load(pages_dir)
        if pages is None:
            return None
        out = {}
        for url, snap in pages.items():
            if snap.error_class == "not_fetched" and ledger.pages_fetched_by_run:
                ledger.pages_not_cached.add(url)
                snap = dataclasses.replace(snap, error_class="ok", error=None, text=PAGE_NOT_CACHED,
                                           content_type="text/plain")
            out[url] = snap
        return out

    fetch_stage.PageCache = _ReadOnlyPageCache  # type: ignore[assignment,misc]
    pipeline._load_pages = load_pages  # type: ignore[assignment]
    pipeline._prune_stale = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        yield
    finally:
        fetch_stage.PageCache = original_cache  # type: ignore[misc]
        pipeline._load_pages = original_load  # type: ignore[assignment]
        pipeline._prune_stale = original_prune  # type: ignore[assignment]


def offline_params(params: dict[str, Any], benchmarks: list[str], ledger: Ledger) -> dict[str, Any]:
    """The config as an estimate runs it, and what it cannot know (ledger.unknowns), found before any work:
    pages fetched offline from the cache, the authors' prompts only from the mirror or cache (else ours)."""
    from reportbench.prompt_packs import steps_for  # lazy: +33 ms to import (python -X importtime)

    # lazy: +33 ms to import (python -X importtime)
    from reportbench.prompt_packs.sources import MIRROR_ENV, available, cache_dir
    from reportbench.validate import judge_config  # lazy: +10 ms to import (python -X importtime)

    params = copy.deepcopy(params)
    plan = params["plan"]
    fetch = params.setdefault("fetch", {}) or {}
    params["fetch"] = fetch
    fetching = [b for b in benchmarks if b in plan["fetch"]]
    # fetch.mode offline (the default): the run itself reads only the cache and seeds, so the estimate is exact
    if fetching and fetch.get("mode", "offline") != "offline":
        ledger.pages_fetched_by_run = True
        cache = Path(str(fetch.get("cache_path") or ".reportbench/cache/pages.sqlite"))
        held = "holds" if cache.is_file() else "does not exist: it holds"
        mode = f" (fetch.mode={fetch.get('mode')} is run offline here)"
        ledger.unknowns.append(
            f"{', '.join(fetching)}: cited pages are read from the page cache only{mode}; {cache} {held} what "
            "`dvc repro` fetched before. Calls about a page not in it are counted with its text unknown "
            "(rows marked ?: calls an upper bound, prompt tokens a floor)"
        )
        fetch["mode"] = "offline"
    for b in benchmarks:
        bcfg = params["benchmarks"][b]
        members = plan["benchmarks"][b].get("members") or ["main"]
        wants_authors = [m for m in members if judge_config(params, "", b, m).get("prompts") == "authors"]
        if not wants_authors:
            continue
        missing = sorted({r.describe() for step in steps_for(b) for r in step.sources if not available(r)})
        if missing:
            why = (f"not in the mirror ({MIRROR_ENV}={os.environ.get(MIRROR_ENV) or 'unset'}) or the cache "
                   f"({cache_dir()}): {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}")
            ledger.unknowns.append(
                f"{b}: the authors' prompts are {why}; counted with our wording (judge.prompts=ours: the same "
                "calls, tokens approximate). docs/prompt-packs.md says how to get them"
            )
            judges = bcfg.get("judges") or {m: {} for m in members}
            bcfg["judges"] = {m: {**(judges.get(m) or {}), "prompts": "ours"} for m in judges}
    for b in benchmarks:
        verification = ((params["benchmarks"][b].get("judging") or {}).get("verification") or {})
        if verification.get("retrieval") == "embedding":  # DEER's `code` mode (protocols/deer)
            ledger.unknowns.append(
                f"{b}: embedding retrieval ({verification.get('embedding_model')}) calls a model to pick each "
                "page's context: picked with BM25 here (the same number of chunks); the embedding calls are not "
                "counted"
            )
            verification["retrieval"] = "bm25"
    return params


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


def _ensure_built(
    params: dict[str, Any], b: str, work: Path, log: list[str]
) -> tuple[Path, Path, Path | None, dict[str, Any]]:
    """(release dir, runs dir, pages dir, params scoped to the systems that have a run) for benchmark b: DVC's
    outputs when present, else built in `work`. A system whose run cannot be built here is named and left out."""
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
    # nor a system that calls a model or runs a program: an estimate makes no network request
    remote = [s for s in plan["systems"] if s not in not_run and not (runs / s / "outcomes.jsonl").is_file()
              and str(pipeline.system_spec(params, b, s).get("kind")) in NETWORK_KINDS]
    if remote:
        log.append(f"{b}: systems {remote} not run yet (their kind calls a model or runs a program, which an "
                   f"estimate never does): their judging is not estimated; `dvc repro` runs them")
    not_run += remote
    systems = [s for s in plan["systems"] if s not in not_run]
    missing = [s for s in systems if not (runs / s / "outcomes.jsonl").is_file()]
    if missing:
        tmp_runs = work / b / "runs"
        built = []
        for s in systems:
            src = runs / s
            dst = tmp_runs / s
            if (src / "outcomes.jsonl").is_file() or (dst / "outcomes.jsonl").is_file():
                continue
            try:
                pipeline.run_system(params, b, s, release, dst)
                built.append(s)
            except Exception as exc:  # noqa: BLE001 - one system that cannot run here never hides the others
                first = (str(exc).strip().splitlines() or [""])[0]
                log.append(f"{b}: system {s} not estimated: its run cannot be built here ({type(exc).__name__}: "
                           f"{first[:400]})")
                not_run.append(s)
        for s in systems:
            if (runs / s / "outcomes.jsonl").is_file() and not (tmp_runs / s).exists():
                (tmp_runs / s).parent.mkdir(parents=True, exist_ok=True)
                (tmp_runs / s).symlink_to((runs / s).resolve())
        runs = tmp_runs
        if built:
            log.append(f"{b}: system runs {built} built in a temp dir")
    ran = [s for s in plan["systems"] if s not in not_run]
    # the fetch and cross stages read every system of the plan: here, the ones that have a run
    scoped = {**params, "plan": {**params["plan"], "benchmarks": {**params["plan"]["benchmarks"],
                                                                  b: {**plan, "systems": ran}}}}
    pages: Path | None = None
    if b in params["plan"]["fetch"] and ran:
        pages = Path("data/pages") / b / rel
        if not (pages / "pages.parquet").is_file():
            pages = work / b / "pages"
            if not (pages / "pages.parquet").is_file():
                pipeline.fetch_stage(scoped, b, runs, release, pages / "pages.parquet")
    return release, runs, pages, scoped


def estimate(
    params: dict[str, Any],
    *,
    benchmarks: list[str] | None = None,
    systems: list[str] | None = None,
    completion_tokens: int | None = None,
    cache_path: str | None = None,
    announce: Callable[[list[str]], None] | None = None,
) -> Ledger:
    """Count every judge call the plan in `params` would make (minus cache hits); see the module docstring.

    No network request and no cache write (the module docstring says how); `announce` gets what cannot be known
    here before any work starts."""
    from reportbench import pipeline  # lazy: +379 ms to import (python -X importtime)
    from reportbench.prompt_packs.sources import OFFLINE_ENV  # lazy: +33 ms to import (python -X importtime)

    ledger = Ledger(completion_tokens=completion_tokens)
    plan = params["plan"]
    wanted = benchmarks or list(plan["benchmarks"])
    for b in wanted:
        if b not in plan["benchmarks"]:
            raise ValueError(f"benchmark {b!r} is not enabled; enabled: {sorted(plan['benchmarks'])}")
    params = offline_params(params, wanted, ledger)
    if announce is not None:
        announce(ledger.unknowns)
    judge = params.get("judge") or {}
    runtime = judge.get("runtime") or {}
    probe = _CacheProbe(cache_path if cache_path is not None else runtime.get("cache_path"))
    stage: list[str] = [""]
    log: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="rb-estimate-") as tmp,
        _estimating(ledger, probe, stage),
        no_network(ledger),
        _read_only(ledger),
        _env(OFFLINE_ENV, "1"),  # the authors' prompts from the mirror or cache, never downloaded
        speed_caches_read_only(),  # the digest memo, written-reports registry and stored releases: read only
        contextlib.redirect_stdout(sys.stderr),  # stage functions print progress; stdout is the estimate
    ):
        work = Path(tmp)
        _private_caches(params, wanted, work)
        for b in wanted:
            try:
                release, runs, pages, scoped = _ensure_built(params, b, work, log)
            except Exception as exc:  # noqa: BLE001 - one benchmark's missing data never hides the others
                first = (str(exc).strip().splitlines() or [""])[0]
                log.append(f"{b}: not estimated: its release cannot be built here ({type(exc).__name__}: "
                           f"{first[:400]})")
                continue
            for name, j in judge_units(plan).items():
                if j["benchmark"] != b or (systems and j["system"] not in systems):
                    continue
                if j["system"] not in scoped["plan"]["benchmarks"][b]["systems"]:
                    continue  # not run here (see _ensure_built's note)
                unit = name.removeprefix(f"{b}.").replace(".", "/")  # system[/member]
                stage[0] = f"judge@{b} ({unit})"  # the DVC stage and its unit, as retry and the stage name them
                out = work / b / "judgments" / j["system"] / j["member"]
                with _quiet():
                    pipeline.run_judge_stage(
                        params, b, j["system"], j["member"], release, runs / j["system"], out,
                        work / b / "usage" / f"{name}.json", pages_dir=pages,
                    )
            ledger.agents.extend(_agent_budgets(params, b, release, systems))
            if b in plan["cross"] and scoped["plan"]["benchmarks"][b]["systems"]:
                stage[0] = f"cross@{b}"
                with _quiet():
                    pipeline.cross_stage(scoped, b, release, runs, work / b / "cross")
    _mark_chained(ledger)
    ledger.skipped = log
    return ledger


def _private_caches(params: dict[str, Any], benchmarks: list[str], work: Path) -> list[str]:
    """Point every cache a benchmark's steps open (keys with `cache` in their name, e.g. DeepScholar's OpenAlex
    counts) at a copy in `work`: the steps read what the cache holds, and whatever they write goes to the copy.
    Returns the caches redirected."""
    import shutil

    moved = []

    def walk(node: Any, where: str) -> None:
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, f"{where}.{key}")
            elif "cache" in str(key) and isinstance(value, str) and value:
                src = Path(value)
                dst = work / "caches" / f"{where}.{key}".strip(".") / src.name
                dst.parent.mkdir(parents=True, exist_ok=True)
                if src.is_file():
                    shutil.copy2(src, dst)
                elif src.is_dir():
                    shutil.copytree(src, dst)
                node[key] = str(dst)
                moved.append(f"{where}.{key}")

    for b in benchmarks:
        walk(params["benchmarks"][b], f"benchmarks.{b}")
    return moved


@contextlib.contextmanager
def _env(name: str, value: str) -> Iterator[None]:
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


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
        if e.items == 0:  # a judge built for a step that had nothing to ask (e.g. the other rubric variant)
            continue
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
                "unknown_page_items": e.unknown_page_items,
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
        "completion_tokens_basis": (
            f"{ledger.completion_tokens} per call (--completion-tokens)" if ledger.completion_tokens is not None
            else "the offline judge's answer size (a floor: an LLM explains more); --completion-tokens sets one"),
        "agents": ledger.agents,
        "unknowns": ledger.unknowns,
        "pages_not_cached": len(ledger.pages_not_cached),
        "network_requests_refused": len(ledger.network_refused),
        "network_refused_first": ledger.network_refused[:3],
    }


def usd(x: float | None) -> str:
    """A dollar figure for the table and its notes: `n/a` when unknown (never $0)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.4f}" if x < 10 else f"{x:,.2f}"


def format_table(summary: Mapping[str, Any]) -> str:
    tw = max([24, *(len(str(r["task"])) for r in summary["rows"])])  # task names are never cut
    head = (
        f"{'stage':<52} {'task':<{tw}} {'model':<28} {'items':>7} {'hits':>6} {'calls':>7} {'prompt tok':>11} "
        f"{'compl tok':>10} {'$ online':>9} {'$ batch':>9}"
    )
    lines = [head, "-" * len(head)]

    for r in summary["rows"]:
        if r["items"] == 0:
            continue
        items = f"{r['items']}" + ("" if r["items_exact"] else "~") + ("?" if r.get("unknown_page_items") else "")
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
    from reportbench.agents.budget_estimate import format_rows  # lazy: +83 ms to import (python -X importtime)

    agents = format_rows(list(summary.get("agents") or []))
    return "\n".join(lines + [f"note: {n}" for n in basis_notes(summary)]) + (("\n" + agents) if agents else "")


def basis_notes(summary: Mapping[str, Any]) -> list[str]:
    """What the figures rest on (the table's `note:` lines; `--json` carries them as `basis`): marks, floors,
    ceilings, unknowns."""
    t = summary["totals"]
    notes = [f"cannot know here: {u}" for u in summary.get("unknowns") or []]
    notes.append("~ = a later step of its stage: its items may depend on earlier answers (counted with the offline "
                 "judge)")
    unknown_calls = sum(r.get("unknown_page_items", 0) for r in summary["rows"])
    if unknown_calls:
        notes.append(
            f"? = {unknown_calls:,} of these rows' calls are about {summary.get('pages_not_cached', 0):,} cited pages "
            "not in the page cache: counted as if each page fetched (an upper bound), their text left out of the "
            "prompt tokens (a floor)"
        )
    if summary.get("network_requests_refused"):
        notes.append(
            f"{summary['network_requests_refused']} network requests were attempted and refused (an estimate makes "
            f"none; what needed them is not counted): {summary['network_refused_first']}"
        )
    if summary["unpriced_models"]:
        notes.append(f"no price known for {summary['unpriced_models']}: set judge.input_cost_per_token/output_...")
    if summary["offline_stages"]:
        notes.append(f"offline judge (no cost): {', '.join(summary['offline_stages'][:5])}")
    notes += summary["notes"]
    notes.append(f"completion tokens: {summary.get('completion_tokens_basis') or 'the offline answer size (a floor)'}")
    if t.get("budget_tokens"):
        notes.append(
            f"ceiling (every call answers with its step's whole output budget, judges/budgets.py): "
            f"{t['budget_tokens']:,} completion tokens, ${usd(t.get('usd_online_max'))} online, "
            f"${usd(t.get('usd_batch_max'))} batch"
        )
    return notes


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


def _announce(unknowns: list[str]) -> None:
    for u in unknowns:
        print(f"estimate: cannot know here: {u}", file=sys.stderr, flush=True)


def _offline_notice() -> str:
    """The first line, before the config is composed: what an estimate reads, and which of it is absent here."""
    from reportbench.prompt_packs.sources import MIRROR_ENV, cache_dir  # lazy: +33 ms to import (python -X importtime)

    pages = Path(".reportbench/cache/pages.sqlite")
    mirror = os.environ.get(MIRROR_ENV)
    authors = f"{MIRROR_ENV}={mirror}" if mirror else f"{MIRROR_ENV} unset, cache {cache_dir()}" + (
        "" if cache_dir().is_dir() else " absent")
    return (f"estimate: offline: no network request; reads only caches (pages: {pages}"
            f"{'' if pages.is_file() else ' absent'}; the authors' prompts: {authors}); what that leaves unknown "
            "is said next")


def _cmd_estimate(args: argparse.Namespace) -> int:
    print(_offline_notice(), file=sys.stderr, flush=True)
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
            announce=_announce,
        )
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = summarise(ledger, params)
    print(json.dumps({**summary, "basis": basis_notes(summary)}, indent=2) if args.json else format_table(summary))
    if not ledger.steps and not ledger.agents and any(" not estimated: " in n for n in ledger.skipped):
        print("error: nothing estimated: " + "; ".join(n for n in ledger.skipped if " not estimated: " in n),
              file=sys.stderr)
        return 2
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
    p.add_argument("--json", action="store_true", help="print the estimate as JSON (rows, totals, what is unknown)")
    p.set_defaults(func=_cmd_estimate)
