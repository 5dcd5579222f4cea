"""`kind: deepscholar_ref` — the DeepScholar-bench paper's reference pipeline (§5, §8.5, Figures 7-10).

1. Retrieval, N rounds: the LLM writes Q queries conditioned on the topic and on summaries of earlier
   rounds (Box 4); each query goes to the search backend for up to search_K papers; every result not
   provably published before the task paper is dropped (and recorded), whatever the backend returned.
2. sem_filter: one chain-of-thought relevance call per paper (Figure 9).
3. sem_topk: keep the K most relevant (pointwise 0-10 scores; see semops for why not pairwise).
4. sem_agg: write the section from the numbered top-K papers with `[n]` citations (Box 5); the harness
   appends the numbered reference list of the cited papers, so every `[n]` resolves through the report's
   own list (numbers keep the context order, as Box 5 asks, so they may skip).

Oracle settings (paper Table 5), `oracle:`
- `none` (default): the pipeline above.
- `important_arxiv`: retrieval is replaced by the exemplar's references labelled important that are on
  arXiv ("Oracle Retrieval (arxiv.org)"); filter and top-k are skipped, only the writer runs.
- `important_all`: every important exemplar reference, arXiv or not ("Oracle Retrieval (All)").

Every LLM step goes through the judge layer's litellm client (cache, retries, cost); the system entry's
own `model`/`api_base`/... configure it, so changing one system's model reruns only that system's stages.
Failures are recorded per task (`failed` with the step and the reason); the run always goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.systems.base import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import (
    Doc,
    RunCollector,
    corpus_docs,
    load_release_for,
    merged,
    parse_output,
    published_before,
    raw_path,
    task_cutoff,
    usable_docs,
    write_text,
    write_trace,
)
from reportbench.systems.semops import (
    CLIENT_KEYS,
    LLMSteps,
    QueryInput,
    SummaryInput,
    client_config,
    sem_agg,
    sem_filter,
    sem_topk,
)
from reportbench.types import Report, Task

log = logging.getLogger("reportbench")

ORACLES = ("none", "important_arxiv", "important_all")
DEFAULTS: dict[str, Any] = {
    # the paper's DeepScholar-base config.json: num_search_queries 2, max_search_depth 2, search_K 50, final_K 30
    "num_queries": 2,  # Q
    "rounds": 2,  # N
    "search_k": 50,
    "final_k": 30,  # K
    "oracle": "none",
    "word_limit": "1500-2000",  # Box 5; the task prompt itself says "Do not exceed 600 words"
    "section_instructions": (
        "Write the Related Works section for the academic paper whose abstract is given in the user query. "
        "Discuss the prior work in the source material, grouped by theme, and relate it to the paper."
    ),
    "references": "cited",  # cited: list only the sources the section cites | all: every top-K source
    "max_parallel_tasks": 4,
    "prompts_dir": "prompts",
    "search": {
        "backend": "arxiv",  # arxiv | corpus (BM25 over the release's reference pool, offline)
        "arxiv_url": "https://export.arxiv.org/api/query",
        "date_filter_in_query": True,
        "timeout_s": 30.0,
        "retries": 3,
        "cache_path": ".reportbench/cache/search.sqlite",
    },
    # litellm settings of this system's own model (not the judge's)
    "model": None,
    "api_base": None,
    "api_key_env": None,
    "temperature": 0.0,
    "seed": 0,
    "max_tokens": 4096,
    "structured_output": "auto",
    "runtime": {},
}
_ALLOWED = set(DEFAULTS) | set(CLIENT_KEYS) | {"kind", "path", "runtime", "release_dir"}


def config(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with the entry; unknown keys and bad values are errors naming the key."""
    unknown = set(spec) - _ALLOWED
    if unknown:
        raise SystemError_(f"systems.{name}: unknown key(s) {sorted(unknown)}; known: {sorted(_ALLOWED)}")
    cfg = merged(DEFAULTS, spec)
    if cfg["oracle"] not in ORACLES:
        raise SystemError_(f"systems.{name}.oracle: {cfg['oracle']!r} is not one of {ORACLES}")
    if cfg["references"] not in ("cited", "all"):
        raise SystemError_(f"systems.{name}.references: expected 'cited' or 'all', got {cfg['references']!r}")
    if cfg["search"].get("backend") not in ("arxiv", "corpus"):
        raise SystemError_(f"systems.{name}.search.backend: expected 'arxiv' or 'corpus'")
    for key in ("num_queries", "rounds", "search_k", "final_k", "max_parallel_tasks"):
        value = cfg[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SystemError_(f"systems.{name}.{key}: expected a positive integer, got {value!r}")
    return cfg


# ------------------------------------------------------------------------------------------- search


class _CorpusSearch:
    """`search.backend: corpus`: BM25 over the release's reference pool (an offline stand-in for arXiv)."""

    def __init__(self, pool: list[Doc]) -> None:
        from reportbench.systems.retrieval import BM25Index  # lazy: +159 ms to import (python -X importtime)

        self.index = BM25Index(pool)

    def search(self, query: str, k: int, cutoff: Any) -> list[Doc]:
        from reportbench.systems.retrieval import terms  # lazy: +159 ms to import (python -X importtime)

        return [d for d, _ in self.index.search(terms(query), k)]


def _searcher(cfg: dict[str, Any], release: Any) -> Any:
    if cfg["search"]["backend"] == "corpus":
        return _CorpusSearch(corpus_docs(release))
    from reportbench.systems.retrieval import ArxivSearch  # lazy: +159 ms to import (python -X importtime)

    return ArxivSearch.from_config(cfg["search"])


# ------------------------------------------------------------------------------------------- oracle


def oracle_docs(release: Any, task: Task, mode: str) -> list[Doc]:
    """The exemplar's important references (arXiv-only or all), as documents with title and abstract."""
    if not release.has_important_refs:
        raise SystemError_(f"oracle {mode!r} needs importance labels, and release {release.meta.name!r} has none")
    refs = {r.ref_key: r for r in release.exemplar_refs(task.task_id)}
    by_arxiv = {d.arxiv_id: d for d in release.corpus if d.arxiv_id}
    docs: list[Doc] = []
    for imp in release.important_refs(task.task_id):
        if mode == "important_arxiv" and not imp.arxiv_id:
            continue
        ref = refs.get(imp.ref_key)
        corpus = by_arxiv.get(imp.arxiv_id) if imp.arxiv_id else None
        title = (corpus.title if corpus else None) or imp.title or (ref.title if ref else None) or imp.ref_key
        abstract = (corpus.abstract if corpus else None) or (ref.abstract if ref else None) or ""
        published = corpus.published_date if corpus else None
        docs.append(
            Doc(
                doc_id=corpus.doc_id if corpus else f"exemplar:{imp.ref_key}",
                title=title,
                abstract=abstract,
                arxiv_id=imp.arxiv_id,
                published=published,
                url=(corpus.url if corpus else None) or (ref.url if ref else None),
                authors=(corpus.authors if corpus else None) or (ref.authors if ref else None),
                origin="oracle",
            )
        )
    return docs


# ------------------------------------------------------------------------------------------ writing

_MARKER_RE = re.compile(r"\[\s*(\d{1,4}(?:\s*(?:,|;|-|–)\s*\d{1,4})*)\s*\]")


def cited_numbers(text: str) -> list[int]:
    """Distinct `[n]` / `[n, m]` / `[n-m]` numbers in first-appearance order."""
    from reportbench.reports.citations import expand_numeric_marker  # lazy: +467 ms to import (python -X importtime)

    seen: dict[int, None] = {}
    for match in _MARKER_RE.finditer(text):
        keys, _ = expand_numeric_marker(match.group(1))
        for key in keys:
            seen.setdefault(int(key), None)
    return list(seen)


def assemble_report(section: str, docs: list[Doc], references: str) -> tuple[str, list[int], list[str]]:
    """(markdown, cited numbers that resolve, warnings): the writer's text with any list of its own cut
    off, then `## References` for the cited sources (or all of them), numbered as in the context."""
    from reportbench.reports.references import split_reference_section  # lazy: +222 ms to import (python -X importtime)

    body, own_list = split_reference_section(section.strip())
    warnings = []
    if own_list is not None:
        warnings.append("the writer added its own reference list; replaced by the harness's numbered list")
    numbers = cited_numbers(body)
    valid = [n for n in numbers if 1 <= n <= len(docs)]
    invalid = [n for n in numbers if n not in valid]
    if invalid:
        warnings.append(f"the writer cited number(s) outside the {len(docs)} sources: {invalid[:10]}")
    if not valid:
        warnings.append(f"the writer cited none of the {len(docs)} sources")
    listed = sorted(valid) if references == "cited" else list(range(1, len(docs) + 1))
    lines = [docs[n - 1].reference_line(n) for n in listed]
    markdown = body.rstrip() + "\n"
    if lines:
        markdown += "\n## References\n\n" + "\n".join(lines) + "\n"
    return markdown, valid, warnings


def _frame(docs: list[Doc]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "order": list(range(len(docs))),
            "doc_id": [d.doc_id for d in docs],
            "snippet": [d.snippet() for d in docs],
        },
        schema={"order": pl.Int64, "doc_id": pl.String, "snippet": pl.String},
    )


