"""DeepScholar-bench import: exact checks against the authors' public data (spec §7), plus offline unit tests.

Integration tests use ../shared/data/deepscholar-bench and skip cleanly when it is absent. The mini-layout
tests build a tiny self-authored dataset in tmp_path, so they always run.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from reportbench.metrics.nuggetizer import nugget_scores
from reportbench.release.deepscholar_import import (
    DeepScholarImportError,
    arxiv_id_from_link,
    import_deepscholar,
    load_nugget_files,
    render_task_prompt,
)
from reportbench.release.format import Release, read_release, write_release

# ------------------------------------------------------------------------------------- nuggetizer scoring


@pytest.mark.core
def test_nugget_scores_definitions() -> None:
    s = nugget_scores(
        ["support", "partial_support", "not_support", "support", "failed"],
        ["vital", "vital", "vital", "okay", "okay"],
    )
    assert s["strict_all_score"] == pytest.approx(2 / 5)
    assert s["strict_vital_score"] == pytest.approx(1 / 3)
    assert s["all_score"] == pytest.approx(2.5 / 5)
    assert s["vital_score"] == pytest.approx(1.5 / 3)


@pytest.mark.core
def test_nugget_scores_empty_denominators_are_zero() -> None:
    assert nugget_scores([], []) == dict.fromkeys(
        ("strict_vital_score", "strict_all_score", "vital_score", "all_score"), 0.0
    )
    s = nugget_scores(["support"], ["okay"])  # no vital nugget
    assert s["strict_vital_score"] == 0.0 and s["strict_all_score"] == 1.0


@pytest.mark.core
def test_nugget_scores_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="must be equal"):
        nugget_scores(["support"], [])
    with pytest.raises(ValueError, match="unknown importance"):
        nugget_scores(["support"], ["crucial"])


@pytest.mark.core
@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ("http://arxiv.org/abs/2004.13332v1", "2004.13332"),
        ("http://arxiv.org/abs/cs/0302025v2", "cs/0302025"),
        ("http://arxiv.org/abs/cmp-lg/9407020v2", "cmp-lg/9407020"),
        ("https://arxiv.org/pdf/2408.14476v2.pdf", "2408.14476"),
        ("", None),
        (None, None),
    ],
)
def test_arxiv_id_from_link(link: str | None, expected: str | None) -> None:
    assert arxiv_id_from_link(link) == expected


# ------------------------------------------------------------------------- real data (shared/, optional)


@pytest.fixture(scope="module")
def release(deepscholar_data: Path) -> Release:
    return import_deepscholar(deepscholar_data)


@pytest.mark.integration
def test_63_tasks_in_file_id_order(release: Release) -> None:
    assert len(release.tasks) == 63
    assert release.tasks[0].task_id == "2506.02838v1"
    assert release.tasks[0].title.startswith("TaxAgent")
    assert release.tasks[1].task_id == "2506.02634v1"
    assert release.task_index("2506.02634v1") == 1
    assert release.tasks[0].published_date == "2025-06-03T13:06:19+00:00"
    assert release.tasks[0].categories[:3] == ["cs.AI", "econ.GN", "q-fin.EC"]


@pytest.mark.integration
def test_task_prompt_matches_helper_data(release: Release, deepscholar_data: Path) -> None:
    base = deepscholar_data / "tests" / "baselines_results" / "deepscholar_base_gpt_4.1"
    for file_id in (0, 1):
        helper = json.loads((base / str(file_id) / "helper_data.json").read_text())
        task = release.tasks[file_id]
        assert task.task_prompt == helper["query"]
        assert helper["end_date"] == task.published_date
        assert task.task_prompt == render_task_prompt(task.published_date, task.abstract)


@pytest.mark.integration
def test_nuggets_found_by_qid_for_all_tasks(release: Release, deepscholar_data: Path) -> None:
    assert all(release.nuggets(t.task_id) for t in release.tasks)  # 63/63
    # The authors' eval opens <dir>/<file_id>/res.json: only 43 of the 63 are where it looks.
    nug_dir = deepscholar_data / "dataset" / "gt_nuggets_outputs"
    by_folder = 0
    for i, t in enumerate(release.tasks):
        f = nug_dir / str(i) / "res.json"
        if f.is_file() and json.loads(f.read_text())["qid"] == t.task_id:
            by_folder += 1
    assert by_folder == 43


@pytest.mark.integration
def test_nugget_loader_ignores_folder_names(release: Release, deepscholar_data: Path, tmp_path: Path) -> None:
    """Re-arrange the res.json files under meaningless folder names (symlinks): the import must not change."""
    src = deepscholar_data / "dataset"
    dst = tmp_path / "dataset"
    (dst / "gt_nuggets_outputs").mkdir(parents=True)
    for name in ("papers_with_related_works.csv", "citations.csv"):
        os.symlink(src / name, dst / name)
    files = sorted((src / "gt_nuggets_outputs").rglob("res.json"))
    for i, f in enumerate(reversed(files)):
        d = dst / "gt_nuggets_outputs" / f"x{i:02d}" / ("deep" if i % 3 else "") / "y"
        d.mkdir(parents=True)
        os.symlink(f, d / "res.json")
    moved = import_deepscholar(tmp_path)
    assert moved.nugget_rows == release.nugget_rows


@pytest.mark.integration
def test_nugget_metrics_match_stored(release: Release, deepscholar_data: Path) -> None:
    files = load_nugget_files(deepscholar_data / "dataset" / "gt_nuggets_outputs")
    assert len(files) == 63
    matched = 0
    for task in release.tasks:
        _, data = files[task.task_id]
        nuggets = release.nuggets(task.task_id)
        scores = nugget_scores([n.self_assignment for n in nuggets], [n.importance for n in nuggets])
        if all(scores[k] == pytest.approx(v, abs=1e-12) for k, v in data["nuggets_metrics"].items()):
            matched += 1
        support = [
            {"text": n.text, "importance": n.importance, "assignment": n.self_assignment} for n in nuggets
        ]
        assert [s for s in support if s["assignment"] == "support"] == data["supported_nuggets"]
        assert [s for s in support if s["assignment"] in ("support", "partial_support")] == data[
            "partially_supported_nuggets"
        ]
        # stored order is vital first
        imps = [n.importance for n in nuggets]
        assert imps == sorted(imps, key=lambda x: x != "vital")
    assert matched == 63


@pytest.mark.integration
def test_nugget_totals(release: Release) -> None:
    assert len(release.nugget_rows) == 1043
    assert Counter(n.importance for n in release.nugget_rows)["vital"] == 507
    assert Counter(n.self_assignment for n in release.nugget_rows) == {
        "support": 867,
        "partial_support": 64,
        "not_support": 112,
    }
    supported = [sum(n.self_assignment == "support" for n in release.nuggets(t)) for t in release.task_ids]
    assert round(sum(supported) / 63, 2) == 13.76


@pytest.mark.integration
def test_exemplar_statistics(release: Release) -> None:
    chars = sum(len(t.exemplar) for t in release.tasks) / 63
    words = sum(len(t.exemplar.split()) for t in release.tasks) / 63
    assert round(chars, 2) == 4381.75
    assert round(words, 2) == 497.92
    assert all(t.exemplar_raw for t in release.tasks)


@pytest.mark.integration
def test_exemplar_refs(release: Release, deepscholar_data: Path) -> None:
    cites = pl.read_csv(deepscholar_data / "dataset" / "citations.csv", infer_schema=False)
    assert cites.height == 1630
    assert len(release.exemplar_ref_rows) == 1630
    assert sum(r.arxiv_id is not None for r in release.exemplar_ref_rows) == 958
    # first-appearance order = citations.csv row order within each paper
    keys = cites.filter(pl.col("parent_paper_arxiv_id") == "2506.02838v1")["citation_shorthand"].to_list()
    refs = release.exemplar_refs("2506.02838v1")
    assert [r.ref_key for r in refs] == keys
    assert [r.position for r in refs] == list(range(len(keys)))
    assert refs[0].ref_key == "NBERw21340" and refs[0].year == 2015 and refs[0].doi == "10.3386/w21340"
    per_task = [len(release.exemplar_refs(t)) for t in release.task_ids]
    assert min(per_task) == 8 and max(per_task) == 53
    assert all(r.arxiv_id is None or "v" not in r.arxiv_id.split("/")[-1] for r in release.exemplar_ref_rows)
    assert all(r.is_important is None for r in release.exemplar_ref_rows)  # not in the public snapshot
    assert not release.has_important_refs


@pytest.mark.integration
def test_corpus_is_union_of_exemplar_refs(release: Release) -> None:
    arxiv_refs = {r.arxiv_id for r in release.exemplar_ref_rows if r.arxiv_id}
    assert {d.arxiv_id for d in release.corpus if d.arxiv_id} == arxiv_refs
    assert len({d.doc_id for d in release.corpus}) == len(release.corpus)
    assert all(d.abstract for d in release.corpus if d.arxiv_id)
    assert release.citation_counts == []


@pytest.mark.integration
def test_max_tasks(deepscholar_data: Path) -> None:
    small = import_deepscholar(deepscholar_data, max_tasks=2, name="ds-2")
    assert small.task_ids == ["2506.02838v1", "2506.02634v1"]
    assert {r.task_id for r in small.exemplar_ref_rows} == set(small.task_ids)
    assert {n.task_id for n in small.nugget_rows} == set(small.task_ids)
    assert len(small.corpus) <= len(small.exemplar_ref_rows)


@pytest.mark.integration
def test_full_import_writes_deterministically(release: Release, tmp_path: Path) -> None:
    m1 = write_release(release, tmp_path / "a")
    m2 = write_release(release, tmp_path / "b")
    assert m1 == m2
    for f in sorted((tmp_path / "a").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
    assert m1["synthetic"] is False and m1["has_important_refs"] is False
    assert m1["source"] == "https://github.com/guestrin-lab/deepscholar-bench"  # not the local path
    back = read_release(tmp_path / "a")
    assert back.tasks == release.tasks


# ------------------------------------------------------------------- mini layout (self-authored, offline)


def _mini_dataset(root: Path, *, important: list[tuple[str, str]] | None, nested: bool = True) -> Path:
    ds = root / "dataset"
    (ds / "gt_nuggets_outputs").mkdir(parents=True)
    papers = pl.DataFrame(
        {
            "arxiv_id": ["2599.00002v1", "2599.00001v1"],
            "title": ["Second\n  Paper", "First Paper"],
            "abstract": ["Abstract two.", "Abstract one."],
            "categories": ["cs.IR, cs.CL", "cs.LG"],
            "published_date": ["2025-05-02T00:00:00+00:00", "2025-05-01T00:00:00+00:00"],
            "raw_latex_related_works": ["A \\cite{a1,a2}.", "B \\cite{b1}."],
            "clean_latex_related_works": ["A \\cite{a1,a2}.", "B \\cite{b1}."],
        }
    )
    papers.write_csv(ds / "papers_with_related_works.csv")
    cites = pl.DataFrame(
        {
            "parent_paper_arxiv_id": ["2599.00002v1", "2599.00002v1", "2599.00001v1"],
            "citation_shorthand": ["a1", "a2", "b1"],
            "cited_paper_title": ["Ref\nA1", "Ref A2", "Ref B1"],
            "cited_paper_arxiv_link": [
                "http://arxiv.org/abs/2401.00001v3",
                None,
                "http://arxiv.org/abs/2401.00001v1",
            ],
            "cited_paper_abstract": ["About A1.", None, None],
            "bib_paper_year": ["2024.0", None, "2024.0"],
        }
    )
    cites.write_csv(ds / "citations.csv")
    if important is not None:
        pl.DataFrame(
            {
                "parent_paper_arxiv_id": [p for p, _ in important],
                "citation_shorthand": [k for _, k in important],
            }
        ).write_csv(ds / "important_citations.csv")
    for i, qid in enumerate(["2599.00001v1", "2599.00002v1"]):
        d = ds / "gt_nuggets_outputs" / ("0/7" if nested and i == 0 else str(i))
        d.mkdir(parents=True, exist_ok=True)
        nuggets = [
            {"text": f"vital fact {qid}", "importance": "vital", "assignment": "support"},
            {"text": f"okay fact {qid}", "importance": "okay", "assignment": "partial_support"},
        ]
        (d / "res.json").write_text(json.dumps({"qid": qid, "query": "q", "nuggets": nuggets}))
    return root


@pytest.mark.core
def test_mini_import_with_important_labels(tmp_path: Path) -> None:
    root = _mini_dataset(tmp_path, important=[("2599.00002v1", "a2")])
    rel = import_deepscholar(root)
    assert rel.task_ids == ["2599.00002v1", "2599.00001v1"]  # file order, not id order
    assert rel.tasks[0].title == "Second Paper"  # arXiv line wrap collapsed
    assert rel.tasks[0].categories == ["cs.IR", "cs.CL"]
    assert rel.has_important_refs
    assert [(r.ref_key, r.is_important) for r in rel.exemplar_refs("2599.00002v1")] == [
        ("a1", False),
        ("a2", True),
    ]
    assert [i.ref_key for i in rel.important_refs("2599.00002v1")] == ["a2"]
    assert len(rel.nuggets("2599.00001v1")) == 2  # found in nested folder 0/7
    # the same arXiv paper cited by two tasks is one corpus doc, keeping the abstract it has somewhere
    doc = rel.corpus_by_arxiv("2401.00001")
    assert doc is not None and doc.abstract == "About A1." and doc.doc_id == "arxiv:2401.00001"
    assert len(rel.corpus) == 2
    manifest = write_release(rel, tmp_path / "out")
    assert manifest["has_important_refs"] is True and manifest["counts"]["important_refs"] == 1
    assert "dataset/important_citations.csv" in manifest["provenance"]


@pytest.mark.core
def test_mini_import_errors_name_file_and_field(tmp_path: Path) -> None:
    root = _mini_dataset(tmp_path / "a", important=[("2599.00002v1", "zz")])
    with pytest.raises(
        DeepScholarImportError, match=r"important_citations.csv: field 'citation_shorthand' 'zz'"
    ):
        import_deepscholar(root)

    root = _mini_dataset(tmp_path / "b", important=None)
    (root / "dataset" / "gt_nuggets_outputs" / "1" / "res.json").unlink()
    with pytest.raises(
        DeepScholarImportError, match=r"gt_nuggets_outputs: no res.json with field 'qid' == '2599.00002v1'"
    ):
        import_deepscholar(root)
    assert len(import_deepscholar(root, require_nuggets=False).nuggets("2599.00002v1")) == 0

    root = _mini_dataset(tmp_path / "c", important=None)
    bad = root / "dataset" / "gt_nuggets_outputs" / "1" / "res.json"
    data = json.loads(bad.read_text())
    data["nuggets"][1]["importance"] = "crucial"
    bad.write_text(json.dumps(data))
    with pytest.raises(
        DeepScholarImportError, match=r"1/res.json: nuggets\[1\] field 'importance' is 'crucial'"
    ):
        import_deepscholar(root)

    with pytest.raises(DeepScholarImportError, match="papers_with_related_works.csv: not found"):
        import_deepscholar(tmp_path / "nowhere")
