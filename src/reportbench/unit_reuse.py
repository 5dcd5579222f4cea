"""Reuse of a judge unit's outputs when nothing it depends on changed (issue 36, "incremental is incremental").

DVC reruns `judge@<b>` whole when any system's run changes: every (system, member) unit was judged again, at
the full cost of reading its reports, building its items and answering them (from the response cache, or with
the offline judge). A unit's outputs are a function of its inputs: the code, the benchmark's package, the
prompts, the release, the fetched pages, the params the stage declares, and that one system's run folder. So
the stage keys each unit by a hash of exactly those, stores the unit's finished outputs (its records folder and
usage file, byte for byte) under `.reportbench/cache/judge-units/` (outside DVC's outs: DVC still owns the
stage), and on a later run whose key matches copies them back instead of judging: the same bytes, at the cost
of hashing. Only complete units are stored (an incomplete one raises before). `REPORTBENCH_UNIT_REUSE=0` turns
it off (then every unit is judged again, as before)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import reportbench
from reportbench.digest import MEMO_PATH, collector_paused, memo_tree_digest, speed_caches_writable

CACHE_DIR = Path(".reportbench") / "cache" / "judge-units"
ENV = "REPORTBENCH_UNIT_REUSE"


def enabled() -> bool:
    return os.environ.get(ENV, "1") not in ("0", "false", "no")


def _dir_digest(path: Path | None) -> str:
    """The folder's content digest; each file's sha256 memoised by its stat (digest.memo_tree_digest): an unchanged
    run folder is not read again on the next run."""
    if path is None or not Path(path).exists():
        return "-"
    return memo_tree_digest(Path(path), memo=MEMO_PATH if enabled() else None)


def stage_digest(params: Mapping[str, Any], benchmark: str, release_dir: Path, pages_dir: Path | None) -> str:
    """What every unit of `judge@<b>` reads besides its own system's run: code, prompts, release, pages, params."""
    bench = (params.get("benchmarks") or {}).get(benchmark) or {}
    plan = ((params.get("plan") or {}).get("benchmarks") or {}).get(benchmark) or {}
    parts = {
        "code": code_digest(benchmark),
        "prompts": _dir_digest(Path("prompts")),
        "release": _dir_digest(release_dir),
        "pages": _dir_digest(pages_dir),
        # the params the DVC stage declares (dvc.yaml judge@), but the list of systems
        "params": {
            "judge_identity": params.get("judge_identity"),
            "judges": bench.get("judges"),
            "judging": bench.get("judging"),
            "members": plan.get("members"),
        },
        # the authors' prompts are read at run time from the mirror or their cache (never a DVC dep)
        "authors_mirror": os.environ.get("REPORTBENCH_AUTHORS_MIRROR"),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


_CODE_DIGESTS: dict[str, str] = {}


def code_digest(benchmark: str) -> str:
    """The code that computes a judge stage's outputs: the reportbench package and the benchmark's own code (a
    plug-in's may live elsewhere), every file's sha256 memoised by its stat (an unchanged tree is stat'd, not
    read); once per process."""
    if benchmark not in _CODE_DIGESTS:
        from reportbench.benchmarks import benchmark_files  # lazy: +210 ms to import (python -X importtime)

        package = _dir_digest(Path(reportbench.__file__).parent)
        own = _dir_digest(benchmark_files(benchmark).code)
        _CODE_DIGESTS[benchmark] = hashlib.sha256(f"{package}\0{own}".encode()).hexdigest()
    return _CODE_DIGESTS[benchmark]


RELEASES_DIR = Path(".reportbench") / "cache" / "releases"


def cached_release(release_dir: Path, benchmark: str, read: Callable[[], Any], cache_dir: Path = RELEASES_DIR) -> Any:
    """The release `read()` returns (read and validated: `read_release`), stored once validated and loaded from
    there while the release folder's bytes and the code are the same ones (keyed by both digests; the release
    folder's file digests are memoised by stat like a run folder's): the judge stage reads a 1,000-task release
    in ~35 ms instead of ~110 ms of reading, hashing and validating it again (issue 36). A cache: unreadable, it
    is read again; one entry per benchmark (it does not grow with releases)."""
    if not enabled():
        return read()
    where = Path(release_dir).resolve()  # a Release remembers its folder
    parts = f"{where}\0{_dir_digest(release_dir)}\0{code_digest(benchmark)}\0{benchmark}"
    key = hashlib.sha256(parts.encode()).hexdigest()
    entry = Path(cache_dir) / benchmark
    stored = entry / f"{key[:32]}.pickle"
    if stored.is_file():
        try:
            with open(stored, "rb") as fh, collector_paused():
                return pickle.load(fh)
        except Exception:  # noqa: BLE001 - a damaged cache entry is read again, never trusted
            pass
    release = read()
    if not speed_caches_writable():  # `reportbench estimate`: read, never stored
        return release
    tmp: str | None = None
    try:
        entry.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=entry, prefix=".tmp-", suffix=".pickle", delete=False) as fh:
            tmp = fh.name
            pickle.dump(release, fh, protocol=pickle.HIGHEST_PROTOCOL)
        for old in entry.glob("*.pickle"):
            if old != stored and not old.name.startswith(".tmp-"):  # another one's write in flight stays
                old.unlink(missing_ok=True)
        os.replace(tmp, stored)
        READS["stored"] += 1
    except Exception:  # noqa: BLE001 - a cache: a full disk or an unpicklable table only costs the next read
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return release


READS = {"stored": 0}  # release entries stored in this process (tests count them)


def unit_key(stage: str, system: str, member: str, run_dir: Path) -> str:
    return hashlib.sha256(f"{stage}\0{system}\0{member}\0{_dir_digest(run_dir)}".encode()).hexdigest()[:32]


def _all_answered(summary: Mapping[str, Any]) -> bool:
    """Only a unit with no failed item is stored: a failed call must be asked again by the next run (and by
    `reportbench retry`), never copied back as failed."""
    if "incomplete" in summary:
        return False
    steps = summary.get("steps") or {}
    usages = steps.values() if isinstance(steps, Mapping) else steps
    return all(isinstance(u, Mapping) and not u.get("failed") for u in usages)


def judge_unit(
    benchmark: str,
    system: str,
    member: str,
    key: str,
    out_dir: Path,
    usage_out: Path,
    run: Callable[[], dict[str, Any]],
    cache_dir: Path = CACHE_DIR,
) -> tuple[dict[str, Any], bool]:
    """(the unit's usage summary, whether it was reused): its stored outputs copied back when `key` matches,
    else `run()` and, when the unit is complete, its outputs stored under `key` (one entry per unit)."""
    entry = Path(cache_dir) / benchmark / f"{system}.{member}"
    stored = entry / key
    out_dir, usage_out = Path(out_dir), Path(usage_out)
    if enabled() and (stored / "usage.json").is_file() and (stored / "records").is_dir():
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.copytree(stored / "records", out_dir)
        usage_out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(stored / "usage.json", usage_out)
        return json.loads(usage_out.read_text(encoding="utf-8")), True
    summary = run()
    if enabled() and _all_answered(summary) and out_dir.is_dir() and usage_out.is_file():
        entry.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry))
        try:
            shutil.copytree(out_dir, tmp / "records")
            shutil.copyfile(usage_out, tmp / "usage.json")
            for old in entry.iterdir():  # one stored version per unit: the cache does not grow with reruns
                if old != tmp:
                    shutil.rmtree(old, ignore_errors=True)
            tmp.replace(stored)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return summary, False
