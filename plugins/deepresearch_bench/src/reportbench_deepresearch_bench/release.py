"""Release importer: the authors' layout (`data/prompt_data/query.jsonl`, `data/criteria_data/criteria.jsonl`,
`data/test_data/cleaned_data/reference.jsonl`) read from a local folder into a reportbench release.

Tasks, criteria and reference reports are joined by the exact `prompt` text, as the authors' RACE script does;
the `id` of each file must then agree (a mismatch is an error naming the file and line, never a guess).
The reference report goes into `Task.exemplar` (the spine's answer key, never shown to systems). Language,
topic and dimension weights are the release table `drb_tasks`; criteria are `drb_criteria`.
The demo release (`demo/`, self-authored) uses the same layout and the same code path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field

from reportbench.config import ConfigError
from reportbench.release.format import Release, ReleaseMeta, TableSpec, register_table
from reportbench.types import Record, Task

NAME = "deepresearch_bench"
PACKAGE_DIR = Path(__file__).resolve().parent
DEMO_DIR = PACKAGE_DIR / "demo" / "release"
QUERY = "data/prompt_data/query.jsonl"
CRITERIA = "data/criteria_data/criteria.jsonl"
REFERENCE = "data/test_data/cleaned_data/reference.jsonl"
LANGUAGES = ("zh", "en")

# The pinned download: the three files at the authors' commit, each checked against its git blob id (what
# `git ls-tree` lists at that commit), so a changed or truncated file is refused, never read.
REPO = "Ayanami0730/deep_research_bench"
COMMIT = "214741e474a5347ea7f869ab79d27e7c8734ede7"
PINNED = {
    QUERY: "20a0c689704c364c9e85b5eb30c1fc139a73f86e",
    CRITERIA: "fa262defc40a3d159603eb46a71645fa4ae86e9a",
    REFERENCE: "2b0f090208527f0bf518516458de91b1d5a8fe75",
}
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
MAX_DOWNLOAD = 500_000_000
DEFAULT_CACHE = ".reportbench/cache/deepresearch_bench"


class DrbTask(Record):
    """Per-task fields of DeepResearch Bench beyond the spine's Task."""

    task_id: str
    language: str = Field(description="zh | en: picks the authors' prompt language")
    topic: str
    comprehensiveness: float = Field(description="dimension weight W_d")
    insight: float
    instruction_following: float
    readability: float


class DrbCriterion(Record):
    """One RACE criterion of a task (the judge sees criterion + explanation, never the weight)."""

    task_id: str
    dimension: str
    index: int
    criterion: str
    explanation: str
    weight: float


register_table(TableSpec("drb_tasks", DrbTask, ("task_id",)), order=lambda r: r.task_id)
register_table(
    TableSpec("drb_criteria", DrbCriterion, ("task_id", "dimension", "index")),
    order=lambda r: (r.dimension, r.index),
)


def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise ConfigError(f"deepresearch_bench release: {path} is missing (the authors' layout needs it)")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise ConfigError(f"{path}:{n}: expected a JSON object")
        rows.append((n, obj))
    return rows