def _results_text(docs: list[Doc], limit: int = 30) -> str:
    lines = [f"- {d.title}: {d.abstract[:300]}" for d in docs[:limit]]
    if len(docs) > limit:
        lines.append(f"- ... and {len(docs) - limit} more")
    return "\n".join(lines) or "(no results)"


# --------------------------------------------------------------------------------------------- a task


class _TaskFailed(Exception):
    """A step failed in a way that leaves nothing to write; the message is the recorded reason."""


async def _retrieve(
    task: Task, cfg: dict[str, Any], steps: LLMSteps, searcher: Any, trace: dict[str, Any]
) -> list[Doc]:
    """N rounds of (queries -> searches -> cut-off filter -> summary); returns new documents in order."""
    cutoff = task_cutoff(task)
    found: dict[str, Doc] = {}
    summaries: list[str] = []
    trace["rounds"] = []
    trace["dropped_by_cutoff"] = []
    trace["search_errors"] = []
    for rnd in range(cfg["rounds"]):
        inputs = QueryInput(
            topic=task.task_prompt,
            background="\n\n".join(summaries) or "(none yet: this is the first round of searches)",
            number_of_queries=cfg["num_queries"],
            date=cutoff.date().isoformat(),
        )
        answer, judgment = await steps.ask("queries", f"{task.task_id}/queries/{rnd}", inputs)
        if answer is None:
            if rnd == 0:
                raise _TaskFailed(f"query generation failed: {judgment.error}")
            trace["rounds"].append({"error": f"query generation failed: {judgment.error}"})
            break
        queries = list(dict.fromkeys(q.strip() for q in answer["queries"] if q.strip()))[: cfg["num_queries"]]
        round_trace: dict[str, Any] = {"queries": queries, "retrieved": {}}
        new: list[Doc] = []
        for q in queries:
            try:
                hits = await asyncio.to_thread(searcher.search, q, cfg["search_k"], cutoff)
            except Exception as exc:  # noqa: BLE001 - SearchFailed or a backend bug: record, go on
                trace["search_errors"].append(f"round {rnd} {q!r}: {exc}"[:500])
                continue
            kept, dropped = usable_docs(hits, task)
            trace["dropped_by_cutoff"].extend(d for d in dropped if d not in trace["dropped_by_cutoff"])
            round_trace["retrieved"][q] = [d.doc_id for d in kept]
            for d in kept:
                if d.doc_id not in found:
                    found[d.doc_id] = d
                    new.append(d)
        trace["rounds"].append(round_trace)
        if rnd + 1 < cfg["rounds"] and new:
            answer, judgment = await steps.ask(
                "summary",
                f"{task.task_id}/summary/{rnd}",
                SummaryInput(topic=task.task_prompt, results=_results_text(new)),
            )
            if answer is not None:
                summaries.append(answer["summary"])
            else:
                round_trace["summary_error"] = judgment.error
    if not found:
        errors = f"; search errors: {trace['search_errors'][:2]}" if trace["search_errors"] else ""
        raise _TaskFailed(
            f"no usable source retrieved ({len(trace['dropped_by_cutoff'])} dropped by the cut-off){errors}"
        )
    return list(found.values())


