"""Stage `code`: one digest of every file under src/reportbench, the single code dependency of the stages whose
reruns are free (release, fetch, judge, cross, score, site).

Why a stage: listing `src/reportbench` in thirty stages made DVC hash its ~250 files thirty times on every
`dvc repro`, even a no-op, and a hand-kept list of modules per stage can miss one. Here DVC hashes the tree once;
the others depend on one small file, which changes only when a file's bytes do (docs/dvc.md, "Fast to iterate")."""

import argparse
from pathlib import Path

from reportbench.digest import tree_digest

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--src", type=Path, default=Path("src/reportbench"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(f"{tree_digest([args.src], pattern='*', length=64)}  {args.src.as_posix()}\n")
