"""The fetch stage function: offline by default, seeds, cache, determinism, config validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.fetch.cache import PageCache, SeedError, load_seeds
from reportbench.fetch.client import RawResponse
from reportbench.fetch.snapshot import PageSnapshot, page_for, read_snapshots
from reportbench.fetch.stage import DEFAULT_FETCH_CONFIG, run_fetch_stage, validate_fetch_config
from reportbench.types import Report, Source

pytestmark = pytest.mark.integration

FIXTURE_SEEDS = Path(__file__).parent / "fixtures" / "fetch" / "seeds.jsonl"


def _report(system: str, rid: str, urls: list[str], body: str = "") -> Report:
    sources = {str(i + 1): Source(key=str(i + 1), url=u) for i, u in enumerate(urls)}
    return Report(report_id=rid, task_id="t1", system=system, format="markdown", body=body, sources=sources)


REPORTS = {
    "sysB": [_report("sysB", "b1", ["https://example.org/cats#:~:text=fifteen", "https://example.org/gone"],
                     body="see https://example.org/unknown-page.")],
    "sysA": [_report("sysA", "a1", ["https://EXAMPLE.org/cats?utm_source=x", "https://example.org/paper.pdf",
                                    "https://example.org/notes.txt", "https://example.org/slow",
                                    "https://example.org/members", "http://169.254.169.254/latest/meta-data/",
                                    "file:///etc/passwd"])],
}


def cfg(tmp_path: Path, **kw: object) -> dict:
    return {"cache_path": str(tmp_path / "cache" / "pages.sqlite"), **kw}


def test_offline_stage_seeds_missing_and_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "pages.parquet"
    with caplog.at_level("INFO", logger="reportbench.fetch.stage"):
        summary = run_fetch_stage(REPORTS, cfg(tmp_path), out, [FIXTURE_SEEDS])
    # the log line names its output (which benchmark and release) and mode, and only the classes that occurred
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("fetch stage")]
    assert f"fetch stage -> {out} (offline, backend " in line and "'not_fetched': 1" in line
    assert "'too_large'" not in line and "'seed': 6" in line
    snaps = read_snapshots(out)
    assert list(snaps) == sorted(snaps)
    by = {u: s.error_class for u, s in snaps.items()}
    assert by == {
        "file:///etc/passwd": "refused",
        "http://169.254.169.254/latest/meta-data/": "refused",
        "https://example.org/cats": "ok",
        "https://example.org/gone": "http_error",
        "https://example.org/members": "access_denied",
        "https://example.org/notes.txt": "ok",
        "https://example.org/paper.pdf": "ok",
        "https://example.org/slow": "timeout",
        "https://example.org/unknown-page": "not_fetched",
    }
    assert summary["n_urls"] == 9
    assert summary["by_error_class"]["ok"] == 3 and summary["by_error_class"]["not_fetched"] == 1
    assert summary["by_error_class"]["too_large"] == 0  # every class listed
    assert summary["by_origin"] == {"not_fetched": 1, "refused_static": 2, "seed": 6}
    cats = snaps["https://example.org/cats"]
    assert cats.raw_urls == ["https://EXAMPLE.org/cats?utm_source=x", "https://example.org/cats#:~:text=fifteen"]
    assert cats.cited_by == ["sysA/a1", "sysB/b1"]
    assert cats.title == "Cats" and "fifteen hours" in cats.text
    assert cats.fetched_at == "2026-01-15T00:00:00+00:00"
    pdf = snaps["https://example.org/paper.pdf"]
    assert pdf.title == "Seeded Dog Paper" and "Seeded PDF text about dogs" in pdf.text
    assert snaps["https://example.org/notes.txt"].final_url == "https://www.example.org/notes.txt"
    assert snaps["https://example.org/gone"].http_status == 404
    assert snaps["https://example.org/unknown-page"].fetched_at is None


def test_offline_runs_are_byte_identical(tmp_path: Path) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    run_fetch_stage(REPORTS, cfg(tmp_path), a, [FIXTURE_SEEDS])
    # a different system order and a different cache file must not matter either
    reordered = dict(reversed(list(REPORTS.items())))
    run_fetch_stage(reordered, cfg(tmp_path / "other"), b, [FIXTURE_SEEDS])
    assert a.read_bytes() == b.read_bytes()


def test_offline_reads_the_cache_and_keeps_its_fetched_at(tmp_path: Path) -> None:
    c = cfg(tmp_path)
    cache = PageCache(Path(c["cache_path"]))
    cache.put("direct", PageSnapshot(url="https://example.org/unknown-page", http_status=200, title="Cached",
                                     text="cached text", fetched_at="2026-02-01T10:00:00+00:00",
                                     fetcher="direct/v1+x1", raw_urls=["ignored"], cited_by=["ignored"]))
    cache.put("reader:r.jina.ai", PageSnapshot(url="https://example.org/gone", text="reader copy"))
    cache.close()
    out1, out2 = tmp_path / "1.parquet", tmp_path / "2.parquet"
    s = run_fetch_stage(REPORTS, c, out1, [FIXTURE_SEEDS])
    run_fetch_stage(REPORTS, c, out2, [FIXTURE_SEEDS])
    assert out1.read_bytes() == out2.read_bytes()
    snap = read_snapshots(out1)["https://example.org/unknown-page"]
    assert (snap.error_class, snap.text, snap.fetched_at) == ("ok", "cached text", "2026-02-01T10:00:00+00:00")
    assert snap.raw_urls == ["https://example.org/unknown-page"] and snap.cited_by == ["sysB/b1"]
    assert s["by_origin"]["cache"] == 1
    # seeds win over the cache; the reader backend's cache entries are not the direct backend's
    assert read_snapshots(out1)["https://example.org/gone"].error_class == "http_error"


class FakeFetcher:
    """Stands in for the network in `use`/`refresh` mode tests; counts calls."""

    backend_id = "direct"
    fetcher_id = "direct/vfake"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def fetch(self, url: str) -> RawResponse:
        self.calls.append(url)
        if "boom" in url:
            raise RuntimeError("parser exploded")
        if "flaky" in url:
            return RawResponse(url=url, error_class="timeout", error="timeout", fetched_at="2026-03-01T00:00:00+00:00")
        return RawResponse(url=url, final_url=url, status=200, content_type="text/plain",
                           body=f"live text of {url}".encode(), fetched_at="2026-03-01T00:00:00+00:00")


def test_use_mode_fetches_each_url_once_across_runs(tmp_path: Path) -> None:
    reports = {"s": [_report("s", "r", ["https://example.org/live-a", "https://example.org/flaky", "https://x.org/boom"])],
               "t": [_report("t", "r2", ["https://example.org/live-a?utm_medium=m"])]}
    c = cfg(tmp_path, mode="use")
    f = FakeFetcher()
    summary = run_fetch_stage(reports, c, tmp_path / "p.parquet", [], fetcher=f)  # type: ignore[arg-type]
    assert sorted(f.calls) == ["https://example.org/flaky", "https://example.org/live-a", "https://x.org/boom"]
    assert summary["by_error_class"]["ok"] == 1 and summary["by_error_class"]["timeout"] == 1
    assert summary["by_error_class"]["connection"] == 1  # an internal crash is a value, not a stage failure
    f2 = FakeFetcher()
    run_fetch_stage(reports, c, tmp_path / "p2.parquet", [], fetcher=f2)  # type: ignore[arg-type]
    assert sorted(f2.calls) == ["https://example.org/flaky", "https://x.org/boom"]  # transient ones only
    f3 = FakeFetcher()
    run_fetch_stage(reports, {**c, "mode": "refresh"}, tmp_path / "p3.parquet", [], fetcher=f3)  # type: ignore[arg-type]
    assert len(f3.calls) == 3
    off = run_fetch_stage(reports, {**c, "mode": "offline"}, tmp_path / "p4.parquet", [])
    assert off["by_origin"] == {"cache": 3}
    page = read_snapshots(tmp_path / "p4.parquet")["https://example.org/live-a"]
    assert page.text == "live text of https://example.org/live-a" and page.fetched_at == "2026-03-01T00:00:00+00:00"


def test_offline_mode_never_builds_a_network_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import reportbench.fetch.client as client

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("offline mode must not fetch")

    monkeypatch.setattr(client.Fetcher, "fetch", boom)
    s = run_fetch_stage(REPORTS, cfg(tmp_path), tmp_path / "o.parquet", [])
    assert s["by_error_class"]["not_fetched"] == 7


def test_empty_input_writes_an_empty_table_with_the_schema(tmp_path: Path) -> None:
    out = tmp_path / "empty.parquet"
    assert run_fetch_stage({}, cfg(tmp_path), out, [])["n_urls"] == 0
    assert read_snapshots(out) == {}
    import polars as pl

    assert pl.read_parquet(out).columns[:3] == ["url", "raw_urls", "final_url"]


def test_page_for_normalises_the_lookup(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    run_fetch_stage(REPORTS, cfg(tmp_path), out, [FIXTURE_SEEDS])
    snaps = read_snapshots(out)
    hit = page_for("HTTPS://example.org:443/cats?fbclid=zzz#top", snaps)
    assert hit is not None and hit.title == "Cats"
    assert page_for("https://example.org/never-cited", snaps) is None


def test_config_defaults_and_validation() -> None:
    assert validate_fetch_config(None) == DEFAULT_FETCH_CONFIG
    assert DEFAULT_FETCH_CONFIG["mode"] == "offline"
    with pytest.raises(ValueError, match="unknown fetch config keys"):
        validate_fetch_config({"timeout": 3})
    with pytest.raises(ValueError, match="unknown fetch config keys"):
        validate_fetch_config({"allow_hosts": ["127.0.0.1"]})  # the test allowance is not a config key
    with pytest.raises(ValueError):
        validate_fetch_config({"mode": "online"})
    with pytest.raises(ValueError):
        validate_fetch_config({"backend": "curl"})
    with pytest.raises(ValueError):
        validate_fetch_config({"retries": -1})
    with pytest.raises(ValueError):
        validate_fetch_config({"max_bytes": "10MB"})


def test_bad_seed_lines_name_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps({"url": "https://a.org/", "status": 200, "body": "x"}) + "\n" + "{not json\n")
    with pytest.raises(SeedError, match="bad.jsonl:2"):
        load_seeds([p])
    p.write_text(json.dumps({"url": "https://a.org/", "status": 200, "bodyy": "x"}) + "\n")
    with pytest.raises(SeedError, match="unknown seed keys"):
        load_seeds([p])


def test_seed_body_b64_and_unsupported_seed_type(tmp_path: Path) -> None:
    import base64

    p = tmp_path / "s.jsonl"
    rows = [
        {"url": "https://a.org/img", "status": 200, "content_type": "image/png",
         "body_b64": base64.b64encode(b"\x89PNG").decode()},
        {"url": "https://a.org/empty", "status": 200, "content_type": "text/html", "body": ""},
    ]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seeds = load_seeds([p])
    assert seeds["https://a.org/img"].error_class == "unsupported_type"
    assert seeds["https://a.org/empty"].error_class == "empty"
    assert seeds["https://a.org/img"].fetcher == "seed+x1"


def test_stage_module_reexports_readers() -> None:
    """pipeline.py reads snapshots through the stage module."""
    from reportbench.fetch import stage

    assert stage.read_snapshots is read_snapshots and stage.page_for is page_for
