"""The semantic offline judge (MiniLM int8 ONNX + lexical signals): pinned model, caching, guards, probe separation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reportbench.judges import semantic
from reportbench.judges.offline import OfflineJudge, support_params
from reportbench.judges.scores import support_score, support_scores
from reportbench.judges.tasks import get_task

pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[1]
SOURCE = (
    "Heat pumps move heat instead of generating it, which is why they can deliver three to four units of heat for "
    "every unit of electricity they consume. In mild climates they replace both a furnace and an air conditioner. "
    "Installation costs remain higher than for gas boilers in most countries."
)
PARAPHRASE = (
    "Because they transfer heat rather than produce it, heat pumps output several times more energy than they use."
)
SEMANTIC = support_params({"semantic": {"enabled": True, "cascade": False}})


def test_model_and_tokenizer_are_pinned_by_hash() -> None:
    emb = semantic.get_embedder()
    vectors = emb.encode(["a cat sat on the mat", "a cat sat on the mat", "stock markets fell sharply"])
    assert vectors.shape == (3, 384)
    assert abs(float(vectors[0] @ vectors[0]) - 1.0) < 1e-5
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0, abs=1e-6)
    assert float(vectors[0] @ vectors[2]) < 0.5


def test_tampered_tokenizer_fails_with_one_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "TOKENIZER_SHA256", "0" * 64)
    with pytest.raises(semantic.SemanticModelError, match="pinned sha256"):
        semantic.MiniLMEmbedder()


def test_embeddings_are_cached_by_content_hash() -> None:
    emb = semantic.get_embedder()
    emb.encode(["a sentence only this test embeds, once"])
    before = emb.encoded
    emb.encode(["a sentence only this test embeds, once", "a sentence only this test embeds, once"])
    assert emb.encoded == before


def test_source_is_indexed_once_for_all_its_claims() -> None:
    semantic._INDEX_CACHE.clear()
    support_scores([PARAPHRASE, "Heat pumps are cheap."], SOURCE, SEMANTIC)
    support_scores(["Another claim about heat pumps and furnaces."], SOURCE, SEMANTIC)
    assert len(semantic._INDEX_CACHE) == 1


def test_batch_equals_one_claim_at_a_time() -> None:
    claims = [PARAPHRASE, "Heat pumps cannot work in mild climates.", "Gas boilers cost less to install."]
    batch = support_scores(claims, SOURCE, SEMANTIC)
    single = [support_score(c, SOURCE, SEMANTIC) for c in claims]
    assert [(s.score, s.best_window) for s in batch] == [(s.score, s.best_window) for s in single]


def test_paraphrase_gains_and_guards_still_fire() -> None:
    lexical = support_score(PARAPHRASE, SOURCE)
    sem = support_score(PARAPHRASE, SOURCE, SEMANTIC)
    assert sem.semantic > 0.7 and sem.embedded
    negated = support_score("Heat pumps cannot replace a furnace in mild climates.", SOURCE, SEMANTIC)
    assert negated.score == 0.0 and any(g.startswith("negation") for g in negated.guards_fired)
    number = support_score("Heat pumps deliver ten units of heat per unit of electricity.", SOURCE, SEMANTIC)
    assert any(g.startswith("number") for g in number.guards_fired)
    assert "minilm=" in sem.describe() and lexical.score < 0.27  # the lexical judge misses this paraphrase


def test_cascade_skips_the_model_only_where_lexical_evidence_is_decisive() -> None:
    cascade = support_params({"semantic": {"enabled": True}})
    copy, unrelated = support_scores(
        ["Installation costs remain higher than for gas boilers in most countries.", "Octopuses have blue blood."],
        SOURCE,
        cascade,
    )
    assert not copy.embedded and copy.lexical > 0.25
    assert not unrelated.embedded and unrelated.score < 0.05


def test_judge_ids_keep_lexical_records_unchanged() -> None:
    task = get_task("support")
    lexical = OfflineJudge(task, {"offline": {}})
    assert lexical.judge_id == "offline-lexical-v1+thr-c2e0e7d9"  # the id before the semantic section existed
    sem = OfflineJudge(task, {"offline": {"semantic": {"enabled": True}}})
    assert sem.judge_id.startswith("offline-lexsem-v1/minilm-l6-v2-onnx-int8+thr-")


def test_semantic_judge_separates_the_held_out_probe_better() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from offline_judge_quality import auc, lexical_scores, load_probe, semantic_scores
    finally:
        sys.path.pop(0)
    import yaml

    held = [x for x in load_probe() if x["split"] == "heldout"]
    cfg = yaml.safe_load((ROOT / "conf/judge/offline_semantic.yaml").read_text())["offline"]
    knobs = {k: v for k, v in cfg["semantic"].items() if k != "enabled"}

    def separation(scores: list[float]) -> float:
        pos = [s for s, x in zip(scores, held, strict=True) if x["label"] == 1]
        neg = [s for s, x in zip(scores, held, strict=True) if x["label"] == 0]
        return auc(pos, neg)

    assert separation(semantic_scores(held, knobs)) > separation(lexical_scores(held))


def test_disk_cache_gives_identical_vectors_across_embedders(tmp_path: Path) -> None:
    store = semantic.EmbeddingStore(tmp_path / "emb.sqlite")
    first = semantic.MiniLMEmbedder()
    first.store = store
    texts = ["disk cache sentence one", "disk cache sentence two"]
    a = first.encode(texts)
    second = semantic.MiniLMEmbedder()
    second.store = semantic.EmbeddingStore(tmp_path / "emb.sqlite")
    b = second.encode(texts)
    assert second.encoded == 0 and (a == b).all()
