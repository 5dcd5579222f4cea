"""Published reference rows (metrics/reference_rows.py): under a `published` preset the leaderboard shows the
paper's own rows apart from the measured ones, labelled, never ranked, each number with its source; absent
otherwise; and every number equals the paper's text (seed files in ../shared/seeds, when present)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from pathlib import Path

import pytest

from reportbench.benchmarks import benchmark_files, get_benchmark
from reportbench.metrics.leaderboard import build_leaderboard, to_csv_frame, to_html, to_markdown
from reportbench.metrics.reference_rows import (
    NOT_RE_JUDGED,
    ReferenceRowsError,
    differences,
    load_table,
    reference_block,
    reference_file,
)

ROOT = Path(__file__).resolve().parents[1]
TABLES = {"deepscholar": "table2", "researcherbench": "table2", "liveresearchbench": "table1", "deer": "table2",
          "researchqa": "table3"}


def _seeds() -> Path | None:
    base = Path(os.environ.get("REPORTBENCH_SHARED", ROOT.parent / "shared"))
    seeds = base / "seeds"
    return seeds if seeds.is_dir() else None


def _table(benchmark: str) -> dict:
    return load_table(reference_file(ROOT / benchmark_files(benchmark).code), TABLES[benchmark])


@pytest.mark.core
@pytest.mark.parametrize("benchmark", sorted(TABLES))
def test_every_number_has_a_source_and_a_real_metric(benchmark: str) -> None:
    t = _table(benchmark)
    names = set(get_benchmark(benchmark).metric_names)
    assert set(t["columns"]) <= names, f"{benchmark}: columns that are no metric of the benchmark"
    block = reference_block(t, list(get_benchmark(benchmark).metric_names), source_file="x", diffs=[])
    assert block["rows"] and block["label"].startswith(f"published (paper {t['table']}, judge ")
    assert block["label"].endswith(NOT_RE_JUDGED)
    for row in block["rows"]:
        assert row["rank"] is None
        for m, v in row["metrics"].items():
            if v is None:
                assert row["not_shown"][m], f"{row['system']}/{m}: left out without a reason"
            else:
                assert t["table"] in row["source"][m] and row["system"] in row["source"][m]
        if row.get("overall_value") is not None:
            assert row["source"]["overall"]


def _normalised(text: str) -> str:
    text = re.sub(r"<sup>[^<]*</sup>", " ", text)  # footnote markers (".900<sup>1</sup>")
    text = re.sub(r"<[^>]+>", " ", text)  # HTML tables (ResearcherBench), <b>/<u>/<sup> marks
    text = re.sub(r"\$?\\pm\$?\s*\d*\.?\d+", " ", text)  # "53.42 $\pm$ 0.26": the interval is not copied
    text = re.sub(r"[|*]", " ", text)  # markdown pipes, significance stars
    return re.sub(r"\s+", " ", text)


_NUM = r"(?:\d*\.\d+|\d+)"


@pytest.mark.integration
@pytest.mark.parametrize("benchmark", sorted(TABLES))
def test_numbers_match_the_paper_text(benchmark: str) -> None:
    """Each row's numbers, in the paper's column order, follow the row's label in the seed text."""
    seeds = _seeds()
    if seeds is None:
        pytest.skip("no ../shared/seeds (the papers' text)")
    t = _table(benchmark)
    text = _normalised((seeds / t["seed"]).read_text(encoding="utf-8"))
    paper = list(t.get("paper_columns") or t["columns"].values())  # the paper's columns, in its order
    metric_of = {label: m for m, label in t["columns"].items()}
    extra = 1 if t.get("overall") and t["overall"].get("kind") != "metric" else 0
    n = len(paper) + extra
    anchor = text.find(t["text_anchor"]) if t.get("text_anchor") else 0
    assert anchor >= 0, f"{t['text_anchor']!r} not in {t['seed']}"
    checked = 0
    for row in t["rows"]:
        start = text.find(row["section"], anchor) if row.get("section") else anchor
        assert start >= 0, f"{benchmark}: section {row.get('section')!r} not found"
        label = row.get("row") or row["system"]
        pattern = r"(?<![\w\-.])" + re.escape(label) + r"\s+(" + rf"{_NUM}(?:\s+{_NUM}){{{n - 1}}}" + r")(?!\S)"
        m = re.compile(pattern).search(text, start)
        assert m, f"{benchmark}: row {label!r} with {n} numbers not found in {t['seed']}"
        found = [float(x) for x in m.group(1).split()]
        for label_, value in zip(paper, found, strict=False):
            col = metric_of.get(label_)
            if col is None:
                continue  # a paper column that is no metric here (ResearchQA's per-domain coverage)
            if col in row["values"]:
                got = row["values"][col]
                assert math.isclose(got, value), f"{row['system']}/{col}: {got} != {value} in the paper"
                checked += 1
            else:
                assert col in (row.get("omitted") or {}), f"{row['system']}/{col}: neither given nor omitted"
        if extra:
            assert math.isclose(row["overall"], found[-1]), f"{row['system']}: overall"
            checked += 1
    declared = sum(len(r["values"]) for r in t["rows"]) + sum(1 for r in t["rows"] if extra and "overall" in r)
    assert checked == declared  # every number of the file was found in the paper


