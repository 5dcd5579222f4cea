"""Docs are tests (issue 32): every shell command README.md and docs/*.md show is run here as written.

Which commands: the rule in tests/docs_commands.py (fenced ```bash/```sh/```shell blocks, `$ ` lines of ```console
blocks, code spans of a table's "command" column). Each one has an entry in SCENARIOS (or CI_RUNS /
OFFLINE_IMPOSSIBLE below); a documented command without an entry, or an entry whose command is no longer in the
docs, fails `test_every_documented_command_has_an_entry` — a changed command or a drifting doc fails.

How they run: each scenario is a list of documented commands run in order, one `bash` each (exports and variable
assignments carry over, as in one terminal), in a copy of the repository — `fresh`: the working tree's files in a
new git repository (what a clone holds; tests/dvc_helpers.copy_working_tree); `reproduced`: that copy after the
session's one `dvc repro` (conftest.py `reproduced_template`, so CI pays for the full pipeline once). The
environment holds only what a user has and the docs name: PATH = the venv's bin + /usr/bin:/bin, HOME = a temp
folder with a git identity (user.name/email, as any machine that commits has), LANG=C.UTF-8, DVC_NO_ANALYTICS=1
(README, "Environment") and whatever the scenario's own documented commands export. No REPORTBENCH_*, no keys,
no LITELLM_* (the package sets those itself). Every step asserts its exit status and a key line of its output.

Placeholders: SUBSTITUTIONS lists each placeholder a doc uses (`<exp-name>`, `path/to/report.md`, `...` for a
key) and what this test puts there. Key/network commands carry `needs: …` in their doc comment; they run with the
documented offline stand-in (docs/judges.md "Trying a key-needing command offline": `reportbench stub-server` +
`reportbench compose judge.api_base=…`), never with a real key. A scenario that starts such a server on its
documented fixed port (8765, 8766) runs on a loopback of its own (tests/netns.py: a user + network namespace, the
uid kept), so those scenarios run at once under pytest-xdist; a machine that cannot make one runs them in turn.

Scheduling: each scenario is one xdist unit (conftest.py), its `schedule_cost` estimated from its commands, and the
longest start first; a long doc walk-through is split into independent scenarios (each from the reproduced state)
so no single one holds CI's tail. Every step prints its wall and CPU seconds (`-s`, and outputs.log in its tmp).

Known failures: KNOWN_BROKEN maps a command to the issue-32 item (or an unlisted bug) that breaks it; its
scenario still runs every step and is an xfail naming them — strict: once the command passes, the test fails
until the entry is removed.

Slow commands: installs (venv, plug-in, the four agent venvs) and the README's test command are what `.ci/run`
runs on every CI run; `CI_RUNS` checks `.ci/run` runs them as written instead of running them twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import resource
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from docs_commands import DocCommand, census, extract, normalize
from dvc_helpers import Reproduced, copy_repo_state, copy_working_tree
from netns import private_loopback

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
STUB_PORT = 8765  # the port docs/systems.md and docs/judges.md start the stub server on


@dataclass(frozen=True)
class Step:
    """One documented command and what it must print (a regex searched in stdout + stderr)."""

    doc: str
    cmd: str  # the command as the doc writes it (whitespace runs collapsed)
    expect: str = ""
    rc: int = 0


@dataclass(frozen=True)
class Scenario:
    name: str
    state: str  # fresh | reproduced
    steps: tuple[Step, ...]
    needs_shared: bool = False  # reads ../shared/data (skips without it, as every such test)
    branch: str = "main"  # the clone's branch (the docs' `dvc metrics diff main …`)
    own_venv: bool = False  # `pip install`s a package: a venv of its own layered on the session's (never changed)

    @property
    def schedule_cost(self) -> float:
        """Rough seconds on one core, for ordering the suite under pytest-xdist only (conftest.py): what its
        distinct commands run (a pipeline run dominates)."""
        return sum(next(cost for pattern, cost in STEP_COSTS if re.search(pattern, cmd))
                   for cmd in dict.fromkeys(s.cmd for s in self.steps))


STEP_COSTS: tuple[tuple[str, float], ...] = (  # (regex on the command, rough CPU seconds): the first match counts
    # measured per step (the CPU figure each step prints): a pipeline run that changes the judge or adds systems
    # reruns every judge, cross and score stage (~90 s: each judge/cross stage imports litellm); other runs ~25 s
    (r"dvc exp run --dry", 3), (r"^for .*dvc exp run --queue .*judge=", 180), (r"dvc exp run --queue", 15),
    (r"dvc queue start", 1),
    # one benchmark (`-S 'benchmarks=[b]'`) with an LLM judge: its own judge and score stages and the site (~20-40 s)
    (r"dvc exp run -S 'benchmarks=\[\w+\]' .*judge=", 35),
    (r"(dvc exp run|dvc repro).*(judge=|agents=|deepscholar_baselines)|agents=.*dvc repro", 90),
    (r"dvc exp run|dvc repro", 25), (r"pip install|pytest", 30), (r"", 1.5),
)


# ---------------------------------------------------------------------------------------------- placeholders
SUBSTITUTIONS: tuple[tuple[str, str, str], ...] = (
    # (placeholder as written, what runs, why)
    ("OPENAI_API_KEY=...", "OPENAI_API_KEY=dummy", "no key: the stub server answers (docs/judges.md)"),
    ("OPENALEX_API_KEY=...", "OPENALEX_API_KEY=dummy", "no key offline"),
    ("path/to/report.md", "data/demo/deepscholar/systems/careful_writer/demo-0001.md", "a shipped report"),
    ("path/to/run_dir", "tests/fixtures/reports/storm/0", "a STORM run folder from the fixtures"),
    ("path/to/reports", "data/demo/researcherbench/systems/footnote_writer", "a shipped ResearcherBench folder"),
    ("<exp-name>", "{exp}", "the experiment the scenario's earlier `dvc exp run` made"),
    ("my-exp", "{exp}", "the same"),
    ("[--model openai/gpt-4.1]", "--model openai/gpt-4.1", "the optional filter, given"),
    ("cache import …", "cache import judge-cache.jsonl.gz", "the file `cache export` wrote"),
    ("-j N", "-j 2", "two workers"),
    ("benchmarks.<b>.release.limit=N", "benchmarks.deer.release.limit=2", "DEER's demo, 2 of its 3 tasks"),
    ("/path/to/authors-mirror", "{shared}/authors/mirror", "the authors' mirror CI holds (../shared/authors/mirror)"),
    ("/path/mirrors", "{shared}/authors/mirror", "the same"),
)


def substitute(cmd: str, exp: str, shared: str = "../shared") -> str:
    for placeholder, value, _why in SUBSTITUTIONS:
        cmd = cmd.replace(placeholder, value.replace("{exp}", exp).replace("{shared}", shared))
    return cmd


def S(doc: str, cmd: str, expect: str = "", rc: int = 0) -> Step:  # noqa: N802 - a table row
    return Step(doc, normalize(cmd), expect, rc)


R, D = "README.md", "docs/"

# ------------------------------------------------------------------------- commands .ci/run runs as written
CI_RUNS: tuple[Step, ...] = (
    S(R, "python3 -m venv .venv && . .venv/bin/activate && pip install -c constraints.txt -e '.[test]'"),
    S(R, "ruff check . && pytest -n auto"),
    S(R, "reportbench agents install storm"),
    S(R, "reportbench agents install all"),
    S(D + "agents.md", "reportbench agents install storm"),  # three times in agents.md (§2, §7, §8's recipe)
    S(D + "agents.md", "reportbench agents install storm"),
    S(D + "agents.md", "reportbench agents install storm"),
    S(D + "agents.md", "reportbench agents install all"),
)
"""`.ci/run` runs these on every CI run (pip's `-q` and `nice … &` aside; `agents install all` builds storm too);
running them again here would double CI's slowest steps (test_ci_runs_the_install_and_test_commands_as_written)."""

# ----------------------------------------------------- commands another test runs as written, reading the doc
_AGENT_RECIPE = "tests/test_agent_oss_dvc.py::test_the_documented_agent_path_with_the_default_home"
COVERED_ELSEWHERE: dict[tuple[str, str], str] = {
    (D + "agents.md", normalize(line)): _AGENT_RECIPE
    for line in (
        "reportbench stub-server --port 8765 --latency-ms 0 &", "reportbench stub-search --port 8766 &",
        "cat > conf/deepscholar/systems/my_storm.yaml <<'EOF'", "my_storm:", "kind: storm",
        "model: openai/stub-model", "api_base: http://127.0.0.1:8765/v1",
        "search: {backend: tavily, api_base: http://127.0.0.1:8766/tavily, max_results: 3}",
        "budget: {llm_calls: 200, search_calls: 50, wall_s: 900}", "options: {encoder: hashed}", "EOF",
        "dvc exp run -S 'benchmarks=[deepscholar]' -S deepscholar/systems=my_storm",
    )
}
COVERED_ELSEWHERE[(D + "scale.md", "dvc repro --pull")] = (
    "tests/test_scale_dvc.py::test_shared_remote_and_cache_file_mean_no_judge_call_is_paid_twice: the table row's "
    "`dvc repro --pull` needs the shared DVC remote the row names; that test makes one (a directory remote) and runs "
    "it from a second clone")
COVERED_ELSEWHERE.update({
    (D + "scale.md", normalize(line)): (
        "tests/test_executor_ray.py: `ray start --head` and `ray start --address` on 127.0.0.1 (with one CPU and the "
        "smallest object store each, on the shared CI machine), the executor composed with `runtime.executor=ray "
        "runtime.ray.address=<that cluster>`; the [ray] extra's pin is the test extra's (.ci/run installs it)")
    for line in (
        "pip install -c constraints.txt -e '.[ray]'", "ray start --head --port=6379",
        "ray start --address=HEAD_IP:6379",
        "reportbench compose runtime.executor=ray runtime.ray.address=auto",
    )
})
COVERED_ELSEWHERE[(D + "prompt-packs.md", normalize(
    'REPORTBENCH_AUTHORS_MIRROR=../shared/authors/mirror pytest -k "authors or pack or golden"'))] = (
    ".ci/run: the README's test command runs every test, these included, with REPORTBENCH_AUTHORS_MIRROR set to "
    "../shared/authors/mirror (test_ci_sets_the_authors_mirror)")
"""(doc, command) → the test that runs it as written: docs/agents.md's offline agent recipe is read from the doc
block and run line by line (with the default agents home) by that test, which needs the storm venv CI builds."""

# ------------------------------------------------------------------ commands no offline stand-in can serve
_AGENTS = ("the agents' model is a hosted openai/gpt-4.1 and DeepScholar's agents search arXiv; no documented "
           "setting points an agent kind at the loopback stubs")
_LIVE = "builds a release from arXiv/OpenAlex; no loopback stand-in for them is reachable through documented settings"
_AFTER_LIVE = "needs the release the live build (network) makes"
OFFLINE_IMPOSSIBLE: dict[tuple[str, str], str] = {
    (R, "dvc exp run -S deepscholar/systems=agents -S judge=llm -S judge.model=openai/gpt-4.1"): _AGENTS,
    (D + "agents.md", "dvc exp run -S deepscholar/systems=agents -S judge=llm -S judge.model=openai/gpt-4.1"): _AGENTS,
    (D + "agents.md", "dvc exp run -S researcherbench/systems=agents -S judge=llm"): _AGENTS,
    (D + "agents.md", "dvc exp run -S deer/systems=agents -S judge=llm"): _AGENTS,
    (D + "agents.md", "dvc exp run -S researchqa/systems=agents -S judge=llm"): _AGENTS,
    (D + "agents.md", "dvc exp run -S liveresearchbench/systems=agents -S judge=llm"): _AGENTS,
    (R, "dvc exp run pipelines/live/dvc.yaml -S live.name=live-2025-07 -S live.window.start=2025-07-01 "
        "-S live.window.end=2025-07-31"): _LIVE,
    (R, "dvc exp run -S deepscholar/release=path -S live.name=live-2025-07"): _AFTER_LIVE,
    (R, "dvc metrics diff live-2025-06 live-2025-07"): _AFTER_LIVE,
    (D + "live-release.md", "dvc exp run pipelines/live/dvc.yaml -S live.name=live-2025-07 -S "
        "live.window.start=2025-07-01 -S live.window.end=2025-07-31 -S judge=llm"): _LIVE,
    (D + "live-release.md", "dvc exp run pipelines/live/dvc.yaml -S live=monthly -S live.name=live-2025-07 -S "
        "live.window.start=2025-07-01 -S live.window.end=2025-07-31 -S judge=llm"): _LIVE,
    (D + "live-release.md", "git add pipelines/live/dvc.yaml pipelines/live/dvc.lock metrics/live params.yaml "
        "overrides.yaml conf/remembered && git commit -m \"release live-2025-07\""): _AFTER_LIVE,
    (D + "live-release.md", "git tag release/live-2025-07 && dvc push"): _AFTER_LIVE + " and a DVC remote",
    (D + "live-release.md", "dvc metrics diff release/live-2025-06 release/live-2025-07"): _AFTER_LIVE,
    (D + "live-release.md", "dvc params diff release/live-2025-06 release/live-2025-07"): _AFTER_LIVE,
    (D + "researchqa-builder.md", "dvc exp run pipelines/researchqa_survey/dvc.yaml -S judge=llm -S "
        "live_researchqa.generator_model=openai/gpt-4.1-mini -S live_researchqa.name=rqa-2025-07 -S "
        "live_researchqa.window.start=2025-07-01 -S live_researchqa.window.end=2025-07-31 -S "
        "'live_researchqa.fields=[fields/17,fields/27,fields/13]'"): _LIVE,
    (D + "researchqa-builder.md", "git add pipelines/researchqa_survey/dvc.yaml pipelines/researchqa_survey/dvc.lock "
        "metrics/live_researchqa params.yaml overrides.yaml conf/remembered"): _AFTER_LIVE,
    (D + "researchqa-builder.md", "git commit -m \"release rqa-2025-07\" && git tag release/rqa-2025-07 && dvc push"):
        _AFTER_LIVE + " and a DVC remote",
    (D + "researchqa-builder.md", "dvc metrics diff release/rqa-2025-06 release/rqa-2025-07"): _AFTER_LIVE,
    (D + "researchqa-builder.md", "dvc exp run -S 'benchmarks=[researchqa]' -S researchqa/release=researchqa -S "
        "benchmarks.researchqa.release.name=rqa-2025-07 -S "
        "benchmarks.researchqa.release.path=live_researchqa/releases/rqa-2025-07 -S "
        "benchmarks.researchqa.release.source=live_researchqa/releases/rqa-2025-07 -S "
        "benchmarks.researchqa.release.created_at=2025-08-01 -S benchmarks.researchqa.release.split=test"): _AFTER_LIVE,
    (D + "deepresearch-bench.md", "mkdir -p $M && git -C <clone> archive 214741e prompt utils "
        "deepresearch_bench_race.py | tar -x -C $M"): "a clone of the authors' GitHub repository",
}
"""(doc, command) → why no loopback stub can stand in. Each is marked `needs: network` in its doc."""

# ------------------------------------------------------------------------------------------- known failures
KNOWN_BROKEN: dict[tuple[str, str], str] = {}

# ----------------------------------------------------------------------------------------------- scenarios
STUB = "reportbench stub-server --port 8765 --latency-ms 0 &"
BYO_REPRO = "reportbench compose agents=byo_examples && dvc repro"
WITH_REF_REPRO = "reportbench compose deepscholar/systems=with_ref && dvc repro"
API_BASE_SET = r"wrote params\.yaml \(overrides: (.* )?judge\.api_base=http://127\.0\.0\.1:8765/v1"
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("cli", "reproduced", (
        S(R, "dvc repro", r"up to date|didn't change"),
        S(D + "agreement.md", "dvc repro", r"up to date|didn't change"),
        S(D + "agreement.md", "reportbench annotate --benchmark deepscholar --task support --task relevance -n 150 "
          "--seed 0", r"wrote annotate/deepscholar-demo\.html: 150 of"),
        S(R, "reportbench parse path/to/report.md", r'"task_id": "demo-0001"'),
        S(R, "reportbench parse path/to/run_dir --format storm", r"sentences: 3 \(3 with citations\)"),
        S(R, "reportbench check path/to/reports -b researcherbench --release demo", r"mapped\s+q1\.md -> q1"),
        S(D + "mapping.md", "reportbench check data/demo/researcherbench/systems/footnote_writer -b researcherbench "
          "--release demo", r"mapped\s+q1\.md -> q1"),
        S(D + "presets.md", "reportbench ls presets", r"^deer/preset=published"),
        S(D + "presets.md", "reportbench reproduce --list", r"^deer/csai-1\s"),
        S(D + "presets.md", "reportbench reproduce deer/csai-1"),
        S(D + "deepresearch-bench.md", "reportbench reproduce deepresearch_bench/fact-selfmade-model --data "
          "tests/fixtures/drb_fact/selfmade-model", r"3 of 3 checked cells within tolerance"),
        S(D + "reliability.md", "reportbench retry --list"),
        S(D + "reliability.md", "reportbench retry"),
        S(D + "reliability.md", "reportbench retry --parse"),
        S(D + "reliability.md", "reportbench retry --benchmark researchqa"),
        S(D + "site.md", "reportbench view -b deepscholar -s hasty_writer -t demo-0001",
          r"^\.reportbench/view/samples/deepscholar/demo/hasty_writer/demo-0001\.html$"),
        S(D + "site.md", "reportbench view -b deepscholar -s hasty_writer -t demo-0001 --text", r"^outcome: ok"),
        S(D + "site.md", "reportbench view -b deepscholar",
          r"^\.reportbench/view/benchmarks/deepscholar/demo/index\.html$"),
        S(D + "site.md", "reportbench view"),
        S(D + "agents.md", "reportbench agents ls", r"^storm\s"),
        S(R, "reportbench board", r"^deepscholar · demo"),
        S(R, "reportbench board -b deepscholar", r"^deepscholar · demo"),
        S(D + "reading-scores.md", "reportbench board", r"^researcherbench · demo"),
        S(D + "reading-scores.md", "reportbench board -b researcherbench", r"^researcherbench · demo"),
        S(D + "presets.md", "reportbench reproduce --list -b researcherbench", r"^researcherbench/table2"),
        S(D + "presets.md", "reportbench reproduce -b researcherbench table2",
          r"reportbench estimate -b researcherbench", 2),  # exit 2: the authors' data is not beside this copy
        S(D + "presets.md", "reportbench export -b researcherbench --scores data/scores/researcherbench/demo --out "
          "exported/researcherbench", r"evaluation_results\.txt"),
        S(D + "scale.md", "reportbench estimate -S judge=llm -b researcherbench --json",
          r'"stage": "judge@researcherbench'),
        S(D + "scale.md", "reportbench estimate --benchmark deepscholar -S benchmarks.deepscholar.release.limit=2 "
          "-S judge=llm", r"judge@deepscholar"),
        S(D + "judges.md", "reportbench check-judge judge=llm_paper", r"^error: judge\.model: judge 'llm_paper'", 2),
        S(D + "scale.md", "reportbench estimate -S judge=llm -S judge.model=openai/gpt-4.1"),
        S(D + "scale.md", "reportbench estimate -S judge=llm -S judge.model=openai/gpt-4.1"),
        S(D + "scale.md", "reportbench estimate -S judge=llm -b researcherbench --system footnote_writer --json"),
        S(D + "scale.md", "reportbench batch status", r"no batch state"),
        S(D + "scale.md", "reportbench batch retry", r"no batch state"),
        S(R, "reportbench stub-search &", r"^listening on http://127\.0\.0\.1:8766"),
        S(R, "export OPENALEX_API_KEY=... OPENALEX_MAILTO=you@example.org"),
        S(R, "reportbench live init", r"pipelines/live/dvc\.yaml"),
        S(D + "live-release.md", "export OPENALEX_API_KEY=... OPENALEX_MAILTO=you@example.org"),
        S(D + "live-release.md", "reportbench live init", r"pipelines/live/dvc\.yaml"),
        S(D + "deepscholar.md", "reportbench label init", r"^wrote pipelines/label/dvc\.yaml"),
        S(D + "researchqa-builder.md", "export OPENALEX_API_KEY=... OPENALEX_MAILTO=you@example.org"),
        S(D + "researchqa-builder.md", "export OPENAI_API_KEY=..."),
        S(D + "researchqa-builder.md", "python pipelines/researchqa_survey/run.py init",
          r"^wrote pipelines/researchqa_survey/dvc\.yaml"),
    )),
    Scenario("dvc-views", "reproduced", (
        S(D + "dvc.md", "dvc metrics show metrics/deepscholar/demo/summary", r"careful_writer"),
        S(D + "dvc.md", "dvc metrics show", r"metrics/researcherbench/demo"),
        S(D + "dvc.md", "dvc metrics show --precision 3 --md", r"^\| Path"),
        S(D + "dvc.md", "cd metrics/researcherbench/demo && dvc metrics show brief.json --precision 3", r"brief\.json"),
        S(R, "dvc plots show", r"dvc_plots/index\.html"),
        S(D + "dvc.md", "dvc plots show", r"dvc_plots/index\.html"),
        S(R, "dvc exp run -S benchmarks.deepscholar.scoring.document_importance.mode=code", r"Ran experiment"),
        S(R, "dvc metrics diff main <exp-name>", r"document_importance"),
        S(D + "dvc.md", "dvc metrics diff main my-exp", r"document_importance"),
        S(D + "dvc.md", "dvc plots diff main my-exp", r"dvc_plots/index\.html"),
        S(R, "dvc exp show --only-changed --drop "
          "'plan\\.|judge_identity\\.|data/|src/|prompts/|stages/|Created|State|Executor'"),
        S(D + "dvc.md", "dvc exp show --only-changed --drop "
          "'plan\\.|judge_identity\\.|data/|src/|prompts/|stages/|Created|State|Executor'"),
        S(D + "dvc.md", "dvc exp show --keep 'Experiment|judge\\.name|.*:overall(_.*)?$' --drop '.*'", r"Experiment"),
        S(D + "dvc.md", "dvc exp show --csv --keep 'Experiment|judge\\.name|.*:overall(_.*)?$' --drop '.*'",
          r"^Experiment,"),
        S(D + "dvc.md", "dvc exp show --drop '.*' --keep 'Experiment|ds\\..*'"),
        S(D + "dvc.md", "dvc exp show --drop '.*' --keep 'Experiment|rb\\..*'"),
        S(D + "presets.md", "dvc exp run -S deer/preset=defaults", r"Ran experiment"),
        S(R, "dvc exp run -S 'benchmarks=[deepscholar]'", r"Ran experiment"),
        S(R, "dvc exp run --dry --allow-missing -S judge=llm", r"Running stage 'judge@deepscholar'"),
        S(D + "dvc.md", "dvc exp run --dry --allow-missing -S judge=llm -S judge.model=openai/gpt-4.1",
          r"Running stage 'judge@deepscholar'"),
    )),
    Scenario("scale-limits", "reproduced", (  # docs/scale.md: subsets and the queue (on their own: xdist runs both)
        S(D + "scale.md", "dvc exp run -S benchmarks.<b>.release.limit=N", r"Ran experiment"),
        S(D + "scale.md", "dvc exp run -S benchmarks.deer.release.limit=2", r"Ran experiment"),
        S(D + "scale.md", "reportbench compose benchmarks.researcherbench.release.limit=2", r"wrote params\.yaml"),
        S(D + "scale.md", "dvc repro", r"demo-limit2"),
        S(D + "scale.md", "reportbench compose --reset", r"wrote params\.yaml"),
        S(D + "scale.md", "dvc exp run --queue", r"Queued experiment"),
        S(D + "scale.md", "dvc queue start -j N"),
    )),
    Scenario("systems-walkthrough", "reproduced", (
        S(D + "systems.md", "reportbench compose 'benchmarks=[deepscholar]'", r"wrote params\.yaml"),
        S(D + "systems.md", "cp -r data/demo/deepscholar/systems/careful_writer my_reports"),
        S(D + "systems.md", "reportbench systems add deepscholar my_system --folder my_reports", r"my_system"),
        S(D + "systems.md", "reportbench compose --check"),
        S(D + "systems.md", "reportbench estimate --system my_system judge=llm judge.model=openai/gpt-4.1",
          r"judge@deepscholar \(my_system\)"),
        S(D + "systems.md", "dvc repro", r"Running stage 'system@deepscholar\.my_system'"),
        S(D + "systems.md", "cat metrics/deepscholar/demo/leaderboard.md", r"my_system"),
        S(D + "systems.md", "reportbench view --benchmark deepscholar --system my_system --task demo-0001 --text",
          r"^outcome: ok"),
    )),
    Scenario("bring-systems", "reproduced", (  # docs/agents.md §13: bringing a system the papers ran
        S(D + "agents.md", "cp -r data/demo/liveresearchbench/systems/careful_analyst grok_deepsearch"),
        S(D + "agents.md", "reportbench systems add liveresearchbench grok_deepsearch --folder grok_deepsearch",
          r"grok_deepsearch"),
        S(D + "agents.md", STUB, "listening on http://127.0.0.1:8765/v1"),
        S(D + "agents.md", STUB, "listening on http://127.0.0.1:8765/v1"),
        S(D + "agents.md", "reportbench systems add deepscholar openscholar_8b_no_retrieval --endpoint "
          "openai/openscholar-8b --api-base http://127.0.0.1:8765/v1", r"openscholar_8b_no_retrieval"),
        # one `dvc repro` runs both recipes' new systems (the same command twice in a scenario runs once)
        S(D + "agents.md", "dvc repro", r"Running stage 'system@liveresearchbench\.grok_deepsearch'"),
        S(D + "agents.md", "dvc repro", r"Running stage 'system@deepscholar\.openscholar_8b_no_retrieval'"),
    )),
    Scenario("with-ref", "reproduced", (
        S(D + "systems.md", "python -m reportbench.systems.devservices --arxiv-fixtures tests/fixtures/systems/arxiv &",
          "listening"),
        S(D + "systems.md", WITH_REF_REPRO),
        S(R, "dvc exp run -S deepscholar/systems=with_ref"),
    )),
    # The key-needing judge commands, against the stub (docs/judges.md "Trying a key-needing command offline"), in
    # five independent scenarios (each from the reproduced state, on a loopback of its own: xdist runs them at once)
    Scenario("byo-systems", "reproduced", (
        S(D + "systems.md", STUB, "listening on http://127.0.0.1:8765/v1"),
        S(D + "systems.md", BYO_REPRO, r"byo_endpoint"),
        S(R, "dvc exp run -S agents=byo_examples"),
    )),
    Scenario("stub-judge", "reproduced", (
        S(D + "judges.md", STUB, "listening on http://127.0.0.1:8765/v1"),
        S(D + "judges.md", "reportbench compose judge.api_base=http://127.0.0.1:8765/v1", API_BASE_SET),
        S(R, "export OPENAI_API_KEY=..."),
        S(R, "dvc exp run -S judge=llm -S judge.model=openai/gpt-4.1"),
        S(R, "dvc exp run -S judge=llm -S judge.model=openai/gpt-4.1"),
        S(R, "dvc exp run -S judge=llm -S judge.model=anthropic/claude-sonnet-4-5"),
        S(R, "dvc exp run -S judge=llm_paper"),
    )),
    Scenario("stub-judge-authors", "reproduced", (
        S(D + "judges.md", STUB, "listening on http://127.0.0.1:8765/v1"),
        S(D + "judges.md", "reportbench compose judge.api_base=http://127.0.0.1:8765/v1", API_BASE_SET),
        S(R, "export OPENAI_API_KEY=..."),
        # the published preset sends the authors' DEER prompts: the mirror docs/prompt-packs.md exports, first
        S(D + "prompt-packs.md", "export REPORTBENCH_AUTHORS_MIRROR=/path/to/authors-mirror"),
        S(D + "presets.md", "dvc exp run -S 'benchmarks=[deer]' -S judge=llm -S deer/preset=published"),
        S(D + "presets.md", "dvc exp run -S 'benchmarks=[deer]' -S judge=llm -S deer/preset=paper"),
        S(D + "prompt-packs.md", "dvc exp run -S judge=llm -S judge.prompts=authors"),
    ), needs_shared=True),  # docs/prompt-packs.md's mirror: ../shared/authors/mirror (the authors' prompts)
    Scenario("stub-judge-batch", "reproduced", (
        S(D + "judges.md", STUB, "listening on http://127.0.0.1:8765/v1"),
        S(D + "judges.md", "reportbench compose judge.api_base=http://127.0.0.1:8765/v1", API_BASE_SET),
        S(R, "export OPENAI_API_KEY=..."),
        S(D + "scale.md", "dvc exp run -S judge=llm -S judge.model=openai/gpt-4.1 -S judge.runtime.mode=batch"),
        S(D + "scale.md", "dvc exp run -S judge=llm -S judge.model=anthropic/claude-sonnet-4-5 -S "
          "judge.runtime.mode=batch"),
        S(D + "scale.md", "reportbench cache export judge-cache.jsonl.gz", r"exported \d+ answers"),
        S(D + "scale.md", "reportbench cache export judge-cache.jsonl.gz [--model openai/gpt-4.1]"),
        S(D + "scale.md", "reportbench cache import judge-cache.jsonl.gz"),
        S(D + "scale.md", "reportbench cache import …"),
    )),
    Scenario("stub-judge-queue", "reproduced", (  # docs/scale.md: two judges queued, sharing a cache and a rate limit
        S(D + "judges.md", STUB, "listening on http://127.0.0.1:8765/v1"),
        S(D + "judges.md", "reportbench compose judge.api_base=http://127.0.0.1:8765/v1", API_BASE_SET),
        S(R, "export OPENAI_API_KEY=..."),
        S(D + "scale.md", "CACHE=$HOME/.cache/reportbench"),
        S(D + "scale.md", "for m in openai/gpt-4.1 anthropic/claude-sonnet-4-5; do dvc exp run --queue -S judge=llm "
          "-S judge.model=$m -S judge.runtime.cache_path=$CACHE/judge.sqlite -S "
          "+judge.runtime.rate_limit_path=$CACHE/ratelimit.sqlite -S judge.runtime.requests_per_minute=500 done",
          r"Queued experiment"),
        S(D + "scale.md", "dvc queue start -j 2 && dvc queue status"),
        S(D + "scale.md", "dvc exp show --only-changed", r"Experiment"),
    )),
    Scenario("shared-data", "reproduced", (
        S(R, "dvc exp run -S deepscholar/release=deepscholar -S deepscholar/systems=deepscholar_baselines"),
        S(D + "agents.md", "dvc exp run -S deepscholar/release=deepscholar -S "
          "deepscholar/systems=deepscholar_baselines"),
        S(R, "dvc exp run -S 'benchmarks=[deepscholar]' -S deepscholar/release=deepscholar -S "
          "deepscholar/systems=deepscholar_baselines"),
    ), needs_shared=True),
    Scenario("shared-estimates", "reproduced", (
        S(D + "mapping.md", "reportbench check ../shared/data/liveresearchbench/reference_reports -b liveresearchbench "
          "--release public80 --allow-missing true --json"),
        S(D + "scale.md", "S=../shared/data"),
        S(D + "scale.md", "reportbench estimate -S judge=llm -S 'benchmarks=[researcherbench]' -S "
          "researcherbench/release=researcherbench -S researcherbench/systems=shared -S "
          "benchmarks.researcherbench.release.source=$S/researcherbench -S "
          "benchmarks.researcherbench.systems.OpenAI.path=$S/researcherbench/user_data/OpenAI.json --system OpenAI"),
        S(D + "scale.md", "reportbench estimate -S judge=llm -S 'benchmarks=[deepscholar]' -S "
          "deepscholar/release=deepscholar -S deepscholar/systems=deepscholar_baselines -S "
          "benchmarks.deepscholar.release.source=$S/deepscholar-bench -S "
          "benchmarks.deepscholar.systems.searchai_gpt41.path=$S/deepscholar-bench/tests/baselines_results/"
          "search_ai_gpt_4.1 --system searchai_gpt41"),
        S(D + "scale.md", "reportbench estimate -S judge=llm -S 'benchmarks=[liveresearchbench]' -S "
          "liveresearchbench/release=public80 -S liveresearchbench/systems=reference -S "
          "liveresearchbench/judges=paper -S "
          "benchmarks.liveresearchbench.release.source=$S/liveresearchbench/coverage_checklist_public80.csv -S "
          "benchmarks.liveresearchbench.release.path=$S/liveresearchbench/coverage_checklist_public80.csv -S "
          "benchmarks.liveresearchbench.systems.open_deep_research.path=$S/liveresearchbench/reference_reports"),
    ), needs_shared=True),
    Scenario("shared-label", "reproduced", (  # docs/deepscholar.md: labelling the real release with the stub judge
        S(D + "deepscholar.md", "reportbench compose deepscholar/release=deepscholar && dvc repro release@deepscholar"),
        S(D + "judges.md", STUB, "listening"),
        S(D + "judges.md", "reportbench compose judge.api_base=http://127.0.0.1:8765/v1", API_BASE_SET),
        S(D + "deepscholar.md", "reportbench label init", r"^wrote pipelines/label/dvc\.yaml"),
        S(D + "deepscholar.md", "dvc exp run pipelines/label/dvc.yaml -S judge=llm -S judge.model=openai/gpt-4o",
          r"Ran experiment"),
        S(D + "deepscholar.md", "dvc exp run -S 'benchmarks=[deepscholar]' -S judge=llm -S judge.model=openai/gpt-4o "
          "-S deepscholar/release=path -S benchmarks.deepscholar.release.name=deepscholar-2025-06 -S "
          "benchmarks.deepscholar.release.source=data/labelled/deepscholar/deepscholar-2025-06 -S "
          "deepscholar/systems=deepscholar_baselines", r"Ran experiment"),
    ), needs_shared=True),
    Scenario("plugin", "reproduced", (
        S(D + "plugins.md", "pip install -e tests/plugins/reportbench_toy"),
        S(D + "plugins.md", "reportbench ls benchmarks", r"\btoy\b"),
        S(D + "plugins.md", "reportbench compose "
          "'benchmarks=[deepscholar,researcherbench,deer,researchqa,liveresearchbench,toy]'"),
        S(D + "plugins.md", "dvc repro"),
    ), own_venv=True),
    Scenario("suite-commands", "fresh", (
        S(D + "deepresearch-bench.md", "M=/path/mirrors/Ayanami0730/deep_research_bench/"
          "214741e474a5347ea7f869ab79d27e7c8734ede7"),
        S(D + "deepresearch-bench.md", "REPORTBENCH_AUTHORS_MIRROR=/path/mirrors pytest "
          "tests/test_deepresearch_bench_goldens.py"),
    ), needs_shared=True),
)


