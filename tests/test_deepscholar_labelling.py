"""Importance labelling of an imported release (labelling.py + stages/label_importance.py): labels every
exemplar reference through the judge layer, drops a paper whose judgment failed, names the judge on the card,
refuses the offline stand-in unless asked, and the labelled release makes Reference Coverage defined."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reportbench.judges.base import Judgment
from reportbench.judges.factory import make_judge
from reportbench.protocols.deepscholar.items import ReleaseContext
from reportbench.protocols.deepscholar.labelling import LabellingError, label_release, write_labelled
from reportbench.release.demo import build_demo_release
from reportbench.release.format import read_release, write_release

pytestmark = pytest.mark.core


def _unlabelled(repo_root: Path):  # type: ignore[no-untyped-def]
    rel = build_demo_release(repo_root / "data" / "demo" / "deepscholar")
    rel.exemplar_ref_rows = [r.model_copy(update={"is_important": None}) for r in rel.exemplar_ref_rows]
    assert not rel.has_important_refs
    return rel


class RuleJudge:
    """A judge double: 'important' iff the cited title contains a word; fails for one chosen reference."""

    judge_id = "rule-judge"

    def __init__(self, word: str, fail_key: str | None = None) -> None:
        self.word, self.fail_key = word, fail_key

    async def __call__(self, item_id: str, inputs, input_ids: dict[str, str]) -> Judgment:  # type: ignore[no-untyped-def]
        base = {"task": "important_reference", "item_id": item_id, "input_ids": input_ids, "judge_id": self.judge_id,
                "model": "rule", "prompt_id": "deepscholar/important_reference", "prompt_hash": "ab" * 32}  # fmt: skip
        if input_ids["ref_key"] == self.fail_key:
            return Judgment(**base, status="failed", error="parse: not JSON")
        imp = self.word.lower() in inputs.cited_title.lower()
        return Judgment(**base, value=float(imp), label=str(imp).lower(),
                        parsed=f'{{"important": {str(imp).lower()}, "explanation": ""}}')  # fmt: skip


def test_labels_every_reference_and_names_the_judge(repo_root: Path, tmp_path: Path) -> None:
    rel = _unlabelled(repo_root)
    first = rel.exemplar_ref_rows[0]
    word = (first.title or "x").split()[0]
    res = label_release(rel, RuleJudge(word))
    out = res.release
    assert out.has_important_refs and len(out.tasks) == len(rel.tasks) and not res.dropped
    assert all(r.is_important == (word.lower() in (r.title or r.ref_key).lower()) for r in out.exemplar_ref_rows)
    assert len(res.judgments) == len(rel.exemplar_ref_rows)
    write_labelled(res, tmp_path / "labelled")
    back = read_release(tmp_path / "labelled")
    card = (tmp_path / "labelled" / "CARD.md").read_text()
    assert "important-reference labels: yes" in card and "rule-judge (model rule, prompt deepscholar/" in card
    assert back.meta.provenance["important_refs.labelled_by"].startswith("rule-judge")
    assert (tmp_path / "labelled" / "labelling" / "important_reference.parquet").is_file()
    # Reference Coverage is now defined for the labelled release (NaN before)
    ctx = ReleaseContext.from_release(back)
    assert ctx.has_important_labels(back.tasks[0].task_id)
    assert not ReleaseContext.from_release(rel).has_important_labels(rel.tasks[0].task_id)


def test_failed_judgment_drops_the_paper_not_the_run(repo_root: Path) -> None:
    rel = _unlabelled(repo_root)
    victim = rel.exemplar_ref_rows[0]
    res = label_release(rel, RuleJudge("the", fail_key=victim.ref_key))
    assert victim.task_id in res.dropped and "parse: not JSON" in res.dropped[victim.task_id]
    assert victim.task_id not in res.release.task_ids and len(res.release.tasks) == len(rel.tasks) - 1
    assert res.summary()["n_failed"] == 1 and "dropped because a judgment failed" in res.release.meta.description


def test_offline_judge_is_refused_unless_allowed(repo_root: Path) -> None:
    rel = _unlabelled(repo_root)
    offline = make_judge("important_reference", {"backend": "offline"})
    with pytest.raises(LabellingError, match="needs an LLM judge"):
        label_release(rel, offline)
    res = label_release(rel, offline, allow_offline=True)
    assert "NOT for publication" in res.release.meta.provenance["important_refs.labelled_by"]


def test_stage_fails_fast_with_one_line_on_the_offline_judge(repo_root: Path, tmp_path: Path) -> None:
    rel_dir = tmp_path / "rel"
    write_release(_unlabelled(repo_root), rel_dir)
    proc = subprocess.run(
        [sys.executable, str(repo_root / "stages" / "label_importance.py"), "--release", str(rel_dir),
         "--out", str(tmp_path / "out")],  # fmt: skip
        cwd=repo_root, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "needs an LLM judge" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
