"""Stage `publish`: splits, the ResearchQA release files, the dataset card and the build's statistics.

* **Splits** (paper §2.5, `protocols.researchqa.release.assign_splits`): per field, a seeded shuffle; the first
  `test_per_field` queries are test, the next up to `valid_per_field` valid, the rest train. A field with fewer
  than `test_per_field` queries gets no split (recorded, `field_below_test_size`).
* **Release** (`live_researchqa/releases/<name>/`): `test.json`, `valid.json`, `train.json` and `full.json`
  (every row) in the public dataset's row shape — `id, general_domain, subdomain, field, query, date,
  rubric[{rubric_item, type, citation_metadata}]` — so the ResearchQA importer (`kind: path`) reads it like the
  authors' files; `sources.json` (per query: survey, section, reference answer — what a leakage check needs);
  `dropped.parquet` (every drop of every stage); `CARD.md`; `release.json` (manifest with file hashes).
* **Statistics** (`metrics/live_researchqa/release.json`, a DVC metric): counts per stage, drops per stage and
  reason (every known reason present, 0 when unused, so two months diff key by key), split and domain/field
  counts, requests and judge items/tokens per kept query, and the generator cost per 1,000 queries estimated
  from the recorded token counts.

Everything but the request counts is a pure function of the previous stages' outputs (no wall clock), so a
rebuild from the caches writes a byte-identical release.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.live_builder.stage_io import fresh_dir, write_parquet
from reportbench.protocols.researchqa.release import assign_splits
from reportbench.release.card import CITATIONS, hub_licence, size_category
from reportbench.survey_builder import queries as q_mod
from reportbench.survey_builder import rubrics as r_mod
from reportbench.survey_builder import sections as s_mod
from reportbench.survey_builder import surveys as sv_mod
from reportbench.survey_builder.config import SurveyConfig
from reportbench.survey_builder.queries import QueryRecord
from reportbench.survey_builder.records import Drop
from reportbench.survey_builder.rubrics import Candidate

STAGE = "publish"
SPLIT_FILES = ("test", "valid", "train", "full")
DROP_REASONS: dict[str, tuple[str, ...]] = {
    "surveys": sv_mod.DROP_REASONS,
    "sections": s_mod.DROP_REASONS,
    "queries": q_mod.DROP_REASONS,
    "rubrics": r_mod.DROP_REASONS,
    "publish": ("field_below_test_size",),
}
DEFAULT_LICENCE = (
    "mixed: queries, reference answers and rubrics are derived from each source survey's arXiv LaTeX source, "
    "which keeps its own arXiv licence (check https://arxiv.org/abs/<id> before redistributing); OpenAlex "
    "metadata CC0"
)


def _dump(data: Any) -> bytes:
    return (json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode()


def citation_metadata(c: Candidate) -> dict[str, Any] | None:
    if c.kind != "citation":
        return None
    url = f"https://doi.org/{c.match_doi}" if c.match_doi else c.match_openalex_id
    return {
        "first_author": c.first_author,
        "title": c.match_title or c.cited_title,
        "url": url,
        "year": c.match_year if c.match_year is not None else c.year,
    }


def release_row(q: QueryRecord, items: Sequence[Candidate]) -> dict[str, Any]:
    """One query in the public dataset's shape (`origin` is ours: which set the item came from)."""
    return {
        "id": q.query_id,
        "general_domain": q.general_domain,
        "subdomain": q.subdomain,
        "field": q.field,
        "query": q.query,
        "date": q.date,
        "rubric": [
            {"rubric_item": c.text, "type": [c.kind], "citation_metadata": citation_metadata(c), "origin": c.origin}
            for c in items
        ],
    }


def source_row(q: QueryRecord) -> dict[str, Any]:
    return {
        "id": q.query_id,
        "survey_id": q.survey_id,
        "survey_title": q.survey_title,
        "section_title": q.section_title,
        "reference_answer": q.answer,
        "initial_query": q.initial_query,
        "support_sentences": q.support,
    }