# ---------------------------------------------------------------- what a documented command's results must hold
# Checked in the scenario's own repository right after the command (`run` runs a further command there, with the
# scenario's environment, and returns its output): CI makes each of these DVC runs once. They were the checks of
# tests/test_subset.py and tests/test_newcomer_walkthrough.py, which repeated the same command in a copy of the same
# reproduced template.
SUBSET_NOTICE = "not comparable with full runs"


def subset_release_results(repo: Path, outputs: dict[str, str], run: Callable[[str], str]) -> None:
    """docs/scale.md's `dvc exp run -S benchmarks.deer.release.limit=2`: a `-limit2` release with its own metrics
    folder, the notice on every output and the site, and `dvc metrics diff` never pairing a subset number with a full
    run's (issue 32, tests/test_subset.py)."""
    ran = set(re.findall(r"Running stage '([^']+)'", outputs["dvc exp run -S benchmarks.deer.release.limit=2"]))
    assert "release@deer" in ran and all("@deer" in s or s == "site" for s in ran), ran
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert params["benchmarks"]["deer"]["release"]["limit"] == 2
    assert params["plan"]["benchmarks"]["deer"]["release"] == "demo-limit2"
    manifest = json.loads((repo / "data/releases/deer/demo-limit2/release.json").read_text())
    assert (manifest["subset"]["n"], manifest["subset"]["of"]) == (2, 3)
    metrics = repo / "metrics/deer/demo-limit2"
    board = json.loads((metrics / "leaderboard.json").read_text())
    assert board["meta"]["notice"].startswith("subset 2 of 3 tasks") and all(r["n_tasks"] == 2 for r in board["rows"])
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.html"):
        assert SUBSET_NOTICE in (metrics / name).read_text(), name
    site = repo / "site"
    assert SUBSET_NOTICE in (site / "benchmarks/deer/demo-limit2/index.html").read_text()
    assert "subset 2 of 3" in (site / "index.html").read_text()
    # the full run's files are untouched, and DVC never compares the two: each path is only on one side
    assert "notice" not in json.loads((repo / "metrics/deer/demo/leaderboard.json").read_text())["meta"]
    diff = json.loads(run("dvc metrics diff --json --all") or "{}")
    paired = [p for p, keys in diff.items() if "demo-limit2" in p for v in keys.values() if v.get("old") is not None]
    assert not paired, paired
    assert any("deer/demo-limit2" in p for p in diff), sorted(diff)


