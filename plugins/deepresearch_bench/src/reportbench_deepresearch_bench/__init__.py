"""DeepResearch Bench (Du et al. 2025; Ayanami0730/deep_research_bench) as a reportbench benchmark plug-in.

Registered through the `reportbench.benchmarks` entry point (pyproject.toml): `benchmark:BENCHMARK`.
Modules: `release` (importer of the authors' layout + the demo), `tasks` (judge tasks, our prompts in
prompts/), `pack` (the authors' prompts, loaded at run time from their pinned commit), `race` / `fact`
(the arithmetic), `systems` (the `drb_jsonl` submission kind), `benchmark` (steps, score, BENCHMARK).
Conf tree: conf/ (benchmarks/deepresearch_bench.yaml, deepresearch_bench/{release,systems}/*.yaml).
"""

from pathlib import Path

CONF_DIR = Path(__file__).resolve().parent / "conf"
