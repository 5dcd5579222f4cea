"""LiveResearchBench release: the shared public CSV (80 tasks, 543 items), numeric order, frozen-date filling."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from reportbench.protocols.liveresearchbench import release as rel
from reportbench.release.format import read_release, write_release

pytestmark = pytest.mark.core

DATE = dt.date(2025, 11, 12)


@pytest.fixture(scope="module")
def lrb_csv(shared_dir: Path) -> Path:
    path = shared_dir / "data" / "liveresearchbench" / "coverage_checklist_public80.csv"
    if not path.is_file():
        pytest.skip("LiveResearchBench checklist CSV not in ../shared")
    return path


def test_date_format_and_placeholders() -> None:
    assert rel.format_date(dt.date(2025, 9, 6)) == "September 06, 2025"
    text = "In {{current_year}} vs {{last_year}}, up to {{date}} ({{current_date}})."
    assert rel.fill_placeholders(text, DATE) == "In 2025 vs 2024, up to November 12, 2025 (November 12, 2025)."
    assert rel.fill_placeholders("no placeholder {x}", DATE) == "no placeholder {x}"
    with pytest.raises(rel.ReleaseConfigError, match="unknown placeholder"):
        rel.fill_placeholders("{{tomorrow}}", DATE)


def test_item_number_is_numeric() -> None:
    assert sorted(["q10", "q2", "q1"], key=rel.item_number) == ["q1", "q2", "q10"]
    with pytest.raises(rel.ReleaseConfigError):
        rel.item_number("p1")


def test_shared_csv_80_tasks_543_items(lrb_csv: Path, tmp_path: Path) -> None:
    r = rel.build_release({"kind": "csv", "path": str(lrb_csv), "name": "public80", "eval_date": "2025-11-12"})
    assert len(r.tasks) == 80
    cov = [i for i in r.table("rubric_items") if i.kind == "coverage"]
    pres = [i for i in r.table("rubric_items") if i.kind == "presentation"]
    assert len(cov) == 543  # the old CSV's exact duplicate (techspp… q1 == q2) is dropped, as on HF
    assert r.meta.provenance["dropped_duplicate_items"] == "techsppQVl7qtQ5HVWUJKp/q2"
    assert [p.item_id for p in pres] == [f"p{i}" for i in range(1, 11)] and {p.task_id for p in pres} == {"*"}
    assert r.meta.provenance["eval_date"] == "2025-11-12"
    assert r.meta.provenance["eval_date_text"] == "November 12, 2025"
    by_cat: dict[str, int] = {}
    for t in r.tasks:
        by_cat[t.categories[0]] = by_cat.get(t.categories[0], 0) + 1
        ids = [i.item_id for i in rel.coverage_items(r, t.task_id)]
        assert ids == sorted(ids, key=rel.item_number)
    assert len(by_cat) == 10
    # numeric order survives the write/read round trip (q10 after q9, not after q1)
    long = next(t.task_id for t in r.tasks if len(rel.coverage_items(r, t.task_id)) >= 10)
    write_release(r, tmp_path / "rel")
    back = read_release(tmp_path / "rel")
    ids = [i.item_id for i in rel.coverage_items(back, long)]
    assert ids.index("q10") == ids.index("q9") + 1 and ids[:2] == ["q1", "q2"]
    assert back.meta.provenance["eval_date"] == "2025-11-12"
    no_dedupe = rel.build_release(
        {"kind": "csv", "path": str(lrb_csv), "name": "old", "eval_date": "2025-11-12", "dedupe_checklist": False}
    )
    assert sum(1 for i in no_dedupe.table("rubric_items") if i.kind == "coverage") == 544


def test_demo_release_live_and_static(repo_root: Path) -> None:
    path = repo_root / "data" / "demo" / "liveresearchbench"
    live = rel.build_release({"kind": "demo", "path": str(path), "name": "demo", "eval_date": "2026-03-01"})
    static = rel.build_release(
        {"kind": "demo", "path": str(path), "name": "demo", "eval_date": "2026-03-01", "placeholders": "static"}
    )
    t = live.task("demomarketLumenTea01")
    assert "in 2026, how did it grow from 2025" in t.task_prompt
    assert "in 2025, how did it grow from 2024" in static.task("demomarketLumenTea01").task_prompt
    assert [i.item_id for i in rel.coverage_items(live, t.task_id)] == ["q1", "q2", "q3", "q10"]
    q3 = rel.coverage_items(live, "demotopicVarrowClk02")[2]
    assert q3.text.endswith("up to March 01, 2026?") and "{{date}}" in (q3.meta or "")
    assert live.meta.synthetic and live.meta.provenance["placeholders"] == "live"
    assert static.meta.provenance["placeholders"] == "static"
    with pytest.raises(rel.ReleaseConfigError, match="eval_date"):
        rel.build_release({"kind": "demo", "path": str(path), "name": "demo"})


def test_hf_import_at_a_pinned_revision(repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gated dataset path, with the hub replaced by a local parquet in the HF column shape."""
    import huggingface_hub
    import polars as pl

    rows = rel.read_csv_rows(repo_root / "data" / "demo" / "liveresearchbench" / "tasks.csv")
    parquet = tmp_path / "test-00000.parquet"
    pl.DataFrame(rows).write_parquet(parquet)
    seen: dict[str, object] = {}

    class FakeApi:
        def list_repo_files(self, repo: str, repo_type: str, revision: str) -> list[str]:
            seen["revision"] = revision
            return ["question_with_checklist/test-00000.parquet", "question_only/test-00000.parquet", "README.md"]

    def fake_download(repo: str, filename: str, repo_type: str, revision: str) -> str:
        assert filename.startswith("question_with_checklist/")
        return str(parquet)

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    cfg = {"kind": "hf", "name": "hf", "eval_date": "2025-11-12", "revision": "abc123", "placeholders": "static"}
    r = rel.build_release(cfg)
    assert seen["revision"] == "abc123" and len(r.tasks) == 3
    assert "September 16, 2025" in r.task("demotopicVarrowClk02").task_prompt
    assert r.meta.source == "hf:Salesforce/LiveResearchBench@abc123"
    with pytest.raises(rel.ReleaseConfigError, match="pin"):
        rel.build_release({**cfg, "revision": None})
