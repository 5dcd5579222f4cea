"""Stage `code`: one digest of every file under src/reportbench, the single code dependency of the stages whose
reruns are free (release, fetch, judge, cross, score, site), and one per module a system stage reads
(`SYSTEM_CODE`): a system stage may pay an agent or an endpoint, so it reruns only when those change.

Why a stage: listing `src/reportbench` in thirty stages made DVC hash its ~250 files thirty times on every
`dvc repro`, even a no-op, and a hand-kept list of modules per stage can miss one. Here DVC hashes the tree once;
the others depend on one small file, which changes only when a file's bytes do (docs/dvc.md, "Fast to iterate")."""

import argparse
from pathlib import Path

from reportbench.digest import tree_digest

# What a system stage imports to run and record a system (relative to --src); a kind's own code is its `path`.
SYSTEM_CODE = (
    "pipeline.py", "config.py", "types.py", "reports", "systems", "judges/client.py", "judges/cache.py",
    "judges/llm.py", "net.py", "injection.py", "redaction.py", "fetch",  # the sandbox fetch proxy, agents' pages
)  # fmt: skip

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--src", type=Path, default=Path("src/reportbench"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--systems-out", type=Path, required=True)
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(f"{tree_digest([args.src], pattern='*', length=64)}  {args.src.as_posix()}\n")
    paths = [args.src / rel for rel in SYSTEM_CODE]
    lines = [f"{tree_digest([path], pattern='*', length=64)}  {path.as_posix()}" for path in paths]
    args.systems_out.write_text("\n".join(lines) + "\n")
