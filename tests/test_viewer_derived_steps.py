"""The viewer re-renders every step's messages, also a step whose items come from a table an earlier judge step
derived (DeepResearch Bench: RACE judges the `cleaned` article the `clean` step's judgments give).

Why: re-rendering set only the judgments of earlier steps, not the tables they derive, so from `race` on every
step of the plug-in logged "not re-rendered ('cleaned')" and its sample pages showed no messages."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from reportbench import pipeline
from reportbench.config import composed_params
from reportbench.site.samples import attach_messages, load_system, render_sample_page

pytestmark = pytest.mark.core

B, R, S = "deepresearch_bench", "demo", "strong"


def test_steps_after_a_derived_table_show_their_messages(
    tmp_path: Path, repo_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("reportbench_deepresearch_bench")
    shutil.copytree(repo_root / "prompts", tmp_path / "prompts")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(repo_root)  # params hold repo-relative paths (the demo systems' files)
        params = composed_params([f"benchmarks=[{B}]"], conf_dir=repo_root / "conf", remembered=False)
        params["judge"]["runtime"]["progress"] = False
        release = tmp_path / "data" / "releases" / B / R
        run = tmp_path / "data" / "runs" / B / R / S
        judged = tmp_path / "data" / "judgments" / B / R / S / "main"
        pipeline.build_release(params, B, release)
        pipeline.run_system(params, B, S, release, run)
        pipeline.run_judge_stage(params, B, S, "main", release, run, judged, tmp_path / "u.json")
        assert (judged / "derived" / "cleaned.parquet").is_file()

        sd = load_system(tmp_path, B, R, S, ["main"])
        with caplog.at_level(logging.WARNING):
            attach_messages(sd, params, tmp_path)
        assert "not re-rendered" not in caplog.text
        steps = {j["_step"] for t in sd.task_ids for j in sd.judgments.get(t, [])}
        assert {"clean", "race"} <= steps
        for task in sd.task_ids:
            js = sd.judgments.get(task) or []
            for j in js:  # every judgment, `race` and the fact steps included, has the messages it was judged on
                assert ("main", j["_step"], j["item_id"]) in sd.messages, (task, j["_step"], j["item_id"])
            if js:
                page = render_sample_page(sd, task)
                assert page.count('<details class="msgs">') == len(js)
