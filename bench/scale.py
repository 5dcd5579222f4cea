"""Real-size runs: build a ResearchQA-shaped and a LiveResearchBench-shaped release of N tasks with S=3 folder
systems of ~2,000-word self-authored synthetic reports, run the real stage scripts (stages/*.py, exactly the
commands dvc.yaml runs, in a temp copy of the repository's layout, offline judge) and print, per N and stage, CPU
seconds, wall seconds, peak RSS and the disk the stage wrote; then µs per report and per judgment, and the cost
of changing one system's reports (what `dvc repro` reruns after it: that system's stage and every stage
downstream).

    python bench/scale.py --n 10,100                       # both shapes
    python bench/scale.py --n 1000 --shapes researchqa --json
    nice python bench/scale.py --n 10,100,1000,5000

DVC's own cost (about a second per stage, hashing the outputs) is not included: the stage scripts run directly,
each in its own process, measured with os.wait4 (CPU = user + system, peak RSS = the process's ru_maxrss).
Everything is synthetic and written under a temp dir (or --work); nothing in the repository is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RQA_SYSTEMS = ("thorough_reviewer", "brief_answerer", "thinking_model")
LRB_SYSTEMS = ("open_deep_research", "careful_analyst", "thin_summariser")
LRB_CATEGORIES = ("market_analysis", "topic_exploration", "ranked_list")

# A self-authored vocabulary: the words are ordinary English research vocabulary, combined at random.
_WORDS = (
    "retrieval model dataset benchmark evaluation method baseline accuracy latency index query document corpus "
    "ranking sparse dense embedding vector transformer attention layer training inference memory throughput "
    "scaling parameter gradient optimizer schedule protocol annotation rubric judge citation source claim "
    "evidence survey analysis experiment ablation variance error bias fairness robustness domain transfer "
    "language vision audio graph network cluster node shard replica cache storage compression quantization "
    "pruning distillation alignment preference reward policy agent planner tool search browser summary report "
    "market growth price risk driver trend share revenue forecast region supplier demand supply cost margin"
).split()


_SYLLABLES = ("ka", "lo", "mi", "ru", "ze", "ta", "vo", "ni", "pe", "su", "da", "fi")


def topic_words(i: int, k: int = 3) -> list[str]:
    """Task i's own made-up topic words (unique per task), as a real question names its own subject: without them
    every synthetic question and report is random text over one small vocabulary, which the shift check rightly
    cannot tell apart."""
    out = []
    for j in range(k):
        digits, n = [], i * k + j
        for _ in range(5):
            n, r = divmod(n, len(_SYLLABLES))
            digits.append(_SYLLABLES[r])
        out.append("zy" + "".join(digits))
    return out


def report_vocabulary(rng: random.Random, share: float = 0.5) -> list[str]:
    """The part of the filler vocabulary one report writes with. Real reports differ in wording; when every
    synthetic report used every filler word, a question made of filler words scored the same on every report,
    and past the shift check's STATS_ROWS sample such a task's spread was ~0: at N = 2,000 the (correct) default
    check stopped `system@` (1,486 of 2,000 reports "matching" another task)."""
    return rng.sample(_WORDS, max(1, int(len(_WORDS) * share)))


def _sentence(
    rng: random.Random, n_words: int, cite: str = "", topic: list[str] | None = None,
    vocabulary: list[str] | tuple[str, ...] = _WORDS,
) -> str:
    words = [rng.choice(vocabulary) for _ in range(n_words)]
    if topic:  # a report mentions its subject now and then
        words[rng.randrange(1, n_words)] = rng.choice(topic)
    words[0] = words[0].capitalize()
    return " ".join(words) + (f" {cite}" if cite else "") + "."


def synthetic_report(
    rng: random.Random, title: str, n_words: int, n_sources: int, link_style: bool, topic: list[str] | None = None,
    vocabulary: list[str] | tuple[str, ...] = _WORDS,
) -> str:
    """~n_words of markdown: sections of paragraphs whose sentences cite numbered sources (a third of them naming
    the task's topic words), then a source list. `vocabulary`: the filler words its sentences use."""
    out = [f"# {title}", ""]
    words = 0
    section = 0
    while words < n_words:
        section += 1
        out += [f"## Section {section}: {rng.choice(_WORDS)} and {rng.choice(_WORDS)}", ""]
        for _ in range(3):
            para = []
            for _ in range(rng.randint(3, 6)):
                k = rng.randint(8, 24)
                cite = f"[{rng.randint(1, n_sources)}]" if rng.random() < 0.6 else ""
                para.append(_sentence(rng, k, cite, topic if rng.random() < 0.33 else None, vocabulary))
                words += k
            out += [" ".join(para), ""]
    out += ["### Sources", ""]
    for i in range(1, n_sources + 1):
        url = f"https://synthetic-{i % 97}.example/{rng.choice(_WORDS)}/{i}"
        out.append(f"[{i}] {rng.choice(_WORDS).capitalize()} {rng.choice(_WORDS)} study: {url}" if not link_style
                   else f"[{i}] [{rng.choice(_WORDS).capitalize()} notes]({url})")
    return "\n".join(out) + "\n"


def make_researchqa(root: Path, n: int, words: int, seed: int = 0) -> dict[str, Path]:
    """test.json of n queries (6-8 rubric items each: the release allows at most 8) and 3 folder systems."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        tid = f"synth-{i:06d}"
        rubric = [
            {
                "rubric_item": f"Does the response explain {rng.choice(_WORDS)} {rng.choice(_WORDS)} "
                f"and {rng.choice(_WORDS)} {rng.choice(_WORDS)}?",
                "type": [rng.choice(["information", "comparison", "depth"])],
                "citation_metadata": None,
            }
            for _ in range(rng.randint(6, 8))  # the real release has at most 8 items per query
        ]
        rows.append({
            "id": tid,
            "general_domain": f"Domain {i % 7} (synthetic)",
            "subdomain": f"Subdomain {i % 13} (synthetic)",
            "field": f"Field {i % 31} (synthetic)",
            "query": _sentence(rng, 15)[:-1] + " " + " ".join(topic_words(i)) + "?",
            "date": "2024-01-01",
            "rubric": rubric,
        })
    root.mkdir(parents=True, exist_ok=True)
    (root / "test.json").write_text(json.dumps(rows), encoding="utf-8")
    folders = {}
    for s_i, system in enumerate(RQA_SYSTEMS):
        d = root / "systems" / system
        d.mkdir(parents=True, exist_ok=True)
        srng = random.Random(seed * 1000 + s_i)
        for row in rows:
            text = synthetic_report(srng, row["query"], words, 12, link_style=system == "thinking_model",
                                    topic=topic_words(int(row["id"].split("-")[1])))
            (d / f"{row['id']}.md").write_text(text, encoding="utf-8")
        folders[system] = d
    return folders


def make_liveresearchbench(root: Path, n: int, words: int, seed: int = 0) -> dict[str, Path]:
    """tasks.csv of n questions (~10 checklist rows each) and 3 folder systems citing ~40 URLs per report."""
    import csv

    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    qids = []
    with open(root / "tasks.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["qid", "question", "category", "checklist_id", "checklist", "question_no_placeholder",
                    "checklist_no_placeholder"])
        for i in range(n):
            qid = f"synth{i:06d}"
            qids.append(qid)
            q = _sentence(rng, 17)[:-1] + " " + " ".join(topic_words(i)) + "?"
            for c in range(rng.randint(8, 12)):
                item = f"Does the report state the {rng.choice(_WORDS)} of the {rng.choice(_WORDS)}?"
                w.writerow([qid, q, LRB_CATEGORIES[i % 3], f"q{c + 1}", item, q, item])
    folders = {}
    for s_i, system in enumerate(LRB_SYSTEMS):
        d = root / "systems" / system
        d.mkdir(parents=True, exist_ok=True)
        srng = random.Random(seed * 1000 + s_i)
        for i, qid in enumerate(qids):
            text = synthetic_report(srng, f"Report {qid}", words, 40, link_style=False, topic=topic_words(i),
                                    vocabulary=report_vocabulary(srng))
            (d / f"qid_{qid}_report.md").write_text(text, encoding="utf-8")
        folders[system] = d
    return folders


# ------------------------------------------------------------------------------------------------ the run
@dataclass
class StageCost:
    stage: str
    cpu_s: float
    wall_s: float
    peak_rss_mb: float
    disk_mb: float
    rc: int
    tail: str = ""
    load: float = 0.0  # the 1-minute load average when the stage started


@dataclass
class ShapeResult:
    shape: str
    n: int
    stages: list[StageCost] = field(default_factory=list)
    n_reports: int = 0
    n_judgments: int = 0
    change_one: list[StageCost] = field(default_factory=list)
    changed_system: str = ""
    site_files: int = 0


def _du_mb(paths: list[Path]) -> float:
    total = 0
    for p in paths:
        if p.is_file():
            total += p.stat().st_size
        elif p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return total / 1e6


def run_measured(name: str, cmd: list[str], cwd: Path, outs: list[Path], env: dict[str, str]) -> StageCost:
    """One stage in its own process: CPU (user+sys), wall, peak RSS (os.wait4), disk of its outputs."""
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=err, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read().decode("utf-8", "replace")[-1500:]
    wall = time.perf_counter() - t0
    rss_mb = ru.ru_maxrss / 1024  # KiB on Linux
    return StageCost(name, ru.ru_utime + ru.ru_stime, wall, rss_mb, _du_mb(outs), proc.returncode,
                     tail if proc.returncode else "", load)


def _layout(work: Path) -> None:
    """A temp copy of the repository's layout: conf/ copied (edited below), code and prompts symlinked."""
    work.mkdir(parents=True, exist_ok=True)
    for name in ("stages", "prompts", "src", "plugins", "hydra_plugins", "pyproject.toml"):
        if (REPO / name).exists() and not (work / name).exists():
            (work / name).symlink_to(REPO / name)
    if not (work / "conf").exists():
        shutil.copytree(REPO / "conf", work / "conf", ignore=shutil.ignore_patterns("remembered"))
    (work / "data").mkdir(exist_ok=True)
    if not (work / "data/demo").exists():  # the demo's recorded pages (fetch seeds) and other demo inputs
        (work / "data/demo").symlink_to(REPO / "data/demo")


def _write_yaml(path: Path, package: str, data: dict[str, Any]) -> None:
    import yaml

    path.write_text(f"# @package {package}\n" + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def configure(work: Path, shape: str, folders: dict[str, Path], synth: Path) -> dict[str, Any]:
    """Point the benchmark's demo release and systems at the synthetic data and compose params.yaml."""
    import yaml

    if shape == "researchqa":
        rel = work / "conf/researchqa/release/demo.yaml"
        cfg = yaml.safe_load(rel.read_text())
        cfg.update({"source": str(synth), "path": str(synth / "test.json"), "battles_min_per_domain": 4})
        _write_yaml(rel, "benchmarks.researchqa.release", cfg)
    else:
        rel = work / "conf/liveresearchbench/release/demo.yaml"
        cfg = yaml.safe_load(rel.read_text())
        cfg.update({"source": str(synth), "path": str(synth / "tasks.csv")})
        _write_yaml(rel, "benchmarks.liveresearchbench.release", cfg)
    # the default shift_check (error), as a user's run has it: each synthetic report names its own task's topic
    systems = {s: {"kind": "folder", "path": str(p), "format": "auto"} for s, p in folders.items()}
    _write_yaml(work / f"conf/{shape}/systems/demo.yaml", f"benchmarks.{shape}.systems", systems)
    code = (
        "from pathlib import Path; from reportbench.config import compose_params; "
        f"compose_params(['benchmarks=[{shape}]'], Path('params.yaml'), Path('conf'))"
    )
    subprocess.run([sys.executable, "-c", code], cwd=work, check=True, env=_env())
    return yaml.safe_load((work / "params.yaml").read_text())


def yaml_params(work: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((work / "params.yaml").read_text())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MODE": "PRODUCTION", "DVC_NO_ANALYTICS": "1",
                "PYTHONPATH": str(REPO / "src")})
    return env


def stage_commands(params: dict[str, Any], shape: str) -> list[tuple[str, list[str], list[str]]]:
    """(name, argv, outputs) for every stage dvc.yaml runs for this benchmark, in its order."""
    py = sys.executable
    plan = params["plan"]
    b = shape
    r = plan["benchmarks"][b]["release"]
    rel, runs = f"data/releases/{b}/{r}", f"data/runs/{b}/{r}"
    cmds: list[tuple[str, list[str], list[str]]] = [
        (f"release@{b}", [py, "stages/build_release.py", "--benchmark", b, "--out", rel], [rel])
    ]
    for s in plan["benchmarks"][b]["systems"]:
        cmds.append((f"system@{b}.{s}", [py, "stages/run_system.py", "--benchmark", b, "--system", s,
                                          "--release", rel, "--out", f"{runs}/{s}"], [f"{runs}/{s}"]))
    pages = ["--pages", f"data/pages/{b}/{r}"] if b in (plan.get("fetch") or {}) else ["--pages", rel]
    if b in (plan.get("fetch") or {}):
        cmds.append((f"fetch@{b}", [py, "stages/fetch_pages.py", "--benchmark", b, "--release", rel, "--runs", runs,
                                    "--out", f"data/pages/{b}/{r}/pages.parquet"], [f"data/pages/{b}/{r}"]))
    cmds.append((f"judge@{b}", [py, "stages/judge.py", "--benchmark", b, "--release", rel, "--runs", runs, *pages,
                                "--out", f"data/judgments/{b}/{r}", "--usage", f"metrics/{b}/{r}/usage"],
                 [f"data/judgments/{b}/{r}"]))
    cross = ["--cross", rel]
    if b in (plan.get("cross") or {}):
        cmds.append((f"cross@{b}", [py, "stages/cross.py", "--benchmark", b, "--release", rel, "--runs", runs,
                                    "--out", f"data/cross/{b}/{r}"], [f"data/cross/{b}/{r}"]))
        cross = ["--cross", f"data/cross/{b}/{r}"]
    cmds.append((f"score@{b}", [py, "stages/score.py", "--benchmark", b, "--release", rel, "--runs", runs,
                                "--judgments", f"data/judgments/{b}/{r}", *cross, "--scores", f"data/scores/{b}/{r}",
                                "--metrics", f"metrics/{b}/{r}"], [f"data/scores/{b}/{r}", f"metrics/{b}/{r}"]))
    cmds.append(("site", [py, "stages/build_site.py", "--all", "--site", "site"], ["site"]))
    return cmds


def _count_judgments(work: Path) -> int:
    import polars as pl

    n = 0
    for p in (work / "data/judgments").rglob("*.parquet"):
        if "derived" not in p.parts:
            n += pl.scan_parquet(p).select(pl.len()).collect().item()
    return n


def _recorded(work: Path) -> dict[str, StageCost]:
    """The stages a previous `--work` run of this shape and N measured (costs.jsonl), by name."""
    path = work / "costs.jsonl"
    if not path.is_file():
        return {}
    rows = [StageCost(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {c.stage: c for c in rows}


def run_shape(
    shape: str, n: int, words: int, base: Path, change_one: bool, change: str = "", resume_before: str = "",
    stop_before: str = "",
) -> ShapeResult:
    """`stop_before`: stop before the first stage whose name starts with it (e.g. `judge@`), keeping the work;
    `resume_before`: in a kept `--work` folder, take the stages measured there before it (their recorded figures)
    and run it and every stage after it (the synthetic data is not written again)."""
    work = base / f"{shape}-{n}"
    synth = work / "synth"
    make = make_researchqa if shape == "researchqa" else make_liveresearchbench
    recorded = _recorded(work) if resume_before else {}
    _layout(work)
    if recorded:
        print(f"[{shape} N={n}] resuming at {resume_before} in {work}", file=sys.stderr, flush=True)
        folders = {s: synth / "systems" / s for s in (RQA_SYSTEMS if shape == "researchqa" else LRB_SYSTEMS)}
        params = yaml_params(work)
    else:
        print(f"[{shape} N={n}] writing {3 * n} synthetic reports ...", file=sys.stderr, flush=True)
        folders = make(synth, n, words)
        params = configure(work, shape, folders, synth)
        (work / "costs.jsonl").write_text("", encoding="utf-8")
    res = ShapeResult(shape, n)
    cmds = stage_commands(params, shape)
    resumed = False
    for name, argv, outs in cmds:
        if stop_before and name.startswith(stop_before):
            break
        resumed = resumed or bool(resume_before and name.startswith(resume_before))
        if recorded and not resumed:
            if name not in recorded or recorded[name].rc:
                raise SystemExit(f"{work}: no measured {name} to resume from (costs.jsonl)")
            res.stages.append(recorded[name])
            continue
        cost = run_measured(name, argv, work, [work / o for o in outs], _env())
        with open(work / "costs.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(cost)) + "\n")
        print(f"[{shape} N={n}] {name}: cpu {cost.cpu_s:.1f}s wall {cost.wall_s:.1f}s rss {cost.peak_rss_mb:.0f}MB "
              f"rc {cost.rc}", file=sys.stderr, flush=True)
        res.stages.append(cost)
        if cost.rc not in (0,):
            print(cost.tail, file=sys.stderr)
            break
    res.n_reports = 3 * n
    res.n_judgments = _count_judgments(work)
    res.site_files = sum(1 for f in (work / "site").rglob("*") if f.is_file()) if (work / "site").is_dir() else 0
    if change_one and all(c.rc == 0 for c in res.stages):
        # one system's reports change (a sentence added to each): dvc repro reruns its system stage and downstream
        system = change if change in folders else next(iter(folders))
        res.changed_system = system
        for f in sorted(folders[system].iterdir()):
            f.write_text(f.read_text(encoding="utf-8").replace("\n## Section 1", "\nA revised opening sentence.\n\n"
                                                                "## Section 1", 1), encoding="utf-8")
        rerun = [c for c in cmds if not c[0].startswith(("release@", "system@")) or c[0].endswith(f".{system}")]
        for name, argv, outs in rerun:
            cost = run_measured(name, argv, work, [work / o for o in outs], _env())
            res.change_one.append(cost)
            if cost.rc:
                print(cost.tail, file=sys.stderr)
                break
    return res


# ------------------------------------------------------------------------------------------------ report
def print_table(results: list[ShapeResult]) -> None:
    for shape in dict.fromkeys(r.shape for r in results):
        rows = [r for r in results if r.shape == shape]
        ns = [r.n for r in rows]
        print(f"\n### {shape}-shaped release, 3 folder systems, offline judge\n")
        print("| stage | " + " | ".join(f"N={n:,}" for n in ns) + " |")
        print("|---|" + "---|" * len(ns))
        names = list(dict.fromkeys(c.stage for r in rows for c in r.stages))
        for name in names:
            cells = []
            for r in rows:
                c = next((c for c in r.stages if c.stage == name), None)
                cells.append("—" if c is None else (f"{c.cpu_s:.1f} s / {c.wall_s:.1f} s / {c.peak_rss_mb:.0f} MB / "
                                                    f"{c.disk_mb:.1f} MB" + ("" if c.rc == 0 else f" (exit {c.rc})")))
            print(f"| {name} (CPU / wall / peak RSS / disk) | " + " | ".join(cells) + " |")

        def total(r: ShapeResult) -> float:
            return sum(c.cpu_s for c in r.stages)

        print("| **total CPU** | " + " | ".join(f"{total(r):.1f} s" for r in rows) + " |")
        print("| whole pipeline peak RSS (max over stages) | "
              + " | ".join(f"{max(c.peak_rss_mb for c in r.stages):.0f} MB" for r in rows) + " |")
        sys_cpu = [sum(c.cpu_s for c in r.stages if c.stage.startswith("system@")) for r in rows]
        print("| system@, µs per report (CPU) | "
              + " | ".join(f"{1e6 * s / r.n_reports:,.0f}" for s, r in zip(sys_cpu, rows, strict=True)) + " |")
        judge = [sum(c.cpu_s for c in r.stages if c.stage.startswith("judge@")) for r in rows]
        print("| judge@, µs per judgment (CPU, offline judge) | "
              + " | ".join(f"{1e6 * j / max(r.n_judgments, 1):,.0f} ({r.n_judgments:,} judgments)"
                           for j, r in zip(judge, rows, strict=True)) + " |")
        print("| site files | " + " | ".join(f"{r.site_files:,}" for r in rows) + " |")
        def change(r: ShapeResult) -> str:
            if not r.change_one:
                return "—"
            cpu = sum(c.cpu_s for c in r.change_one)
            return f"{cpu:.1f} s ({100 * cpu / total(r):.0f} %)"

        changed = ", ".join(dict.fromkeys(r.changed_system for r in rows if r.changed_system)) or "—"
        print(f"| one system's reports changed ({changed}): CPU of the rerun (share of the full run) | "
              + " | ".join(change(r) for r in rows) + " |")
        for r in rows:
            if r.change_one:
                print(f"| … N={r.n:,}, the rerun by stage (CPU / peak RSS) | "
                      + "; ".join(f"{c.stage} {c.cpu_s:.1f} s / {c.peak_rss_mb:.0f} MB" for c in r.change_one)
                      + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="10,100", help="comma-separated task counts")
    ap.add_argument("--shapes", default="researchqa,liveresearchbench")
    ap.add_argument("--words", type=int, default=2000, help="words per synthetic report")
    ap.add_argument("--work", type=Path, default=None, help="keep the runs here (default: a temp dir, removed)")
    ap.add_argument("--no-change", action="store_true", help="skip the one-system-changed rerun")
    ap.add_argument("--change", default="", metavar="SYSTEM",
                    help="the system whose reports change for that rerun (default: each shape's first system; "
                    "LiveResearchBench's first, open_deep_research, is the depth reference: its change reaches "
                    "every depth pair)")
    ap.add_argument("--stop-before", default="", metavar="STAGE",
                    help="stop before the first stage named so (a prefix, e.g. judge@); use with --work")
    ap.add_argument("--resume-before", default="", metavar="STAGE",
                    help="with --work: reuse the data and the figures measured there before this stage (a prefix, "
                    "e.g. judge@) and run it and the stages after it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ns = [int(x.replace("_", "")) for x in args.n.split(",") if x]
    load = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="rb-scale-") as tmp:
        base = args.work or Path(tmp)
        for shape in args.shapes.split(","):
            for n in ns:
                results.append(run_shape(shape, n, args.words, base, not args.no_change, args.change,
                                         args.resume_before, args.stop_before))
    load_after = os.getloadavg()
    if args.json:
        print(json.dumps({"load_before": load, "load_after": load_after, "cpus": os.cpu_count(),
                          "results": [asdict(r) for r in results]}, indent=1))
    else:
        print(f"machine: {os.cpu_count()} CPUs; load average before {load[0]:.1f}, after {load_after[0]:.1f}")
        print_table(results)
    return 0 if all(c.rc == 0 for r in results for c in r.stages) else 1


if __name__ == "__main__":
    sys.exit(main())