def _summary(system: str, values: dict[str, float]) -> dict:
    return {"system": system, "metrics": {m: {"mean": v, "n_defined": 2} for m, v in values.items()}, "n_tasks": 2}


def _lb(with_reference: bool):
    metrics = ["coverage", "faithfulness", "groundedness"]
    lb = build_leaderboard(
        [_summary("mine", {"coverage": 0.9, "faithfulness": 0.5, "groundedness": 0.2}),
         _summary("other", {"coverage": 0.1, "faithfulness": 0.4, "groundedness": 0.3})],
        metrics=metrics, protocol="researcherbench", overall="coverage",
    )
    if with_reference:
        t = _table("researcherbench")
        diffs = differences(t, run_judge={"name": "offline", "backend": "offline"}, run_models=["offline-lexical-v1"],
                            n_tasks=2, release="demo", notice=None, prompts="ours")
        lb.reference = reference_block(t, metrics, source_file="published_rows.yaml", diffs=diffs)
    return lb


@pytest.mark.core
def test_reference_rows_are_shown_apart_and_never_ranked() -> None:
    plain, lb = _lb(False), _lb(True)
    assert [r["rank"] for r in lb.rows] == [r["rank"] for r in plain.rows] == [1, 2]  # ranking untouched
    md = to_markdown(lb)
    assert "Reference rows: published (paper Table 2, judge o3-mini" in md and NOT_RE_JUDGED in md
    ranking_table = md.split("Reference rows")[0]
    assert "OpenAI Deep Research" not in ranking_table  # never inside the ranked table
    assert "| OpenAI Deep Research | 0.703 | 0.840 | 0.340 |" in md
    assert "Differences that make a comparison unsafe: judge (paper: o3-mini" in md and "not an LLM judge" in md
    assert "tasks (paper: 65 research questions" in md
    rows = list(csv.DictReader(io.StringIO(to_csv_frame(lb).write_csv())))
    ref = [r for r in rows if r["row_kind"].startswith("reference")]
    assert len(ref) == 7 and all(r["rank"] == "" for r in ref)
    assert all("never ranked" in r["ranked_why_not"] for r in ref)
    assert {r["system"] for r in rows if r["row_kind"] == "measured"} == {"mine", "other"}
    data = json.loads(json.dumps(lb.as_dict()))
    assert data["reference"]["ranked"] is False and all(r["rank"] is None for r in data["reference"]["rows"])
    html = to_html(lb)
    assert 'id="reference"' in html and "not re-judged here" in html and 'id="reference-differences"' in html
    assert html.index('id="leaderboard"') < html.index('id="reference"')


@pytest.mark.core
def test_absent_without_the_preset() -> None:
    lb = _lb(False)
    assert "Reference rows" not in to_markdown(lb)
    assert "reference" not in lb.as_dict()
    assert "row_kind" not in to_csv_frame(lb).columns
    assert 'id="reference"' not in to_html(lb)


@pytest.mark.core
def test_a_bad_file_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    p = tmp_path / "published_rows.yaml"
    p.write_text(
        "tables:\n  t:\n    table: Table 9\n    judge: j\n    judge_source: s\n    tasks: x\n    tasks_source: s\n"
        "    location: l\n    columns: {coverage: Cov}\n    rows:\n      - system: A\n        values: {coverag: 0.5}\n"
    )
    with pytest.raises(ReferenceRowsError, match=r"rows\[0\]\.values\.coverag: not a declared column"):
        load_table(p, "t")
    with pytest.raises(ReferenceRowsError, match="no table 'u'"):
        load_table(p, "u")


