"""`kind: offline_baseline` — DeepScholar-ref's shape with no LLM: a weak but honest, fully offline baseline.

Same stages as the reference pipeline, each replaced by its classic lexical counterpart:

- queries (LLM, Q per round, N rounds, conditioned on summaries) -> Q keyword queries per round from the
  title + abstract (tf-idf); later rounds add pseudo-relevance-feedback terms from earlier results;
- arXiv search, search_K per query -> BM25 (rank-bm25) over the release's reference pool, search_K per
  query, only documents provably published before the task;
- sem_filter (LLM) -> keep documents sharing at least `min_shared_terms` content words with the task;
- sem_topk (LLM) -> BM25 score against the whole title + abstract, top K;
- sem_agg (LLM writer) -> extractive writer: one attributed sentence from each kept abstract, cited `[n]`.

Honest limits (docs/systems.md): it can only cite what the local pool holds, it copies sentences instead of
synthesising, and its citations are supported by construction (each sentence comes from the cited
abstract), so Citation Precision / Claim Coverage flatter it while Organization / Nugget Coverage do not.
It never cites anything it did not retrieve, and never a document dated on or after the task's cut-off.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from reportbench.systems.base import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import (
    Doc,
    RunCollector,
    corpus_docs,
    load_release_for,
    merged,
    parse_output,
    raw_path,
    usable_docs,
    write_text,
    write_trace,
)
from reportbench.systems.retrieval import BM25Index, PoolTerms, terms
from reportbench.types import Report, Task

DEFAULTS: dict[str, Any] = {
    "num_queries": 2,  # Q: queries per round
    "rounds": 2,  # N: search rounds
    "search_k": 50,  # results kept per query
    "final_k": 30,  # K: documents kept after ranking
    "terms_per_query": 6,
    "feedback_terms": 3,  # new terms per later-round query, taken from earlier results
    "min_shared_terms": 3,  # filter: distinct content words shared with the task's title + abstract
    "max_words": 600,  # the task prompt's limit for the section
    "sentences_per_paragraph": 4,
}


def _config(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    cfg = merged(DEFAULTS, {k: v for k, v in spec.items() if k not in ("kind", "path", "release_dir")})
    unknown = set(cfg) - set(DEFAULTS)
    if unknown:
        raise SystemError_(f"systems.{name}: unknown key(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    for key in DEFAULTS:
        if not isinstance(cfg[key], int) or isinstance(cfg[key], bool) or cfg[key] < 0:
            raise SystemError_(f"systems.{name}.{key}: expected a non-negative integer, got {cfg[key]!r}")
    if cfg["num_queries"] < 1 or cfg["rounds"] < 1 or cfg["final_k"] < 1 or cfg["terms_per_query"] < 1:
        raise SystemError_(f"systems.{name}: num_queries, rounds, final_k and terms_per_query must be >= 1")
    return cfg


def _idf(docs: list[Doc], pool_terms: PoolTerms) -> dict[str, float]:
    df: Counter[str] = Counter()
    for d in docs:
        df.update(pool_terms.term_set(d))
    n = len(docs)
    return {t: math.log((n + 1) / (c + 1)) + 1.0 for t, c in df.items()}


def _ranked_terms(tokens: list[str], idf: dict[str, float], exclude: set[str] = frozenset()) -> list[str]:
    """Distinct terms by tf * idf (unseen terms get the highest idf), ties by first position."""
    tf = Counter(tokens)
    first = {t: i for i, t in reversed(list(enumerate(tokens)))}
    default_idf = max(idf.values(), default=1.0)
    ranked = sorted((t for t in tf if t not in exclude), key=lambda t: (-tf[t] * idf.get(t, default_idf), first[t]))
    return ranked


def _sentences(text: str) -> list[str]:
    from reportbench.reports.sentences import split_sentences  # lazy: +110 ms to import (python -X importtime)

    return [s for s in split_sentences(" ".join((text or "").split())) if len(s.split()) >= 4]


def attributed_sentence(doc: Doc, task_terms: set[str]) -> str:
    """The abstract sentence that shares most content words with the task, attributed to its paper
    (first person rewritten so the sentence reads as a description of prior work)."""
    candidates = _sentences(doc.abstract)
    short_title = doc.title.split(":")[0].strip().rstrip(".") or doc.title
    if not candidates:
        return f"{short_title} is related prior work"
    best = max(candidates, key=lambda s: (len(set(terms(s)) & task_terms), -candidates.index(s)))
    s = best.strip().rstrip(".!?;: ")
    words = s.split(" ", 1)
    if words[0] in ("We", "we") and len(words) > 1:
        s = f"The authors of {short_title} {words[1]}"
    else:
        # lower-case the opening word unless it is an acronym or a name like 'GroundedQA' / 'Horvitz-Thompson'
        first = s[:1].lower() if not any(c.isupper() for c in words[0][1:]) else s[:1]
        s = f"In {short_title}, {first}{s[1:]}"
    for old, new in ((" we ", " they "), (" our ", " their "), (" us ", " them "), (" We ", " They ")):
        s = s.replace(old, new)
    return s


def _write_report(
    task: Task, ranked: list[Doc], first_query: dict[str, int], cfg: dict[str, Any]
) -> tuple[str, list[Doc]]:
    """Extractive related-work section: paragraphs grouped by the query that found the documents."""
    task_terms = set(terms(f"{task.title} {task.abstract}"))
    rank = {d.doc_id: i for i, d in enumerate(ranked)}
    groups: dict[int, list[Doc]] = {}
    for d in ranked:
        groups.setdefault(first_query.get(d.doc_id, 0), []).append(d)
    ordered = sorted(groups.values(), key=lambda g: rank[g[0].doc_id])
    cited: list[Doc] = []
    paragraphs: list[list[str]] = [[]]
    words = 0
    budget = max(1, cfg["max_words"])
    per_para = max(1, cfg["sentences_per_paragraph"])
    for group in ordered:
        if len(paragraphs[-1]) >= 2:  # a new group starts a new paragraph, unless that leaves a stub
            paragraphs.append([])
        for d in group:
            sentence = attributed_sentence(d, task_terms)
            n_words = len(sentence.split())
            if cited and words + n_words > budget:
                break
            if len(paragraphs[-1]) == per_para:
                paragraphs.append([])
            cited.append(d)
            words += n_words
            paragraphs[-1].append(f"{sentence} [{len(cited)}].")
        if cited and words + 1 > budget:
            break
    paragraphs = [p for p in paragraphs if p]
    body = "\n\n".join(" ".join(p) for p in paragraphs)
    refs = "\n".join(d.reference_line(i) for i, d in enumerate(cited, start=1))
    return f"## Related Work\n\n{body}\n\n## References\n\n{refs}\n", cited


def run_task(
    task: Task, pool: list[Doc], cfg: dict[str, Any], pool_terms: PoolTerms | None = None
) -> tuple[str | None, dict[str, Any]]:
    """(markdown or None, trace). None means nothing usable was retrieved; the trace says why.

    `pool_terms` is the pool tokenised once per stage (built here when not given): a task only filters the
    pool by its cut-off and computes BM25 statistics over what is left, so each task sees exactly the index
    it would have built alone, without re-tokenising the pool."""
    if pool_terms is None:
        pool_terms = PoolTerms(pool)
    docs, dropped = usable_docs(pool, task)
    trace: dict[str, Any] = {
        "task_id": task.task_id,
        "cutoff": task.published_date,
        "pool": len(pool),
        "dropped_by_cutoff_or_self": sorted(dropped),
        "rounds": [],
    }
    if not docs:
        trace["failure"] = "no document in the pool is provably published before the task"
        return None, trace
    index = BM25Index(docs, pool_terms=pool_terms)
    idf = _idf(docs, pool_terms)
    task_tokens = [*terms(task.title), *terms(task.title), *terms(task.abstract)]
    task_ranked = _ranked_terms(task_tokens, idf)
    task_set = set(task_tokens)
    per_q = cfg["terms_per_query"]

    found: dict[str, Doc] = {}
    first_query: dict[str, int] = {}
    used: set[str] = set()
    query_no = 0
    for rnd in range(cfg["rounds"]):
        if rnd == 0:
            queries = [task_ranked[i * per_q : (i + 1) * per_q] for i in range(cfg["num_queries"])]
        else:
            feedback_tokens = [
                t for d in found.values() if _passes(d, task_set, cfg, pool_terms) for t in pool_terms.terms(d)
            ]
            fresh = _ranked_terms(feedback_tokens, idf, exclude=used)
            f = max(1, cfg["feedback_terms"])
            anchor = task_ranked[:2]
            queries = [fresh[i * f : (i + 1) * f] + anchor for i in range(cfg["num_queries"]) if fresh[i * f :]]
        queries = [q for q in queries if q]
        round_trace: dict[str, Any] = {"queries": [" ".join(q) for q in queries], "retrieved": []}
        for q in queries:
            used.update(q)
            hits = index.search(q, cfg["search_k"])
            for d, _ in hits:
                if d.doc_id not in found:
                    found[d.doc_id] = d
                    first_query[d.doc_id] = query_no
            round_trace["retrieved"].append([d.doc_id for d, _ in hits])
            query_no += 1
        trace["rounds"].append(round_trace)
        if not queries:
            break
    kept = [d for d in found.values() if _passes(d, task_set, cfg, pool_terms)]
    trace["filtered_out"] = sorted(d for d in found if d not in {k.doc_id for k in kept})
    full = dict(zip((d.doc_id for d in docs), index.scores(task_tokens), strict=True))
    ranked = sorted(kept, key=lambda d: (-round(full[d.doc_id], 6), d.doc_id))[: cfg["final_k"]]
    trace["ranked"] = [[d.doc_id, round(full[d.doc_id], 4)] for d in ranked]
    if not ranked:
        trace["failure"] = f"retrieved {len(found)} document(s), none passed the filter"
        return None, trace
    markdown, cited = _write_report(task, ranked, first_query, cfg)
    trace["cited"] = [d.doc_id for d in cited]
    return markdown, trace


def _passes(doc: Doc, task_set: set[str], cfg: dict[str, Any], pool_terms: PoolTerms) -> bool:
    return len(pool_terms.term_set(doc) & task_set) >= cfg["min_shared_terms"]


@register_kind("offline_baseline")
def run_offline_baseline(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    """BM25 over the release's reference pool + an extractive writer; one outcome per task."""
    cfg = _config(name, spec)
    release = load_release_for(name, spec, tasks, out_dir)
    pool = corpus_docs(release)
    pool_terms = PoolTerms(pool)  # tokenised once per stage, shared by every task (linear in the tasks)
    run = RunCollector([t.task_id for t in tasks])
    for task in tasks:
        try:
            markdown, trace = run_task(task, pool, cfg, pool_terms)
        except Exception as exc:  # noqa: BLE001 - one broken task is a recorded failure, not a lost run
            run.fail(task.task_id, f"internal: {type(exc).__name__}: {exc}")
            continue
        write_trace(out_dir, task.task_id, trace)
        if markdown is None:
            run.fail(task.task_id, str(trace.get("failure")))
            continue
        path = write_text(raw_path(out_dir, task.task_id), markdown)
        run.add(*parse_output(path, system=name, task_id=task.task_id))
    return run.result()
