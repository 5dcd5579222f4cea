"""Compare two judges item by item, per judge task: the figures of one judge-card table row.

The pair is ordered (candidate, reference): macro-F1 and the majority-class floor take the reference as gold
(a human, or the judge we trust more); kappa, accuracy, Spearman and Kendall tau are symmetric.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reportbench.agreement import metrics as M
from reportbench.agreement.records import Rating


@dataclass
class TaskAgreement:
    """Agreement of two judges on one judge task (NaN = undefined, never 0)."""

    task: str
    scale: str  # nominal | ordinal | continuous
    n_items: int  # items both judges answered
    n_failed: int  # items one of them failed on (excluded)
    n_labels: int = 0
    accuracy: float = math.nan
    accuracy_ci: tuple[float, float] = (math.nan, math.nan)
    kappa: float = math.nan
    kappa_ci: tuple[float, float] = (math.nan, math.nan)
    kappa_weights: str = "none"
    macro_f1: float = math.nan
    majority_floor: float = math.nan
    n_values: int = 0
    spearman: float = math.nan
    n_systems: int = 0
    kendall_tau: float = math.nan
    kendall_ci: tuple[float, float] = (math.nan, math.nan)
    labels: list[str] = field(default_factory=list)
    confusion: list[list[int]] = field(default_factory=list)
    system_means: dict[str, tuple[float, float]] = field(default_factory=dict)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def label_scale(labels: Sequence[str]) -> tuple[str, list[str]]:
    """(nominal|ordinal, ordered label list): numeric labels (relevance 0/1/2) are an ordinal scale."""
    distinct = sorted(set(labels))
    if distinct and all(_is_number(x) for x in distinct):
        return "ordinal", sorted(distinct, key=float)
    return "nominal", distinct


def value_of_label(ratings: Sequence[Rating]) -> dict[str, float]:
    """label -> the value a judge gives it (its most common one): maps human labels onto the judge's scale."""
    seen: dict[str, Counter[float]] = {}
    for r in ratings:
        if r.ok and r.label is not None and r.value is not None:
            seen.setdefault(r.label, Counter())[r.value] += 1
    out = {lab: c.most_common(1)[0][0] for lab, c in seen.items()}
    return out


def _discrete_label(r: Rating) -> str | None:
    """A label for the categorical view: the judge's own label, else a small integer score ('7')."""
    if r.label is not None:
        return r.label
    if r.value is not None and float(r.value).is_integer() and abs(r.value) <= 10:
        return str(int(r.value))
    return None


