"""DEER: the authors' per-sample output files, in and out.

Their evaluation writes, per domain folder (e.g. `csai/gpt5.2_fast/`): `others/<NNNN>.json` (the five rubric
calls' factor scores: `scores.{group}.{sub}.{element}.{factor} = {description, score}` with `"N/A"`),
`fact/<NNNN>.json` (the information-verification metrics: `raw.integrity`, `raw.sufficiency`, `raw.raw`) and
`final/<NNNN>.json` + `final.json` (integrated `criteria_avgs`, `score_avgs`). `read_authors_sample` imports one
sample without re-judging; `write_final` writes our integrated scores in their `final/<NNNN>.json` shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class AuthorsFormatError(ValueError):
    """A file that is not in the authors' format; the message names the file and the field."""


@dataclass(frozen=True)
class AuthorsSample:
    sample_id: int
    factor_scores: dict[str, int | None]  # "<group>.<sub>.<element>.<factor>" -> 1..10 | None (N/A)
    raw_metrics: dict[str, Any]  # the code's raw metrics, as protocols.deer.scoring.fact_subdimensions reads them
    final: dict[str, Any]  # their integrated scores ({} when final/<NNNN>.json is absent)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise AuthorsFormatError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise AuthorsFormatError(f"{path}: expected a JSON object")
    return data


def _field(data: dict[str, Any], path: Path, *keys: str) -> Any:
    node: Any = data
    for i, k in enumerate(keys):
        if not isinstance(node, dict) or k not in node:
            raise AuthorsFormatError(f"{path}: missing field {'.'.join(keys[: i + 1])}")
        node = node[k]
    return node


def factor_scores(others: dict[str, Any], path: Path) -> dict[str, int | None]:
    """others/<NNNN>.json -> {factor key: score}; "N/A" is None, anything else must be an integer 1..10."""
    out: dict[str, int | None] = {}
    for g, subs in _field(others, path, "scores").items():
        for s, els in subs.items():
            for e, fs in els.items():
                for fid, v in fs.items():
                    sc = v.get("score") if isinstance(v, dict) else None
                    key = f"{g}.{s}.{e}.{fid}"
                    if sc == "N/A":
                        out[key] = None
                    elif isinstance(sc, int) and not isinstance(sc, bool) and 1 <= sc <= 10:
                        out[key] = sc
                    else:
                        raise AuthorsFormatError(f"{path}: scores.{key}.score = {sc!r} is neither 1..10 nor 'N/A'")
    return out


def raw_metrics(fact: dict[str, Any], path: Path) -> dict[str, Any]:
    """fact/<NNNN>.json -> the code's raw metrics (names as in reportbench.protocols.deer.scoring)."""
    integ = ("raw", "integrity")
    suff = ("raw", "sufficiency")
    return {
        "external_claim_accuracy": _field(fact, path, *integ, "claim_factuality", "external_claim_accuracy"),
        "citation_accuracy": _field(fact, path, *integ, "citation_validity", "citation_accuracy"),
        "supported_per_shown": _field(fact, path, *integ, "reference_accuracy", "supported_per_shown"),
        "reproducibility": _field(fact, path, *integ, "reference_quality", "reproducibility"),
        "reliability": _field(fact, path, *integ, "reference_quality", "reliability"),
        "diversity": _field(fact, path, *integ, "reference_diversity", "diversity_hhi"),
        "source_support": _field(fact, path, *suff, "source_support", "externally_verifiable_claims_ratio"),
        "information": _field(fact, path, *suff, "information"),
        "citations": _field(fact, path, *suff, "citations"),
        "references": _field(fact, path, *suff, "references"),
    }


def read_authors_sample(folder: str | Path, sample_id: int) -> AuthorsSample:
    """One sample of an authors' output folder (others/ and fact/ required, final/ optional)."""
    folder = Path(folder)
    name = f"{int(sample_id):04d}.json"
    others_p, fact_p, final_p = folder / "others" / name, folder / "fact" / name, folder / "final" / name
    others, fact = _load(others_p), _load(fact_p)
    return AuthorsSample(
        sample_id=int(sample_id),
        factor_scores=factor_scores(others, others_p),
        raw_metrics=raw_metrics(fact, fact_p),
        final=_load(final_p) if final_p.is_file() else {},
    )


def rubric_answers(others: dict[str, Any]) -> dict[str, str]:
    """The judge's answer of each of the five rubric calls, rebuilt from others/<NNNN>.json (`{"scores":
    {group: ...}}` for the call's groups, exactly the shape their judge returned)."""
    from reportbench.protocols.deer.rubric import CALLS

    scores = others.get("scores") or {}
    return {
        call: json.dumps({"scores": {g: scores[g] for g in groups if g in scores}}, ensure_ascii=False)
        for call, (groups, _) in CALLS.items()
    }


def judged_factor_scores(folder: str | Path, sample_id: int) -> dict[str, int | None]:
    """The factor scores as the judge stage records them: each rebuilt answer parsed by the DEER rubric task's
    own strict parser (the path an LLM answer takes), then read back from the parsed record as the score stage
    does. A parse failure is raised, naming the call."""
    from reportbench.benchmarks import get_benchmark
    from reportbench.judges.base import ParseError, dump_parsed
    from reportbench.judges.tasks import get_task

    get_benchmark("deer")  # registers the DEER judge tasks
    path = Path(folder) / "others" / f"{int(sample_id):04d}.json"
    out: dict[str, int | None] = {}
    for call, answer in rubric_answers(_load(path)).items():
        try:
            parsed = get_task(f"deer_{call}").parse(answer, None)
        except ParseError as exc:
            raise AuthorsFormatError(f"{path}: the {call} call's answer does not parse: {exc}") from None
        out.update(json.loads(dump_parsed(parsed))["scores"])
    return out


def final_record(sample_id: int, integrated: dict[str, Any]) -> dict[str, Any]:
    """Our integrated scores (scoring.integrate's output) as their final/<NNNN>.json: undefined is "N/A"."""

    def na(v: Any) -> Any:
        return "N/A" if v is None else v

    return {
        "sample_id": int(sample_id),
        "criteria_avgs": {d: {s: na(v) for s, v in subs.items()} for d, subs in integrated["criteria"].items()},
        "score_avgs": {d: na(v) for d, v in integrated["dimensions"].items()},
    }


def write_final(folder: str | Path, sample_id: int, integrated: dict[str, Any]) -> Path:
    """Write final/<NNNN>.json in the authors' shape; returns the path."""
    path = Path(folder) / "final" / f"{int(sample_id):04d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(final_record(sample_id, integrated), indent=2, ensure_ascii=False) + "\n")
    return path
