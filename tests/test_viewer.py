"""Per-sample viewer: the report as parsed (linked and unresolved citation markers, escaped untrusted text), every
judgment with its failure reason and raw output, flags, cross-system rows, and `reportbench view`'s errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from reportbench.cli import main
from reportbench.judges.base import Judgment
from reportbench.judges.runner import write_judgments
from reportbench.metrics.aggregate import metric_row, rows_frame
from reportbench.metrics.leaderboard import build_leaderboard
from reportbench.reports.base import load_report
from reportbench.site.samples import load_system, render_sample_page, render_system_page, render_text

pytestmark = pytest.mark.core

B, R, S, T = "deepscholar", "toyrel", "sysA", "task-1"

REPORT = """## Related Work

Pooling misses relevant documents [1]. Sampling fixes part of it [7].
Some text tries <script>alert('x')</script> to inject markup.

## References

[1] Depth-k pooling revisited. https://example.org/pooling
"""


def make_run(root: Path) -> dict:
    """One system's run, judgments (one failed), scores and a cross table, as the pipeline writes them."""
    run = root / "data" / "runs" / B / R / S
    run.mkdir(parents=True)
    md = root / "in" / S / f"{T}.md"
    md.parent.mkdir(parents=True)
    md.write_text(REPORT)
    rep = load_report(md, "markdown", task_id=T, system=S)
    (run / "reports.jsonl").write_text(rep.model_dump_json() + "\n" + "{not json\n")
    outcomes = [
        {
            "task_id": T,
            "status": "ok",
            "reason": None,
            "path": str(md),
            "report_id": rep.report_id,
            "flags": ["judge_directed_text"],
        },
        {"task_id": "task-2", "status": "missing", "reason": "no output file", "path": None, "report_id": None},
    ]
    (run / "outcomes.jsonl").write_text("\n".join(json.dumps(o) for o in outcomes) + "\n")
    ids = {"task_id": T, "report_id": rep.report_id, "sentence": "0", "source_key": "1"}
    ok = Judgment(
        task="support",
        item_id="sup:1",
        input_ids=ids,
        judge_id="litellm:openai/gpt-4.1",
        member="main",
        model="openai/gpt-4.1",
        prompt_id="deepscholar/support",
        prompt_hash="ab" * 32,
        status="ok",
        value=1.0,
        label="supported",
        explanation="the page says so",
        raw_output='{"supported": 1}',
    )
    bad = Judgment(
        task="support",
        item_id="sup:2",
        input_ids={**ids, "sentence": "1", "source_key": "7"},
        judge_id="litellm:openai/gpt-4.1",
        member="main",
        model="openai/gpt-4.1",
        prompt_id="deepscholar/support",
        prompt_hash="ab" * 32,
        status="failed",
        error="parse: expected a JSON object, got 'Yes.'",
        raw_output="Yes.",
    )
    write_judgments(root / "data" / "judgments" / B / R / S / "main" / "support.parquet", [ok, bad])
    scores = rows_frame(
        [
            metric_row(S, T, "citation_precision", 1.0, n_items=2, n_failed=1),
            metric_row(S, "task-2", "citation_precision", float("nan"), status="no_report", reason="no_report"),
        ]
    )
    (root / "data" / "scores" / B / R).mkdir(parents=True)
    scores.write_parquet(root / "data" / "scores" / B / R / f"{S}.parquet")
    (root / "data" / "cross" / B / R).mkdir(parents=True)
    pl.DataFrame({"system": [S, "other"], "task_id": [T, T], "judge_winner": ["eval", "ref"]}).write_parquet(
        root / "data" / "cross" / B / R / "depth.parquet"
    )
    params = {
        "plan": {"benchmarks": {B: {"release": R, "systems": [S], "members": ["main"]}}},
        "judge": {"name": "llm", "backend": "litellm", "model": "openai/gpt-4.1"},
    }
    (root / "params.yaml").write_text(json.dumps(params))  # JSON is YAML
    return params


def test_sample_page_shows_report_judgments_and_failures(tmp_path: Path) -> None:
    make_run(tmp_path)
    sd = load_system(tmp_path, B, R, S, ["main"])
    assert any("line 2 is not JSON" in p for p in sd.problems)  # the bad line is reported, the rest still loads
    page = render_sample_page(sd, T, metric_info={"citation_precision": {"label": "CiteP"}})
    # citation markers: [1] links to its source, [7] has no reference entry and is highlighted
    assert '<a class="cite" href="#src-1"' in page and 'id="src-1"' in page
    assert '<span class="unres" title="unresolved: 7">[7]</span>' in page
    # untrusted report text is escaped, never markup
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    # every judgment: judge, prompt, verdict, explanation, raw output, failure reason
    for text in (
        "litellm:openai/gpt-4.1",
        "deepscholar/support",
        "supported",
        "the page says so",
        "parse: expected a JSON object, got &#x27;Yes.&#x27;",
        "raw output",
        'class="jd failed"',
    ):
        assert text in page, text
    assert '<a href="#s-1">sentence=1</a>' in page  # a judgment links to the sentence it judged
    assert "judge_directed_text" in page  # input15's flags are shown
    assert "depth" in page and "judge_winner" in page  # the cross-system row of this system only
    assert page.count("<tr>") >= 1 and "other" not in page.split("Cross-system judgments")[1].split("</table>")[0]