def walkthrough_results(repo: Path, outputs: dict[str, str], run: Callable[[str], str]) -> None:
    """docs/systems.md's "Bring your own system" walk-through: what it promises (issue 24, item 1,
    tests/test_newcomer_walkthrough.py)."""
    group = (repo / "conf" / "deepscholar" / "systems" / "my_systems.yaml").read_text()
    assert group.startswith("# @package benchmarks.deepscholar.systems\n") and "my_system:" in group
    board = json.loads((repo / "metrics" / "deepscholar" / "demo" / "leaderboard.json").read_text())
    assert "my_system" in {r["system"] for r in board["rows"]}
    assert "careful_writer" in {r["system"] for r in board["rows"]}  # the demo systems stay
    assert "my_system" in (repo / "metrics" / "deepscholar" / "demo" / "leaderboard.md").read_text()
    estimate = outputs["reportbench estimate --system my_system judge=llm judge.model=openai/gpt-4.1"]
    assert "judge@deepscholar (my_system)" in estimate and "openai/gpt-4.1" in estimate
    # a bare compose keeps the system (it used to drop it and delete its outputs)
    run("reportbench compose")
    assert (repo / "data" / "runs" / "deepscholar" / "demo" / "my_system" / "reports.jsonl").is_file()
    assert "my_system" in (repo / "params.yaml").read_text()


