"""Rubric-judge meta-evaluation on a self-authored human-label fixture (authors' file format), hand-computed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.judges.base import Judgment
from reportbench.protocols.researcherbench.metaeval import MetaEvalError, load_human_labels, meta_eval_from_files
from reportbench.protocols.researcherbench.release import build_release

pytestmark = pytest.mark.core


@pytest.fixture()
def demo(repo_root: Path):
    return build_release({"kind": "demo", "source": str(repo_root / "data/demo/researcherbench")})


def _j(task: str, item: str, covered: bool | None) -> Judgment:
    if covered is None:
        return Judgment(
            task="researcherbench_rubric",
            item_id=f"{task}:{item}",
            judge_id="t",
            status="failed",
            input_ids={"task_id": task, "item_id": item},
            error="parse: x",
        )
    return Judgment(
        task="researcherbench_rubric",
        item_id=f"{task}:{item}",
        judge_id="t",
        value=float(covered),
        input_ids={"task_id": task, "item_id": item},
    )


def test_meta_eval_hand_computed(demo, fixtures_dir: Path) -> None:
    # human (fixture): q1 = T T F F (weights 3 2 2 1), q2 = T F T F (weights 2 3 2 1)
    judge = [
        _j("q1", "1", True),
        _j("q1", "2", False),
        _j("q1", "3", True),
        _j("q1", "4", False),
        _j("q2", "1", True),
        _j("q2", "2", False),
        _j("q2", "3", False),
        _j("q2", "4", None),
    ]
    out = meta_eval_from_files(demo, fixtures_dir / "researcherbench" / "meta_eval", judge)
    assert out["n_pairs"] == 7 and out["n_judge_failed"] == 1 and out["n_human_only"] == 1
    assert out["confusion"] == {"tp": 2, "fp": 1, "fn": 2, "tn": 2}
    u = out["unweighted"]
    assert u["accuracy"] == pytest.approx(4 / 7) and u["precision"] == pytest.approx(2 / 3)
    assert u["recall"] == pytest.approx(1 / 2) and u["f1"] == pytest.approx(4 / 7)
    assert out["weighted_confusion"] == {"tp": 5.0, "fp": 2.0, "fn": 4.0, "tn": 4.0}
    w = out["weighted"]
    assert w["accuracy"] == pytest.approx(9 / 15) and w["precision"] == pytest.approx(5 / 7)
    assert w["recall"] == pytest.approx(5 / 9) and w["f1"] == pytest.approx(0.625)
    json.dumps(out)  # JSON-serialisable


def test_human_file_must_line_up_with_the_rubric(demo, fixtures_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(MetaEvalError, match="labels for 4 rubric items"):
        load_human_labels(fixtures_dir / "researcherbench" / "meta_eval", demo, annotator="B")
    rows = [{"point": "some other item", "covered": True}] * 4
    (tmp_path / "Q1_result_A.json").write_text(json.dumps({"rubric_eval": rows}))
    with pytest.raises(MetaEvalError, match="join is by index"):
        load_human_labels(tmp_path, demo)
    rows = [{"covered": "maybe"}] * 4
    (tmp_path / "Q1_result_A.json").write_text(json.dumps({"rubric_eval": rows}))
    with pytest.raises(MetaEvalError, match="boolean"):
        load_human_labels(tmp_path, demo)