@pytest.mark.core
@pytest.mark.parametrize("benchmark", sorted(TABLES))
def test_the_published_preset_asks_for_the_rows_and_the_default_does_not(benchmark: str) -> None:
    from reportbench.config import composed_params

    conf = ROOT / "conf"
    published = composed_params([f"benchmarks=[{benchmark}]", f"{benchmark}/preset=published"], conf_dir=conf)
    default = composed_params([f"benchmarks=[{benchmark}]"], conf_dir=conf)
    assert published["benchmarks"][benchmark]["ranking"]["reference_rows"] == TABLES[benchmark]
    assert default["benchmarks"][benchmark]["ranking"]["reference_rows"] is None


@pytest.mark.integration
def test_the_score_stage_writes_the_rows_under_the_preset_switch_only(tmp_path: Path, monkeypatch) -> None:
    """The score stage (in-process, every stage of the ResearcherBench demo): with `ranking.reference_rows: table2`
    (what `researcherbench/preset=published` sets) every output carries the paper's rows apart and unranked;
    with the shipped default (null) none does."""
    from spine_helpers import benchmark_params, run_benchmark

    monkeypatch.chdir(ROOT)
    params = benchmark_params(ROOT, "researcherbench")
    assert params["benchmarks"]["researcherbench"]["ranking"]["reference_rows"] is None
    plain = run_benchmark(params, "researcherbench", tmp_path / "plain") / "metrics"
    params["benchmarks"]["researcherbench"]["ranking"]["reference_rows"] = "table2"
    with_rows = run_benchmark(params, "researcherbench", tmp_path / "published") / "metrics"
    a = json.loads((plain / "leaderboard.json").read_text())
    b = json.loads((with_rows / "leaderboard.json").read_text())
    assert "reference" not in a and "Reference rows" not in (plain / "leaderboard.md").read_text()
    assert [r["rank"] for r in a["rows"]] == [r["rank"] for r in b["rows"]]
    ref = b["reference"]
    assert ref["label"].startswith("published (paper Table 2, judge o3-mini") and ref["ranked"] is False
    assert {r["system"] for r in ref["rows"]} >= {"OpenAI Deep Research", "Gemini Deep Research"}
    judge = next(x for x in ref["differences"] if x["aspect"] == "judge")
    assert judge["same"] is False and "not an LLM judge" in judge["this_run"]  # the demo runs the offline judge
    tasks = next(x for x in ref["differences"] if x["aspect"] == "tasks")
    assert tasks["same"] is False and "65" in tasks["paper"]
    md = (with_rows / "leaderboard.md").read_text()
    assert "Reference rows: published (paper Table 2" in md and "Differences that make a comparison unsafe" in md
    assert "reference: not re-judged here" in (with_rows / "leaderboard.csv").read_text()
    assert 'id="reference"' in (with_rows / "leaderboard.html").read_text()


@pytest.mark.core
@pytest.mark.parametrize("benchmark", ["researcherbench", "liveresearchbench"])
def test_the_judge_difference_reads_the_models_each_step_calls(benchmark: str) -> None:
    """Under `published` with an LLM judge, the models the judge steps call are the paper's: the judge is not a
    difference; with the shipped offline judge it is ("not an LLM judge")."""
    from reportbench.config import composed_params
    from reportbench.metrics.leaderboard import Leaderboard
    from reportbench.pipeline import published_reference

    conf = ROOT / "conf"
    llm = composed_params([f"benchmarks=[{benchmark}]", f"{benchmark}/preset=published", "judge=llm"], conf_dir=conf)
    offline = composed_params([f"benchmarks=[{benchmark}]", f"{benchmark}/preset=published"], conf_dir=conf)
    lb = Leaderboard(benchmark, list(get_benchmark(benchmark).metric_names), [], meta={"release": "demo"})
    judge = {n: next(d for d in published_reference(p, benchmark, lb, 3)["differences"] if d["aspect"] == "judge")
             for n, p in (("llm", llm), ("offline", offline))}
    assert judge["llm"]["same"] is True
    assert judge["offline"]["same"] is False and "not an LLM judge" in judge["offline"]["this_run"]