def test_system_page_lists_tasks_with_status_and_links(tmp_path: Path) -> None:
    make_run(tmp_path)
    sd = load_system(tmp_path, B, R, S, ["main"])
    page = render_system_page(sd, ["citation_precision"], {"citation_precision": {"label": "CiteP"}}, rendered={T})
    assert f'<a href="{T}.html">{T}</a>' in page and "no_report" in page and "missing" in page
    assert 'data-metric="citation_precision"' in page and "(no page here: <code>reportbench view -b" in page


def test_text_view(tmp_path: Path) -> None:
    make_run(tmp_path)
    text = render_text(load_system(tmp_path, B, R, S, ["main"]), T)
    assert "unresolved: ['7']" in text and "failure: parse:" in text and "s0: Pooling" in text


def test_view_cli_writes_a_page_and_fails_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(tmp_path)
    out = tmp_path / "out"
    common = ["view", "--root", str(tmp_path), "--out", str(out)]
    assert main([*common, "-b", B, "-s", S, "-t", T]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.is_file() and "Report as parsed" in path.read_text()
    assert main([*common, "-b", B, "-s", S, "-t", T, "--text"]) == 0
    assert "failure: parse:" in capsys.readouterr().out
    for argv, expect in [
        (["-b", "nope"], "unknown benchmark 'nope'; choices: deepresearch_bench, deepscholar"),  # installed ones
        (["-b", "deer"], "unknown benchmark 'deer'; enabled in params.yaml: deepscholar"),
        (["-b", B, "-s", "nope", "-t", T], f"unknown system 'nope' for {B}; choices: {S}"),
        (["-b", B, "-s", S, "-t", "nope"], "unknown task 'nope'"),
    ]:
        assert main([*common, *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and expect in err and err.count("\n") == 1, err


def test_an_unmapped_file_is_no_task_and_another_release_is_viewable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real DeepScholar baselines: openscholar/execution_time.csv is an `unmapped` outcome (task_id "") — it got a
    sample page `x-e3b0c442.html` and a blank task row. And `reportbench view -b <b> --release <R>` for a run
    params.yaml no longer plans (after `reportbench compose --reset`) built the planned release's pages instead,
    printing a path that did not exist."""
    make_run(tmp_path)
    run = tmp_path / "data" / "runs" / B / R / S
    with (run / "outcomes.jsonl").open("a") as f:
        f.write(json.dumps({"task_id": "", "status": "unmapped", "reason": "'x' is not a task id",
                            "path": "in/x.csv", "report_id": None, "flags": []}) + "\n")  # fmt: skip
    sd = load_system(tmp_path, B, R, S, ["main"])
    assert "" not in sd.task_ids and sd.task_ids == [T, "task-2"]
    # the same run under another release name, while params.yaml plans R
    other = "public"
    shutil.copytree(tmp_path / "data" / "runs" / B / R, tmp_path / "data" / "runs" / B / other)
    out = tmp_path / "out"
    common = ["view", "--root", str(tmp_path), "--out", str(out), "-b", B]
    assert main([*common, "--release", other, "-s", S, "-t", T, "--text"]) == 0
    assert capsys.readouterr().out.startswith(f"{B} / {other} / {S} / {T}")
    assert main([*common, "--release", other]) == 2  # not scored yet: says so, prints no path
    assert "no scored run of deepscholar/public" in capsys.readouterr().err
    (tmp_path / "metrics" / B / other).mkdir(parents=True)
    lb = build_leaderboard([{"system": S, "protocol": B, "n_tasks": 2,
                             "metrics": {"citation_precision": {"mean": 1.0, "n_defined": 1}}}],
                           metrics=["citation_precision"], protocol=B)  # fmt: skip
    (tmp_path / "metrics" / B / other / "leaderboard.json").write_text(json.dumps(lb.as_dict(), default=str))
    assert main([*common, "--release", other]) == 0  # that release's pages, at the path printed
    index = Path(capsys.readouterr().out.strip())
    assert index == out / "benchmarks" / B / other / "index.html" and index.is_file()
    assert (index.parent / "samples" / S / f"{T}.html").is_file()
    assert main([*common, "--release", "nope", "-s", S, "-t", T]) == 2
    err = capsys.readouterr().err
    assert "no run of deepscholar release 'nope'" in err and f"releases with runs: {other}, {R}" in err
    from reportbench.site.samples import view_command

    assert view_command(load_system(tmp_path, B, other, S, ["main"]), T).endswith(f"-t {T} --release {other}")


def test_view_of_a_release_whose_run_data_is_gone_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """After another `dvc exp run`, a release's metrics/ stayed but its data/runs/ was gone: `reportbench view`
    printed the index path only, and the system pages listed no task. Now one warning names the systems."""
    make_run(tmp_path)
    lb = build_leaderboard([{"system": S, "protocol": B, "n_tasks": 2,
                             "metrics": {"citation_precision": {"mean": 1.0, "n_defined": 1}}}],
                           metrics=["citation_precision"], protocol=B)  # fmt: skip
    (tmp_path / "metrics" / B / R).mkdir(parents=True)
    (tmp_path / "metrics" / B / R / "leaderboard.json").write_text(json.dumps(lb.as_dict(), default=str))
    common = ["view", "--root", str(tmp_path), "--out", str(tmp_path / "out"), "-b", B]
    assert main(common) == 0
    assert "warning" not in capsys.readouterr().err
    shutil.rmtree(tmp_path / "data" / "runs" / B / R / S)
    assert main(common) == 0
    assert f"warning: no run data for {S} in " in capsys.readouterr().err