RUNNING = re.compile(r"Running stage '([^']+)'")


def _board_systems(repo: Path) -> set[str]:
    board = json.loads((repo / "metrics" / "deepscholar" / "demo" / "leaderboard.json").read_text())
    return {row["system"] for row in board["rows"]}


def _outcomes(repo: Path, system: str) -> list[str]:
    lines = (repo / "data" / "runs" / "deepscholar" / "demo" / system / "outcomes.jsonl").read_text().splitlines()
    return [json.loads(line)["status"] for line in lines]


def byo_agents_results(repo: Path, outputs: dict[str, str], run: Callable[[str], str]) -> None:
    """docs/systems.md's `agents=byo_examples` (a command and an endpoint system against the documented stub, defined
    once as agents): both run on every enabled benchmark, answer every task and reach the leaderboard beside the
    demo systems (was tests/test_systems_dvc.py: the same on two benchmarks, in a copy of the same template)."""
    ran = set(RUNNING.findall(outputs[BYO_REPRO]))
    enabled = yaml.safe_load((repo / "params.yaml").read_text())["plan"]["benchmarks"]
    assert {"deepscholar", "researchqa"} <= set(enabled), enabled
    missing = [f"system@{b}.{s}" for b in enabled for s in ("byo_command", "byo_endpoint")
               if f"system@{b}.{s}" not in ran]
    assert not missing, f"agents run on every enabled benchmark; not run: {missing}"
    assert {"score@deepscholar", "cross@researchqa"} <= ran, sorted(ran)
    assert {"byo_command", "byo_endpoint", "careful_writer"} <= _board_systems(repo)
    assert _outcomes(repo, "byo_command") == ["ok"] * 3
    assert _outcomes(repo, "byo_endpoint") == ["ok"] * 3  # the endpoint answered every task (the loopback stub)


