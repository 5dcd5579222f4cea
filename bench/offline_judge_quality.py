"""Separation of the lexical and the semantic offline judge on the self-authored probe (tests/fixtures/probe).

Prints, for each judge, AUC of S and Cohen's kappa / accuracy at its threshold on the HELD-OUT sources, plus the
majority-class floor and AUC per negative kind. `--fit` grid-searches the semantic knobs and both thresholds on the
FIT sources (maximising kappa) and prints the best set; the frozen set lives in conf/judge/offline_semantic.yaml.

Run: python bench/offline_judge_quality.py [--fit]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import yaml

from reportbench.agreement.metrics import accuracy, cohen_kappa, majority_floor
from reportbench.judges.offline import resolve_params, support_params
from reportbench.judges.scores import support_score, support_scores

PROBE = Path(__file__).resolve().parents[1] / "tests/fixtures/probe/pairs.yaml"
CONFIG = Path(__file__).resolve().parents[1] / "conf/judge/offline_semantic.yaml"


def load_probe(path: Path = PROBE) -> list[dict]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    pairs = []
    for src in data["sources"]:
        for label, kind, claim in src["claims"]:
            pairs.append({"source_id": src["id"], "split": src["split"], "source": src["text"], "claim": claim,
                          "label": int(label), "kind": kind})  # fmt: skip
    return pairs


def auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    return sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg) / (len(pos) * len(neg))


def lexical_scores(pairs: list[dict]) -> list[float]:
    p = support_params({})
    return [support_score(x["claim"], x["source"], p).score for x in pairs]


def semantic_scores(pairs: list[dict], semantic: dict) -> list[float]:
    p = support_params({"semantic": {**semantic, "enabled": True}})
    out: list[float] = []
    by_source: dict[str, list[int]] = {}
    for i, x in enumerate(pairs):
        by_source.setdefault(x["source"], []).append(i)
    scores = [0.0] * len(pairs)
    for source, idx in by_source.items():  # all claims of one source scored together
        for i, s in zip(idx, support_scores([pairs[i]["claim"] for i in idx], source, p), strict=True):
            scores[i] = s.score
    out.extend(scores)
    return out


def best_threshold(scores: list[float], labels: list[int]) -> tuple[float, float]:
    best = (-2.0, 0.0)
    for t in sorted(set(scores)):
        pred = [int(s >= t) for s in scores]
        k = cohen_kappa(pred, labels, [0, 1])
        if k == k and k > best[0]:
            best = (k, t)
    return best[1], best[0]


def report(name: str, scores: list[float], pairs: list[dict], threshold: float) -> None:
    labels = [x["label"] for x in pairs]
    pred = [int(s >= threshold) for s in scores]
    pos = [s for s, x in zip(scores, pairs, strict=True) if x["label"] == 1]
    neg = [s for s, x in zip(scores, pairs, strict=True) if x["label"] == 0]
    per_kind = {}
    for kind in sorted({x["kind"] for x in pairs if x["label"] == 0}):
        kneg = [s for s, x in zip(scores, pairs, strict=True) if x["kind"] == kind]
        per_kind[kind] = round(auc(pos, kneg), 3)
    para = [p for p, x in zip(pred, pairs, strict=True) if x["kind"] == "paraphrase"]
    print(
        f"{name:<18} AUC {auc(pos, neg):.3f}  kappa {cohen_kappa(pred, labels, [0, 1]):.3f}  "
        f"accuracy {accuracy(pred, labels):.3f}  (threshold {threshold:.4f}; paraphrases recalled "
        f"{sum(para)}/{len(para)})"
    )
    print(f"{'':<18} AUC vs each negative kind: {per_kind}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fit", action="store_true", help="grid-search knobs and thresholds on the fit half")
    args = ap.parse_args()
    pairs = load_probe()
    fit = [x for x in pairs if x["split"] == "fit"]
    held = [x for x in pairs if x["split"] == "heldout"]
    print(f"probe: {len(pairs)} pairs from {len({x['source_id'] for x in pairs})} self-authored sources; "
          f"fit {len(fit)}, held-out {len(held)} (sources disjoint)")  # fmt: skip
    cfg = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["offline"]
    frozen_sem = {k: v for k, v in cfg["semantic"].items() if k != "enabled"}
    frozen_thr = float(cfg["support"]["threshold"])
    lexical_thr = float(resolve_params({})["support"]["threshold"])
    if args.fit:
        t0 = time.perf_counter()
        labels = [x["label"] for x in fit]
        lex_thr, lex_k = best_threshold(lexical_scores(fit), labels)
        print(f"fit half, lexical: best threshold {lex_thr:.4f} (kappa {lex_k:.3f}); shipped default {lexical_thr}")
        best = None
        grid = itertools.product([0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [0.2, 0.3, 0.4, 0.5, 0.6], [2, 4, 8])
        for w, floor, cand in grid:
            knobs = {**frozen_sem, "lexical_weight": w, "cosine_floor": floor, "candidates": cand, "cascade": False}
            scores = semantic_scores(fit, knobs)
            thr, k = best_threshold(scores, labels)
            fit_auc = auc(
                [s for s, y in zip(scores, labels, strict=True) if y],
                [s for s, y in zip(scores, labels, strict=True) if not y],
            )
            if best is None or (k, fit_auc) > best[:2]:  # max kappa, ties broken by AUC
                best = (k, fit_auc, w, floor, cand, thr)
        assert best is not None
        took = time.perf_counter() - t0
        print(
            f"fit half, semantic: best kappa {best[0]:.3f} (AUC {best[1]:.3f}) at lexical_weight={best[2]} "
            f"cosine_floor={best[3]} candidates={best[4]} threshold={best[5]:.4f} ({took:.1f} s)"
        )
        print(f"held-out, lexical at its fit-half threshold {lex_thr:.4f}:")
        report("lexical (fitted)", lexical_scores(held), held, lex_thr)
    print(
        f"held-out ({len(held)} pairs, majority-class floor accuracy {majority_floor([x['label'] for x in held]):.3f}):"
    )
    report("lexical (default)", lexical_scores(held), held, lexical_thr)
    report("semantic (shipped)", semantic_scores(held, frozen_sem), held, frozen_thr)
    if frozen_sem.get("cascade"):
        report("semantic, no cascade", semantic_scores(held, {**frozen_sem, "cascade": False}), held, frozen_thr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