async def run_task(
    task: Task, cfg: dict[str, Any], steps: LLMSteps, searcher: Any, release: Any, trace: dict[str, Any]
) -> tuple[str, list[str]]:
    """(markdown, warnings) for one task, filling `trace`; raises _TaskFailed with the reason otherwise."""
    trace.update({"task_id": task.task_id, "cutoff": task.published_date, "oracle": cfg["oracle"]})
    if cfg["oracle"] != "none":
        docs = oracle_docs(release, task, cfg["oracle"])
        cutoff = task_cutoff(task)
        late = [d for d in docs if d.published and not published_before(d.published, cutoff, d.arxiv_id)]
        trace["dropped_by_cutoff"] = [d.doc_id for d in late]
        top = [d for d in docs if d not in late]
        trace["oracle_docs"] = [d.doc_id for d in top]
        if not top:
            raise _TaskFailed(f"oracle {cfg['oracle']!r}: the exemplar has no such important reference")
    else:
        docs = await _retrieve(task, cfg, steps, searcher, trace)
        frame = _frame(docs)
        kept, judged = await sem_filter(frame, steps, task.task_prompt, task.task_id)
        trace["filter"] = {
            "kept": kept["doc_id"].to_list(),
            "failed": judged.filter(pl.col("filter_error").is_not_null())["doc_id"].to_list(),
        }
        if kept.height == 0:
            n_failed = len(trace["filter"]["failed"])
            raise _TaskFailed(
                f"the filter kept none of {frame.height} retrieved sources ({n_failed} filter call(s) failed)"
            )
        top_frame, scored = await sem_topk(kept, steps, task.task_prompt, cfg["final_k"], task.task_id)
        trace["topk"] = [[d, s] for d, s in zip(top_frame["doc_id"], top_frame["score"], strict=True)]
        trace["topk_failed"] = scored.filter(pl.col("rank_error").is_not_null())["doc_id"].to_list()
        by_id = {d.doc_id: d for d in docs}
        top = [by_id[i] for i in top_frame["doc_id"].to_list()]
    section, judgment = await sem_agg(
        _frame(top),
        steps,
        topic=task.task_prompt,
        section_instructions=cfg["section_instructions"],
        word_limit=str(cfg["word_limit"]),
        item_prefix=task.task_id,
    )
    if section is None:
        raise _TaskFailed(f"aggregation failed: {judgment.error}")
    markdown, valid, warnings = assemble_report(section, top, cfg["references"])
    trace["context"] = [asdict(d) | {"number": i} for i, d in enumerate(top, start=1)]
    trace["cited_numbers"] = valid
    trace["warnings"] = warnings
    return markdown, warnings