def split_rows(
    queries: Sequence[QueryRecord], rubrics: Mapping[str, Sequence[Candidate]], cfg: SurveyConfig
) -> tuple[dict[str, list[dict[str, Any]]], list[QueryRecord], list[Drop]]:
    """Rows per split file, the published queries, and the queries no split could take."""
    final = [q for q in queries if q.query_id in rubrics]
    sp = cfg.splits
    split = assign_splits(
        [q.query_id for q in final], [q.field for q in final], seed=sp.seed,
        test_per_field=sp.test_per_field, valid_per_field=sp.valid_per_field,
    )  # fmt: skip
    drops = []
    sizes = Counter(q.field for q in final)
    for q in final:
        if q.query_id not in split:
            drops.append(
                Drop(item_id=q.query_id, kind="query", stage=STAGE, reason_code="field_below_test_size",
                     reason=f"field {q.field!r} has {sizes[q.field]} queries < test_per_field={sp.test_per_field}")
            )  # fmt: skip
    published = sorted((q for q in final if q.query_id in split), key=lambda q: q.query_id)
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLIT_FILES}
    for q in published:
        row = release_row(q, rubrics[q.query_id])
        rows[split[q.query_id]].append(row)
        rows["full"].append(row)
    return rows, published, drops


# ----------------------------------------------------------------------------------------------- stats
def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def judge_totals(judgment_files: Sequence[Path]) -> dict[str, Any]:
    """Items, failures and tokens over every generator/filter judgment (cache hits keep their original tokens)."""
    items = failed = calls = p_tok = c_tok = 0
    by_task: dict[str, int] = {}
    for f in judgment_files:
        cols = ["task", "status", "cache_hit", "attempts", "prompt_tokens", "completion_tokens"]
        df = pl.read_parquet(f, columns=cols, glob=False)
        items += df.height
        failed += df.filter(pl.col("status") != "ok").height
        calls += int(df.filter(~pl.col("cache_hit"))["attempts"].sum() or 0)
        p_tok += int(df["prompt_tokens"].fill_null(0).sum() or 0)
        c_tok += int(df["completion_tokens"].fill_null(0).sum() or 0)
        if df.height:
            by_task[str(df["task"][0])] = by_task.get(str(df["task"][0]), 0) + df.height
    return {"items": items, "failed": failed, "calls_this_build": calls, "prompt_tokens": p_tok,
            "completion_tokens": c_tok, "items_by_task": dict(sorted(by_task.items()))}  # fmt: skip


def release_stats(
    cfg: SurveyConfig,
    rows: Mapping[str, Sequence[Mapping[str, Any]]],
    drops: Sequence[Drop],
    counts: Mapping[str, int],
    requests: Mapping[str, Mapping[str, Any]],
    judge: Mapping[str, Any],
) -> dict[str, Any]:
    full = rows["full"]
    n = len(full)
    by_stage: dict[str, Counter[str]] = defaultdict(Counter)
    for d in drops:
        by_stage[d.stage][d.reason_code] += 1
    items = [it for r in full for it in r["rubric"]]
    total_requests = sum(int(v.get("requests", 0)) for v in requests.values())
    tokens_in, tokens_out = int(judge.get("prompt_tokens", 0)), int(judge.get("completion_tokens", 0))
    cost = (tokens_in * cfg.cost.price_in_per_mtok + tokens_out * cfg.cost.price_out_per_mtok) / 1e6
    return {
        "name": cfg.name,
        "counts": dict(counts) | {"queries_published": n, "rubric_items": len(items)},
        "dropped_by_stage": {
            stage: {code: by_stage[stage].get(code, 0) for code in sorted({*codes, *by_stage[stage]})}
            for stage, codes in DROP_REASONS.items()
        },
        "splits": {s: len(rows[s]) for s in ("test", "valid", "train")},
        "fields": len({r["field"] for r in full}),
        "domains": dict(sorted(Counter(r["general_domain"] for r in full).items())),
        "rubric": {
            "items_per_query_mean": _mean([len(r["rubric"]) for r in full]),
            "share_from_survey": (
                round(sum(1 for it in items if it["origin"] == "survey") / len(items), 4) if items else None
            ),
            "by_type": dict(sorted(Counter(t for it in items for t in it["type"]).items())),
        },
        "requests": {
            "total": total_requests,
            "by_stage": {k: int(v.get("requests", 0)) for k, v in sorted(requests.items())},
            "cache_hits": sum(int(v.get("cache_hits", 0)) for v in requests.values()),
            "per_kept_query": round(total_requests / n, 4) if n else None,
        },
        "judge": {
            **{k: v for k, v in judge.items() if k != "items_by_task"},
            "items_per_kept_query": round(judge.get("items", 0) / n, 4) if n else None,
            "tokens_per_kept_query": round((tokens_in + tokens_out) / n, 1) if n else None,
            # no recorded tokens (the offline judge) is "unknown", not free
            "cost_usd": round(cost, 6) if tokens_in + tokens_out else None,
            "cost_per_1000_queries_usd": round(cost / n * 1000, 4) if n and tokens_in + tokens_out else None,
        },
    }  # fmt: skip


