"""Release format: round trip, byte-level determinism, and validation errors that name file + field.

The release built here is a tiny hand-written one (no shared data), so these tests always run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import polars as pl
import pytest

from reportbench.release.format import (
    CARD_FILE,
    MANIFEST_FILE,
    TABLES,
    CitationCount,
    CorpusDoc,
    Release,
    ReleaseError,
    ReleaseMeta,
    corpus_doc_id,
    read_release,
    validate_release,
    write_release,
)
from reportbench.types import ExemplarRef, Nugget, Task

pytestmark = pytest.mark.core


def _task(tid: str, date: str) -> Task:
    return Task(
        task_id=tid,
        title=f"Title of {tid}",
        abstract=f"Abstract of {tid}. It has two sentences.",
        published_date=date,
        categories=["cs.IR", "cs.CL"],
        task_prompt=f"Write related work for {tid}.",
        exemplar=f"\\subsection{{A}} Text \\cite{{k1}} and \\cite{{k2}} for {tid}.",
        exemplar_raw=None,
    )


def make_release(labelled: bool = True) -> Release:
    tasks = [_task("t-b", "2025-02-01T00:00:00+00:00"), _task("t-a", "2025-01-01")]
    refs = [
        ExemplarRef(task_id=tid, ref_key=k, position=i, title=f"{k} paper", arxiv_id=aid, year=2024)
        for tid in ("t-b", "t-a")
        for i, (k, aid) in enumerate([("k1", "2413.00001"), ("k2", None)])
    ]
    if labelled:
        refs = [r.model_copy(update={"is_important": r.ref_key == "k1"}) for r in refs]
    nuggets = [
        Nugget(task_id=tid, index=i, text=f"fact {i} of {tid}", importance=imp, self_assignment="support")
        for tid in ("t-b", "t-a")
        for i, imp in enumerate(["vital", "okay", "okay"])
    ]
    corpus = [
        CorpusDoc(
            doc_id=corpus_doc_id("2413.00001", "k1 paper"),
            arxiv_id="2413.00001",
            title="k1 paper",
            abstract="About k1.",
            published_date="2024-03-01",
            categories=["cs.IR"],
        ),
        CorpusDoc(doc_id=corpus_doc_id(None, "k2 paper"), title="k2 paper"),
    ]
    counts = [
        CitationCount(
            arxiv_id="2413.00001",
            title="k1 paper",
            cited_by_count=12,
            fetched_at="2025-11-01",
            source="synthetic",
        )
    ]
    meta = ReleaseMeta(
        name="unit",
        created_at="2025-11-01",
        source="tests",
        licence="Apache-2.0",
        synthetic=True,
        description="unit",
    )
    return Release(meta, tasks, refs, nuggets, corpus, counts)


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


# ------------------------------------------------------------------------------------------------ round trip


def test_round_trip(tmp_path: Path) -> None:
    rel = make_release()
    write_release(rel, tmp_path / "r")
    back = read_release(tmp_path / "r")
    assert back.meta == rel.meta
    assert back.tasks == rel.tasks  # canonical task order kept (t-b before t-a)
    assert back.task_ids == ["t-b", "t-a"]
    assert sorted(back.exemplar_ref_rows, key=lambda r: (r.task_id, r.position)) == sorted(
        rel.exemplar_ref_rows, key=lambda r: (r.task_id, r.position)
    )
    assert back.nuggets("t-a") == rel.nuggets("t-a")
    assert sorted(back.corpus, key=lambda d: d.doc_id) == sorted(rel.corpus, key=lambda d: d.doc_id)
    assert back.citation_counts == rel.citation_counts
    assert back.task("t-a").categories == ["cs.IR", "cs.CL"]


def test_accessors() -> None:
    rel = make_release()
    assert rel.task_index("t-a") == 1
    assert [r.ref_key for r in rel.exemplar_refs("t-b")] == ["k1", "k2"]
    assert [n.index for n in rel.nuggets("t-b")] == [0, 1, 2]
    assert [(i.ref_key, i.arxiv_id) for i in rel.important_refs("t-a")] == [("k1", "2413.00001")]
    assert rel.has_important_refs
    assert rel.corpus_by_arxiv("2413.00001v3") is not None
    c = rel.citation_count("2413.00001")
    assert c is not None and c.cited_by_count == 12
    assert rel.corpus_doc("arxiv:2413.00001").title == "k1 paper"
    with pytest.raises(KeyError, match="no task 'nope'"):
        rel.task("nope")
    with pytest.raises(KeyError, match="no task"):
        rel.nuggets("nope")


def test_manifest_and_card(tmp_path: Path) -> None:
    manifest = write_release(make_release(), tmp_path)
    on_disk = json.loads((tmp_path / MANIFEST_FILE).read_text())
    assert on_disk == manifest
    for key in ("name", "schema_version", "benchmark", "created_at", "source", "licence", "synthetic"):
        assert key in on_disk
    assert on_disk["created_at"] == "2025-11-01"  # from meta, never the wall clock
    assert on_disk["has_important_refs"] is True and on_disk["has_citation_counts"] is True
    assert on_disk["counts"] == {
        "tasks": 2,
        "exemplar_refs": 4,
        "nuggets": 6,
        "important_refs": 2,
        "corpus": 2,
        "citation_counts": 1,
    }
    for spec in TABLES:
        info = on_disk["tables"][spec.name]
        assert info["sha256"] == hashlib.sha256((tmp_path / spec.file).read_bytes()).hexdigest()
    card = (tmp_path / CARD_FILE).read_text()
    assert "SYNTHETIC" in card and "`tasks.parquet` | 2" in card


def test_schemas_follow_records() -> None:
    by = {t.name: t for t in TABLES}
    assert list(by["tasks"].schema) == list(Task.model_fields)
    assert by["tasks"].schema["categories"] == pl.List(pl.String)
    assert by["exemplar_refs"].schema["position"] == pl.Int64
    assert by["exemplar_refs"].schema["is_important"] == pl.Boolean
    assert list(by["nuggets"].schema) == ["task_id", "index", "text", "importance", "self_assignment"]
    assert list(by["important_refs"].schema) == ["task_id", "ref_key", "arxiv_id", "title"]
    assert by["citation_counts"].schema["cited_by_count"] == pl.Int64


def test_unlabelled_release_has_empty_important_table(tmp_path: Path) -> None:
    manifest = write_release(make_release(labelled=False), tmp_path)
    assert manifest["has_important_refs"] is False
    assert pl.read_parquet(tmp_path / "important_refs.parquet").height == 0
    back = read_release(tmp_path)
    assert back.important_refs("t-a") == [] and not back.has_important_refs


# --------------------------------------------------------------------------------------------- determinism


def test_writing_twice_is_byte_identical(tmp_path: Path) -> None:
    m1 = write_release(make_release(), tmp_path / "a")
    m2 = write_release(make_release(), tmp_path / "b")
    assert m1 == m2
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_row_order_of_input_does_not_matter(tmp_path: Path) -> None:
    rel = make_release()
    shuffled = dataclasses.replace(
        rel,
        exemplar_ref_rows=list(reversed(rel.exemplar_ref_rows)),
        nugget_rows=list(reversed(rel.nugget_rows)),
        corpus=list(reversed(rel.corpus)),
    )
    write_release(rel, tmp_path / "a")
    write_release(shuffled, tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_rewriting_a_read_release_is_byte_identical(tmp_path: Path) -> None:
    write_release(make_release(), tmp_path / "a")
    write_release(read_release(tmp_path / "a"), tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


# ------------------------------------------------------------------------------------ validation (write side)


def test_empty_field_names_file_row_and_field(tmp_path: Path) -> None:
    rel = make_release()
    rel.tasks[1] = rel.tasks[1].model_copy(update={"abstract": "  "})
    out = tmp_path / "x"
    with pytest.raises(ReleaseError) as ei:
        write_release(rel, out)
    assert f"{out}/tasks.parquet: row 1 field 'abstract' is empty" in str(ei.value)
    assert not out.exists()  # nothing written when validation fails


def test_cross_table_errors_name_file_and_field() -> None:
    rel = make_release()
    rel.nugget_rows.append(Nugget(task_id="ghost", index=0, text="x", importance="vital"))
    rel.exemplar_ref_rows.append(ExemplarRef(task_id="t-a", ref_key="k1", position=2, is_important=False))
    rel.corpus.append(CorpusDoc(doc_id="arxiv:2413.00009", arxiv_id="2413.00009v2", title="versioned"))
    with pytest.raises(ReleaseError) as ei:
        validate_release(rel, "rel")
    msg = str(ei.value)
    assert "rel/nuggets.parquet: row 6 field 'task_id' 'ghost' is not a task of this release" in msg
    assert "rel/exemplar_refs.parquet: row" in msg and "field 'ref_key' duplicate key ('t-a', 'k1')" in msg
    assert (
        "rel/corpus.parquet: row 1 field 'arxiv_id' '2413.00009v2' is not a version-stripped arXiv id" in msg
    )


def test_positions_and_labels_must_be_consistent() -> None:
    rel = make_release()
    rel.exemplar_ref_rows[1] = rel.exemplar_ref_rows[1].model_copy(
        update={"position": 5, "is_important": None}
    )
    with pytest.raises(ReleaseError) as ei:
        validate_release(rel, "rel")
    msg = str(ei.value)
    assert "rel/exemplar_refs.parquet: row 1 field 'position' is 5, expected 1" in msg
    assert "rel/exemplar_refs.parquet: row 1 field 'is_important' is null but other rows are labelled" in msg


def test_bad_date_is_named() -> None:
    rel = make_release()
    rel.tasks[0] = rel.tasks[0].model_copy(update={"published_date": "June 3rd"})
    with pytest.raises(
        ReleaseError, match=r"rel/tasks.parquet: row 0 field 'published_date' 'June 3rd' is not an ISO"
    ):
        validate_release(rel, "rel")


# ------------------------------------------------------------------------------------- validation (read side)


def test_tampered_file_fails_hash_check(tmp_path: Path) -> None:
    write_release(make_release(), tmp_path)
    df = pl.read_parquet(tmp_path / "tasks.parquet")
    df.with_columns(pl.lit("changed").alias("title")).write_parquet(tmp_path / "tasks.parquet")
    with pytest.raises(ReleaseError, match=r"tasks.parquet: sha256 differs from release.json"):
        read_release(tmp_path)
    assert read_release(tmp_path, verify_hashes=False).tasks[0].title == "changed"


def test_read_names_file_row_and_field(tmp_path: Path) -> None:
    write_release(make_release(), tmp_path)
    df = pl.read_parquet(tmp_path / "nuggets.parquet")
    df = df.with_columns(
        pl.when(pl.col("index") == 2).then(pl.lit("")).otherwise(pl.col("text")).alias("text")
    )
    df = df.with_columns(
        pl.when(pl.int_range(pl.len()) == 3)
        .then(pl.lit("crucial"))
        .otherwise(pl.col("importance"))
        .alias("importance")
    )
    df.write_parquet(tmp_path / "nuggets.parquet")
    with pytest.raises(ReleaseError) as ei:
        read_release(tmp_path, verify_hashes=False)
    msg = str(ei.value)
    assert f"{tmp_path}/nuggets.parquet: row 3 field 'importance'" in msg
    assert "'vital' or 'okay'" in msg


def test_read_reports_missing_and_unexpected_columns(tmp_path: Path) -> None:
    write_release(make_release(), tmp_path)
    df = pl.read_parquet(tmp_path / "corpus.parquet")
    df.drop("title").with_columns(pl.lit(1).alias("extra")).write_parquet(tmp_path / "corpus.parquet")
    with pytest.raises(ReleaseError) as ei:
        read_release(tmp_path, verify_hashes=False)
    msg = str(ei.value)
    assert f"{tmp_path}/corpus.parquet: field 'title' is missing" in msg
    assert f"{tmp_path}/corpus.parquet: field 'extra' is not part of the schema" in msg


def test_read_checks_empty_text_after_load(tmp_path: Path) -> None:
    write_release(make_release(), tmp_path)
    df = pl.read_parquet(tmp_path / "tasks.parquet")
    df.with_columns(pl.lit("").alias("exemplar")).write_parquet(tmp_path / "tasks.parquet")
    with pytest.raises(ReleaseError, match=r"tasks.parquet: row 0 field 'exemplar' is empty"):
        read_release(tmp_path, verify_hashes=False)


def test_missing_manifest_and_optional_tables(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match=r"release.json: not found"):
        read_release(tmp_path)
    write_release(make_release(), tmp_path)
    (tmp_path / "citation_counts.parquet").unlink()
    assert read_release(tmp_path).citation_counts == []  # optional table
    (tmp_path / "nuggets.parquet").unlink()
    with pytest.raises(ReleaseError, match=r"nuggets.parquet: not found"):
        read_release(tmp_path)


def test_important_table_must_match_labels(tmp_path: Path) -> None:
    write_release(make_release(), tmp_path)
    df = pl.read_parquet(tmp_path / "important_refs.parquet")
    df.with_columns(pl.lit("k2").alias("ref_key")).write_parquet(tmp_path / "important_refs.parquet")
    with pytest.raises(
        ReleaseError, match=r"important_refs.parquet: row 0 field 'ref_key' 'k2' is not an exemplar"
    ):
        read_release(tmp_path, verify_hashes=False)