# ---------------------------------------------------------------------------------------------- kind


@register_kind("deepscholar_ref")
def run_deepscholar_ref(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    """Run the reference pipeline (or an oracle setting) over every task; one outcome per task."""
    cfg = config(name, spec)
    client_cfg = client_config(name, cfg)
    release = load_release_for(name, spec, tasks, out_dir)
    if cfg["oracle"] != "none" and not release.has_important_refs:
        raise SystemError_(
            f"systems.{name}.oracle={cfg['oracle']!r} needs importance labels; release {release.meta.name!r} has none"
        )
    searcher = _searcher(cfg, release) if cfg["oracle"] == "none" else None
    steps = LLMSteps(client_cfg, prompts_dir=cfg["prompts_dir"])
    run = RunCollector([t.task_id for t in tasks])
    try:
        asyncio.run(_run_all(name, tasks, cfg, steps, searcher, release, out_dir, run))
    finally:
        steps.close()
        if searcher is not None and hasattr(searcher, "close"):
            searcher.close()
    usage = steps.usage_dict()
    write_text(out_dir / "usage.json", json.dumps({"llm": usage}, indent=2, sort_keys=True) + "\n")
    if searcher is not None and hasattr(searcher, "requests"):  # 0 on a fully cached rerun: logged only
        log.info("%s: %d search request(s) sent", name, searcher.requests)
    log.info("%s: llm calls (total, failed) %s", name, {k: (v["calls"], v["failed"]) for k, v in usage.items()})
    return run.result()


async def _run_all(
    name: str,
    tasks: list[Task],
    cfg: dict[str, Any],
    steps: LLMSteps,
    searcher: Any,
    release: Any,
    out_dir: Path,
    run: RunCollector,
) -> None:
    gate = asyncio.Semaphore(cfg["max_parallel_tasks"])

    async def one(task: Task) -> None:
        trace: dict[str, Any] = {}
        async with gate:
            try:
                markdown, warnings = await run_task(task, cfg, steps, searcher, release, trace)
            except SystemError_:
                raise
            except Exception as exc:  # noqa: BLE001 - one broken task is a recorded failure, never a lost run
                reason = str(exc) if isinstance(exc, _TaskFailed) else f"internal: {type(exc).__name__}: {exc}"
                trace["failure"] = reason
                write_trace(out_dir, task.task_id, trace)
                run.fail(task.task_id, reason)
                return
        write_trace(out_dir, task.task_id, trace)
        path = write_text(raw_path(out_dir, task.task_id), markdown)
        run.add(*parse_output(path, system=name, task_id=task.task_id, warnings=warnings))

    await asyncio.gather(*(one(t) for t in tasks))
