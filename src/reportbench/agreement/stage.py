"""Stage `agreement@<benchmark>`: how far the benchmark's judges agree, written as a judge card.

What it compares (docs/agreement.md):
- the judge stage's records of every ensemble member (member vs member when there are several);
- a second judge re-judging the *same items* (rebuilt from the judge stage's own derived tables, so chained
  steps such as claim extraction -> verification see the same claims): by default the litellm judge against
  the loopback stub server, whose answers are scripted from a hash of each request. That pair measures the
  plumbing, not validity: the stub's verdicts are arbitrary, so its kappa should sit near 0.
  `agreement.second_judge` may instead be a full litellm judge config (a real model);
- human labels in `<release source>/human_labels.csv` (docs/agreement.md), against every judge;
- self-consistency: every judge re-sampled `samples` times (the sample index is part of the LLM cache key).
Every record it judges is written under `out_dir`, so each figure in the card is recomputable from files.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.agreement.card import (
    Section,
    agreement_section,
    build_card,
    confusion_section,
    position_section,
    self_consistency_section,
    system_means_section,
    write_card,
)
from reportbench.agreement.compare import (
    TaskAgreement,
    compare,
    cross_position_consistency,
    position_consistency,
    self_consistency,
)
from reportbench.agreement.records import Rating, ratings_from_judgments, read_human_labels
from reportbench.agreement.sampling import stratified_sample
from reportbench.progress import progress_enabled

log = logging.getLogger("reportbench.agreement")

DEFAULT_AGREEMENT: dict[str, Any] = {
    "second_judge": "none",  # none | stub | a litellm judge config mapping (a real model)
    "samples": 2,  # self-consistency: re-samples per judge (>= 2 to measure anything)
    "max_items": 60,  # per judge task: cap on items the second judge and the re-samples judge (stratified)
    "bootstrap": 1000,  # resamples of benchmark tasks for the intervals
    "seed": 0,
    "human_labels": "human_labels.csv",  # file name looked up in the release source folder
}

STUB_JUDGE: dict[str, Any] = {
    "name": "stub",
    "backend": "litellm",
    "model": "openai/stub-judge",
    "api_key_env": None,
    "temperature": 0.0,
    "seed": 0,
    "max_tokens": 1024,
    "structured_output": "json_schema",
    "task_models": {},
    "prompts": "ours",
    "runtime": {"max_concurrency": 32, "timeout_s": 10, "max_retries": 2, "backoff_base_s": 0.05,
                "backoff_max_s": 0.5, "parse_retries": 1, "cache_path": None, "progress": False},
}  # fmt: skip


def agreement_params(params: Mapping[str, Any]) -> dict[str, Any]:
    cfg = dict(DEFAULT_AGREEMENT)
    cfg.update(dict(params.get("agreement") or {}))
    return cfg


def _judge_name(cfg: Mapping[str, Any], member: str, members: list[str]) -> str:
    name = str(cfg.get("name") or cfg.get("backend") or "judge")
    return name if members == ["main"] else f"{name}[{member}]"


@contextlib.contextmanager
def _second_judge_config(spec: Any) -> Iterator[dict[str, Any] | None]:
    """The second judge's config; for `stub`, a loopback stub server runs for the duration."""
    if spec in (None, "none", False):
        yield None
        return
    if spec == "stub":
        from reportbench.stub_server import stub_server_thread  # lazy: +424 ms to import (python -X importtime)

        with stub_server_thread() as server:
            yield {**STUB_JUDGE, "api_base": server.base_url}
        return
    if isinstance(spec, Mapping):
        yield dict(spec)
        return
    raise ValueError(f"agreement.second_judge: expected 'stub', 'none' or a judge config mapping, got {spec!r}")


def _load_member(judgments_dir: Path, system: str, member: str) -> tuple[dict[str, list[Any]], dict[str, pl.DataFrame]]:
    from reportbench.judges.runner import read_judgments  # lazy: +305 ms to import (python -X importtime)

    d = Path(judgments_dir) / system / member
    judgments = {p.stem: read_judgments(p) for p in sorted(d.glob("*.parquet"))}
    derived = {p.stem: pl.read_parquet(p, glob=False) for p in sorted((d / "derived").glob("*.parquet"))}
    return judgments, derived


