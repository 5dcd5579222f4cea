"""DEER interop (issue 22 §3): a self-authored sample in the authors' others/fact/final format is imported
without re-judging, scored, and written back as their final/<NNNN>.json; the round trip is exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.interop.deer import AuthorsFormatError, read_authors_sample, write_final
from reportbench.protocols.deer.rubric import FACTORS
from reportbench.protocols.deer.scoring import fact_subdimensions, integrate, judge_dimensions

pytestmark = pytest.mark.core


def _write_sample(folder: Path) -> None:
    """Self-authored scores: factor i gets 1 + (i * 7) % 10, every 13th is N/A; made-up fact counts."""
    scores: dict = {}
    for i, f in enumerate(FACTORS):
        score = "N/A" if i % 13 == 5 else 1 + (i * 7) % 10
        scores.setdefault(f.group, {}).setdefault(f.sub, {}).setdefault(f.element, {})[f.fid] = {
            "description": f"self-authored rationale {i}",
            "score": score,
        }
    (folder / "others").mkdir(parents=True)
    (folder / "fact").mkdir()
    (folder / "others" / "0007.json").write_text(json.dumps({"sample_id": 7, "scores": scores}))
    fact = {
        "sample_id": 7,
        "raw": {
            "integrity": {
                "claim_factuality": {"external_claim_accuracy": 0.75},
                "citation_validity": {"citation_accuracy": 0.5},
                "reference_accuracy": {"supported_per_shown": 0.6},
                "reference_quality": {"reproducibility": 0.9, "reliability": 0.8},
                "reference_diversity": {"diversity_hhi": 6.5},
            },
            "sufficiency": {
                "source_support": {"externally_verifiable_claims_ratio": 0.7},
                "information": 12,
                "citations": 6,
                "references": 2,
            },
        },
    }
    (folder / "fact" / "0007.json").write_text(json.dumps(fact))


def test_import_score_export_round_trip(tmp_path: Path) -> None:
    _write_sample(tmp_path)
    sample = read_authors_sample(tmp_path, 7)
    assert len(sample.factor_scores) == 101 and sample.final == {}
    assert sum(v is None for v in sample.factor_scores.values()) == sum(i % 13 == 5 for i in range(101))
    out = integrate(judge_dimensions(sample.factor_scores), fact_subdimensions(sample.raw_metrics))
    path = write_final(tmp_path, 7, out)
    assert path == tmp_path / "final" / "0007.json"
    again = read_authors_sample(tmp_path, 7)  # their final/ is now ours, in their shape
    assert again.final["sample_id"] == 7
    assert again.final["score_avgs"] == {d: ("N/A" if v is None else v) for d, v in out["dimensions"].items()}
    assert set(again.final["criteria_avgs"]) == set(out["criteria"])


def test_a_bad_file_names_the_file_and_field(tmp_path: Path) -> None:
    _write_sample(tmp_path)
    p = tmp_path / "others" / "0007.json"
    data = json.loads(p.read_text())
    g = next(iter(data["scores"]))
    s = next(iter(data["scores"][g]))
    e = next(iter(data["scores"][g][s]))
    fid = next(iter(data["scores"][g][s][e]))
    data["scores"][g][s][e][fid]["score"] = 11
    p.write_text(json.dumps(data))
    with pytest.raises(AuthorsFormatError, match=rf"0007.json: scores\.{g}\.{s}\.{e}\.{fid}\.score = 11"):
        read_authors_sample(tmp_path, 7)
    (tmp_path / "fact" / "0007.json").write_text(json.dumps({"raw": {}}))
    with pytest.raises(AuthorsFormatError, match="missing field"):
        from reportbench.interop.deer import raw_metrics

        raw_metrics({"raw": {}}, tmp_path / "fact" / "0007.json")