# ------------------------------------------------------------------------------------------------ card
def card(cfg: SurveyConfig, rows: Mapping[str, Sequence[Mapping[str, Any]]], stats: Mapping[str, Any],
         judge_params: Mapping[str, Any]) -> str:  # fmt: skip
    table: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for split in ("test", "valid", "train"):
        for r in rows[split]:
            table[(r["general_domain"], r["subdomain"], r["field"])][split] += 1
    lines = [
        f"# {cfg.name}",
        "",
        "A ResearchQA-style release built from recent surveys by reportbench's survey builder",
        "(`live_researchqa/dvc.yaml`, docs/researchqa-builder.md). Rows have the public dataset's shape;",
        "evaluate with the ResearchQA benchmark (`kind: path` on this folder).",
        "",
        "**Prompts are a reconstruction.** The authors' construction prompts are not public; every generator and",
        "filter prompt used here (`prompts/survey_builder/`) is our own wording of the paper's description.",
        "",
        "## Build",
        "",
        f"- surveys: OpenAlex works of type {', '.join(cfg.work_types)} published {cfg.window.start} .. "
        f"{cfg.window.end}, title keywords {', '.join(repr(k) for k in cfg.title_keywords)}; fields "
        f"{', '.join(cfg.fields) if cfg.fields else 'all'}; arXiv LaTeX full text only",
        f"- literature-review check: {'on' if cfg.survey_check else 'off'}",
        f"- sections: >= {cfg.sections.min_sentences} sentences, {cfg.sections.min_chars}..{cfg.sections.max_chars} "
        f"characters, >= {cfg.sections.min_citations} in-text citations, title blacklist of "
        f"{len(cfg.sections.title_blacklist)} words",
        f"- queries: >= {cfg.queries.min_support_sentences} supporting sentences; self-containment >= "
        f"{cfg.queries.min_self_containment}; answer variability <= {cfg.queries.max_answer_variability}; rephrased; "
        f"no citation; answer >= {cfg.queries.min_answer_chars} characters; keyword filter; field alignment; "
        f">= {cfg.queries.min_queries_per_field} queries per field",
        f"- rubrics: survey-conditioned + parametric sets ({cfg.rubrics.information} information, "
        f"{cfg.rubrics.depth} depth, {cfg.rubrics.citation} citation each), deduplicated, vacuous items removed, "
        f"citations matched to OpenAlex at rapidfuzz ratio >= {cfg.rubrics.title_threshold}, top "
        f"{cfg.rubrics.top_k} by importance",
        f"- splits: {cfg.splits.test_per_field} test and up to {cfg.splits.valid_per_field} valid per field "
        f"(seed {cfg.splits.seed}), the rest train",
        f"- generator / filter judge: `{judge_params.get('name')}` (backend `{judge_params.get('backend')}`, "
        f"model `{cfg.generator_model or judge_params.get('model')}`)"
        + (" — **offline rules: a plumbing release, not for publication**"
           if judge_params.get("backend") == "offline" else ""),  # fmt: skip
        "",
        "## Counts",
        "",
        f"- queries: {len(rows['full'])} (test {len(rows['test'])}, valid {len(rows['valid'])}, "
        f"train {len(rows['train'])}) in {stats['fields']} fields; rubric items {stats['counts']['rubric_items']} "
        f"({stats['rubric']['items_per_query_mean']} per query, share from the survey-conditioned set "
        f"{stats['rubric']['share_from_survey']})",
        "",
        "| general_domain | subdomain | field | test | valid | train | total |",
        "|---|---|---|---|---|---|---|",
    ]
    for (dom, sub, fld), c in sorted(table.items()):
        lines.append(f"| {dom} | {sub} | {fld} | {c['test']} | {c['valid']} | {c['train']} | {sum(c.values())} |")
    lines += ["", "## Dropped (every item that left, by stage and reason; details in `dropped.parquet`)", ""]
    for stage, reasons in stats["dropped_by_stage"].items():
        used = ", ".join(f"{k} {v}" for k, v in reasons.items() if v) or "none"
        lines.append(f"- {stage}: {used}")
    lines += [
        "",
        "## Licences",
        "",
        "- OpenAlex metadata (titles, topics, dates): CC0.",
        "- Queries, reference answers (`sources.json`) and rubric items are derived from each source survey's arXiv",
        "  LaTeX; each survey keeps its own arXiv licence (https://arxiv.org/abs/<id>). Check before redistributing.",
        "",
    ]
    return "\n".join(lines)


