"""ResearcherBench importer: the authors' layout on the shared data (skips without it), and malformed inputs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from reportbench.protocols.researcherbench.release import (
    build_release,
    category_of,
    import_authors_layout,
    release_from_dir,
)
from reportbench.release.format import ReleaseError, read_release, write_release


@pytest.fixture(scope="module")
def rb_data(shared_dir: Path) -> Path:
    d = shared_dir / "data" / "researcherbench"
    if not (d / "questions.json").is_file():
        pytest.skip("../shared/data/researcherbench is not present")
    return d


def test_shared_release_counts(rb_data: Path) -> None:
    rel = build_release({"kind": "path", "path": str(rb_data), "name": "researcherbench"})
    assert len(rel.tasks) == 65
    items = rel.table("rubric_items")
    assert len(items) == 931
    assert Counter(int(r.weight) for r in items) == {2: 474, 1: 330, 3: 127}
    cats = Counter(category_of(t) for t in rel.tasks)
    assert cats == {"Open Consulting": 33, "Literature Review": 20, "Technical Details": 12}
    totals: dict[str, list[float]] = {}
    for t in rel.tasks:
        totals.setdefault(category_of(t), []).append(sum(r.weight for r in rel.rubric(t.task_id)))
    means = {c: round(sum(v) / len(v), 2) for c, v in totals.items()}
    assert means == {"Open Consulting": 24.67, "Literature Review": 25.65, "Technical Details": 27.67}
    assert len({t.categories[1] for t in rel.tasks}) == 34  # subjects kept (the data has 34, the paper says 35)
    q19 = next(t for t in rel.tasks if t.task_id == "q19")
    assert q19.task_prompt == "How to understand the role of FFNs in Transformers?"


def test_shared_release_round_trips(rb_data: Path, tmp_path: Path) -> None:
    rel = release_from_dir(rb_data, name="rb", synthetic=False, source="shared", licence="none stated")
    write_release(rel, tmp_path / "r")
    back = read_release(tmp_path / "r")
    assert len(back.table("rubric_items")) == 931
    assert [r.item_id for r in back.rubric("q1")][:3] == ["1", "2", "3"]


def test_canonical_question_text_not_mojibake(rb_data: Path) -> None:
    rel = build_release({"kind": "path", "path": str(rb_data)})
    for qid in (8, 11, 27):
        text = next(t.task_prompt for t in rel.tasks if t.task_id == f"q{qid}")
        assert "鈥" not in text


@pytest.mark.core
def test_bad_weights_and_missing_rubric_fail_loudly() -> None:
    qs = [
        {"id": 1, "question": "Q?", "category": "Open Consulting", "Subject": "S"},
        {"id": 2, "question": "R?", "category": "Technical Details"},
    ]
    rub = [{"id": 1, "question": "Q?", "rubric": [{"point": "a", "weight": 4}, {"point": "b", "weight": 2.5}]}]
    with pytest.raises(ReleaseError) as err:
        import_authors_layout(qs, rub)
    msg = str(err.value)
    assert "weight 4" in msg and "weight 2.5" in msg and "without a rubric: [2]" in msg


@pytest.mark.core
def test_missing_weight_defaults_to_one_and_ids_are_prefixed() -> None:
    qs = [{"id": 3, "question": "Q?", "category": "Literature Review", "Subject": "S"}]
    rub = [{"id": 3, "rubric": [{"point": "Explains x"}, {"point": "Discusses y", "weight": 3}]}]
    tasks, items = import_authors_layout(qs, rub)
    assert [t.task_id for t in tasks] == ["q3"]
    assert [(r.item_id, r.weight) for r in items] == [("1", 1.0), ("2", 3.0)]


def test_demo_release_builds(repo_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(repo_root)
    rel = build_release({"kind": "demo", "name": "demo"})
    assert rel.meta.synthetic and 2 <= len(rel.tasks) <= 4
    info = write_release(rel, tmp_path / "demo")
    assert json.loads((tmp_path / "demo" / "release.json").read_text())["tables"]["rubric_items"]["rows"] > 0
    assert info


def test_github_kind_downloads_the_pinned_files(rb_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from reportbench.protocols.researcherbench import release as rel_mod

    seen: list[str] = []

    def fake_get(url: str, **kw: object) -> httpx.Response:
        seen.append(url)
        name = url.rsplit("/", 1)[-1]
        return httpx.Response(200, content=(rb_data / name).read_bytes(), request=httpx.Request("GET", url))

    monkeypatch.setattr(httpx, "get", fake_get)
    rel = build_release({"kind": "github", "cache_dir": str(tmp_path / "cache"), "max_tasks": 3})
    assert [t.task_id for t in rel.tasks] == ["q1", "q2", "q3"]
    assert all(rel_mod.REPO_COMMIT in u and u.startswith("https://raw.githubusercontent.com/") for u in seen)
    assert len(seen) == 2
    build_release({"kind": "github", "cache_dir": str(tmp_path / "cache")})  # cached: no second download
    assert len(seen) == 2
