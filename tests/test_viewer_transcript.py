"""The viewer shows what the judge saw (issue 24, item 3): every judgment's messages (system and user, re-rendered
from the stored inputs and the prompt at the recorded hash, and saying so), the report as submitted linked from
the parsed one, and badges coloured by verdict (supported and not_supported distinct from each other and from a
failed call) with a legend. Runs DeepScholar's demo in-process (release, one system, the offline judge)."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest

from reportbench import pipeline
from reportbench.config import composed_params
from reportbench.site.samples import attach_messages, load_system, render_sample_page, verdict_class

pytestmark = pytest.mark.core

B, R, S = "deepscholar", "demo", "careful_writer"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("viewer")
    shutil.copytree(repo_root / "prompts", root / "prompts")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(repo_root)  # params hold repo-relative paths (the demo systems' folders)
        params = composed_params(["benchmarks=[deepscholar]"], conf_dir=repo_root / "conf", remembered=False)
        params["judge"]["runtime"]["progress"] = False
        release = root / "data" / "releases" / B / R
        run = root / "data" / "runs" / B / R / S
        pipeline.build_release(params, B, release)
        pipeline.run_system(params, B, S, release, run)
        pipeline.run_judge_stage(
            params, B, S, "main", release, run, root / "data" / "judgments" / B / R / S / "main", root / "u.json"
        )
    return root, params


def _page(root: Path, params: dict, task: str) -> tuple[str, object]:
    sd = load_system(root, B, R, S, ["main"])
    attach_messages(sd, params, root)
    return render_sample_page(sd, task), sd


def test_every_judgment_shows_the_messages_it_was_judged_on(judged: tuple[Path, dict]) -> None:
    root, params = judged
    sd = load_system(root, B, R, S, ["main"])
    task = next(t for t in sd.task_ids if sd.judgments.get(t))
    page, sd = _page(root, params, task)
    n = len(sd.judgments[task])
    assert n > 5
    assert page.count('<details class="msgs"><summary>messages sent (re-rendered from the stored inputs') == n
    assert page.count("<b>system</b>") == n and page.count("<b>user</b>") == n
    assert "the offline judge sends nothing" in page  # says which judge, and that these are re-rendered
    # a support judgment's user message holds the very sentence it names
    report = sd.reports[task]
    sup = next(j for j in sd.judgments[task] if j["_step"] == "support" and j["_ids"].get("sentence") is not None)
    rendered = sd.messages[("main", "support", sup["item_id"])]
    assert rendered.prompt_sha256 == sup["prompt_hash"]
    sentence = report.sentences[int(sup["_ids"]["sentence"])].text
    assert sentence in next(m["content"] for m in rendered.messages if m["role"] == "user")


def test_edited_prompt_is_not_passed_off_as_what_was_sent(judged: tuple[Path, dict], tmp_path: Path) -> None:
    root, params = judged
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    prompt = copy / "prompts" / "deepscholar" / "support.yaml"
    prompt.write_text(prompt.read_text() + "\n# edited after judging\n")
    sd = load_system(copy, B, R, S, ["main"])
    task = next(t for t in sd.task_ids if sd.judgments.get(t))
    page, _ = _page(copy, params, task)
    assert "the prompt changed since this judgment" in page
    assert "messages sent (re-rendered" in page  # the other steps' prompts are unchanged


def test_raw_report_is_linked_from_the_parsed_one(judged: tuple[Path, dict], repo_root: Path) -> None:
    root, params = judged
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(repo_root)  # the folder system's report paths are repo-relative
        page, sd = _page(root, params, "demo-0001")
    assert '<a href="#raw">the report as submitted ↓</a>' in page and '<h2 id="raw">' in page
    raw = (repo_root / "data" / "demo" / "deepscholar" / "systems" / S / "demo-0001.md").read_text()
    shown = html.unescape(re.search(r'<pre class="raw">(.*?)</pre>', page, flags=re.S).group(1))
    assert shown == raw


def test_badges_are_coloured_by_verdict_with_a_legend(judged: tuple[Path, dict]) -> None:
    assert verdict_class({"status": "ok", "label": "supported", "value": 1.0}) == "v-pos"
    assert verdict_class({"status": "ok", "label": "not_supported", "value": 0.0}) == "v-neg"
    assert verdict_class({"status": "ok", "label": "partial_support", "value": 0.5}) == "v-part"
    assert verdict_class({"status": "failed", "label": None, "value": None}) == "v-fail"
    assert verdict_class({"status": "ok", "label": "A", "value": 1.0}) == "v-oth"
    root, params = judged
    sd = load_system(root, B, R, S, ["main"])
    task = next(t for t in sd.task_ids if sd.judgments.get(t))
    page, _ = _page(root, params, task)
    assert "Judgment badges by verdict" in page
    for cls in ("v-pos", "v-part", "v-neg", "v-fail", "v-oth"):
        assert f'<span class="badge {cls}">' in page  # the legend
    labels = {j.get("label") for j in sd.judgments[task] if j["_step"] == "support"}
    for label in labels & {"supported", "not_supported"}:
        cls = "v-pos" if label == "supported" else "v-neg"
        assert re.search(rf'<a class="badge {cls}" href="#j-\d+" title="support: {label}"', page), label