def hub_readme(name: str, licence: str, rows: Mapping[str, Sequence[Mapping[str, Any]]], card_text: str) -> str:
    """README.md: a Hugging Face card header (one config, the three splits; `datasets.load_dataset(<dir>)` reads
    it), then the card, how to load it, and the benchmark paper's citation."""

    hub = hub_licence(licence)
    head = ["---", f"pretty_name: {json.dumps(name)}", f"license: {hub}"]
    if hub == "other":
        head.append(f"license_name: {json.dumps(licence)}")
    head += ["language:", "- en", "task_categories:", "- question-answering", "- text-generation", "tags:"]
    head += ["- researchqa", "- reportbench", "- survey-mined", "size_categories:"]
    head += [f"- {size_category(len(rows['full']))}", "configs:", "- config_name: default", "  data_files:"]
    for split, file in (("test", "test.json"), ("validation", "valid.json"), ("train", "train.json")):
        if rows[file.removesuffix(".json")]:
            head += [f"  - split: {split}", f"    path: {file}"]
    head.append("---")
    body = [
        "",
        card_text.rstrip(),
        "",
        "## Loading",
        "",
        "```python",
        "# the ResearchQA benchmark of reportbench: -S researchqa/release=researchqa",
        "#   -S benchmarks.researchqa.release.path=<this folder> (docs/researchqa-builder.md)",
        "import json; rows = json.load(open('test.json'))",
        "# Hugging Face datasets: datasets.load_dataset('<this folder>')  (splits test / validation / train)",
        "```",
        "",
        "## Citation",
        "",
        "The construction follows ResearchQA; please cite its paper:",
        "",
        "```bibtex",
        CITATIONS["researchqa"],
        "```",
        "",
    ]
    return "\n".join(head + body)


# ---------------------------------------------------------------------------------------------- writing
def write_release(
    out_dir: Path,
    rows: Mapping[str, Sequence[Mapping[str, Any]]],
    sources: Sequence[Mapping[str, Any]],
    card_text: str,
    meta: Mapping[str, Any],
    drops_frame: pl.DataFrame,
) -> dict[str, Any]:
    fresh_dir(out_dir)
    files: dict[str, str] = {}
    for split in SPLIT_FILES:
        data = _dump(list(rows[split]))
        (out_dir / f"{split}.json").write_bytes(data)
        files[f"{split}.json"] = hashlib.sha256(data).hexdigest()
    data = _dump(list(sources))
    (out_dir / "sources.json").write_bytes(data)
    files["sources.json"] = hashlib.sha256(data).hexdigest()
    write_parquet(out_dir / "dropped.parquet", drops_frame)
    (out_dir / "CARD.md").write_text(card_text, encoding="utf-8")
    files["CARD.md"] = hashlib.sha256(card_text.encode()).hexdigest()
    readme = hub_readme(str(meta["name"]), str(meta["licence"]), rows, card_text)
    (out_dir / "README.md").write_text(readme, encoding="utf-8")
    files["README.md"] = hashlib.sha256(readme.encode()).hexdigest()
    manifest = {**meta, "rows": {s: len(rows[s]) for s in SPLIT_FILES}, "files": files}
    (out_dir / "release.json").write_bytes(_dump(manifest))
    return manifest