def rebuild_items(
    params: Mapping[str, Any],
    benchmark: str,
    release: Any,
    runs_dir: Path,
    judgments_dir: Path,
    pages: Mapping[str, Any] | None,
    member: str,
    systems: list[str],
) -> tuple[dict[tuple[str, str], list[Any]], dict[str, str], list[str]]:
    """The judge stage's items, rebuilt from its own records and derived tables (so chained steps see the same
    claims): {(system, step): items}, {step: judge task}, notes. Items the records do not hold are dropped."""
    from reportbench.benchmarks import JudgeContext, get_benchmark  # lazy: +303 ms to import (python -X importtime)
    from reportbench.pipeline import benchmark_params  # lazy: +76 ms to import (python -X importtime)
    from reportbench.systems import read_outcomes, read_reports  # lazy: +161 ms to import (python -X importtime)

    spec = get_benchmark(benchmark)
    notes: list[str] = []
    items_by_step: dict[tuple[str, str], list[Any]] = {}
    step_task: dict[str, str] = {}
    for s in systems:
        recorded, derived = _load_member(judgments_dir, s, member)
        ctx = JudgeContext(
            benchmark=benchmark, system=s, member=member, params=benchmark_params(params, benchmark),
            release=release, reports=read_reports(Path(runs_dir) / s), outcomes=read_outcomes(Path(runs_dir) / s),
            pages=pages, derived=dict(derived), judgments=dict(recorded),
        )  # fmt: skip
        for step in spec.judge_steps:
            if step.kind != "judge" or step.items is None:
                continue
            try:
                items = list(step.items(ctx))
            except Exception as exc:  # noqa: BLE001 - a step we cannot rebuild is a note on the card, not a crash
                notes.append(f"{s}/{step.name}: items could not be rebuilt ({type(exc).__name__}: {exc})")
                continue
            known = {j.item_id for j in recorded.get(step.name, [])}
            stale = [i for i in items if i.item_id not in known]
            if stale:
                notes.append(f"{s}/{step.name}: {len(stale)} rebuilt item(s) not in the judge stage's records, skipped")
            items_by_step[(s, step.name)] = [i for i in items if i.item_id in known]
            step_task[step.name] = step.judge_task
    return items_by_step, step_task, notes


def _rejudge(task: str, cfg: Mapping[str, Any], items: list[Any], sample: int, desc: str) -> list[Any]:
    from reportbench.judges.factory import make_judge  # lazy: +201 ms to import (python -X importtime)
    from reportbench.judges.runner import run_judgments_sync  # lazy: +305 ms to import (python -X importtime)

    cfg = dict(cfg)
    # the second judge's pass gets the judge stages' progress bar (judge.runtime.progress, REPORTBENCH_PROGRESS)
    show = bool((cfg.get("runtime") or {}).get("progress", True)) and progress_enabled()
    cfg["runtime"] = {**(cfg.get("runtime") or {}), "progress": show}
    kwargs: dict[str, Any] = {}
    if cfg.get("backend") == "litellm":
        if sample and cfg.get("seed") is not None:
            cfg["seed"] = int(cfg["seed"]) + sample  # sample k asks with seed+k (and is keyed on k)
        kwargs = {"sample": sample, "cache": bool((cfg.get("runtime") or {}).get("cache_path"))}
    judge = make_judge(task, cfg, **kwargs)
    try:
        items_in = [(i.item_id, i.typed(), dict(i.input_ids)) for i in items]
        return list(run_judgments_sync(judge, items_in, desc=desc, progress=show))
    finally:
        close = getattr(judge, "close", None)
        if close is not None:
            close()


