"""Issue 21 §5 (a gap its helper reported): the per-sample viewer shows, next to each refusal / plan / not-found
flag, the excerpt of the report that triggered it — as the system stage's check recorded it, or re-detected
from the parsed report (and saying so) for a run without that record. Fixtures: tests/fixtures/refusal/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reportbench.reports.refusal import NO_REFERENCES, NOT_FOUND, REFUSAL
from reportbench.site.samples import RECORDED, REDETECTED, load_system, render_sample_page, render_text
from reportbench.systems import run_system
from reportbench.types import Task

FIX = Path(__file__).parent / "fixtures" / "refusal"
TASKS = ("refusal", "not_found", "real_answer")


def _run(root: Path) -> Path:
    """A folder system over three self-authored reports, written where the viewer reads runs."""
    folder = root / "in"
    folder.mkdir()
    for t in TASKS:
        (folder / f"{t}.md").write_text((FIX / f"{t}.md").read_text())
    out = root / "data" / "runs" / "b" / "R" / "s"
    tasks = []
    for t in TASKS:  # each task's question is its report's heading, so no report looks shifted
        title = (FIX / f"{t}.md").read_text().splitlines()[0].lstrip("# ")
        tasks.append(Task(task_id=t, title=title, task_prompt=title))
    run_system("s", {"kind": "folder", "path": str(folder)}, tasks, out)
    return out


def _flag_items(html: str) -> dict[str, str]:
    """flag -> the text of its list item on the sample page."""
    block = re.search(r'<ul class="flags">(.*?)</ul>', html, re.S)
    assert block, "no flag list on the page"
    items = re.findall(r'<li><span class="badge bad">([^<]+)</span>(.*?)</li>', block.group(1), re.S)
    return {flag: body for flag, body in items}


@pytest.mark.core
def test_each_flag_shows_the_excerpt_that_triggered_it(tmp_path: Path) -> None:
    out = _run(tmp_path)
    check = json.loads((out / "check.json").read_text())
    assert "I cannot satisfy your requirements" in check["evidence"]["refusal"][REFUSAL]
    sd = load_system(tmp_path, "b", "R", "s")
    items = _flag_items(render_sample_page(sd, "refusal"))
    assert set(items) == {REFUSAL, NO_REFERENCES}
    assert "I cannot satisfy your requirements" in items[REFUSAL] and RECORDED.replace("'", "&#x27;") in items[REFUSAL]
    assert "cites no source" in items[NO_REFERENCES]
    assert "No primary-source materials were provided" in _flag_items(render_sample_page(sd, "not_found"))[NOT_FOUND]
    assert '<ul class="flags">' not in render_sample_page(sd, "real_answer")  # no flag, no evidence block
    assert "I cannot satisfy your requirements" in render_text(sd, "refusal")


@pytest.mark.core
def test_a_run_without_recorded_evidence_redetects_and_says_so(tmp_path: Path) -> None:
    out = _run(tmp_path)
    check = json.loads((out / "check.json").read_text())
    del check["evidence"]  # a run written before check.json carried evidence
    (out / "check.json").write_text(json.dumps(check))
    items = _flag_items(render_sample_page(load_system(tmp_path, "b", "R", "s"), "refusal"))
    assert "I cannot satisfy your requirements" in items[REFUSAL] and "re-detected" in items[REFUSAL]
    assert REDETECTED.split(" (")[0] in items[REFUSAL]


@pytest.mark.core
def test_a_mapping_suspect_shows_which_task_it_matched(tmp_path: Path) -> None:
    from reportbench.site.samples import SystemData, flag_evidence, render_flags

    sd = SystemData("b", "R", "s")
    sd.check = {"shift": {"mismatched": [{"task_id": "q1", "best_task": "q2", "own": 0.5, "best": 3.25}]}}
    html = render_flags(["mapping_suspect", "refusal"], flag_evidence(sd, "q1", None))
    assert "matches task q2&#x27;s question better than its own (BM25 3.250 vs 0.500)" in html
    assert "no excerpt recorded for this flag" in html  # a flag without evidence says so, never blank
