"""ResearchQA importer: the split arithmetic of spec §1.6, de-duplication of `full`, dates, categories read
from the data, JSON/JSONL/parquet, rubric items (type lists and citation metadata kept), the task prompt.
Self-authored fixtures with the released field shapes (the public dataset is never copied here)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import polars as pl
import pytest

from reportbench.protocols.researchqa.release import (
    ResearchQAImportError,
    assign_splits,
    build_release,
    normalise_date,
    split_sizes,
    task_prompt,
)
from reportbench.release.format import read_release, write_release

pytestmark = pytest.mark.core

# Field sizes (spec §1.6, paper Table 8): the seven small fields and the five largest are the paper's; the
# other 63 fields share the remainder (each >= 60) so that the 75 fields total 21,414 queries.
SMALL = {
    "Neuroscience": 52,
    "Computing Systems": 53,
    "Crystallography": 58,
    "Gastroenterology": 54,
    "Vascular Medicine": 50,
    "Language & Linguistics": 51,
    "Economics": 55,
}
LARGE = {"Materials Engineering": 1944, "Nutrition": 1410, "Polymers": 1094, "Agronomy": 780, "Analytical Chem": 749}


def real_field_sizes() -> dict[str, int]:
    rest = 21414 - sum(SMALL.values()) - sum(LARGE.values())
    n_rest = 75 - len(SMALL) - len(LARGE)
    base, extra = divmod(rest, n_rest)
    sizes = {**SMALL, **LARGE}
    for i in range(n_rest):
        sizes[f"Field {i:02d}"] = base + (1 if i < extra else 0)
    assert min(sizes[f"Field {i:02d}"] for i in range(n_rest)) >= 60
    return sizes


def test_split_arithmetic_matches_the_paper() -> None:
    sizes = real_field_sizes()
    assert len(sizes) == 75 and sum(sizes.values()) == 21414
    s = split_sizes({**sizes, "Too Small Field": 49})  # fields under 50 queries are dropped
    assert s == {"fields": 75, "test": 3750, "valid": 703, "train": 16961, "total": 21414}
    assert sum(min(10, n - 50) for n in sizes.values()) == 703


def test_assign_splits_on_a_synthetic_table_with_the_real_field_sizes() -> None:
    sizes = real_field_sizes()
    ids, fields = [], []
    for fi, (f, n) in enumerate(sizes.items()):
        for k in range(n):
            ids.append(f"{1745 + fi:06d}{k:05d}-s{k % 7}")
            fields.append(f)
    splits = assign_splits(ids, fields, seed=0)
    counts = pl.DataFrame({"field": fields, "split": [splits[i] for i in ids]})
    totals = counts.group_by("split").len()
    assert dict(zip(totals["split"], totals["len"], strict=True)) == {"test": 3750, "valid": 703, "train": 16961}
    per_field = counts.filter(pl.col("split") == "test").group_by("field").len()
    assert per_field.height == 75 and set(per_field["len"]) == {50}
    assert "Vascular Medicine" not in set(counts.filter(pl.col("split") == "valid")["field"])
    assert assign_splits(ids, fields, seed=0) == splits


def row(rid: str, domain: str = "D1", date: object = "2021-03-15", n_items: int = 2) -> dict:
    rubric = [
        {
            "rubric_item": f"Does the response mention point {k} of {rid}?",
            "type": ["information"],
            "citation_metadata": None,
        }
        for k in range(n_items)
    ]
    rubric.append(
        {
            "rubric_item": f"Does the response cite Doe et al. (2019) (title: A Made-Up Paper {rid})?",
            "type": ["citation", "comparison"],
            "citation_metadata": {
                "first_author": "Doe",
                "title": f"A Made-Up Paper {rid}",
                "url": "https://e.org/x",
                "year": 2019,
            },
        }
    )
    return {
        "id": rid,
        "general_domain": domain,
        "subdomain": f"{domain} sub",
        "field": f"{domain} field",
        "query": f"What is known about {rid}?",
        "date": date,
        "rubric": rubric,
    }


def write_json(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "rqa"
    write_json(d / "test.json", [row("t1"), row("t2", "D2")])
    write_json(d / "valid.json", [row("v1")])
    write_json(d / "full.json", [row("t1"), row("t2", "D2"), row("v1"), row("x1", "D3"), row("x1", "D3"), row("x2")])
    return d


def cfg(path: Path, split: str = "test", **kw: object) -> dict:
    return {"name": "t", "kind": "path", "path": str(path), "split": split, "created_at": "2026-01-01", **kw}


def test_build_release_keeps_fields_categories_and_rubric(folder: Path, tmp_path: Path) -> None:
    rel = build_release(cfg(folder))
    assert [t.task_id for t in rel.tasks] == ["t1", "t2"]
    t2 = rel.tasks[1]
    assert t2.categories == ["D2", "D2 sub", "D2 field"] and t2.published_date == "2021-03-15"
    items = rel.extra["rubric_items"]
    assert len(items) == 6 and [i.item_id for i in items[:3]] == ["r0", "r1", "r2"]
    cite = items[2]
    assert cite.kind == "citation,comparison"
    meta = json.loads(cite.meta)
    assert meta["type"] == ["citation", "comparison"] and meta["citation_metadata"]["title"] == "A Made-Up Paper t1"
    write_release(rel, tmp_path / "out")
    back = read_release(tmp_path / "out")
    assert len(back.table("rubric_items")) == 6 and back.tasks[0].title == "What is known about t1?"


def test_full_is_deduplicated_and_train_is_full_minus_test_and_valid(folder: Path) -> None:
    assert [t.task_id for t in build_release(cfg(folder, "full")).tasks] == ["t1", "t2", "v1", "x1", "x2"]
    assert [t.task_id for t in build_release(cfg(folder, "train")).tasks] == ["x1", "x2"]
    assert [t.task_id for t in build_release(cfg(folder, "valid")).tasks] == ["v1"]
    with pytest.raises(ResearchQAImportError, match="split"):
        build_release(cfg(folder, "dev"))


def test_parquet_and_jsonl_inputs(tmp_path: Path) -> None:
    rows = [row("p1", date=dt.datetime(2020, 10, 2, 0, 0)), row("p2", date=dt.datetime(2019, 1, 20, 12, 30))]
    pl.DataFrame(rows).write_parquet(tmp_path / "test_mini.parquet")  # nested list[struct], timestamp dates
    rel = build_release(cfg(tmp_path, "test_mini"))
    assert [t.published_date for t in rel.tasks] == ["2020-10-02", "2019-01-20"]
    assert json.loads(rel.extra["rubric_items"][2].meta)["citation_metadata"]["year"] == 2019
    jl = tmp_path / "one.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in [row("j1")]) + "\n")
    assert [t.task_id for t in build_release(cfg(jl)).tasks] == ["j1"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2020-10-02", "2020-10-02"),
        ("2020-10-02T00:00:00", "2020-10-02"),
        ("2020-10-02 00:00:00", "2020-10-02"),
        (dt.date(2020, 10, 2), "2020-10-02"),
        (1601596800000000000, "2020-10-02"),  # epoch ns (parquet timestamp[ns] read as int)
        (1601596800000, "2020-10-02"),  # epoch ms
        ("2020/10/02", "2020-10-02"),
        (None, None),
    ],
)
def test_dates_are_normalised(value: object, expected: str | None) -> None:
    assert normalise_date(value) == expected


def test_bad_inputs_fail_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(ResearchQAImportError, match="not found"):
        build_release(cfg(tmp_path / "nowhere"))
    bad = row("b1")
    del bad["field"]
    with pytest.raises(ResearchQAImportError, match="field"):
        build_release(cfg(write_json(tmp_path / "bad" / "test.json", [bad])))
    too_many = row("b2", n_items=8)  # 9 items
    with pytest.raises(ResearchQAImportError, match="at most 8"):
        build_release(cfg(write_json(tmp_path / "big" / "test.json", [too_many])))
    with pytest.raises(ResearchQAImportError, match="date"):
        normalise_date("sometime in spring")


def test_task_prompt_is_our_reconstruction() -> None:
    p = task_prompt("What is X?", "2020-10-02")
    assert p.startswith("What is X? (Date: 2020-10-02)")
    assert "at most 250 words" in p and "References" in p and "title" in p
    assert "words" not in task_prompt("What is X?", "2020-10-02", None).split("\n\n")[1].split(",")[0]
    assert "at most" not in task_prompt("What is X?", None, None) and "(Date:" not in task_prompt("Q?", None)


def test_word_limit_switch_reaches_the_release(folder: Path) -> None:
    assert "250 words" in build_release(cfg(folder)).tasks[0].task_prompt
    assert "at most" not in build_release(cfg(folder, word_limit=None)).tasks[0].task_prompt


def test_shared_data_if_present(shared_dir: Path) -> None:
    d = shared_dir / "data" / "researchqa"
    if not d.is_dir():
        pytest.skip("../shared/data/researchqa is not present (the public dataset is read from a local path)")
    rel = build_release(cfg(d, "test"))
    assert len(rel.tasks) == 3750
    domains = {t.categories[0] for t in rel.tasks}
    assert len(domains) == 7 and len({t.categories[2] for t in rel.tasks}) == 75


def test_hub_kind_downloads_a_pinned_revision_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import requests

    calls: list[str] = []

    class Resp:
        content = json.dumps([row("h1")]).encode()

        def raise_for_status(self) -> None:
            return None

    def fake_get(url: str, timeout: float) -> Resp:
        calls.append(url)
        return Resp()

    monkeypatch.setattr(requests, "get", fake_get)
    c = {"name": "h", "kind": "hub", "revision": "abc123", "cache_dir": str(tmp_path / "cache"), "split": "test"}
    assert [t.task_id for t in build_release(c).tasks] == ["h1"]
    assert [t.task_id for t in build_release(c).tasks] == ["h1"]  # second time from the cache
    assert calls == ["https://huggingface.co/datasets/realliyifei/ResearchQA/resolve/abc123/test.json"]
    with pytest.raises(ResearchQAImportError, match="test_mini"):
        build_release({**c, "split": "test_mini"})