def compare_task(
    task: str,
    candidate: Sequence[Rating],
    reference: Sequence[Rating],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> TaskAgreement:
    """All agreement figures for one judge task (ratings of other tasks are ignored)."""
    cand = {r.key: r for r in candidate if r.task == task}
    ref = {r.key: r for r in reference if r.task == task}
    common = sorted(cand.keys() & ref.keys())
    both_ok = [k for k in common if cand[k].ok and ref[k].ok]
    n_failed = len(common) - len(both_ok)
    # Task ids and label->value maps come from whichever side has them (human ratings carry neither).
    to_value = {**value_of_label(list(reference)), **value_of_label(list(candidate))}

    def task_id(k: tuple[str, str, str]) -> str:
        return cand[k].task_id or ref[k].task_id or k[2]

    def value(r: Rating) -> float | None:
        if r.value is not None:
            return r.value
        return to_value.get(r.label) if r.label is not None else None

    # Categorical view
    label_keys = [k for k in both_ok if _discrete_label(cand[k]) is not None and _discrete_label(ref[k]) is not None]
    a = [str(_discrete_label(cand[k])) for k in label_keys]
    b = [str(_discrete_label(ref[k])) for k in label_keys]
    # Value view (Spearman, system means)
    value_keys = [k for k in both_ok if value(cand[k]) is not None and value(ref[k]) is not None]
    va = [float(value(cand[k])) for k in value_keys]  # type: ignore[arg-type]
    vb = [float(value(ref[k])) for k in value_keys]  # type: ignore[arg-type]

    scale = "continuous"
    out = TaskAgreement(task=task, scale=scale, n_items=len(both_ok), n_failed=n_failed)
    if label_keys:
        scale, labels = label_scale(a + b)
        weights: M.Weights = "quadratic" if scale == "ordinal" else "none"
        groups: dict[str, list[int]] = {}
        for i, k in enumerate(label_keys):
            groups.setdefault(task_id(k), []).append(i)

        def kappa_of(idx: list[int]) -> float:
            return M.cohen_kappa([a[i] for i in idx], [b[i] for i in idx], labels, weights)

        def acc_of(idx: list[int]) -> float:
            return M.accuracy([a[i] for i in idx], [b[i] for i in idx])

        out.scale, out.labels, out.kappa_weights, out.n_labels = scale, labels, weights, len(label_keys)
        out.accuracy = M.accuracy(a, b)
        out.kappa = M.cohen_kappa(a, b, labels, weights)
        out.accuracy_ci = M.bootstrap_ci(groups, acc_of, n_boot=n_boot, seed=seed)
        out.kappa_ci = M.bootstrap_ci(groups, kappa_of, n_boot=n_boot, seed=seed)
        out.macro_f1 = M.macro_f1(b, a)
        out.majority_floor = M.majority_floor(b)
        out.confusion = M.confusion(a, b, labels).tolist()
    out.n_values = len(value_keys)
    out.spearman = M.spearman(va, vb)
    # System level: the ranking each judge induces = mean value per system over the items both answered.
    systems = sorted({k[0] for k in value_keys})
    by_system: dict[str, list[int]] = {s: [] for s in systems}
    for i, k in enumerate(value_keys):
        by_system[k[0]].append(i)
    out.system_means = {
        s: (sum(va[i] for i in idx) / len(idx), sum(vb[i] for i in idx) / len(idx)) for s, idx in by_system.items()
    }
    out.n_systems = len(systems)
    out.kendall_tau = M.kendall_tau(
        [out.system_means[s][0] for s in systems], [out.system_means[s][1] for s in systems]
    )
    if len(systems) >= 2:
        vgroups: dict[str, list[int]] = {}
        for i, k in enumerate(value_keys):
            vgroups.setdefault(task_id(k), []).append(i)

        def tau_of(idx: list[int]) -> float:
            sums: dict[str, list[float]] = {}
            for i in idx:
                acc = sums.setdefault(value_keys[i][0], [0.0, 0.0, 0.0])
                acc[0] += va[i]
                acc[1] += vb[i]
                acc[2] += 1
            names = sorted(sums)
            return M.kendall_tau([sums[s][0] / sums[s][2] for s in names], [sums[s][1] / sums[s][2] for s in names])

        out.kendall_ci = M.bootstrap_ci(vgroups, tau_of, n_boot=n_boot, seed=seed)
    return out


def compare(
    candidate: Sequence[Rating], reference: Sequence[Rating], *, n_boot: int = 1000, seed: int = 0
) -> list[TaskAgreement]:
    """One TaskAgreement per judge task both judges rated (sorted by task name)."""
    tasks = sorted({r.task for r in candidate} & {r.task for r in reference})
    return [compare_task(t, candidate, reference, n_boot=n_boot, seed=seed) for t in tasks]


def position_consistency(ratings: Sequence[Rating]) -> dict[str, tuple[int, int]]:
    """Per pairwise judge task: (report pairs judged in both orders, pairs whose preferred side did not change).

    A pairwise record names its sides in input_ids `section_a`/`section_b`; label A/B is mapped to the section
    it prefers, any other label (a tie) kept as is. Consistent = every order prefers the same section.
    """
    groups: dict[tuple[str, str, str], list[str]] = {}
    for r in ratings:
        ids = r.input_ids
        if not r.ok or r.label is None or "section_a" not in ids or "section_b" not in ids:
            continue
        pick = {"A": ids["section_a"], "B": ids["section_b"]}.get(r.label, r.label)
        pair = "|".join(sorted([ids["section_a"], ids["section_b"]]))
        groups.setdefault((r.task, r.system, f"{ids.get('report_id', r.task_id)}:{pair}"), []).append(pick)
    out: dict[str, tuple[int, int]] = {}
    for (task, _s, _r), picks in sorted(groups.items()):
        if len(picks) < 2:
            continue
        n, consistent = out.get(task, (0, 0))
        out[task] = (n + 1, consistent + (len(set(picks)) == 1))
    return out


def self_consistency(samples: Mapping[int, Sequence[Rating]]) -> dict[str, tuple[int, int, float, float]]:
    """Per judge task over k re-samples of one judge: (k, items, flip rate, mean disagreement with the mode).

    Only items every sample answered count; a label is the categorical view, else the value."""
    ks = sorted(samples)
    if len(ks) < 2:
        return {}
    tasks = sorted({r.task for r in samples[ks[0]]})
    out: dict[str, tuple[int, int, float, float]] = {}
    for task in tasks:
        per_sample = [{r.key: r for r in samples[k] if r.task == task and r.ok} for k in ks]
        keys = sorted(set.intersection(*(set(d) for d in per_sample)))
        if not keys:
            continue
        labels = [[_sample_label(d[key]) for key in keys] for d in per_sample]
        any_flip, disagreement = M.flip_rate(labels)
        out[task] = (len(ks), len(keys), any_flip, disagreement)
    return out


def _sample_label(r: Rating) -> str:
    label = _discrete_label(r)
    return label if label is not None else str(r.value)


def cross_position_consistency(table: Any) -> tuple[int, int] | None:
    """(pairs judged in both orders, pairs whose outcome did not change) for a cross-stage table, or None.

    Reads the two layouts the cross stages write: battles (`battle_id`, `order`, `vote`: the winner in system
    terms, already mapped back from the order) and depth comparisons (`system`, `task_id`, `member`, `order`,
    `judge_winner`). Rows that failed are skipped; a pair counts when two or more orders answered.
    """
    cols = set(table.columns)
    if "order" not in cols:
        return None
    if {"battle_id", "vote"} <= cols:
        keys, outcome = ["battle_id"], "vote"
    elif {"system", "task_id", "judge_winner"} <= cols:
        keys, outcome = [c for c in ("system", "task_id", "member") if c in cols], "judge_winner"
    else:
        return None
    groups: dict[tuple[Any, ...], set[Any]] = {}
    counts: dict[tuple[Any, ...], int] = {}
    for row in table.iter_rows(named=True):
        if row.get("status", "ok") != "ok" or row.get(outcome) is None:
            continue
        key = tuple(row[k] for k in keys)
        groups.setdefault(key, set()).add(row[outcome])
        counts[key] = counts.get(key, 0) + 1
    pairs = [k for k, n in counts.items() if n >= 2]
    return len(pairs), sum(len(groups[k]) == 1 for k in pairs)