def with_ref_results(repo: Path, outputs: dict[str, str], run: Callable[[str], str]) -> None:
    """docs/systems.md's DeepScholar-ref against the documented loopback doubles: adding a system to the reproduced
    pipeline reruns only its own stage, the judge and score of its benchmark and the site; it searched through the
    recorded arXiv responses and never used the recorded post-cutoff paper (was tests/test_systems_dvc.py)."""
    ran = set(RUNNING.findall(outputs[WITH_REF_REPRO]))
    expected = {"system@deepscholar.deepscholar_ref", "judge@deepscholar", "score@deepscholar", "site"}
    assert ran == expected, f"adding a system reran {sorted(ran - expected)} / missed {sorted(expected - ran)}"
    assert {"deepscholar_ref", "careful_writer"} <= _board_systems(repo)
    assert _outcomes(repo, "deepscholar_ref") == ["ok"] * 3
    # the reproduced template has no search cache (no default system searches): rows here are this run's arXiv
    # searches, through the only arXiv URL the config names (the replay on 127.0.0.1:8766)
    searches = json.loads(run("python -c \"import json, sqlite3; print(json.dumps(sqlite3.connect("
                              "'.reportbench/cache/search.sqlite').execute('select count(*) from searches')"
                              ".fetchone()[0]))\""))
    assert searches > 0, "DeepScholar-ref searched through the recorded arXiv responses"
    raw = (repo / "data" / "runs" / "deepscholar" / "demo" / "deepscholar_ref" / "raw" / "demo-0002.md").read_text()
    assert "2513.00530" not in raw and "## References" in raw  # the post-cutoff recorded result never used