def run_agreement_stage(
    params: Mapping[str, Any],
    benchmark: str,
    release_dir: Path,
    runs_dir: Path,
    judgments_dir: Path,
    out_dir: Path,
    metrics_dir: Path,
    pages_dir: Path | None = None,
    human_labels: Path | None = None,
    cross_dir: Path | None = None,
) -> dict[str, Any]:
    """Judge card for one benchmark x release; returns the card."""
    from reportbench.config import require  # lazy: +34 ms to import (python -X importtime)

    # lazy: +305 ms to import (python -X importtime)
    from reportbench.judges.runner import reason_class, write_judgments

    # lazy: +76 ms to import (python -X importtime)
    from reportbench.pipeline import _load_pages, judge_config, read_release

    acfg = agreement_params(params)
    samples, n_boot, seed = int(acfg["samples"]), int(acfg["bootstrap"]), int(acfg["seed"])
    systems = list(require(params, f"plan.benchmarks.{benchmark}.systems"))
    members = list(require(params, f"plan.benchmarks.{benchmark}.members"))
    release = read_release(Path(release_dir), benchmark)
    pages = _load_pages(pages_dir)
    out_dir = Path(out_dir)
    notes: list[str] = []

    judges: dict[str, list[Rating]] = {}
    judge_ids: dict[str, set[str]] = {}
    resamples: dict[str, dict[int, list[Rating]]] = {}
    primary_cfg = {m: judge_config(params, "support", benchmark, m) for m in members}
    for m in members:
        name = _judge_name(primary_cfg[m], m, members)
        judges[name] = []
        for s in systems:
            recorded, _ = _load_member(judgments_dir, s, m)
            for step_records in recorded.values():
                judges[name].extend(ratings_from_judgments(name, s, step_records))
                judge_ids.setdefault(name, set()).update(j.judge_id for j in step_records)

    # Items to re-judge: rebuilt from the first member's derived tables, capped per judge task (stratified by
    # the recorded verdict, seeded).
    first = members[0]
    first_name = _judge_name(primary_cfg[first], first, members)
    items_by_step, step_task, rebuild_notes = rebuild_items(
        params, benchmark, release, Path(runs_dir), Path(judgments_dir), pages, first, systems
    )
    notes.extend(rebuild_notes)
    label_of = {(r.system, r.item_id): str(r.label if r.label is not None else r.value) for r in judges[first_name]}
    chosen: dict[tuple[str, str], list[Any]] = {}
    for step_name in sorted(step_task):
        pool = [(s, i) for (s, st), its in sorted(items_by_step.items()) if st == step_name for i in its]
        picked = stratified_sample(
            pool, [label_of.get((s, i.item_id), "?") for s, i in pool], int(acfg["max_items"]), seed
        )
        for s, i in picked:
            chosen.setdefault((s, step_name), []).append(i)

    failures: dict[tuple[str, str], Counter[str]] = {}
    judged: Counter[tuple[str, str]] = Counter()

    def judge_all(name: str, cfg_for: Callable[[str], Mapping[str, Any]], sample: int) -> list[Rating]:
        out: list[Rating] = []
        for (s, step_name), items in sorted(chosen.items()):
            task = step_task[step_name]
            records = _rejudge(task, cfg_for(task), items, sample, f"agreement:{name}:{s}:{step_name}:{sample}")
            # latency, attempts and cache hits describe this run, not the verdicts: zeroed so that the outputs are a
            # function of the inputs (a fresh clone reproduces dvc.lock byte for byte); usage lives in the main stages
            stable = [r.model_copy(update={"latency_s": 0.0, "cache_hit": False, "attempts": 0}) for r in records]
            write_judgments(out_dir / name / s / f"{step_name}.s{sample}.parquet", stable)
            out.extend(ratings_from_judgments(name, s, records))
            judged[(name, task)] += len(records)
            judge_ids.setdefault(name, set()).update(j.judge_id for j in records)
            for j in records:
                if not j.ok:
                    failures.setdefault((name, task), Counter())[reason_class(j.error)] += 1
        return out

    # Self-consistency of the primary judge: re-run it; sample 0 is the judge stage's own record.
    first_keys = {(s, i.item_id) for (s, _), its in chosen.items() for i in its}
    resamples[first_name] = {0: [r for r in judges[first_name] if (r.system, r.item_id.split("#")[0]) in first_keys]}
    for k in range(1, samples):
        resamples[first_name][k] = judge_all(first_name, lambda t: judge_config(params, t, benchmark, first), k)

    second_name = None
    with _second_judge_config(acfg["second_judge"]) as second_cfg:
        if second_cfg is not None:
            second_name = str(second_cfg.get("name") or "second")
            if second_name in judges:
                second_name += "#2"
            cfg2 = second_cfg
            resamples[second_name] = {k: judge_all(second_name, lambda t: cfg2, k) for k in range(max(1, samples))}
            judges[second_name] = resamples[second_name][0]

    for (name, task), reasons in sorted(failures.items()):
        detail = ", ".join(f"{r}: {n}" for r, n in reasons.most_common())
        notes.append(
            f"{name}/{task}: {sum(reasons.values())} of {judged[(name, task)]} re-judged item(s) failed ({detail})"
        )

    labels_path = human_labels
    source = Path(str((params.get("plan") or {}).get("benchmarks", {}).get(benchmark, {}).get("source") or ""))
    if labels_path is None and source.is_dir() and (source / str(acfg["human_labels"])).is_file():
        labels_path = source / str(acfg["human_labels"])
    humans = read_human_labels(labels_path, benchmark) if labels_path else {}
    judged_keys = {r.key for r in judges[first_name]}
    for name, ratings in humans.items():
        unmatched = sum(r.key not in judged_keys for r in ratings)
        if unmatched:
            notes.append(f"{name}: {unmatched} of {len(ratings)} label(s) name no item the judge stage judged (stale?)")
    judges.update(humans)

    # Pairs (candidate, reference): judge vs second judge, member vs member, judge vs human, human vs human.
    machine = [n for n in judges if not n.startswith("human:")]
    pairs: list[tuple[str, str]] = []
    for i, a in enumerate(machine):
        for b in machine[i + 1 :]:
            pairs.append((a, b))
    for h in humans:
        pairs.extend((a, h) for a in machine)
    human_names = list(humans)
    for i, a in enumerate(human_names):
        pairs.extend((a, b) for b in human_names[i + 1 :])

    results: list[tuple[str, str, list[TaskAgreement]]] = []
    for a, b in pairs:
        results.append((a, b, compare(judges[a], judges[b], n_boot=n_boot, seed=seed)))

    sections = [_judges_section(judges, chosen, samples, second_name)]
    for a, b, res in results:
        sections.append(agreement_section(a, b, res, _pair_note(a, b, second_name)))
    sections.append(confusion_section(results))
    sections.append(system_means_section(results))
    positions = {n: dict(position_consistency(r)) for n, r in judges.items() if not n.startswith("human:")}
    if cross_dir is not None and Path(cross_dir).is_dir() and Path(cross_dir) != Path(release_dir):
        for path in sorted(Path(cross_dir).glob("*.parquet")):  # cross stages: battles, depth vs a reference
            found = cross_position_consistency(pl.read_parquet(path, glob=False))
            if found and found[0]:
                positions.setdefault(first_name, {})[f"{path.stem} (cross stage)"] = found
    sections.append(position_section(positions))
    sections.append(
        self_consistency_section(
            {n: self_consistency(s) for n, s in resamples.items()},
            f"Each judge re-judged the same capped item sample {samples} time(s) (sample 0 of the primary judge is "
            "the judge stage's record; later samples are fresh runs; an LLM's sample k is keyed on k and asks "
            "with seed+k). A deterministic judge must show 0.",
        )
    )
    kinds = {n: _judge_kind(n, judge_ids.get(n, set()), second_name) for n in judges}
    sections.append(_limits_section(kinds, notes))
    summary = _summary(benchmark, release.meta.name, results, second_name, humans)
    card = build_card(benchmark, release.meta.name, summary, sections)
    write_card(card, Path(metrics_dir))
    return card


