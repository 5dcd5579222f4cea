"""DEER: the authors' per-sample output files, in and out.

Their evaluation writes, per domain folder (e.g. `csai/gpt5.2_fast/`): `others/<NNNN>.json` (the five rubric
calls' factor scores: `scores.{group}.{sub}.{element}.{factor} = {description, score}` with `"N/A"`),
`fact/<NNNN>.json` (the information-verification metrics: `raw.integrity`, `raw.sufficiency`, `raw.raw`) and
`final/<NNNN>.json` + `final.json` (integrated `criteria_avgs`, `score_avgs`). `read_authors_sample` imports one
sample without re-judging; `write_final` writes our integrated scores in their `final/<NNNN>.json` shape.
"""

from __future__ import annotations

import json
import re
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
    # lazy: +572 ms to import (python -X importtime)
    from reportbench.protocols.deer.recorded import RecordedFormatError, fact_raw_metrics

    try:
        return fact_raw_metrics(fact, path)
    except RecordedFormatError as exc:
        raise AuthorsFormatError(str(exc)) from None


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
    from reportbench.protocols.deer.rubric import CALLS  # lazy: +563 ms to import (python -X importtime)

    scores = others.get("scores") or {}
    return {
        call: json.dumps({"scores": {g: scores[g] for g in groups if g in scores}}, ensure_ascii=False)
        for call, (groups, _) in CALLS.items()
    }


def judged_factor_scores(folder: str | Path, sample_id: int) -> dict[str, int | None]:
    """The factor scores as the judge stage records them: each rebuilt answer parsed by the DEER rubric task's
    own strict parser (the path an LLM answer takes), then read back from the parsed record as the score stage
    does. A parse failure is raised, naming the call."""
    from reportbench.benchmarks import get_benchmark  # lazy: +299 ms to import (python -X importtime)
    from reportbench.judges.base import ParseError, dump_parsed  # lazy: +138 ms to import (python -X importtime)
    from reportbench.judges.tasks import get_task  # lazy: +299 ms to import (python -X importtime)

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


# ------------------------------------------------------------------------------------------------ recorded run
# The authors' released files hold their judgments, not the task folder's query, guidance or the judged report
# (given out on request). A recorded run still goes through the pipeline: a release and a run whose texts say
# they are not released (the sample is named so the stub can answer for it), the judge stage answered by the
# loopback stub with the authors' own recorded answers, the fact side from their recorded raw metrics
# (`judging.recorded_fact`, protocols/deer/recorded.py), and the score stage.
NOT_RELEASED = "not in the authors' released files (the DEER task folder is given out on request)"
_SAMPLE = re.compile(r"DEER recorded sample (?P<domain>[a-z_]+)/(?P<n>\d+)\b")


def _samples(folder: Path) -> list[int]:
    others = Path(folder) / "others"
    if not others.is_dir():
        raise AuthorsFormatError(f"{others}: not a folder (want the authors' output/<domain>/<system>/)")
    return sorted(int(p.stem) for p in others.glob("*.json") if re.fullmatch(r"\d{4}", p.stem))


def recorded_release(folder: str | Path) -> Any:
    """A DEER release of the samples of an authors' output folder (`<domain>/<system>/others/<NNNN>.json`)."""
    # lazy: +627 ms to import (python -X importtime)
    from reportbench.protocols.deer.release import NAME, domain_of, task_id_for
    from reportbench.protocols.deer.rubric import rubric_items  # lazy: +563 ms to import (python -X importtime)
    from reportbench.release.format import Release, ReleaseMeta  # lazy: +235 ms to import (python -X importtime)
    from reportbench.types import Task  # lazy: +139 ms to import (python -X importtime)

    folder = Path(folder)
    domain = folder.resolve().parent.name
    tasks = [
        Task(
            task_id=task_id_for(domain, n),
            title=f"DEER {domain}/{n} (recorded judgments)",
            task_prompt=f"DEER recorded sample {domain}/{n}: the query is {NOT_RELEASED}.",
            categories=[domain_of(domain, n)],
        )
        for n in _samples(folder)
    ]
    meta = ReleaseMeta(
        name=f"deer-recorded-{domain}",
        created_at="2025-12-19",
        source=f"the DEER authors' released judgments ({domain}/{folder.name})",
        licence="CC BY-NC 4.0 (the authors' data; nothing of it is stored in this release but sample numbers)",
        synthetic=False,
        benchmark=NAME,
        description=f"Tasks named after the authors' released samples; queries and guidance are {NOT_RELEASED}.",
    )
    return Release(meta=meta, tasks=tasks, extra={"rubric_items": list(rubric_items())})


def write_recorded_run(folder: str | Path, system: str, out_dir: str | Path) -> list[Any]:
    """The system stage's output for the recorded samples: one report per sample whose body says it is not
    released (the judge's answers are the authors' recorded ones for the real report)."""
    from reportbench.protocols.deer.release import task_id_for  # lazy: +627 ms to import (python -X importtime)
    from reportbench.systems import write_run  # lazy: +165 ms to import (python -X importtime)
    from reportbench.systems.base import TaskOutcome  # lazy: +98 ms to import (python -X importtime)
    from reportbench.types import Report  # lazy: +139 ms to import (python -X importtime)

    folder = Path(folder)
    domain = folder.resolve().parent.name
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reports, outcomes = [], []
    for n in _samples(folder):
        tid = task_id_for(domain, n)
        rid = f"{system}:{tid}"
        reports.append(Report(report_id=rid, task_id=tid, system=system, format="recorded",
                              body="",  # not released: nothing is segmented, extracted or verified
                              warnings=[f"recorded: the authors' judgments of their {folder.name}_{n}.md"]))
        outcomes.append(TaskOutcome(task_id=tid, status="ok", report_id=rid))
    write_run(out, reports, outcomes)
    return reports


def authors_responder(folder: str | Path) -> Any:
    """A stub-server responder answering each DEER rubric call with the authors' recorded answer for the sample
    named in the messages (recorded_release's query) and the call whose groups the messages ask for. A message
    naming no recorded sample, or no single call, is an error (never a guessed answer)."""
    from reportbench.protocols.deer.rubric import CALLS  # lazy: +563 ms to import (python -X importtime)

    folder = Path(folder)
    answers = {n: rubric_answers(_load(folder / "others" / f"{n:04d}.json")) for n in _samples(folder)}

    def respond(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        text = "\n".join(str(m.get("content")) for m in messages)
        m = _SAMPLE.search(text)
        if m is None or int(m["n"]) not in answers:
            raise AuthorsFormatError("the judge's messages name no recorded DEER sample")
        schema = json.dumps(response_format or {})
        calls = [c for c, (groups, _) in CALLS.items() if all(f'"{g}"' in text + schema for g in groups)]
        if len(calls) > 1:  # information_ethics asks for two groups; a single-group call asks for one of them
            calls = [c for c in calls if len(CALLS[c][0]) > 1] or calls
        if len(calls) != 1:
            raise AuthorsFormatError(f"the judge's messages ask for {len(calls)} DEER rubric calls: {calls}")
        return answers[int(m["n"])][calls[0]]

    return respond