ResultCheck = Callable[[Path, dict[str, str], Callable[[str], str]], None]
RESULT_CHECKS: dict[tuple[str, str], ResultCheck] = {
    # (scenario, the command as it runs) -> checked right after that command's first run
    ("scale-limits", "dvc exp run -S benchmarks.deer.release.limit=2"): subset_release_results,
    ("systems-walkthrough", "reportbench view --benchmark deepscholar --system my_system --task demo-0001 --text"):
        walkthrough_results,
    ("byo-systems", BYO_REPRO): byo_agents_results,
    ("with-ref", WITH_REF_REPRO): with_ref_results,
}


# ================================================================================================ machinery
def documented() -> list[DocCommand]:
    return extract(REPO).commands


def all_entries() -> list[tuple[str, str]]:
    keys = [(s.doc, s.cmd) for s in CI_RUNS]
    keys += list(OFFLINE_IMPOSSIBLE)
    keys += list(COVERED_ELSEWHERE)
    keys += [(s.doc, s.cmd) for sc in SCENARIOS for s in sc.steps]
    return keys


def base_env(home: Path, bin_dir: Path | None = None) -> dict[str, str]:
    """What a user's shell has: PATH (the venv's bin first), HOME with a git identity, a UTF-8 locale, the
    machine's pip configuration (PIP_* and its pip.conf: where packages come from, as for the README's install),
    and DVC_NO_ANALYTICS=1 as the README's "Environment" asks. Nothing else."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Docs Reader\n\temail = reader@example.org\n"
                                     "[init]\n\tdefaultBranch = main\n")
    env = {"PATH": f"{bin_dir or Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
           "HOME": str(home), "LANG": "C.UTF-8", "DVC_NO_ANALYTICS": "1", "TMPDIR": str(home.parent / "tmp")}
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    pip_conf = Path.home() / ".config" / "pip" / "pip.conf"
    if pip_conf.is_file() and "PIP_CONFIG_FILE" not in env:
        env["PIP_CONFIG_FILE"] = str(pip_conf)
    return env


def layered_venv(dest: Path) -> Path:
    """A new venv that sees the session venv's packages (a .pth file) but installs into itself, with `reportbench`
    and `dvc` run by its own interpreter: a documented `pip install` changes nothing outside this test."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    py = dest / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    parent_site = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "_session_venv.pth").write_text(f"import site; site.addsitedir({parent_site!r})\n")  # its .pth too
    for tool, module in (("reportbench", "reportbench.cli"), ("dvc", "dvc.cli"), ("pip", "pip")):
        script = dest / "bin" / tool
        run = "sys.exit(main())" if tool != "pip" else "runpy.run_module('pip', run_name='__main__')"
        head = f"from {module} import main" if tool != "pip" else "import runpy"
        script.write_text(f"#!{py}\nimport sys\n{head}\n{run}\n")
        script.chmod(0o755)
    return dest / "bin"