def _judges_section(judges: Mapping[str, list[Rating]], chosen: Mapping[Any, list[Any]], samples: int,
                    second: str | None) -> Section:  # fmt: skip
    rows = []
    for name, ratings in judges.items():
        kind = "human" if name.startswith("human:") else ("second judge" if name == second else "judge stage")
        top = [r for r in ratings if "#" not in r.item_id]
        rows.append([name, kind, len(top), sum(not r.ok for r in top), len({r.system for r in top})])
    n_chosen = sum(len(v) for v in chosen.values())
    return Section(
        "Judges",
        f"Records per judge. The second judge and the re-samples judged a stratified, seeded sample of {n_chosen} "
        f"item(s) of the judge stage's records; failures are excluded from every figure and counted here.",
        ["judge", "source", "records", "failed", "systems"],
        rows,
    )


def _pair_note(a: str, b: str, second: str | None) -> str:
    base = (
        "Per judge task: accuracy and Cohen's kappa (quadratic weights on ordinal scales) on the items both "
        f"answered, 95% bootstrap intervals over benchmark tasks; macro-F1 and the majority-class floor take {b} "
        "as the reference; Spearman on verdict values; Kendall tau between the system rankings the two judges "
        "induce (mean verdict per system)."
    )
    if b == second and second == "stub":
        base += (
            " The stub's answers are scripted from a hash of each request: this pair tests the plumbing, and a "
            "kappa near 0 is the expected, correct result. It says nothing about either judge's validity."
        )
    if b.startswith("human:"):
        base += " Human labels are self-authored by the maintainers (data/demo/*/human_labels.csv, docs/agreement.md)."
    return base