def _field(path: Path, n: int, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    v = obj.get(key)
    if not isinstance(v, kind) or isinstance(v, bool):
        raise ConfigError(f"{path}:{n}: field {key!r} missing or not {getattr(kind, '__name__', kind)}")
    return v


def read_authors_layout(root: Path, limit: int | None = None, languages: tuple[str, ...] = LANGUAGES) -> Release:
    """The release from a folder in the authors' layout (their repository checkout, or our demo)."""
    root = Path(root)
    queries = _jsonl(root / QUERY)
    by_prompt_crit: dict[str, tuple[int, dict[str, Any]]] = {}
    for n, c in _jsonl(root / CRITERIA):
        by_prompt_crit[_field(root / CRITERIA, n, c, "prompt", str)] = (n, c)
    by_prompt_ref: dict[str, tuple[int, dict[str, Any]]] = {}
    for n, r in _jsonl(root / REFERENCE):
        by_prompt_ref[_field(root / REFERENCE, n, r, "prompt", str)] = (n, r)
    tasks: list[Task] = []
    infos: list[DrbTask] = []
    crits: list[DrbCriterion] = []
    for n, q in queries:
        qid = _field(root / QUERY, n, q, "id", (int, str))
        prompt = _field(root / QUERY, n, q, "prompt", str)
        lang = _field(root / QUERY, n, q, "language", str)
        if lang not in LANGUAGES:
            raise ConfigError(f"{root / QUERY}:{n}: language {lang!r} is not one of {LANGUAGES}")
        if lang not in languages:
            continue
        if prompt not in by_prompt_crit:
            raise ConfigError(f"{root / CRITERIA}: no criteria for task id {qid} (joined by exact prompt text)")
        if prompt not in by_prompt_ref:
            raise ConfigError(f"{root / REFERENCE}: no reference report for task id {qid} (joined by prompt)")
        cn, c = by_prompt_crit[prompt]
        rn, r = by_prompt_ref[prompt]
        for path, line, other in ((root / CRITERIA, cn, c), (root / REFERENCE, rn, r)):
            if "id" in other and str(other["id"]) != str(qid):
                raise ConfigError(f"{path}:{line}: id {other['id']} but the same prompt is task id {qid} in {QUERY}")
        tid = str(qid)
        weights = _field(root / CRITERIA, cn, c, "dimension_weight", dict)
        criterions = _field(root / CRITERIA, cn, c, "criterions", dict)
        for dim in ("comprehensiveness", "insight", "instruction_following", "readability"):
            if not isinstance(weights.get(dim), int | float):
                raise ConfigError(f"{root / CRITERIA}:{cn}: dimension_weight.{dim} missing or not a number")
            lst = criterions.get(dim)
            if not isinstance(lst, list) or not lst:
                raise ConfigError(f"{root / CRITERIA}:{cn}: criterions.{dim} missing or empty")
            for i, it in enumerate(lst):
                where = f"{root / CRITERIA}:{cn}: criterions.{dim}[{i}]"
                if (
                    not isinstance(it, dict)
                    or not all(isinstance(it.get(k), str) for k in ("criterion", "explanation"))
                    or not isinstance(it.get("weight"), int | float)
                ):
                    raise ConfigError(f"{where}: needs string criterion/explanation and a numeric weight")
                crits.append(
                    DrbCriterion(
                        task_id=tid,
                        dimension=dim,
                        index=i,
                        criterion=it["criterion"],
                        explanation=it["explanation"],
                        weight=float(it["weight"]),
                    )
                )
        article = _field(root / REFERENCE, rn, r, "article", str)
        topic = str(q.get("topic") or "")
        tasks.append(
            Task(
                task_id=tid,
                title=prompt[:120],
                categories=[topic] if topic else [],
                task_prompt=prompt,
                exemplar=article,
            )
        )
        dims = {d: float(weights[d]) for d in ("comprehensiveness", "insight", "instruction_following", "readability")}
        infos.append(DrbTask(task_id=tid, language=lang, topic=topic, **dims))
        if limit is not None and len(tasks) >= limit:
            break
    if not tasks:
        raise ConfigError(f"deepresearch_bench release: no tasks in {root / QUERY} for languages {languages}")
    meta = ReleaseMeta(
        name="",
        created_at="2025-06-01",
        source=str(root),
        licence="Apache-2.0 (Ayanami0730/deep_research_bench)",
        synthetic=False,
        benchmark=NAME,
        provenance={f: hashlib.sha256((root / f).read_bytes()).hexdigest() for f in (QUERY, CRITERIA, REFERENCE)},
    )
    return Release(meta=meta, tasks=tasks, extra={"drb_tasks": infos, "drb_criteria": crits})


def git_blob_id(data: bytes) -> str:
    """The id git gives these bytes as a blob: sha1 of 'blob <size>\\0' + bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _http_get(url: str) -> bytes:
    import urllib.request

    req = urllib.request.Request(url, headers={"User-Agent": "reportbench-deepresearch-bench"})
    with urllib.request.urlopen(req, timeout=120) as resp:  # noqa: S310 - a fixed https URL of a pinned commit
        data = resp.read(MAX_DOWNLOAD + 1)
    if len(data) > MAX_DOWNLOAD:
        raise ConfigError(f"{url}: larger than {MAX_DOWNLOAD} bytes")
    return data


def download_pinned(
    cache: Path,
    fetch: Callable[[str], bytes] = _http_get,
    pinned: Mapping[str, str] = PINNED,
    commit: str = COMMIT,
) -> Path:
    """The authors' files at the pinned commit in `cache/<commit>/` (downloaded once, blob-id checked)."""
    root = Path(cache) / commit
    for path, blob in pinned.items():
        dest = root / path
        if dest.is_file() and git_blob_id(dest.read_bytes()) == blob:
            continue
        url = RAW_URL.format(repo=REPO, commit=commit, path=path)
        try:
            data = fetch(url)
        except OSError as exc:
            raise ConfigError(f"{url}: download failed ({exc}); or set release.path to a local checkout") from None
        got = git_blob_id(data)
        if got != blob:
            raise ConfigError(f"{url}: git blob id {got} is not the pinned {blob} (changed or truncated file)")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(dest.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(dest)
    return root


def build_release(cfg: Mapping[str, Any]) -> Release:
    """`release.kind`: demo (the self-authored demo, packaged) | authors (`path`: a checkout in their layout, or
    `download: true`: the pinned files fetched once into `cache`, git-blob-checked)."""
    kind = cfg.get("kind") or "demo"
    name = str(cfg.get("name") or kind)
    langs = tuple(cfg.get("languages") or LANGUAGES)
    # `limit` is the spine's quick subset (reportbench.release.subset: hashed choice, recorded on every
    # leaderboard), applied after this builder by every path that builds a release: never a first-N cut here
    limit = None
    if kind == "demo":
        rel = read_authors_layout(DEMO_DIR, limit, langs)
        rel.meta = replace(
            rel.meta,
            name=name,
            source="plugins/deepresearch_bench demo (self-authored)",
            licence="CC0 (self-authored demo data)",
            synthetic=True,
            created_at="2026-01-01",
            provenance={},
        )
        return rel
    if kind == "authors" and cfg.get("download") and not cfg.get("path"):
        root = download_pinned(Path(str(cfg.get("cache") or DEFAULT_CACHE)))
        rel = read_authors_layout(root, limit, langs)
        rel.meta = replace(rel.meta, name=name, source=f"{REPO}@{COMMIT}")
        return rel
    if kind == "authors":
        path = cfg.get("path")
        if not path or not Path(path).is_dir():
            raise ConfigError(
                f"benchmarks.deepresearch_bench.release.path: {path!r} is not a folder in the authors' layout "
                "(a checkout of Ayanami0730/deep_research_bench with its data/ files)"
            )
        rel = read_authors_layout(Path(path), limit, langs)
        rel.meta = replace(rel.meta, name=name)
        return rel
    raise ConfigError(f"benchmarks.deepresearch_bench.release.kind must be demo|authors, got {kind!r}")


def task_infos(release: Release) -> dict[str, DrbTask]:
    return {r.task_id: r for r in release.table("drb_tasks")}  # type: ignore[misc]


def criteria_of(release: Release, task_id: str) -> list[DrbCriterion]:
    return [c for c in release.table("drb_criteria") if c.task_id == task_id]  # type: ignore[attr-defined]