@dataclass
class Outcome:
    step: Step
    ran: str
    rc: int
    output: str
    seconds: float
    cpu: float = 0.0  # user + system seconds of the command and everything it waited for (load-independent)

    @property
    def ok(self) -> bool:
        return self.rc == self.step.rc and (not self.step.expect or re.search(self.step.expect, self.output, re.M)
                                            is not None)

    def describe(self) -> str:
        want = f"exit {self.step.rc}" + (f" and /{self.step.expect}/" if self.step.expect else "")
        return (f"{self.step.doc}: `{self.ran}` exited {self.rc} in {self.seconds:.1f} s (want {want}):\n"
                f"{self.output[-2500:]}")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Shell:
    """Documented commands run one `bash` each in `cwd`, their exports and assignments carried over; `prefix`
    (netns.private_loopback) runs each of them, and the servers they start, on a loopback of their own."""

    def __init__(self, cwd: Path, env: dict[str, str], prefix: list[str] | None = None) -> None:
        self.cwd, self.env, self.prefix = cwd, env, list(prefix or [])
        self.background: list[subprocess.Popen[str]] = []
        self.exp = ""
        self.queued = False
        Path(env["TMPDIR"]).mkdir(parents=True, exist_ok=True)

    def run(self, step: Step, text: str, timeout: float = 900) -> Outcome:
        t0 = time.perf_counter()
        if text.rstrip().endswith("&"):
            return self._start(step, text.rstrip()[:-1], t0)
        if self.queued and not text.startswith("dvc queue"):
            self.wait_for_queue()  # the doc's next step comes "once `dvc queue status` lists them as done"
        self.queued = self.queued or "dvc queue start" in text
        envfile = Path(self.env["TMPDIR"]) / "env.out"
        script = f"set -a\n{text}\n__rc=$?\nenv -0 > {envfile}\nexit $__rc\n"
        cpu0 = _children_cpu()
        proc = subprocess.run([*self.prefix, "bash", "-c", script], cwd=self.cwd, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        cpu = _children_cpu() - cpu0
        if envfile.is_file():
            pairs = [p.split("=", 1) for p in envfile.read_text().split("\0") if "=" in p]
            self.env = {k: v for k, v in pairs if k not in ("__rc", "SHLVL", "_", "PWD", "OLDPWD")}
            envfile.unlink()
        out = proc.stdout + proc.stderr
        if text.startswith("dvc exp run") and proc.returncode == 0:
            found = re.search(r"experiment '([\w-]+)'", out) or re.search(r"Ran experiment\(s\): ([\w-]+)", out)
            self.exp = found.group(1) if found else self.exp
        return Outcome(step, text, proc.returncode, out, time.perf_counter() - t0, cpu)

    def _start(self, step: Step, text: str, t0: float) -> Outcome:
        """A documented `… &` server: started in the background; its first line (`listening on …`) is its output."""
        proc = subprocess.Popen([*self.prefix, "bash", "-c", f"exec {text}"], cwd=self.cwd, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.background.append(proc)
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        first = proc.stdout.readline() if ready else "(nothing printed in 60 s)"
        rc = 0 if proc.poll() is None else int(proc.returncode or 0)
        return Outcome(step, text + " &", rc, first, time.perf_counter() - t0)

    def wait_for_queue(self, limit_s: float = 600) -> None:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            status = subprocess.run([*self.prefix, "dvc", "queue", "status"], cwd=self.cwd, env=self.env,
                                    capture_output=True, text=True, timeout=120).stdout
            if not re.search(r"\b(Running|Queued)\b", status):
                return
            time.sleep(3)

    def close(self) -> None:
        """Background servers stop; a started DVC queue is waited for (bounded), then stopped: nothing outlives
        the test."""
        if self.queued:
            self.wait_for_queue()
            subprocess.run([*self.prefix, "dvc", "queue", "stop", "--kill"], cwd=self.cwd, env=self.env,
                           capture_output=True, timeout=120)
        for proc in self.background:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def doc_text(step: Step) -> str:
    """The command's text exactly as its doc writes it (continuation lines kept)."""
    for c in documented():
        if c.key == (step.doc, step.cmd):
            return c.text
    raise AssertionError(f"{step.doc}: `{step.cmd}` is no longer documented")


def prepare(scenario: Scenario, tmp: Path, request: pytest.FixtureRequest) -> Path:
    if scenario.needs_shared:
        request.getfixturevalue("shared_dir")
    if scenario.state == "reproduced":
        template: Reproduced = request.getfixturevalue("reproduced_template")
        repo = copy_repo_state(template.path, tmp / "repo")
    else:
        repo = copy_working_tree(REPO, tmp / "repo")
    subprocess.run(["git", "branch", "-M", scenario.branch], cwd=repo, check=True, capture_output=True)
    if (REPO.parent / "shared").is_dir() and not (repo.parent.parent / "shared").exists():
        pass  # ../shared is found through the copy's own parent only when a scenario links it (needs_shared)
    if scenario.needs_shared:
        (tmp / "shared").symlink_to(request.getfixturevalue("shared_dir"))
    return repo


@contextlib.contextmanager
def fixed_ports(scenario: Scenario, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str] | None]:
    """The documented servers listen on fixed ports (8765, 8766): a scenario that starts one runs on a loopback of
    its own (netns.private_loopback: several such scenarios at once, across pytest-xdist workers), or, where the
    machine cannot make one, takes turns with the others (a lock file in the run's common temp folder). Yields the
    command prefix that enters its loopback (None: the machine's own)."""
    if not any(s.cmd.endswith("&") for s in scenario.steps):
        yield None
        return
    with private_loopback() as prefix:
        if prefix is not None:
            yield prefix
            return
        root = tmp_path_factory.getbasetemp()
        if os.environ.get("PYTEST_XDIST_WORKER"):
            root = root.parent
        with open(root / "docs-commands-ports.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield None


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_documented_commands_run_as_written(scenario: Scenario, tmp_path: Path, request: pytest.FixtureRequest,
                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    repo = prepare(scenario, tmp_path, request)
    with fixed_ports(scenario, tmp_path_factory) as prefix:
        results = run_steps(scenario, repo, tmp_path, prefix)
    check(results)


def run_steps(scenario: Scenario, repo: Path, tmp_path: Path, prefix: list[str] | None = None) -> list[Outcome]:
    bin_dir = layered_venv(tmp_path / "venv") if scenario.own_venv else None
    shell = Shell(repo, base_env(tmp_path / "home", bin_dir), prefix)
    outcomes: dict[str, Outcome] = {}
    results: list[Outcome] = []
    t0, cpu0 = time.perf_counter(), _children_cpu()
    try:
        for step in scenario.steps:
            text = substitute(doc_text(step), shell.exp)
            done = outcomes.get(normalize(text))  # the same command in two docs runs once
            if done is None:  # (a documented server started twice would find its port taken: it runs once too)
                done = outcomes[normalize(text)] = shell.run(step, text)
                results.append(Outcome(step, done.ran, done.rc, done.output, done.seconds, done.cpu))
                results += result_check(scenario, shell, outcomes, done)
            else:
                results.append(Outcome(step, done.ran, done.rc, done.output, done.seconds, done.cpu))
            print(f"[{done.seconds:6.1f} s, cpu {done.cpu:6.1f} s] exit {done.rc} {step.doc}: "
                  f"{done.ran.splitlines()[0][:100]}", flush=True)
            with open(tmp_path / "outputs.log", "a") as log:  # every command's output, kept with pytest's tmp
                log.write(f"==== {step.doc}: {done.ran} -> exit {done.rc} ({done.seconds:.1f} s, cpu {done.cpu:.1f} s)"
                          f"\n{done.output[-3000:]}\n")
    finally:
        shell.close()
        # the whole scenario: its steps, waits and the servers it started; not a DVC queue's workers (`dvc queue
        # start` detaches them: their CPU reaches no test's children)
        print(f"[{time.perf_counter() - t0:6.1f} s, cpu {_children_cpu() - cpu0:6.1f} s] scenario {scenario.name}",
              flush=True)
    return results


def result_check(scenario: Scenario, shell: Shell, outcomes: dict[str, Outcome], done: Outcome) -> list[Outcome]:
    """RESULT_CHECKS' check for the command that just ran (when it did what its doc says): an Outcome that fails
    with the check's message, or nothing."""
    name = normalize(done.ran)
    checker = RESULT_CHECKS.get((scenario.name, name))
    if checker is None or not done.ok:
        return []

    def run(text: str) -> str:
        proc = subprocess.run([*shell.prefix, "bash", "-c", text], cwd=shell.cwd, env=shell.env, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, f"`{text}` exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}"
        return proc.stdout

    step = Step(done.step.doc, done.step.cmd)
    try:
        checker(shell.cwd, {key: o.output for key, o in outcomes.items()}, run)
    except AssertionError as exc:
        return [Outcome(step, f"{checker.__name__} after `{name}`", 1, (str(exc) or repr(exc))[-3000:], 0.0)]
    return []


def check(results: list[Outcome]) -> None:
    unexpected = [o for o in results if not o.ok and (o.step.doc, o.step.cmd) not in KNOWN_BROKEN]
    fixed = [o for o in results if o.ok and (o.step.doc, o.step.cmd) in KNOWN_BROKEN]
    broken = [o for o in results if not o.ok and (o.step.doc, o.step.cmd) in KNOWN_BROKEN]
    assert not unexpected, "\n\n".join(o.describe() for o in unexpected)
    assert not fixed, "now passing, remove from KNOWN_BROKEN: " + "; ".join(f"{o.step.doc}: `{o.step.cmd}`"
                                                                           for o in fixed)
    if broken:
        pytest.xfail("; ".join(f"{o.step.doc}: `{o.step.cmd}`: {KNOWN_BROKEN[(o.step.doc, o.step.cmd)]}"
                               for o in broken))


# ======================================================================================= the doc set itself
def test_every_documented_command_has_an_entry() -> None:
    found = extract(REPO)
    assert not found.unlabelled_commands, (
        "fenced blocks with commands but no ```bash / ```console label (label them so they are tested): "
        + ", ".join(found.unlabelled_commands))
    documented_keys = [c.key for c in found.commands]
    entries = all_entries()
    missing = sorted({f"{d}: `{c}` ({documented_keys.count((d, c))} in the doc)" for d, c in documented_keys
                      if entries.count((d, c)) < documented_keys.count((d, c))})
    stale = [f"{d}: `{c}`" for d, c in entries if (d, c) not in documented_keys]
    assert not missing, "documented commands no test runs (add them to SCENARIOS):\n" + "\n".join(missing)
    assert not stale, "entries whose command is no longer documented:\n" + "\n".join(stale)
    shared = [k for k in OFFLINE_IMPOSSIBLE if k in [(s.doc, s.cmd) for s in CI_RUNS]]
    assert not shared, f"both run by CI and impossible offline: {shared}"
    assert all(k in documented_keys for k in KNOWN_BROKEN), "a KNOWN_BROKEN command is no longer documented"


def test_key_and_network_commands_are_marked_and_run_against_stubs() -> None:
    """A command marked `needs:` runs in a scenario that starts the documented stubs, or is listed in
    OFFLINE_IMPOSSIBLE with its reason; prints the census the issue asks for."""
    commands = documented()
    marked = {c.key for c in commands if c.needs}
    stubbed = {(s.doc, s.cmd) for sc in SCENARIOS if _uses_stub(sc) for s in sc.steps} | set(COVERED_ELSEWHERE)
    ci = {(s.doc, s.cmd) for s in CI_RUNS}
    unserved = [k for k in marked if k not in stubbed and k not in OFFLINE_IMPOSSIBLE and k not in ci]
    assert not unserved, f"marked needs: but run by no stub scenario, CI_RUNS or OFFLINE_IMPOSSIBLE: {unserved}"
    assert all(k in marked for k in OFFLINE_IMPOSSIBLE), "OFFLINE_IMPOSSIBLE commands must be marked needs: network"
    elsewhere_or_impossible = {*OFFLINE_IMPOSSIBLE, *COVERED_ELSEWHERE}
    ran = [c for c in commands if c.key not in ci and c.key not in elsewhere_or_impossible]
    elsewhere = [c for c in commands if c.key in COVERED_ELSEWHERE]
    by_ci = [c for c in commands if c.key in ci]
    impossible = [c for c in commands if c.key in OFFLINE_IMPOSSIBLE]
    print("\n" + census(commands))
    print(f"documented commands: {len(commands)}; run by this test: {len(ran)} "
          f"(of which key/network-only, against the loopback stubs: {sum(1 for c in ran if c.needs)}); "
          f"run as written by another test: {len(elsewhere)}; "
          f"run by .ci/run as written: {len(by_ci)}; no offline stand-in (needs: network): {len(impossible)}; "
          f"known broken: {len(KNOWN_BROKEN)}")
    assert len(ran) + len(elsewhere) + len(by_ci) + len(impossible) == len(commands)
    assert all(c.needs for c in impossible)


def test_result_checks_follow_a_command_their_scenario_runs() -> None:
    """A RESULT_CHECKS entry whose command its scenario no longer runs would never be checked: it fails here."""
    runs = {(sc.name, normalize(substitute(doc_text(s), "exp"))) for sc in SCENARIOS for s in sc.steps}
    orphans = [key for key in RESULT_CHECKS if key not in runs]
    assert not orphans, f"RESULT_CHECKS for commands their scenario does not run: {orphans}"


def _uses_stub(scenario: Scenario) -> bool:
    return any("stub-server" in s.cmd or "stub-search" in s.cmd for s in scenario.steps)


def test_ci_runs_the_install_and_test_commands_as_written() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    lines = [normalize(re.sub(r"\s-q\b", "", line.split(" #")[0]).replace("nice -n 19 ", "")) for line in
             ci.splitlines()]
    joined = " && ".join(ln for ln in lines if ln.startswith(("python3 -m venv", ". .venv/bin/activate",
                                                               "pip install -c constraints.txt -e '.[test]'")))
    for step in CI_RUNS:
        cmd = step.cmd.replace("agents install storm", "agents install all")  # `all` builds storm
        found = any(cmd == ln or ln.startswith(cmd + " ") for ln in lines) or cmd == joined
        assert found, f"{step.doc}: `{cmd}` is not what .ci/run runs"


def test_ci_sets_the_authors_mirror() -> None:
    """The mirror line of .ci/run that COVERED_ELSEWHERE relies on for docs/prompt-packs.md's test command."""
    ci = (REPO / ".ci" / "run").read_text()
    assert 'export REPORTBENCH_AUTHORS_MIRROR="$(pwd)/../shared/authors/mirror"' in ci


def test_substitutions_are_all_used() -> None:
    texts = [c.text for c in documented()]
    unused = [p for p, _v, _w in SUBSTITUTIONS if not any(p in t for t in texts)]
    assert not unused, f"SUBSTITUTIONS for placeholders no doc uses: {unused}"


if __name__ == "__main__":
    print(census(documented()))
    shutil.which("bash")
