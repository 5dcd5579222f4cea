"""The agent system stage: every agent kind runs through here (docs/agents.md §4–5).

Per system run: one loopback proxy (LLM budget + search, `proxy.AgentProxy`) and a pool of `concurrency` workers.
Per task: a fresh token and ledger, the adapter (a subprocess in the kind's venv; `provider_deep_research` in this
process), then a `TaskRecord` and the report file, both written atomically under
`.reportbench/agents/runs/<config hash>/` before anything else, so that a run killed with `kill -9` resumes with
only its unfinished tasks (an `ok` or `over_budget` task is never rerun; a `failed` one is). Nothing a task does
can lose another task: every failure is a recorded outcome. The run folder gets `raw/<task>.md` (a numbered
reference list the markdown adapter reads), `agent/<task>.json` (the record), `agent/<task>.log` (the adapter's
stderr, redacted) and `agent_usage.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from reportbench.agents.envs import adapter_file, agents_home, lock_hash, python_for
from reportbench.agents.protocol import (
    AGENT_KINDS,
    LLM_TOKEN_ENV,
    SEARCH_TOKEN_ENV,
    AgentRequest,
    AgentResult,
    AgentSystemConfig,
    LLMEndpoint,
    SearchEndpoint,
    TaskRecord,
    Usage,
    references_section,
)
from reportbench.agents.proxy import AgentProxy, TaskLedger
from reportbench.agents.search.base import SearchError, SearchService, make_backend
from reportbench.agents.search.pages import PageReader
from reportbench.agents.search.types import Doc
from reportbench.agents.variant import labelled, variant_tag
from reportbench.systems.base import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import RunCollector, parse_output, safe_name
from reportbench.systems.sandbox import (
    UNIT_PARTS,
    PortBridge,
    SandboxConfig,
    network,
    parse_sandbox,
    python_roots,
    require,
    write_record,
)
from reportbench.systems.sandbox import run as run_process
from reportbench.types import Report, Task

DEFAULT_PATH = "src/reportbench/agents"
LOG_TAIL = 20_000
# what an adapter's environment keeps from ours (besides the two proxy tokens and `options.env`)
_BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SSL_CERT_FILE")


def parse_config(name: str, spec: dict[str, Any]) -> AgentSystemConfig:
    """The entry, validated; the error names the system and the field."""
    try:
        # keys the spine adds to an entry (`_all_task_ids` on a per-task rerun) are not the user's config
        return AgentSystemConfig.model_validate({k: v for k, v in spec.items() if not str(k).startswith("_")})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SystemError_(f"systems.{name}.{where}: {first['msg']}") from None


def config_hash(cfg: AgentSystemConfig, benchmark: str, system: str = "") -> str:
    """What changes an agent's answers: the entry (not concurrency or paths), the lock, the adapter's code; and the
    system's name, so two identically configured systems are two independent runs."""
    ident = cfg.model_dump(mode="json", exclude={"concurrency", "release_dir", "path", "sandbox"})
    adapter = adapter_file(cfg.kind)
    shared = sorted(adapter.parent.glob("_*.py"))  # helpers the adapters share (e.g. _oss_common.py)
    code = hashlib.sha256(b"".join(p.read_bytes() for p in [adapter, *shared] if p.is_file())).hexdigest()
    blob = json.dumps(
        {"cfg": ident, "benchmark": benchmark, "system": system, "lock": lock_hash(cfg.kind), "adapter": code},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


VARIANT_FILE = "variant.json"


def write_variant(out_dir: Path, variant: str | None) -> None:
    """`<run>/variant.json`: the system's variant tag (null: the agent as published), read by the score stage."""
    (Path(out_dir) / VARIANT_FILE).write_text(json.dumps({"variant": variant}) + "\n", encoding="utf-8")


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _release_info(name: str, cfg: AgentSystemConfig, spec: dict[str, Any], out_dir: Path) -> tuple[str, list[Doc]]:
    """(benchmark name, the release's corpus as BM25 documents)."""
    from reportbench.release.format import read_release  # lazy: +99 ms to import (python -X importtime)
    from reportbench.systems.common import resolve_release_dir  # lazy: +0 ms to import (python -X importtime)

    try:
        release = read_release(resolve_release_dir(name, spec, out_dir))
    except SystemError_:
        if cfg.search.backend == "bm25":
            raise
        return cfg.benchmark or "", []
    docs = []
    for d in release.corpus if cfg.search.backend == "bm25" else []:
        url = d.url or (f"https://arxiv.org/abs/{d.arxiv_id}" if d.arxiv_id else "")
        if url:
            docs.append(Doc(url=url, title=d.title, text=d.abstract or "", published=d.published_date))
    return cfg.benchmark or release.meta.benchmark, docs


def _preflight_llm(name: str, cfg: AgentSystemConfig) -> None:
    """A missing provider key is one clear error before any task starts (every call would fail the same way)."""
    if cfg.api_key_env and not os.environ.get(cfg.api_key_env):
        raise SystemError_(f"systems.{name}.api_key_env: set the environment variable {cfg.api_key_env}")
    if cfg.api_base or cfg.api_key_env:
        return
    import litellm  # import cost: ~3.5 s, only for a hosted provider

    missing = (litellm.validate_environment(model=cfg.model) or {}).get("missing_keys") or []
    if missing:
        raise SystemError_(f"systems.{name}: set the environment variable(s) {', '.join(missing)} ({cfg.model})")


def _secrets(cfg: AgentSystemConfig) -> tuple[str, ...]:
    from reportbench.redaction import secret_values  # lazy: +2 ms to import (python -X importtime)

    names = [n for n in (cfg.api_key_env, cfg.search.api_key_env) if n]
    return tuple({*secret_values(), *(os.environ[n] for n in names if os.environ.get(n))})


def adapter_env(cfg: AgentSystemConfig, token: str) -> dict[str, str]:
    """Only what the config names: basic process variables, the proxy tokens, `options.env` pass-throughs.
    No provider key and no judge key ever reaches an adapter."""
    env = {k: os.environ[k] for k in _BASE_ENV if k in os.environ}
    for name in cfg.options.get("env") or []:
        if isinstance(name, str) and name in os.environ:
            env[name] = os.environ[name]
    env.update({LLM_TOKEN_ENV: token, SEARCH_TOKEN_ENV: token, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"})
    return env


def _last_json(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                return data
    return None


class AgentRun:
    """One system's run: config, proxy, search service, the resumable work folder."""

    def __init__(
        self,
        name: str,
        cfg: AgentSystemConfig,
        benchmark: str,
        proxy: AgentProxy,
        work: Path,
        box: SandboxConfig | None = None,
        bridge: PortBridge | None = None,
        net_env: dict[str, str] | None = None,
    ) -> None:
        self.name, self.cfg, self.benchmark, self.proxy, self.work = name, cfg, benchmark, proxy, work
        self.secrets = _secrets(cfg)
        self.chash = work.name
        self.box = box or parse_sandbox(name, cfg.sandbox)
        self.bridge = bridge
        self.net_env = net_env or {}
        self.sandbox_usage: dict[str, Any] = {}  # task id -> how its process ended and what it used

    def _key(self, task: Task) -> str:
        return f"{safe_name(task.task_id)}-{hashlib.sha256(task.task_prompt.encode()).hexdigest()[:8]}"

    def finished(self, task: Task) -> TaskRecord | None:
        """A record from an earlier (possibly killed) run of the same config: ok and over_budget are final."""
        path = self.work / f"{self._key(task)}.json"
        if not path.is_file():
            return None
        try:
            rec = TaskRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except ValueError:
            return None
        if rec.outcome == "failed" or (rec.report_file and not (self.work / rec.report_file).is_file()):
            return None
        return rec

    def run_task(self, task: Task) -> TaskRecord:
        done = self.finished(task)
        if done is not None:
            return done
        ledger_token = self.proxy.register(task.task_id, self.cfg.budget)
        ledger = self.proxy.ledgers[ledger_token]
        started = time.monotonic()
        if self.cfg.kind == "provider_deep_research":
            from reportbench.agents.provider import run_provider_task  # lazy: +1 ms to import (python -X importtime)

            result, raw_name, raw_text, killed = run_provider_task(self.cfg, task, ledger, self.work, self._key(task))
            log = ""
        else:
            result, log, killed = self._subprocess(task, ledger_token)
            raw_name, raw_text = f"{self._key(task)}.md", None
        with ledger.lock:
            ledger.closed = True
            usage = ledger.usage.model_copy()
        usage.wall_s = round(time.monotonic() - started, 3)
        outcome, reason = self._outcome(result, ledger, killed)
        if raw_text is None and result is not None and outcome == "ok":
            raw_text = references_section(result.report_markdown, result.references)
        rec = TaskRecord(
            task_id=task.task_id,
            system=self.name,
            kind=self.cfg.kind,
            agent_version=result.agent_version if result else "",
            models=sorted(set(result.models if result else []) | ledger.models),
            search_backend="provider" if self.cfg.kind == "provider_deep_research" else self.cfg.search.backend,
            queries=list(dict.fromkeys([*ledger.queries, *(result.queries if result else [])])),
            pages_read=list(result.pages_read) if result else [],
            pages_fetched=[
                {"url": pg.url, "source": pg.source, **({"text_chars": len(pg.text)} if pg.text else {"why": pg.why})}
                for pg in ledger.pages
            ],
            variant=variant_tag(self.cfg),
            usage=usage,
            outcome=outcome,
            reason=reason,
            # a provider's report was paid for: kept even when the task went over budget (docs/agents.md)
            report_file=raw_name if raw_text and (outcome == "ok" or self._paid(outcome)) else None,
            config_hash=self.chash,
        )
        from reportbench.redaction import redact  # lazy: +2 ms to import (python -X importtime)

        if log:
            _atomic_write(self.work / f"{self._key(task)}.log", redact(log[-LOG_TAIL:], self.secrets))
        if rec.report_file and raw_text:
            _atomic_write(self.work / rec.report_file, redact(raw_text, self.secrets, patterns=False))
        # the record last: its presence means the task is finished (the resume test relies on this order)
        text = redact(rec.model_dump_json(indent=2), self.secrets, patterns=False)  # queries may look key-ish
        _atomic_write(self.work / f"{self._key(task)}.json", text)
        return TaskRecord.model_validate_json(text)  # what is published is what was written: redacted

    def _paid(self, outcome: str) -> bool:
        return self.cfg.kind == "provider_deep_research" and outcome == "over_budget"

    def _outcome(self, result: AgentResult | None, ledger: TaskLedger, killed: str | None) -> tuple[str, str | None]:
        over = ledger.over_budget or ledger.exceeded_at_end() or killed
        if over:
            return "over_budget", over
        if result is None:
            return "failed", "the adapter printed no result"
        if result.outcome != "ok":
            return result.outcome, result.reason or result.outcome
        if not result.report_markdown.strip() and self.cfg.kind != "provider_deep_research":
            return "failed", "empty output: the agent wrote no report"
        return "ok", None

    def _subprocess(self, task: Task, token: str) -> tuple[AgentResult | None, str, str | None]:
        """Run the adapter; (result or None, stderr text, over-budget reason if the wall time killed it)."""
        cfg = self.cfg
        python = python_for(cfg.kind)
        script = adapter_file(cfg.kind)
        if not script.is_file():
            raise SystemError_(f"systems.{self.name}.kind: no adapter script {script} for kind {cfg.kind!r}")
        with tempfile.TemporaryDirectory(prefix=f"rb-agent-{safe_name(task.task_id)}-") as tmp:
            req = AgentRequest(
                task_id=task.task_id,
                benchmark=self.benchmark,
                question=task.task_prompt,
                title=task.title or "",
                # the bare model name (no litellm provider prefix): the proxy knows where to send it
                llm=LLMEndpoint(model=cfg.model.split("/", 1)[-1], base_url=self.proxy.llm_url),
                search=SearchEndpoint(
                    backend=cfg.search.backend,
                    base_url=self.proxy.tavily_url,
                    exa_base_url=self.proxy.exa_url,
                    max_results=cfg.search.max_results,
                ),
                budget=cfg.budget,
                workdir=tmp,
                options={k: v for k, v in cfg.options.items() if k != "env"},
            )
            env = adapter_env(cfg, token)
            if self.box.backend != "none":
                env.update({"TMPDIR": "/tmp", "TEMP": "/tmp", "TMP": "/tmp", **self.net_env})  # its private /tmp
            # sandboxed: its venv and adapter read-only, its work folder writable, the proxy its only network;
            # the agents home (other runs' records, the search cache) is hidden
            if self.box.backend != "none":  # the agents home is hidden: name the venv by its real folder
                python = Path(os.path.realpath(python.parent)) / python.name
            try:
                if not python.exists():  # sandboxed or not, a missing interpreter is the same recorded failure
                    raise FileNotFoundError(2, "No such file or directory", str(python))
                if not os.access(python, os.X_OK):
                    raise PermissionError(13, "Permission denied", str(python))
                done = run_process(
                    [str(python), str(script)],
                    self.box,
                    env=env,
                    cwd=Path(tmp),
                    wall_s=cfg.budget.wall_s,
                    stdin=req.model_dump_json().encode(),
                    ro=[*python_roots(python), script.parent],
                    rw=[(Path(tmp), Path(tmp))],
                    hidden=[agents_home()],
                    bridge=self.bridge,
                )
            except OSError as exc:  # the task's record says why, as for any failed task (no "internal" error)
                reason = f"the adapter did not start: {type(exc).__name__}: {exc} (`{python} {script}`)"
                return AgentResult(outcome="failed", reason=reason), f"[reportbench] {reason}\n", None
            out, err = done.stdout, done.stderr
            killed = done.killed
            if killed and killed.startswith("timeout"):
                killed = f"wall_s: no result after {cfg.budget.wall_s:g} s (killed)"
            limit = done.limit_reason(self.box.limits(cfg.budget.wall_s)) if self.box.backend != "none" else None
            self.sandbox_usage[task.task_id] = {**done.usage, "limit": limit}
            if limit and not killed:
                err += f"\n[reportbench] {limit}\n".encode()
        stdout = out.decode("utf-8", errors="replace")
        log = err.decode("utf-8", errors="replace")
        data = _last_json(stdout)
        if data is None:
            tail = log.strip()[-300:]
            if killed is None:
                log += f"\n[reportbench] adapter exit {done.returncode}; no JSON result on stdout\n"
            return (
                (
                    None
                    if killed
                    else AgentResult(
                        outcome="failed",
                        reason=(f"{limit}; " if limit else "")
                        + f"exit {done.returncode}, no result"
                        + (f"; stderr: {tail}" if tail else ""),
                    )
                ),
                log,
                killed,
            )
        try:
            return AgentResult.model_validate(data), log, killed
        except ValidationError as exc:
            return AgentResult(outcome="failed", reason=f"malformed result: {exc.errors()[0]['msg']}"), log, killed


def _publish(run: AgentRun, rec: TaskRecord, task: Task, out_dir: Path) -> tuple[Report | None, TaskOutcome]:
    """Copy the task's files into the run folder and parse the report like any third-party report."""
    from reportbench.redaction import redact  # lazy: +2 ms to import (python -X importtime)

    key = run._key(task)
    agent_dir = out_dir / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / f"{safe_name(task.task_id)}.json").write_text(rec.model_dump_json(indent=2) + "\n", encoding="utf-8")
    log = run.work / f"{key}.log"
    if log.is_file():
        text = redact(log.read_text(encoding="utf-8", errors="replace"), run.secrets)
        (agent_dir / f"{safe_name(task.task_id)}.log").write_text(text, encoding="utf-8")
    kept = rec.outcome == "over_budget" and rec.report_file and run._paid(rec.outcome)
    if kept and not run.cfg.options.get("score_over_budget"):  # paid for: kept in raw/, scored only if asked
        src = run.work / str(rec.report_file)
        dest = out_dir / "raw" / f"{safe_name(task.task_id)}{src.suffix or '.md'}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
        reason = f"over_budget: {rec.reason} (report kept: raw/{dest.name}; options.score_over_budget: true scores it)"
        return None, TaskOutcome(task_id=task.task_id, status="failed", reason=reason[:1000])
    if (rec.outcome != "ok" and not kept) or not rec.report_file:
        prefix = "over_budget: " if rec.outcome == "over_budget" else ""
        return None, TaskOutcome(
            task_id=task.task_id, status="failed", reason=(prefix + (rec.reason or rec.outcome))[:1000]
        )
    src = run.work / rec.report_file
    suffix = src.suffix or ".md"
    dest = out_dir / "raw" / f"{safe_name(task.task_id)}{suffix}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    fmt = "openai_deep_research" if suffix == ".json" else run.cfg.format
    report, outcome = parse_output(dest, system=run.name, task_id=task.task_id, fmt=fmt)
    if kept:  # scored as the config asks, and marked: the row must say it crossed its budget
        outcome.flags = [*outcome.flags, "over_budget"]
        outcome.reason = f"over_budget: {rec.reason}"[:1000]
    return report, outcome


def _totals(records: list[TaskRecord]) -> dict[str, Any]:
    fields = (
        "llm_calls",
        "embedding_calls",
        "llm_refused",
        "llm_capped",
        "prompt_tokens",
        "completion_tokens",
        "search_calls",
        "search_requests",
        "search_refused",
        "pages_fetched",
        "pages_unread",
        "wall_s",
    )
    out: dict[str, Any] = {f: sum(getattr(r.usage, f) for r in records) for f in fields}
    usds = [r.usage.usd for r in records]
    out["usd"] = None if any(u is None for u in usds) else round(sum(u for u in usds if u is not None), 6)
    out["wall_s"] = round(out["wall_s"], 3)
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    return {"tasks": len(records), "outcomes": outcomes, "usage": out}


def run_agent_system(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    """Run one agent system over the tasks (concurrently, resumable); one outcome and one record per task."""
    from reportbench.agents.search.stub import serve_in_thread  # lazy: +25 ms to import (python -X importtime)

    cfg = parse_config(name, spec)
    box = parse_sandbox(name, cfg.sandbox)
    if cfg.kind != "provider_deep_research":
        require(name, box)  # no sandbox and no explicit opt-out: one message naming the fix, before any task
    if cfg.kind == "provider_deep_research":
        from reportbench.agents.provider import preflight  # lazy: +1 ms to import (python -X importtime)

        preflight(name, cfg)
    else:
        python_for(cfg.kind)  # fail fast when the kind is not installed
        _preflight_llm(name, cfg)
    # (a provider's prices come from its price table: its preflight checks the model has a row)
    if cfg.budget.usd is not None and cfg.price is None and cfg.api_base and cfg.kind != "provider_deep_research":
        raise SystemError_(f"systems.{name}.price: budget.usd is set but {cfg.model} behind api_base has no price")
    out_dir = Path(out_dir)
    benchmark, docs = _release_info(name, cfg, spec, out_dir)
    work = agents_home() / "runs" / config_hash(cfg, benchmark, name)
    work.mkdir(parents=True, exist_ok=True)
    try:
        backend = make_backend(cfg.search, docs)
    except SearchError as exc:  # a missing search key: no retry fixes it
        raise SystemError_(f"systems.{name}.search: {exc}") from None
    service = SearchService(
        backend,
        cache_path=agents_home() / "search_cache.sqlite",
        requests_per_minute=cfg.search.requests_per_minute,
    )
    # result pages an agent asks for: the spine's fetch path with the pipeline's `fetch` params and the benchmark's
    # recorded pages (`fetch_seeds`), handed over by the pipeline under `_fetch` (defaults: offline, no seeds)
    fetch = spec.get("_fetch") or {}
    try:
        pages = PageReader(fetch.get("config"), fetch.get("seeds") or ())
    except ValueError as exc:  # a bad `fetch` param: the same message the fetch stage gives
        service.close()
        raise SystemError_(f"fetch: {exc}") from None
    # the report adapters register on first import: import them before the worker threads race on it
    # (seen by the OSS agents' tests: "unknown report format 'markdown'" with concurrency 2)
    # lazy: +56 ms to import (python -X importtime)
    import reportbench.reports  # noqa: F401  (its __init__ registers every built-in adapter)

    if cfg.kind == "provider_deep_research":  # its client too, before the threads (provider.import_client)
        from reportbench.agents.provider import import_client  # lazy: +1 ms to import (python -X importtime)

        import_client(cfg)

    collector = RunCollector([t.task_id for t in tasks])
    records: dict[str, TaskRecord] = {}
    try:
        # sandboxed, its network: the budget/search proxy and the guarded fetch proxy (pages), nothing else
        with serve_in_thread(AgentProxy(cfg, service, pages=pages)) as proxy, network(
            box, [proxy.port], fetch_default=True, fetch_cfg=fetch.get("config")
        ) as (bridge, net_env):
            run = AgentRun(name, cfg, benchmark, proxy, work, box, bridge, net_env)

            def job(task: Task) -> None:
                if proxy.fatal is not None:
                    collector.fail(task.task_id, f"not run: {proxy.fatal}")
                    return
                try:
                    rec = run.run_task(task)
                    records[task.task_id] = rec
                    collector.add(*_publish(run, rec, task, out_dir))
                except SystemError_:
                    raise
                except Exception as exc:  # noqa: BLE001 - one broken task is a recorded failure
                    collector.fail(task.task_id, f"internal: {type(exc).__name__}: {exc}")

            with ThreadPoolExecutor(max_workers=cfg.concurrency) as pool:
                for fut in [pool.submit(job, t) for t in tasks]:
                    fut.result()
            if proxy.fatal is not None:  # finished tasks are kept for the next run (resume)
                raise SystemError_(
                    f"systems.{name}: {proxy.fatal} ({cfg.model}; key from {cfg.api_key_env or 'litellm'})"
                )
    finally:
        service.close()
        pages.close()
    ordered = [records[t.task_id] for t in tasks if t.task_id in records]
    record = {"backend": "in-process"} if cfg.kind == "provider_deep_research" else box.record(cfg.budget.wall_s)
    sandbox_tasks = {t.task_id: run.sandbox_usage.get(t.task_id) for t in tasks}
    if spec.get("_unit"):  # one task of a fanned-out stage (runtime.executor: ray): the driver writes the stage files
        write_record(out_dir, record, sandbox_tasks, unit=True)
        parts = out_dir / UNIT_PARTS
        for t in tasks:
            part = {"config_hash": work.name}
            (parts / f"agent.{safe_name(t.task_id)}.json").write_text(json.dumps(part), encoding="utf-8")
        return collector.result()
    _write_stage_files(name, cfg, work.name, ordered, out_dir, record, sandbox_tasks)
    return collector.result()


def _write_usage_and_variant(
    name: str, cfg: AgentSystemConfig, chash: str, ordered: list[TaskRecord], out_dir: Path
) -> None:
    """`agent_usage.json` over every task and the variant tag: the same files in-process and after fanned units."""
    variant = variant_tag(cfg)
    summary = {
        "system": name,
        "kind": cfg.kind,
        "variant": variant,
        "label": labelled(name, variant),
        "config_hash": chash,
        "search_backend": cfg.search.backend,
        **_totals(ordered),
    }
    (out_dir / "agent_usage.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    write_variant(out_dir, variant)


def _write_stage_files(
    name: str, cfg: AgentSystemConfig, chash: str, ordered: list[TaskRecord], out_dir: Path,
    record: dict[str, Any], sandbox_tasks: dict[str, Any],
) -> None:
    """`agent_usage.json`, the variant and `sandbox.json`: one per stage, over every task."""
    _write_usage_and_variant(name, cfg, chash, ordered, out_dir)
    write_record(out_dir, record, sandbox_tasks)


def finish_fanned_units(name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path) -> None:
    """After every task ran as its own unit (on any node; `sandbox.json` merged already): `agent_usage.json` and the
    variant as the in-process run writes them, from the records the units published (`agent/<task>.json`)."""
    cfg = parse_config(name, spec)
    out_dir = Path(out_dir)
    parts = out_dir / UNIT_PARTS
    ordered, chash = [], None
    for t in tasks:
        part, path = parts / f"agent.{safe_name(t.task_id)}.json", out_dir / "agent" / f"{safe_name(t.task_id)}.json"
        if part.is_file() and path.is_file():
            chash = json.loads(part.read_text(encoding="utf-8"))["config_hash"]
            ordered.append(TaskRecord.model_validate_json(path.read_text(encoding="utf-8")))
        part.unlink(missing_ok=True)
    if chash is None:  # no unit got as far as its record: the hash as the in-process run computes it
        chash = config_hash(cfg, _release_info(name, cfg, spec, out_dir)[0], name)
    _write_usage_and_variant(name, cfg, chash, ordered, out_dir)


for _kind in AGENT_KINDS:
    register_kind(_kind)(run_agent_system)

__all__ = [
    "AgentRun", "Usage", "config_hash", "finish_fanned_units", "parse_config", "references_section",
    "run_agent_system",
]