JUDGE_LIMITS: dict[str, tuple[str, str]] = {
    "offline-lexical": (
        "whether a claim is about what its source says (topical/lexical overlap); crude negation, number and "
        "absolute-word guards; deterministic",
        "entailment: paraphrase (scored low), swapped roles, reversed comparisons, wrong numbers in paraphrase; it "
        "rewards extractive copying and can invert rankings between extractive and abstractive systems",
    ),
    "offline-lexsem": (
        "as the lexical judge, plus paraphrase through MiniLM sentence embeddings (held-out probe: AUC 0.77 vs "
        "0.73, kappa 0.53 vs 0.40); deterministic",
        "entailment: MiniLM puts a sentence and its negation or role swap close together; only the guards catch "
        "negations and numbers; English only; fitted on 60 self-authored pairs",
    ),
    "stub": (
        "that the LLM judge path works end to end (rendering, schema, strict parsing, failures as values)",
        "anything about quality: its answers are scripted from a hash of each request",
    ),
    "litellm": (
        "what its model can judge from the prompt; agreement with human labels is the evidence",
        "its own reliability: read its kappa against human labels and its self-consistency before trusting it",
    ),
    "human": (
        "the reference for these items, as far as one annotator's reading goes",
        "anything beyond the labelled sample; the shipped demo labels are self-authored by a maintainer session",
    ),
}


def _judge_kind(name: str, judge_ids: set[str], second: str | None) -> str:
    if name.startswith("human:"):
        return "human"
    if name == second and name == "stub":
        return "stub"
    if any(i.startswith("offline-lexsem") for i in judge_ids):
        return "offline-lexsem"
    if any(i.startswith("offline-lexical") for i in judge_ids):
        return "offline-lexical"
    return "litellm"


def _limits_section(judge_kinds: Mapping[str, str], notes: list[str]) -> Section:
    rows: list[list[Any]] = []
    for name, kind in judge_kinds.items():
        can, cannot = JUDGE_LIMITS[kind]
        rows.append([name, can, cannot])
    rows.extend(["run note", n, None] for n in notes)
    return Section(
        "What these judges can and cannot tell",
        "Per judge, what its verdicts can and cannot tell; then notes from this run (failures, stale labels). "
        "Intervals resample benchmark tasks: with the demos' 2-5 tasks they are wide, or null with one task.",
        ["judge", "can tell", "cannot tell"],
        rows,
    )


def _summary(benchmark: str, release: str, results: list[tuple[str, str, list[TaskAgreement]]], second: str | None,
             humans: Mapping[str, Any]) -> str:  # fmt: skip
    parts = [f"Agreement of the judges of {benchmark}/{release} on the same items."]
    for a, b, res in results:
        kappas = [r.kappa for r in res if not math.isnan(r.kappa)]
        if kappas:
            parts.append(f"{a} vs {b}: kappa {min(kappas):.2f}..{max(kappas):.2f} over {len(kappas)} judge task(s).")
    if second == "stub":
        parts.append("The stub judge answers from a request hash: its agreement figures check plumbing only.")
    if not humans:
        parts.append("No human labels for this release.")
    return " ".join(parts)
