"""Prompt packs: the authors' exact judge messages, rebuilt at run time from pinned sources.

Two kinds of tests:
- `test_authors_pack_golden[<benchmark>/<step>]`: one per goldens.json entry; runs when ../shared holds the
  goldens, the benchmark has a pack module, and the pack's sources are in the mirror
  (REPORTBENCH_AUTHORS_MIRROR) or the cache; compares messages byte for byte. Skips cleanly otherwise.
- CI tests on self-authored fixture sources (tests/fixtures/authors_fake, invented wording only): static
  extraction, the str.replace substitution bug, the lotus-like framing, source errors, and the judge wiring
  through the real LLM judge path against the loopback stub server.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.base import ParseError
from reportbench.prompt_packs import (
    AuthorsSourceMismatch,
    AuthorsSourceUnavailable,
    AuthorsStep,
    SourceRef,
    authors_source,
    benchmark_slug,
    get_step,
    pack_hash,
    pack_id,
    register_step,
    steps_for,
)
from reportbench.prompt_packs import _lotus as lotus
from reportbench.prompt_packs import deepscholar as ds
from reportbench.prompt_packs import extract as ex
from reportbench.prompt_packs import sources as src_mod

FAKE = Path(__file__).resolve().parent / "fixtures" / "authors_fake"
FAKE_REPO, FAKE_COMMIT = "fakeorg/fakebench", "0123456789abcdef0123456789abcdef01234567"
LOTUS_REPO, LOTUS_COMMIT = "fakeorg/fakelotus", "89abcdef0123456789abcdef0123456789abcdef"

# ------------------------------------------------------------------------------------------- goldens


def _goldens_path() -> Path | None:
    env = os.environ.get("REPORTBENCH_SHARED")  # else ../shared beside the checkout (tests/conftest.py)
    for base in (*([Path(env)] if env else []), Path(__file__).resolve().parents[1].parent / "shared"):
        p = base / "authors" / "goldens.json"
        if p.is_file():
            return p
    return None


# Test ids: '<benchmark slug>/<step key>'. Packs register each step with the goldens' `step` string and
# this key (AuthorsStep.key), so get_step works with either.
STEP_KEYS: dict[tuple[str, str], str] = {
    ("deepscholar", "support"): "support",
    ("deepscholar", "relevance rate"): "relevance",
    ("deepscholar", "organization"): "organization",
    ("deepscholar", "important-citation"): "important_citations",
    ("deepscholar", "nugget creation"): "nugget_create",
    ("deepscholar", "nugget importance"): "nugget_score",
    ("deepscholar", "nugget assignment"): "nugget_assign",
    ("researcherbench", "rubric coverage judge (HEAD"): "rubric",
    ("researcherbench", "rubric coverage judge (fa75041"): "rubric@fa75041",
    ("researcherbench", "claim extraction"): "claim_extraction",
    ("researcherbench", "claim verification"): "claim_verification",
    ("deer", "rubric judge J1"): "j1",
    ("deer", "rubric judge J2"): "j2",
    ("deer", "rubric judge J3"): "j3",
    ("deer", "rubric judge J4"): "j4",
    ("deer", "rubric judge J5"): "j5",
    ("deer", "claim extraction"): "claim_extraction",
    ("deer", "claim verification"): "claim_verification",
    ("researchqa", "rubric coverage"): "coverage",
    ("researchqa", "pairwise"): "pairwise",
    ("liveresearchbench", "presentation"): "presentation",
    ("liveresearchbench", "coverage"): "coverage",
    ("liveresearchbench", "factual"): "consistency",
    ("liveresearchbench", "citation"): "citation",
    ("liveresearchbench", "analysis depth"): "depth",
}


def golden_key(entry: dict[str, Any]) -> str:
    """Short step key of a goldens entry (LiveResearchBench adds '/openai' or '/gemini' for the provider path)."""
    b = benchmark_slug(entry["benchmark"])
    step = entry["step"]
    key = next((k for (bb, prefix), k in STEP_KEYS.items() if bb == b and step.startswith(prefix)), None)
    if key is None:
        key = "_".join(step.split(" (")[0].split()[:3]).lower()
    if "[OpenAI path" in step:
        key += "/openai"
    elif "[Gemini path" in step:
        key += "/gemini"
    return key


def golden_id(entry: dict[str, Any]) -> str:
    return f"{benchmark_slug(entry['benchmark'])}/{golden_key(entry)}"


def _golden_params() -> list[Any]:
    path = _goldens_path()
    if path is None:
        return [pytest.param(None, id="no-goldens", marks=pytest.mark.skip(reason="../shared/authors absent"))]
    entries = json.loads(path.read_text(encoding="utf-8"))
    return [pytest.param(e, id=golden_id(e)) for e in entries]


def _nugget_score_errata(inputs: dict[str, Any]) -> dict[str, Any]:
    """goldens.json lists this entry's nuggets after the nuggetizer's vital-first sort (the *output* of
    create()), while the scoring call it records was made with the creation reply's order, which its
    message shows: items 2 and 3 swapped. Feed the pack the order the call really had."""
    key = next(k for k in inputs if k.startswith("nuggets"))
    n = list(inputs[key])
    return {**inputs, key: [n[0], n[2], n[1]]}


ERRATA = {"deepscholar/nugget_score": _nugget_score_errata}


def _comparable_kwargs(golden: dict[str, Any]) -> dict[str, Any]:
    """Golden request kwargs that are concrete (a value like '<model at eval time>' is a description)."""
    return {k: v for k, v in golden.items() if not (isinstance(v, str) and v.startswith("<"))}


@pytest.mark.parametrize("entry", _golden_params())
def test_authors_pack_golden(entry: dict[str, Any] | None) -> None:
    assert entry is not None
    bench = entry["benchmark"]
    if not steps_for(bench):
        pytest.skip(f"no authors' pack for {bench} yet")
    try:
        step = get_step(bench, entry["step"])
    except KeyError:
        step = get_step(bench, golden_key(entry))
    if not step.available():
        pytest.skip(f"authors' sources for {step.step_id} not in the mirror/cache (set REPORTBENCH_AUTHORS_MIRROR)")
    pinned = {(r.repo, r.commit, r.path): r.sha256 for r in step.sources}
    assert pinned.get((entry["repo"], entry["commit"], entry["path"])) == entry["file_sha256"], (
        "the step must pin the goldens' prompt file"
    )
    inputs = ERRATA.get(golden_id(entry), lambda x: x)(entry["inputs"])
    assert step.render(inputs) == entry["messages"]
    if "messages_swapped" in entry:
        assert step.render_swapped is not None
        assert step.render_swapped(inputs) == entry["messages_swapped"]
    for k, v in _comparable_kwargs(entry.get("request_kwargs") or {}).items():
        assert step.request_kwargs.get(k) == v, k


# ------------------------------------------------------------------------------ fixture sources (CI)


def _fake_text(rel: str, repo: str = FAKE_REPO, commit: str = FAKE_COMMIT) -> str:
    return (FAKE / repo / commit / rel).read_text(encoding="utf-8")


def _fake_ref(rel: str, repo: str = FAKE_REPO, commit: str = FAKE_COMMIT) -> SourceRef:
    data = (FAKE / repo / commit / rel).read_bytes()
    return SourceRef(repo, commit, rel, hashlib.sha256(data).hexdigest())


def _load_fixture_module() -> Any:
    """The fixture is our own file, so executing it is fine: it is the oracle for the static extraction."""
    path = FAKE / FAKE_REPO / FAKE_COMMIT / "judge/prompts.py"
    spec = importlib.util.spec_from_file_location("fake_judge_prompts", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_module_constants_literal_implicit_and_plus_concatenation() -> None:
    text = _fake_text("judge/prompts.py")
    mod = _load_fixture_module()
    consts = ex.module_constants(text)
    for name in ("PLAIN_SYSTEM", "JOINED", "CONCAT", "ESCAPED", "MARKER_TEMPLATE"):
        assert consts[name] == getattr(mod, name)
    with pytest.raises(ex.ExtractError):
        ex.module_constant(text, "NOT_THERE")


def test_format_template_matches_str_format() -> None:
    text = ex.module_constant(_fake_text("judge/prompts.py"), "ESCAPED")
    t = ex.Template.from_format_string(text)
    assert t.fields == ("topic", "audience", "draft")
    values = {"topic": "tea {x}", "audience": "[BODY] kids", "draft": "a {{b}} c"}
    assert t.render(values) == text.format(**values)
    with pytest.raises(ex.ExtractError, match="no value"):
        t.render(topic="only one")


def test_accumulated_fstring_chain_matches_execution() -> None:
    text = _fake_text("judge/prompts.py")
    mod = _load_fixture_module()
    system = ex.function_assignments(text, "build_check", "system")[0].text
    user_t = ex.function_accumulated(text, "build_check", "user")
    assert user_t.fields == ("statement", "evidence")
    stmt, evid = "Water is {wet} [CONTENT].", "It's 'wet'"
    got = [
        {"role": "system", "content": system},
        {"role": "user", "content": user_t.render(statement=stmt, evidence=evid)},
    ]
    assert got == mod.build_check(stmt, evid)  # `!r` conversion included


def test_fstring_fields_expressions_and_specs() -> None:
    text = _fake_text("judge/prompts.py")
    mod = _load_fixture_module()
    t = ex.function_return(text, "numbered")
    assert t.fields == ("len(items)", "items", "len(items)", "items[0]")
    items = ["it's", "b {x}"]
    assert t.render({"len(items)": len(items), "items": items, "items[0]": items[0]}) == mod.numbered(items)
    msgs = ex.function_messages(text, "messages_for")
    assert [r for r, _ in msgs] == ["system", "user"]
    user = msgs[1][1]
    assert user is not None and user.fields == ("topic", "[item.upper() for item in items]")
    rendered = [
        {"role": "system", "content": msgs[0][1].text if msgs[0][1] else ""},
        {"role": "user", "content": user.render({"topic": "t", "[item.upper() for item in items]": ["A", "B'S"]})},
    ]
    assert rendered == mod.messages_for("t", ["a", "b's"])


def test_sequential_replace_reproduces_marker_bug() -> None:
    text = _fake_text("judge/prompts.py")
    mod = _load_fixture_module()
    template = ex.module_constant(text, "MARKER_TEMPLATE")
    # A question that itself contains a later marker gets that marker rewritten: the authors' bug.
    q, body, srcs = "What is [BODY]?", "the {body} text", "[QUESTION] none"
    got = ex.sequential_replace(template, [("[QUESTION]", q), ("[BODY]", body), ("[SOURCES]", srcs)])
    assert got == mod.build_marked(q, body, srcs)
    assert "What is the {body} text?" in got and "Sources: [QUESTION] none" in got


def _fake_framing() -> lotus.LotusFraming:
    base = "fakelotus/"
    return lotus.framing_from(
        _fake_text(base + "task_instructions.py", LOTUS_REPO, LOTUS_COMMIT),
        _fake_text(base + "nl_expression.py", LOTUS_REPO, LOTUS_COMMIT),
    )


def test_fake_lotus_map_framing_rewrites_columns_and_orders_extra_cols() -> None:
    f = _fake_framing()
    row = {"title": "T {x}", "sec_a": "A [CONTENT]", "sec_b": "B", "unused": "U"}
    instr = "Compare {sec_a} and {sec_b} for {title}; keep {{braces}}."
    msgs = lotus.map_messages(row, instr, "SYS", f=f)
    assert msgs[0] == {"role": "system", "content": "SYS"}
    assert msgs[1]["content"] == (
        "Rows:\n<Sec_a> = (A [CONTENT])\n<Sec_b> = (B)\n<Title> = (T {x})\n\n\n"
        "Task: Compare Sec_a and Sec_b for Title; keep {braces}."
    )
    swapped = lotus.map_messages(row, instr, "SYS", extra_cols_to_include=["sec_b", "sec_a"], f=f)
    assert swapped[1]["content"].startswith("Rows:\n<Title> = (T {x})\n<Sec_b> = (B)\n<Sec_a> = (A [CONTENT])\n\n")
    with pytest.raises(KeyError, match="not found"):
        lotus.map_messages({"title": "t"}, instr, "SYS", f=f)


def test_fake_lotus_filter_framing_builds_system_from_nested_formatters() -> None:
    f = _fake_framing()
    msgs = lotus.filter_messages({"a": "1"}, "It says {a}.", f=f)
    assert msgs[0]["content"] == (
        "You check a statement against some rows.\n    Decide if it holds.\n     Write your reply like this:\n"
        "        Verdict: <Put the verdict here. Say Yes or No>\n        "
    )
    assert msgs[1]["content"] == "Rows:\n<A> = (1)\n\n\nStatement: It says A."


# ------------------------------------------------------------------------------------- source loading


def test_source_from_mirror_and_sha_mismatch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(src_mod.MIRROR_ENV, str(FAKE))
    monkeypatch.setenv(src_mod.CACHE_ENV, str(tmp_path / "cache"))
    ref = _fake_ref("judge/prompts.py")
    assert authors_source(ref.repo, ref.commit, ref.path, ref.sha256) == _fake_text("judge/prompts.py")
    wrong = "0" * 64
    with pytest.raises(AuthorsSourceMismatch) as err:
        authors_source(ref.repo, ref.commit, ref.path, wrong)
    msg = str(err.value)
    assert ref.repo in msg and ref.commit in msg and ref.path in msg and wrong in msg and ref.sha256 in msg


def test_missing_source_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(src_mod.MIRROR_ENV, raising=False)
    monkeypatch.setenv(src_mod.CACHE_ENV, str(tmp_path / "cache"))
    ref = SourceRef("fakeorg/absent", "f" * 40, "x.py", "a" * 64)
    monkeypatch.setenv(src_mod.OFFLINE_ENV, "1")
    with pytest.raises(AuthorsSourceUnavailable, match=src_mod.MIRROR_ENV):
        src_mod.read_ref(ref)
    # Without the offline switch it tries to download; the test sandbox refuses the network -> same error.
    monkeypatch.delenv(src_mod.OFFLINE_ENV)
    with pytest.raises(AuthorsSourceUnavailable, match=src_mod.MIRROR_ENV) as err:
        src_mod.read_ref(ref)
    assert "raw.githubusercontent.com/fakeorg/absent/" + "f" * 40 + "/x.py" in str(err.value)


def test_download_is_checked_then_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(src_mod.MIRROR_ENV, raising=False)
    monkeypatch.delenv(src_mod.OFFLINE_ENV, raising=False)
    monkeypatch.setenv(src_mod.CACHE_ENV, str(tmp_path / "cache"))
    body = b"TEXT = 'invented'\n"
    ref = SourceRef("fakeorg/dl", "e" * 40, "p/q.py", hashlib.sha256(body).hexdigest())
    calls: list[str] = []
    monkeypatch.setattr(src_mod, "_download", lambda r: calls.append(r.url) or b"tampered")
    with pytest.raises(AuthorsSourceMismatch):
        src_mod.read_ref(ref)
    assert not (tmp_path / "cache" / ref.relpath).exists(), "a bad download is never cached"
    monkeypatch.setattr(src_mod, "_download", lambda r: calls.append(r.url) or body)
    assert src_mod.read_ref(ref) == body.decode()
    assert (tmp_path / "cache" / ref.relpath).read_bytes() == body and src_mod.available(ref)
    monkeypatch.setattr(src_mod, "_download", lambda r: pytest.fail("cached file must be used"))
    assert src_mod.read_ref(ref) == body.decode()
    assert calls == [ref.url, ref.url]


def test_source_ref_rejects_unsafe_paths() -> None:
    for bad in ("../x.py", "/etc/passwd", "a//b", "a/./b"):
        with pytest.raises(ValueError):
            SourceRef("o/r", "a" * 40, bad, "b" * 64)
    with pytest.raises(ValueError):
        SourceRef("o/r", "HEAD", "x.py", "b" * 64)


# ----------------------------------------------------------------------------------- registry + parsers


def test_registry_discovers_deepscholar_pack_and_ids() -> None:
    steps = steps_for("DeepScholar-bench")
    assert [s.key for s in steps] == [
        "support", "relevance", "organization", "important_citations", "nugget_create", "nugget_score",
        "nugget_assign",
    ]  # fmt: skip
    assert get_step("deepscholar", "support") is steps[0]
    assert pack_id("DeepScholar-bench") == "authors:guestrin-lab/deepscholar-bench@6ff05aa"
    assert len(pack_hash("DeepScholar-bench")) == 64
    assert steps[0].step_id == "deepscholar/support"
    with pytest.raises(KeyError):
        get_step("deepscholar", "nope")


@pytest.mark.parametrize("raw", ["1", "0", " 1\n"])
def test_bare_binary_accepts(raw: str) -> None:
    assert ds.parse_bare_binary(raw) == int(raw.strip())


@pytest.mark.parametrize("raw", ["1.", "yes", "Answer: 1", "'1'", "10", "", "1 0", "**1**"])
def test_bare_binary_rejects(raw: str) -> None:
    with pytest.raises(ParseError):
        ds.parse_bare_binary(raw)


def test_other_strict_parsers() -> None:
    assert ds.parse_filter_answer("reasoning...\nAnswer: True") is True
    for bad in ("True", "Answer: true", "Answer: True. Answer: False", "Answer: Maybe"):
        with pytest.raises(ParseError):
            ds.parse_filter_answer(bad)
    p = ds._python_list_parser(("vital", "okay"))
    assert p('```python\n["vital", "okay"]\n```') == ["vital", "okay"]
    for bad in ('["Vital"]', "vital, okay", '{"a": 1}', "[1, 2]", "__import__('os')"):
        with pytest.raises(ParseError):
            p(bad)


# ------------------------------------------------------------------------------- judge path (stub LLM)

FAKE_STEP_KEY = "check"


def _register_fake_step() -> AuthorsStep:
    ref = _fake_ref("judge/prompts.py")

    def render(inputs: Any) -> list[dict[str, str]]:
        text = src_mod.read_ref(ref)
        system = ex.function_assignments(text, "build_check", "system")[0].text
        user = ex.function_accumulated(text, "build_check", "user").render(
            statement=inputs["statement"], evidence=inputs["evidence"]
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    step = AuthorsStep(
        benchmark="FakeBench",
        step="invented check step",
        key=FAKE_STEP_KEY,
        sources=(ref,),
        render=render,
        render_swapped=None,
        parse=ds.parse_bare_binary,
        request_kwargs={},
    )
    try:
        return get_step("FakeBench", FAKE_STEP_KEY)
    except KeyError:
        register_step(step)
        return step


def _support_task_with_fake_step() -> Any:
    from reportbench.judges.tasks import get_task

    return dataclasses.replace(
        get_task("support"),
        authors_step=f"fakebench/{FAKE_STEP_KEY}",
        authors_inputs=lambda x: {"statement": x.claim, "evidence": x.reference},
        authors_output=lambda p, x: {"supported": p},
    )


def _stub_cfg(base_url: str, prompts: str) -> dict[str, Any]:
    return {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base_url,
        "structured_output": "json_schema",
        "prompts": prompts,
        "runtime": {
            "max_concurrency": 4, "timeout_s": 5, "max_retries": 1, "backoff_base_s": 0.01, "backoff_max_s": 0.05,
            "parse_retries": 1, "cache_path": None, "progress": False,
        },
    }  # fmt: skip


@pytest.mark.integration
def test_authors_parser_failures_are_records_through_the_real_judge(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from reportbench.judges.cache import ResponseCache
    from reportbench.judges.factory import make_judge
    from reportbench.judges.runner import run_judgments_sync
    from reportbench.judges.tasks.support import SupportInput
    from reportbench.stub_server import stub_server_thread

    monkeypatch.setenv(src_mod.MIRROR_ENV, str(FAKE))
    monkeypatch.setenv(src_mod.OFFLINE_ENV, "1")
    step = _register_fake_step()
    task = _support_task_with_fake_step()
    rules = [("Statement: good", "1"), ("Statement: dotted", "1."), ("Statement: wordy", "yes")]
    items = [
        (f"i{k}", SupportInput(claim=f"{k} claim", reference="Title: t\nabstract"), {"claim": k})
        for k in ("good", "dotted", "wordy")
    ]
    cache = ResponseCache(tmp_path / "judge.sqlite")
    with stub_server_thread(rules=rules) as s:
        judge = make_judge(task, _stub_cfg(s.base_url, "authors"), cache=cache)
        runs = run_judgments_sync(judge, items, "t")
        ours = make_judge(task, _stub_cfg(s.base_url, "ours"), cache=cache)
    by_id = {j.item_id: j for j in runs}
    good = by_id["igood"]
    assert good.ok and good.value == 1.0 and good.raw_output == "1"
    assert good.prompt_id == "authors:fakebench/check" and good.prompt_hash == step.sources_hash
    for k in ("idotted", "iwordy"):
        j = by_id[k]
        assert j.status == "failed" and j.value is None and (j.error or "").startswith("parse: ")
        assert j.prompt_id == "authors:fakebench/check"
    # The authors' messages are what was sent; the cache key differs from our prompts' key.
    msgs = judge.prompt.messages(items[0][1])
    assert msgs[1]["content"].startswith("Decide whether the evidence backs the statement.")
    assert judge.key_for(msgs) != ours.key_for(msgs)
    cache.close()


def test_offline_judge_records_the_configured_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    from reportbench.judges.factory import JudgeConfigError, make_judge

    monkeypatch.delenv(src_mod.MIRROR_ENV, raising=False)
    monkeypatch.setenv(src_mod.OFFLINE_ENV, "1")
    judge = make_judge("support", {"backend": "offline", "prompts": "authors"})
    support = get_step("deepscholar", "support")
    assert judge.prompt_id == "authors:deepscholar/support" and judge.prompt_hash == support.sources_hash
    assert make_judge("support", {"backend": "offline"}).prompt_id != "authors:deepscholar/support"
    with pytest.raises(JudgeConfigError, match="judge.prompts"):
        make_judge("support", {"backend": "offline", "prompts": "theirs"})


@pytest.mark.integration
def test_real_deepscholar_support_step_through_the_judge(tmp_path: Path) -> None:
    """With the mirror: judge.prompts=authors sends the authors' support messages and parses '1'/'0' only."""
    from reportbench.judges.factory import make_judge
    from reportbench.judges.runner import run_judgments_sync
    from reportbench.judges.tasks.support import SupportInput
    from reportbench.stub_server import stub_server_thread

    step = get_step("deepscholar", "support")
    if not step.available():
        pytest.skip("DeepScholar sources not in the mirror/cache (set REPORTBENCH_AUTHORS_MIRROR)")
    seen: list[list[dict[str, Any]]] = []

    def responder(messages: list[dict[str, Any]], fmt: dict[str, Any] | None) -> str:
        seen.append(messages)
        assert fmt is None, "the authors send no response_format for the support validator"
        return "0" if "bad" in messages[-1]["content"] else "1."

    item = SupportInput(claim="a good claim", reference="Title: t\nabstract")
    bad = SupportInput(claim="a bad claim", reference="Title: t\nabstract")
    with stub_server_thread(responder=responder) as s:
        judge = make_judge("support", _stub_cfg(s.base_url, "authors"))
        runs = run_judgments_sync(judge, [("ok", bad, {}), ("dot", item, {})], "t")
    assert runs[0].ok and runs[0].value == 0.0 and runs[0].prompt_id == "authors:deepscholar/support"
    assert runs[1].status == "failed" and (runs[1].error or "").startswith("parse: ")
    assert seen[0] == step.render({"premise": bad.reference, "hypothesis": bad.claim})
