"""Claim-page pairs per second of the offline support judges on 10-50k-character pages, many claims per page.

Pages: LiveResearchBench's public reference reports (../shared/data, read-only, 10-50k characters), or, when
that folder is absent, pages stitched from the self-authored probe passages. Claims per page: a third copied from
the page, a third page sentences with words dropped and reordered, a third from other pages. Every judge starts
cold on each page (no source index, no cached embedding); the model load is timed apart.

Run: python bench/offline_judge_speed.py [--pages 8] [--claims 40] [--threads 2]
Prints wall-clock pairs/s and pairs per CPU-second (the machine is shared: CPU time is the steadier figure; with
--threads 2 onnxruntime may use two cores, so a CPU-second can do less than a wall second on an idle machine).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (
        p
        for p in ([Path(os.environ["REPORTBENCH_SHARED"]) / "data"] if os.environ.get("REPORTBENCH_SHARED") else [])
        + [ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data"]
        if p.is_dir()
    ),
    ROOT / "missing",
)


def load_pages(n: int) -> tuple[list[str], str]:
    folder = SHARED / "liveresearchbench" / "reference_reports"
    texts = []
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if 10_000 <= len(text) <= 50_000:
                texts.append(text)
        if texts:
            return texts[:n], f"{folder} ({len(texts)} reports of 10-50k chars)"
    import yaml

    data = yaml.safe_load((ROOT / "tests/fixtures/probe/pairs.yaml").read_text(encoding="utf-8"))
    passages = [s["text"] for s in data["sources"]]
    rng = random.Random(0)
    pages = []
    for _ in range(n):
        body = []
        while sum(len(x) for x in body) < 20_000:
            body.append(rng.choice(passages))
        pages.append("\n\n".join(body))
    return pages, "stitched probe passages (../shared absent)"


def make_claims(pages: list[str], per_page: int, seed: int = 0) -> list[list[str]]:
    from reportbench.judges.lexical import split_sentences

    rng = random.Random(seed)
    sentences = [[s for s in split_sentences(p) if 8 <= len(s.split()) <= 60] for p in pages]
    out = []
    for i, own in enumerate(sentences):
        others = [s for j, ss in enumerate(sentences) if j != i for s in ss]
        claims = []
        for k in range(per_page):
            kind = k % 3
            if kind == 0 or not others:
                claims.append(rng.choice(own))
            elif kind == 1:
                words = rng.choice(own).split()
                kept = [w for j, w in enumerate(words) if j % 3 != 1]
                mid = len(kept) // 2
                claims.append(" ".join(kept[mid:] + kept[:mid]))
            else:
                claims.append(rng.choice(others))
        out.append(claims)
    return out


def reset_caches() -> None:
    from reportbench.judges import lexical, semantic

    lexical.prepare_source.cache_clear()
    semantic._INDEX_CACHE.clear()
    if semantic._EMBEDDER is not None:
        semantic._EMBEDDER.cache.clear()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=8)
    ap.add_argument("--claims", type=int, default=40, help="claims per page")
    ap.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    args = ap.parse_args()
    from reportbench.judges import semantic
    from reportbench.judges.offline import support_params
    from reportbench.judges.scores import support_score, support_scores

    pages, origin = load_pages(args.pages)
    claims = make_claims(pages, args.claims)
    n_pairs = sum(len(c) for c in claims)
    sizes = sorted(len(p) for p in pages)
    print(
        f"pages: {len(pages)} from {origin}; {sizes[0]}-{sizes[-1]} chars; {args.claims} claims/page; {n_pairs} pairs"
    )
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (other processes share them)")

    t0 = time.perf_counter()
    semantic._EMBEDDER = semantic.MiniLMEmbedder(threads=args.threads)
    print(f"model load (onnxruntime session + tokenizer, hashes checked): {time.perf_counter() - t0:.2f} s")

    runs = {
        "lexical (offline)": support_params({}),
        "semantic, every claim embedded": support_params({"semantic": {"enabled": True, "cascade": False}}),
        "semantic (offline_semantic)": support_params({"semantic": {"enabled": True}}),  # the shipped cascade
    }
    for name, params in runs.items():
        reset_caches()
        encoded_before = semantic._EMBEDDER.encoded
        t0, c0 = time.perf_counter(), time.process_time()
        for page, page_claims in zip(pages, claims, strict=True):
            if params.semantic is None:
                for c in page_claims:
                    support_score(c, page, params)
            else:
                support_scores(page_claims, page, params)
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        encoded = semantic._EMBEDDER.encoded - encoded_before
        print(
            f"{name:<32} {n_pairs / took:8.1f} pairs/s wall, {n_pairs / cpu:8.1f} per CPU-second "
            f"({took:.2f} s wall, {cpu:.2f} s CPU; {encoded} texts embedded)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
