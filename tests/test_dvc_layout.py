"""How the repository declares itself to DVC (fast checks; the end-to-end ones are in test_dvc_tidy.py).

Issue 15 defect 4: no live pipeline (and so no lock without outputs) is collected from the root workspace.
Issue 13: DVC metrics are only the flat per-system summaries; plots render with a local template.
Issue 15 defect 5: outputs of systems that are no longer configured are pruned, never read.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
import yaml

from reportbench.dvc_metrics import flat_summary, write_dvc_metrics
from reportbench.live_pipeline import LiveInitError, init_live_pipeline
from reportbench.stale import prune_stale_outputs

pytestmark = pytest.mark.core


def _tracked(repo_root: Path) -> list[str]:
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files"], cwd=repo_root, capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def test_only_the_root_pipeline_is_committed(repo_root: Path) -> None:
    tracked = _tracked(repo_root)
    pipelines = [p for p in tracked if Path(p).name in ("dvc.yaml", "dvc.lock")]
    assert sorted(pipelines) == ["dvc.lock", "dvc.yaml"] or sorted(pipelines) == ["dvc.yaml"], pipelines
    opt_in = {"pipelines/live/dvc.template.yaml", "pipelines/label/dvc.template.yaml"}
    assert opt_in | {"pipelines/researchqa_survey/dvc.template.yaml"} <= set(tracked)  # opt-in pipelines
    assert not [p for p in tracked if p.split("/")[0] in ("live", "label", "live_researchqa")]  # one place
    assert not any(p.startswith("metrics/live/") for p in tracked)
    # DVC writes no .gitignore inside folders that other stages hash (their lines changed the hashes)
    nested = [p for p in tracked if p.endswith(".gitignore") and p.startswith("data/")]
    assert not [p for p in nested if not p.startswith("data/demo/")], nested
    ignored = (repo_root / ".gitignore").read_text().splitlines()
    assert {"/dvc_plots/", "/data/runs/", "/data/judgments/"} <= set(ignored)


def test_live_init_writes_the_pipeline_and_refuses_to_clobber(tmp_path: Path, repo_root: Path) -> None:
    (tmp_path / "pipelines" / "live").mkdir(parents=True)
    template = (repo_root / "pipelines" / "live" / "dvc.template.yaml").read_text()
    (tmp_path / "pipelines" / "live" / "dvc.template.yaml").write_text(template)
    path = init_live_pipeline(tmp_path)
    assert path.read_text() == template and yaml.safe_load(template)["stages"]["publish"]
    assert init_live_pipeline(tmp_path) == path  # same content: fine
    path.write_text(template + "# my edit\n")
    with pytest.raises(LiveInitError, match="--force"):
        init_live_pipeline(tmp_path)
    init_live_pipeline(tmp_path, force=True)
    (tmp_path / "pipelines" / "label").mkdir()
    label_template = repo_root / "pipelines" / "label" / "dvc.template.yaml"
    (tmp_path / "pipelines" / "label" / "dvc.template.yaml").write_text(label_template.read_text())
    (tmp_path / "params.yaml").write_text("benchmarks: {deepscholar: {release: {name: demo, source: data/demo}}}\n")
    labelled = init_live_pipeline(tmp_path, name="label")  # freezes the composed release: pipelines/label/release.yaml
    assert labelled == tmp_path / "pipelines" / "label" / "dvc.yaml" and "label_importance" in labelled.read_text()
    with pytest.raises(LiveInitError, match="repository root"):
        init_live_pipeline(tmp_path / "elsewhere")


def test_dvc_metrics_are_flat_summaries_and_usage_is_not_a_metric(repo_root: Path) -> None:
    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    metric_paths = [
        next(iter(m)) if isinstance(m, dict) else m for s in stages.values() for m in s.get("do", s).get("metrics", [])
    ]
    assert metric_paths == ["metrics/${key}/${item.release}/summary", "metrics/${key}/${item.release}/brief.json"]
    judge_outs = [next(iter(o)) if isinstance(o, dict) else o for o in stages["judge"]["do"]["outs"]]
    assert "metrics/${key}/${item.release}/usage" in judge_outs  # an output (git-tracked), not a metric
    plots = stages["score"]["do"]["plots"]
    assert [next(iter(p)) for p in plots] == ["metrics/${key}/${item.release}/plots/metrics.json"]
    assert (repo_root / ".dvc" / "plots" / "metric_bars.json").is_file()
    config = (repo_root / ".dvc" / "config").read_text()
    assert "html_template = ../.reportbench/dvc_plots_template.html" in config
    assert stages["plots_template"]["outs"] == [".reportbench/dvc_plots_template.html"]


def test_flat_summary_writes_numbers_only_and_drops_removed_systems(tmp_path: Path) -> None:
    summaries = {
        "a": {"metrics": {"m1": {"mean": 0.5, "n_defined": 3}, "m2": {"mean": math.nan}}, "judge": {"x": 1}},
        "b": {"metrics": {"m1": {"mean": 1.0}, "m2": {"mean": 0.25}}},
    }
    stale = tmp_path / "summary" / "gone.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    write_dvc_metrics(tmp_path, summaries, ["m1", "m2"], {"a": 0.0, "b": 0.5}, {"m1": True, "m2": False})
    a = json.loads((tmp_path / "summary" / "a.json").read_text())
    assert a == {"m1": 0.5, "m2": None, "overall": 0.0}  # undefined is null (DVC prints '-'), never 0
    assert not stale.exists()
    rows = json.loads((tmp_path / "plots" / "metrics.json").read_text())
    assert {"system": "b", "metric": "m2 (lower is better)", "value": 0.25, "lo": None, "hi": None} in rows
    # undefined: a row with value null (drawn as "undefined", never as a zero bar)
    assert [r["value"] for r in rows if r["system"] == "a" and r["metric"].startswith("m2")] == [None]
    assert "overall" not in flat_summary(summaries["b"], ["m1"], None)  # no combined score: no column


def test_plots_template_inlines_vega_and_loads_nothing_remote() -> None:
    from reportbench.dvc_metrics import plots_html_template

    html = plots_html_template()
    assert "{plot_divs}" in html and "{scripts}" not in html  # DVC's CDN <script src> tags never get in
    assert "<script src" not in html.replace(" ", "") and "window.vegaEmbed" in html


def test_prune_removes_only_unconfigured_systems_and_members(tmp_path: Path) -> None:
    params = {"plan": {"benchmarks": {"b": {"systems": ["keep"], "members": ["main"]}}}}
    runs, judgments, usage = tmp_path / "runs", tmp_path / "judgments", tmp_path / "usage"
    for d in (runs / "keep", runs / "old", judgments / "keep" / "main", judgments / "keep" / "gone", judgments / "old"):
        d.mkdir(parents=True)
        (d / "f.json").write_text("{}")
    usage.mkdir()
    for name in ("keep.main.json", "old.main.json", "keep.gone.json", "estimate.json"):
        (usage / name).write_text("{}")
    (runs / ".gitignore").write_text("/keep\n")
    removed = prune_stale_outputs(params, "b", runs, judgments, usage)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in removed) == [
        "judgments/keep/gone",
        "judgments/old",
        "runs/old",
        "usage/keep.gone.json",
        "usage/old.main.json",
    ]
    assert (runs / "keep" / "f.json").exists() and (runs / ".gitignore").exists()
    assert (usage / "estimate.json").exists()  # not a <system>.<member> file: not ours to remove
    assert prune_stale_outputs({"plan": {}}, "b", runs) == []  # no plan: never wipe a folder


def test_compose_drops_lock_entries_of_systems_no_longer_configured(tmp_path: Path, repo_root: Path) -> None:
    from reportbench.config import prune_lock, stale_lock_entries

    pipeline = yaml.safe_load((repo_root / "dvc.yaml").read_text())
    plan = {"runs": {"b.keep": {}}, "judges": {"b.keep": {}}, "benchmarks": {"b": {}}, "fetch": {}, "cross": {}}
    lock = {
        "schema": "2.0",
        "stages": {
            "system@b.keep": {"cmd": "x"},
            "system@b.old": {"cmd": "x"},
            "judge@b.old": {"cmd": "x"},
            "score@b": {"cmd": "x"},
            "fetch@b": {"cmd": "x"},
            "plots_template": {"cmd": "x"},
        },
    }
    assert sorted(stale_lock_entries(plan, pipeline, lock)) == ["fetch@b", "judge@b.old", "system@b.old"]
    lock_path = tmp_path / "dvc.lock"
    lock_path.write_text(yaml.safe_dump(lock, sort_keys=False))
    (tmp_path / "dvc.yaml").write_text((repo_root / "dvc.yaml").read_text())
    assert len(prune_lock(plan, lock_path, tmp_path / "dvc.yaml")) == 3
    kept = yaml.safe_load(lock_path.read_text())["stages"]
    assert list(kept) == ["system@b.keep", "score@b", "plots_template"]
