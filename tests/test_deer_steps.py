"""DEER judge steps on hand-made contexts: EG scope per call, verification grouping and gating, the
verifications table (conflict, omitted indices, failed calls, fetch errors) and failed-is-not-zero scoring."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from reportbench.benchmarks import JudgeContext, ScoreContext
from reportbench.judges.base import Judgment
from reportbench.protocols.deer import benchmark as bm
from reportbench.protocols.deer.release import build_release
from reportbench.protocols.deer.rubric import CALLS
from reportbench.protocols.deer.tasks import RUBRIC_TASKS, TASKS
from reportbench.reports.base import load_report

pytestmark = pytest.mark.core
TASK_BY_NAME = {t.name: t for t in TASKS}


@pytest.fixture(scope="module")
def demo(repo_root: Path) -> SimpleNamespace:
    src = repo_root / "data" / "demo" / "deer"
    rel = build_release({"kind": "demo", "source": str(src), "name": "demo"})
    reps = [
        load_report(p, fmt="auto", task_id=p.stem, system="careful_writer")
        for p in sorted((src / "systems" / "careful_writer").glob("*.md"))
    ]
    return SimpleNamespace(release=rel, reports=reps)


def _page(text: str, ok: bool = True) -> SimpleNamespace:
    return SimpleNamespace(
        ok=ok,
        text=text,
        error_class="ok" if ok else "http_error",
        http_status=200 if ok else 404,
        sha256="h" if ok else None,
    )


def _ctx(demo: SimpleNamespace, params: dict, pages: dict | None = None) -> JudgeContext:
    return JudgeContext("deer", "careful_writer", "main", params, demo.release, demo.reports, [], pages=pages)


def _judge_all(ctx: JudgeContext, step: str, task: str, items: list) -> list[Judgment]:
    t = TASK_BY_NAME[task]
    out = []
    for it in items:
        v = t.offline(it.typed(), {})
        out.append(
            Judgment(
                task=task,
                item_id=it.item_id,
                input_ids=dict(it.input_ids),
                judge_id="t",
                parsed=v.output.model_dump_json(),
                value=0.0,
            )
        )
    ctx.judgments[step] = out
    return out


@pytest.mark.parametrize(
    ("scope", "with_eg"),
    [("code", {"request_fulfillment", "analytical_soundness", "structural_coherence"}), ("paper", set(CALLS))],
)
def test_eg_goes_to_the_calls_of_the_mode(demo: SimpleNamespace, scope: str, with_eg: set) -> None:
    ctx = _ctx(demo, {"judging": {"eg_scope": scope}})
    got = set()
    for call in CALLS:
        items = bm._rubric_items(call)(ctx)
        assert len(items) == 3
        if all(i.inputs["guidance"] for i in items):
            got.add(call)
        assert all("SYNTHETIC-EG-MARKER" not in json.dumps(i.input_ids) for i in items)
    assert got == with_eg


def test_verification_pipeline_tables(demo: SimpleNamespace) -> None:
    params = {"judging": {"backtrack": {"mode": "code"}, "verification": {"group_size": 2}}}
    long_page = " ".join(f"filler{i}" for i in range(5000)) + " attention cost per token grows linearly"
    pages = {
        "https://example.org/deer/attention-cost": _page(long_page),
        "https://example.org/deer/dense-cost": _page("The dense layers cost a fixed amount of compute per token."),
        "https://example.org/deer/gone": _page("", ok=False),
    }
    ctx = _ctx(demo, params, pages)
    ext = bm.extract_items(ctx)
    assert {i.input_ids["report_id"] for i in ext} == {r.report_id for r in demo.reports}
    claims = bm.claims_table(ctx, _judge_all(ctx, "extract", "deer_extract", ext))
    ctx.derived["claims"] = claims
    assert claims["claim_id"].n_unique() == claims.height  # keyed by position + order, never by text
    items = bm.verify_items(ctx)
    assert items and all(len(i.inputs["claims"]) <= 2 for i in items)  # groups of <= group_size
    urls = {i.input_ids["url"] for i in items}
    assert urls <= set(pages) and "https://example.org/deer/gone" not in urls  # failed page: no call
    long_ctx = [i for i in items if i.input_ids["url"].endswith("attention-cost")]
    assert long_ctx and all(len(i.inputs["context"]) < len(long_page) for i in long_ctx)  # top-k chunks only

    js = _judge_all(ctx, "verify", "deer_verify", items)
    # one call answers 'conflict' and leaves out its second claim; another call fails
    first = json.loads(js[0].parsed)
    first["results"] = [{**first["results"][0], "result": "conflict"}]
    js[0] = js[0].model_copy(update={"parsed": json.dumps(first)})
    js[1] = js[1].model_copy(update={"status": "failed", "parsed": None, "value": None, "error": "parse: x"})
    ver = bm.verifications_table(ctx, js)
    row0 = ver.filter(pl.col("item_id") == js[0].item_id)
    assert row0.height == 1 and row0["result"][0] == "not_supported" and row0["raw_result"][0] == "conflict"
    assert set(ver.filter(pl.col("item_id") == js[1].item_id)["result"]) == {"failed"}
    fetch = ver.filter(pl.col("error_kind") == "fetch")
    assert set(fetch["result"]) == {"error"} and "https://example.org/deer/gridiron" in set(fetch["url"])
    assert any(not u.startswith("http") for u in fetch["url"])  # the raw '3-5' index: error, not a crash
    ctx.derived["verifications"] = ver
    src = bm.sources_table(ctx)
    gone = src.filter(pl.col("url") == "https://example.org/deer/gone")
    assert gone["shown"][0] and not gone["used"][0] and gone["error_class"][0] == "http_error"  # [3-5] kept raw

    # scoring: the report with a failed verification call has failed (NaN) fact dimensions, never 0
    steps = {"extract": ctx.judgments["extract"], "verify": js}
    for call in CALLS:
        items_c = bm._rubric_items(call)(ctx)
        steps[f"rubric_{call}"] = _judge_all(ctx, f"rubric_{call}", RUBRIC_TASKS[call], items_c)
    derived = {"claims": claims, "verifications": ver, "sources": src}
    sctx = ScoreContext(
        "deer",
        params,
        demo.release,
        ["careful_writer"],
        {"careful_writer": demo.reports},
        {},
        {"careful_writer": {"main": steps}},
        {"careful_writer": {"main": derived}},
    )
    per_task = bm.score(sctx).systems[0].per_task
    bad_report = js[1].input_ids["task_id"]
    row = per_task.filter((pl.col("task_id") == bad_report) & (pl.col("metric") == "information_integrity"))
    assert row["status"][0] == "failed" and math.isnan(row["value"][0])
    ok = per_task.filter((pl.col("task_id") == bad_report) & (pl.col("metric") == "request_fulfillment"))
    assert ok["status"][0] == "ok"


def test_a_failed_rubric_call_fails_its_dimensions_only(demo: SimpleNamespace) -> None:
    ctx = _ctx(demo, {})
    steps = {}
    for call in CALLS:
        steps[f"rubric_{call}"] = _judge_all(ctx, f"rubric_{call}", RUBRIC_TASKS[call], bm._rubric_items(call)(ctx))
    steps["rubric_format_style"] = [
        j.model_copy(update={"status": "failed", "parsed": None, "value": None}) for j in steps["rubric_format_style"]
    ]
    sctx = ScoreContext(
        "deer", {}, demo.release, ["s"], {"s": demo.reports}, {}, {"s": {"main": steps}}, {"s": {"main": {}}}
    )
    pt = bm.score(sctx).systems[0].per_task
    status = {m: set(pt.filter(pl.col("metric") == m)["status"]) for m in bm.METRIC_NAMES}
    assert status["format_style"] == {"failed"} and status["deer_mean"] == {"failed"}
    assert status["request_fulfillment"] == {"ok"} and status["information_integrity"] == {"ok"}


def test_unknown_mode_keys_fail_loudly() -> None:
    with pytest.raises(Exception, match="not a known key"):
        bm.judging({"judging": {"eg_scop": "code"}})
    with pytest.raises(Exception, match="unknown keys"):
        bm.scoring({"scoring": {}}) and bm.judging({"judging": {"verification": {"topk": 3}}})


def test_embedding_retrieval_uses_the_given_embedder() -> None:
    from reportbench.protocols.deer.ivm import select_context

    page = " ".join(f"w{i}" for i in range(4000))

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "w3500" in t or t == "needle" else [0.0, 1.0] for t in texts]

    ctx, n, whole = select_context(["needle"], page, top_k=1, method="embedding", embed=embed)
    assert not whole and "w3500" in ctx and n > 2


def test_verify_failure_code_mode_counts_failed_calls_as_errors() -> None:
    claims = pl.DataFrame(
        [{"claim_id": "c1", "report_id": "r", "claim_type": "A", "numeric": False, "urls": json.dumps(["u1"])}]
    )
    ver = pl.DataFrame([{"report_id": "r", "claim_id": "c1", "url": "u1", "result": "failed"}])
    src = pl.DataFrame([{"report_id": "r", "url": "u1", "shown": True, "reliable_any": False, "reliable_first": False}])
    nan_mode = bm.report_fact_side("r", claims, ver, src, bm.scoring({}))
    assert nan_mode["n_failed_verifications"] == 1 and nan_mode["raw"]["num_verifications"] == 0
    code = bm.report_fact_side("r", claims, ver, src, bm.scoring({"scoring": {"verify_failure": "error"}}))
    assert code["n_failed_verifications"] == 0 and code["raw"]["reproducibility"] == 0.0


def test_embedding_cache_is_keyed_by_model_and_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import litellm

    calls: list[list[str]] = []

    def fake_embedding(model: str, input: list[str]) -> SimpleNamespace:  # noqa: A002 - litellm's name
        calls.append(list(input))
        return SimpleNamespace(data=[{"embedding": [float(len(t)), 1.0]} for t in input])

    monkeypatch.setattr(litellm, "embedding", fake_embedding)
    vcfg = {"embedding_model": "m1", "embedding_cache": str(tmp_path / "emb.sqlite")}
    embed = bm._embedder(vcfg)
    assert embed(["a", "bb"]) == [[1.0, 1.0], [2.0, 1.0]]
    assert embed(["bb", "ccc"]) == [[2.0, 1.0], [3.0, 1.0]]
    assert calls == [["a", "bb"], ["ccc"]]  # cached texts are not re-embedded
    bm._embedder({**vcfg, "embedding_model": "m2"})(["a"])
    assert calls[-1] == ["a"]  # another model: another key


def test_adapter_parsing_collapses_duplicate_urls(tmp_path: Path) -> None:
    p = tmp_path / "r.md"
    p.write_text(
        "Claim one [1]. Claim two [2]. More [3-4].\n\n## References\n[1] A https://a.org/x#one\n"
        "[2] A again https://a.org/x#two\n[3] B https://b.org\n[4] C https://c.org\n"
    )
    rep = load_report(p, fmt="auto", task_id="t", system="s")
    body, refs, shown = bm.prepared(rep, bm.judging({"judging": {"references": {"parser": "adapters"}}}))
    assert shown == ["https://a.org/x", "https://b.org", "https://c.org"]
    _, refs_code, shown_code = bm.prepared(rep, bm.judging({}))
    assert refs_code["1"] == refs_code["2"] == "https://a.org/x" and len(shown_code) == 3


def test_mode_presets_and_explicit_keys() -> None:
    assert bm.judging({})["eg_scope"] == "paper" and bm.scoring({})["source_support"] == "paper"
    code = bm.judging({"judging": {"mode": "code", "eg_scope": None}})
    assert code["eg_scope"] == "code" and code["backtrack"]["mode"] == "code"
    assert code["verification"]["retrieval"] == "embedding" and code["verification"]["top_k"] == 2
    mixed = bm.scoring({"scoring": {"mode": "code", "diversity": "paper", "information": None}})
    assert mixed["diversity"] == "paper" and mixed["information"] == "code" and mixed["verify_failure"] == "error"
    with pytest.raises(Exception, match="paper\\|code"):
        bm.scoring({"scoring": {"mode": "authors"}})
