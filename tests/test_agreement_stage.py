"""The agreement stage on the DeepScholar demo, in-process: a judge card whose figures are recomputed here from the
records it names (offline judge, stub second judge, self-authored human labels)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from reportbench.agreement.card import validate_card
from reportbench.agreement.stage import run_agreement_stage
from reportbench.config import composed_params
from reportbench.judges.runner import read_judgments
from spine_helpers import run_benchmark

pytestmark = pytest.mark.integration

SYSTEMS = ["careful_writer", "hasty_writer", "offline_baseline", "link_dumper"]


def _kappa2(a: list[str], b: list[str]) -> float:
    """Cohen's kappa written out from its definition, independent of the library."""
    n = len(a)
    labels = sorted(set(a) | set(b))
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pe = sum((a.count(lab) / n) * (b.count(lab) / n) for lab in labels)
    return (po - pe) / (1 - pe)


def _row(card: dict, title: str, task: str) -> dict:
    section = next(s for s in card["sections"] if s["title"] == title)
    row = next(r for r in section["rows"] if r[0] == task)
    return dict(zip(section["columns"], row, strict=True))


@pytest.fixture(scope="module")
def card_run(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    tmp = tmp_path_factory.mktemp("agreement")
    mp = pytest.MonkeyPatch()
    mp.chdir(repo_root)  # params hold repo-relative paths (data/demo/deepscholar, prompts/)
    try:
        params = composed_params(conf_dir=repo_root / "conf")
        bench = params["benchmarks"]["deepscholar"]
        bench["judging"]["citations"]["cache_path"] = str(tmp / "openalex.sqlite")
        bench["systems"] = {s: bench["systems"][s] for s in SYSTEMS}
        params["judge"]["runtime"]["progress"] = False
        params["agreement"]["bootstrap"] = 200
        params["agreement"]["second_judge"] = "stub"  # opt-in: the default config has no second judge
        root = run_benchmark(params, "deepscholar", tmp / "run")
        card = run_agreement_stage(
            params, "deepscholar", root / "releases", root / "runs", root / "judgments", tmp / "agreement",
            tmp / "metrics",
        )  # fmt: skip
    finally:
        mp.undo()
    return card, tmp


def test_card_matches_the_site_schema_and_is_written(card_run: tuple[dict, Path]) -> None:
    card, tmp = card_run
    validate_card(card)
    assert json.loads((tmp / "metrics" / "judge_card.json").read_text()) == card
    assert (tmp / "metrics" / "judge_card.md").read_text().startswith("# Judge card: deepscholar / demo")
    titles = [s["title"] for s in card["sections"]]
    assert {"offline vs stub", "offline vs human:maintainer-a", "Self-consistency (k re-samples of one judge)"} <= set(
        titles
    )


def test_offline_vs_stub_is_recomputable_from_the_records(card_run: tuple[dict, Path]) -> None:
    card, tmp = card_run
    offline, stub = {}, {}
    for s in SYSTEMS:
        offline.update({(s, j.item_id): j for j in read_judgments(tmp / "run/judgments" / s / "main/support.parquet")})
        path = tmp / "agreement/stub" / s / "support.s0.parquet"
        if path.exists():
            stub.update({(s, j.item_id): j for j in read_judgments(path)})
    keys = sorted(k for k in stub if stub[k].ok and offline[k].ok)
    row = _row(card, "offline vs stub", "support")
    assert row["items"] == len(keys) > 50
    a, b = [offline[k].label for k in keys], [stub[k].label for k in keys]
    assert row["accuracy"] == pytest.approx(sum(x == y for x, y in zip(a, b, strict=True)) / len(keys), abs=1e-4)
    assert row["kappa"] == pytest.approx(_kappa2(a, b), abs=1e-4)
    assert all(j.model == "openai/stub-judge" for j in stub.values())


def test_human_labels_give_kappa_and_kendall_tau(card_run: tuple[dict, Path], repo_root: Path) -> None:
    card, tmp = card_run
    with (repo_root / "data/demo/deepscholar/human_labels.csv").open() as fh:
        human = {(r["system"], r["item_id"]): r["label"] for r in csv.DictReader(fh) if r["task"] == "support"}
    offline = {}
    for s in SYSTEMS:
        offline.update({(s, j.item_id): j for j in read_judgments(tmp / "run/judgments" / s / "main/support.parquet")})
    keys = sorted(human)
    assert all(k in offline for k in keys), "the shipped labels must name items the demo judges"
    a, b = [offline[k].label for k in keys], [human[k] for k in keys]
    row = _row(card, "offline vs human:maintainer-a", "support")
    assert row["items"] == len(keys)
    assert row["kappa"] == pytest.approx(_kappa2(a, b), abs=1e-4)
    assert row["systems"] >= 3 and row["Kendall tau (systems)"] is not None
    relevance = _row(card, "offline vs human:maintainer-a", "relevance")
    assert relevance["scale"] == "ordinal" and relevance["kappa weights"] == "quadratic"


def test_offline_self_consistency_is_one_and_recomputed(card_run: tuple[dict, Path]) -> None:
    card, tmp = card_run
    section = next(s for s in card["sections"] if s["title"].startswith("Self-consistency"))
    offline_rows = [r for r in section["rows"] if r[0] == "offline"]
    assert offline_rows and all(r[4] == 0.0 for r in offline_rows)
    # the re-sample was really judged again, and its records match the judge stage's
    for s in SYSTEMS:
        again = {j.item_id: j.label for j in read_judgments(tmp / "agreement/offline" / s / "support.s1.parquet")}
        first = {j.item_id: j.label for j in read_judgments(tmp / "run/judgments" / s / "main/support.parquet")}
        assert again and all(first[i] == lab for i, lab in again.items())


def test_annotation_page_samples_the_demo_judgments(card_run: tuple[dict, Path], repo_root: Path) -> None:
    import re

    from reportbench.agreement.annotate import collect_items, sample, write_page

    _, tmp = card_run
    mp = pytest.MonkeyPatch()
    mp.chdir(repo_root)
    try:
        params = composed_params(conf_dir=repo_root / "conf")
        bench = params["benchmarks"]["deepscholar"]
        bench["systems"] = {s: bench["systems"][s] for s in SYSTEMS}
        from spine_helpers import refresh_plan

        refresh_plan(params)
        items = collect_items(params, "deepscholar", tmp / "run/releases", tmp / "run/runs", tmp / "run/judgments",
                              tasks=["support", "relevance"])  # fmt: skip
    finally:
        mp.undo()
    picked = sample(items, 120, seed=0)
    assert len(picked) == 120 and {it["task"] for it in picked} == {"support", "relevance"}
    assert sample(items, 120, seed=0) == picked
    page = write_page(tmp / "annotate.html", "deepscholar", picked).read_text()
    assert len(re.findall(r'"item_id":', page)) == 120
    assert "claim" in picked[0]["fields"] or "ref_title" in picked[0]["fields"]
