"""Release format v2: optional task fields (required for DeepScholar only), schema versions, rubric items and the
open table registry (a benchmark adds tables without editing the format module)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.release.format import (
    Release,
    ReleaseError,
    ReleaseMeta,
    TableSpec,
    read_release,
    register_table,
    write_release,
)
from reportbench.types import Record, RubricItem, Task

pytestmark = pytest.mark.core


def _release(benchmark: str = "researcherbench", **extra: list) -> Release:
    meta = ReleaseMeta(name="r", created_at="2026-01-01", source="test", licence="CC0", synthetic=True,
                       benchmark=benchmark)  # fmt: skip
    tasks = [Task(task_id="1", title="Q one", task_prompt="Answer Q one."),
             Task(task_id="2", title="Q two", task_prompt="Answer Q two.")]  # fmt: skip
    return Release(meta=meta, tasks=tasks, extra=dict(extra))


def test_tasks_without_deepscholar_fields_are_valid_for_other_benchmarks(tmp_path: Path) -> None:
    manifest = write_release(_release(), tmp_path / "r")
    assert manifest["schema_version"] == 2
    assert read_release(tmp_path / "r").tasks[0].abstract is None


def test_deepscholar_releases_still_require_abstract_date_and_exemplar(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError) as err:
        write_release(_release("deepscholar"), tmp_path / "r")
    text = str(err.value)
    assert "tasks.parquet: row 0 field 'abstract' is empty (required for deepscholar releases)" in text
    assert "'exemplar'" in text and "'published_date'" in text


def test_rubric_items_round_trip_in_order_with_shared_items(tmp_path: Path) -> None:
    items = [
        RubricItem(task_id="1", item_id="q10", index=1, text="ten", weight=3),
        RubricItem(task_id="1", item_id="q2", index=0, text="two", weight=1),
        RubricItem(task_id="*", item_id="p1", index=0, text="presentation", kind="presentation"),
    ]
    write_release(_release(rubric_items=items), tmp_path / "r")
    back = read_release(tmp_path / "r")
    assert [i.item_id for i in back.rubric("1")] == ["q2", "q10", "p1"]
    assert [i.item_id for i in back.rubric("2")] == ["p1"]
    assert json.loads((tmp_path / "r" / "release.json").read_text())["tables"]["rubric_items"]["rows"] == 3
    assert "`rubric_items.parquet` | 3" in (tmp_path / "r" / "CARD.md").read_text()


def test_rubric_item_for_an_unknown_task_is_named(tmp_path: Path) -> None:
    bad = [RubricItem(task_id="9", item_id="q1", index=0, text="x")]
    with pytest.raises(ReleaseError, match=r"rubric_items.parquet: row 0 field 'task_id' '9' is not a task"):
        write_release(_release(rubric_items=bad), tmp_path / "r")


class Guidance(Record):
    task_id: str
    text: str


def test_a_registered_table_needs_no_edit_of_the_format_module(tmp_path: Path) -> None:
    register_table(TableSpec("test_guidance", Guidance, ("task_id",)), order=lambda r: r.task_id)
    write_release(_release(test_guidance=[Guidance(task_id="2", text="b"), Guidance(task_id="1", text="a")]),
                  tmp_path / "r")  # fmt: skip
    assert [g.task_id for g in read_release(tmp_path / "r").table("test_guidance")] == ["1", "2"]


def test_an_unregistered_table_is_refused_by_name(tmp_path: Path) -> None:
    write_release(_release(), tmp_path / "r")
    manifest = json.loads((tmp_path / "r" / "release.json").read_text())
    manifest["tables"]["mystery"] = {"file": "mystery.parquet", "rows": 0, "sha256": "0"}
    (tmp_path / "r" / "release.json").write_text(json.dumps(manifest))
    with pytest.raises(ReleaseError, match="table 'mystery' is not registered"):
        read_release(tmp_path / "r")


@pytest.mark.parametrize("version, ok", [(1, True), (2, True), (3, False)])
def test_schema_versions(tmp_path: Path, version: int, ok: bool) -> None:
    write_release(_release(), tmp_path / "r")
    manifest = json.loads((tmp_path / "r" / "release.json").read_text())
    manifest["schema_version"] = version
    (tmp_path / "r" / "release.json").write_text(json.dumps(manifest))
    if ok:
        assert read_release(tmp_path / "r").meta.name == "r"
    else:
        with pytest.raises(ReleaseError, match="schema_version' is 3; this reportbench reads \\[1, 2\\]"):
            read_release(tmp_path / "r")
