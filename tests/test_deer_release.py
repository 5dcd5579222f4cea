"""DEER importer: the authors' layout (query.md + core_criteria.md per task folder), temp/ excluded, csai split
into ai (1-5) and cs (6-10); the EG is marked licence-restricted and never reaches the card or the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.config import ConfigError
from reportbench.protocols.deer.release import EG_KIND, build_release, guidance_by_task, is_licence_restricted
from reportbench.release.format import read_release, write_release

pytestmark = pytest.mark.core

SECRET = "PRIVATE-GUIDANCE-TEXT-91c2"


def _layout(root: Path) -> Path:
    for folder, n in [("csai", 1), ("csai", 5), ("csai", 6), ("csai", 10), ("physics", 9), ("history", 2)]:
        d = root / folder / str(n)
        d.mkdir(parents=True)
        (d / "query.md").write_text(f"# Task {folder} {n}\n\nWrite a report on topic {n}.\n")
        (d / "core_criteria.md").write_text(f"1. Item\nThe report must cover {n}. {SECRET}\n")
        (d / f"gpt5.2_fast_{n}.md").write_text("a sample report, ignored by the importer\n")
    for folder in ("csai", "physics"):
        t = root / folder / "temp"
        t.mkdir()
        (t / "query.md").write_text("scratch duplicate\n")
    (root / "physics" / "notes").mkdir()
    return root


def test_import_authors_layout(tmp_path: Path) -> None:
    root = _layout(tmp_path / "deer")
    rel = build_release({"kind": "folder", "source": str(root), "name": "deer-test"})
    ids = [t.task_id for t in rel.tasks]
    assert ids == ["ai-1", "ai-5", "cs-6", "cs-10", "history-2", "physics-9"]
    assert {t.task_id: t.categories for t in rel.tasks}["cs-6"] == ["cs"]
    assert not rel.meta.synthetic and "may not be redistributed" in rel.meta.licence
    assert guidance_by_task(rel)["ai-1"].startswith("1. Item")
    rows = rel.table("rubric_items")
    assert len([r for r in rows if r.kind != EG_KIND]) == 101 and all(
        r.task_id == "*" for r in rows if r.kind != EG_KIND
    )
    eg_rows = [r for r in rows if r.kind == EG_KIND]
    assert len(eg_rows) == 6 and all(is_licence_restricted(r) for r in eg_rows)
    out = tmp_path / "release"
    write_release(rel, out)
    assert SECRET not in (out / "CARD.md").read_text()
    assert SECRET not in (out / "release.json").read_text()
    back = read_release(out)
    assert guidance_by_task(back) == guidance_by_task(rel)
    only_cs = build_release({"kind": "folder", "source": str(root), "domains": ["cs"]})
    assert [t.task_id for t in only_cs.tasks] == ["cs-6", "cs-10"]
    assert len(guidance_by_task(build_release({"kind": "folder", "source": str(root), "max_tasks": 2}))) == 2


def test_import_errors_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="source"):
        build_release({"kind": "folder", "source": str(tmp_path / "missing")})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no <domain>"):
        build_release({"kind": "folder", "source": str(tmp_path / "empty")})
    with pytest.raises(ConfigError, match="kind"):
        build_release({"kind": "nope", "source": "x"})


def test_demo_release_is_synthetic(repo_root: Path) -> None:
    rel = build_release({"kind": "demo", "source": str(repo_root / "data" / "demo" / "deer"), "name": "demo"})
    assert rel.meta.synthetic and [t.task_id for t in rel.tasks] == ["ai-1", "history-1", "physics-1"]
    assert all("SYNTHETIC-EG-MARKER" in g for g in guidance_by_task(rel).values())
    assert json.dumps(rel.meta.provenance)  # hashes only, no text


def test_shared_fixture_layout_is_outputs_only(shared_dir: Path) -> None:
    """The shared DEER folder holds the authors' evaluation outputs, never task data: nothing to import."""
    d = shared_dir / "data" / "deer"
    if not d.is_dir():
        pytest.skip("../shared/data/deer is not present")
    assert not list(d.rglob("core_criteria.md")) and not list(d.rglob("query.md"))
