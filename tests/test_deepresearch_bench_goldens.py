"""DeepResearch Bench authors' pack: self-authored goldens (inputs of our own, message hashes produced by the
authors' code path) checked against the pack, and the authors' code run live from the mirror.

Skipped without `REPORTBENCH_AUTHORS_MIRROR` (layout `<owner>/<repo>/<commit>/<path>`, docs/prompt-packs.md).
The goldens hold only hashes of the authors' messages, never their text. Regenerate them (after a pin change)
with `python tests/test_deepresearch_bench_goldens.py` with the mirror set.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reportbench_deepresearch_bench import pack
from reportbench_deepresearch_bench.authors_json import extract_json
from reportbench_deepresearch_bench.benchmark import criteria_json
from reportbench_deepresearch_bench.release import DrbCriterion

from reportbench.release.format import Release, ReleaseMeta
from reportbench.types import Task

GOLDENS = Path(__file__).parent / "fixtures" / "deepresearch_bench" / "goldens.json"
DIMS = ("comprehensiveness", "insight", "instruction_following", "readability")


def mirror_root() -> Path | None:
    base = os.environ.get("REPORTBENCH_AUTHORS_MIRROR")
    if not base:
        return None
    root = Path(base) / pack.REPO / pack.COMMIT
    return root if root.is_dir() else None


needs_mirror = pytest.mark.skipif(
    mirror_root() is None, reason="REPORTBENCH_AUTHORS_MIRROR with the pinned commit not set"
)
pytestmark = [pytest.mark.core, needs_mirror]


def digest(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------------------- our side (the pack)
def _criteria_string(case: dict[str, Any]) -> str:
    """Our release path: criteria rows -> the JSON the RACE judge gets (criteria_json)."""
    rows = [
        DrbCriterion(
            task_id="t",
            dimension=d,
            index=i,
            criterion=c["criterion"],
            explanation=c["explanation"],
            weight=c["weight"],
        )
        for d, lst in case["criteria"]["criterions"].items()
        for i, c in enumerate(lst)
    ]
    rel = Release(
        meta=ReleaseMeta("g", "2026-01-01", "tests", "CC0", True, "deepresearch_bench"),
        tasks=[Task(task_id="t", title="t", task_prompt=case["prompt"])],
        extra={"drb_criteria": rows},
    )
    return criteria_json(rel, "t")


def pack_messages(case: dict[str, Any]) -> list[dict[str, Any]]:
    step, lang = case["step"], case["language"]
    if step == "race":
        return pack.render_race(
            {
                "task_prompt": case["prompt"],
                "criteria": _criteria_string(case),
                "article_1": case["target"],
                "article_2": case["reference"],
                "language": lang,
            }
        )
    if step == "clean":
        return pack.render_clean({"article": case["article"], "language": lang})
    if step == "fact_extract":
        return pack.render_extract({"article": case["article"], "language": lang})
    if step == "fact_dedup":
        return pack.render_dedup({"statements": case["statements"], "language": lang})
    return pack.render_validate({"reference": case["reference"], "statements": case["statements"], "language": lang})


# ------------------------------------------------------------------------ the authors' code, from the mirror
@pytest.fixture()
def authors(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.SimpleNamespace]:
    root = mirror_root()
    assert root is not None
    yield from _authors_modules(root, monkeypatch.syspath_prepend, lambda k, v: monkeypatch.setitem(sys.modules, k, v))


def _authors_modules(root: Path, add_path: Any, set_module: Any) -> Iterator[types.SimpleNamespace]:
    """Their modules imported from the mirror with `utils.api` (Gemini / Jina clients) replaced by a stub that
    records the prompt it is given; nothing reaches a network."""
    before = set(sys.modules)
    sent: list[str] = []
    api = types.ModuleType("utils.api")

    class Client:
        def __init__(self, *a: Any, **k: Any) -> None: ...

        def generate(self, user_prompt: str, system_prompt: str = "", model: Any = None) -> str:
            sent.append(user_prompt)
            return "x" * 200

    def call_model(user_prompt: str) -> str:
        sent.append(user_prompt)
        return api.answer  # type: ignore[attr-defined]

    api.AIClient, api.call_model, api.scrape_url, api.answer = Client, call_model, lambda u: {"error": "stub"}, "[]"  # type: ignore[attr-defined]
    for name in [m for m in sys.modules if m == "utils" or m.startswith(("utils.", "prompt.")) or m == "prompt"]:
        set_module(name, sys.modules[name])  # restored afterwards
        del sys.modules[name]
    add_path(str(root))
    sys.modules["utils.api"] = api
    import importlib

    ns = types.SimpleNamespace(
        race=importlib.import_module("deepresearch_bench_race"),
        extract=importlib.import_module("utils.extract"),
        dedup=importlib.import_module("utils.deduplicate"),
        validate=importlib.import_module("utils.validate"),
        clean=importlib.import_module("utils.clean_article"),
        json_extractor=importlib.import_module("utils.json_extractor"),
        api=api,
        sent=sent,
    )
    try:
        yield ns
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]


def authors_messages(a: types.SimpleNamespace, case: dict[str, Any], tmp: Path) -> list[dict[str, Any]]:
    """The user message the authors' scripts send for this case (their system_prompt is empty)."""
    a.sent.clear()
    step, lang = case["step"], case["language"]
    if step == "race":  # process_single_item's prompt construction
        tmpl = a.race.zh_merged_score_prompt if lang == "zh" else a.race.en_merged_score_prompt
        crit = {"id": 1, "prompt": case["prompt"], **case["criteria"]}
        a.sent.append(
            tmpl.format(
                task_prompt=case["prompt"],
                article_1=case["target"],
                article_2=case["reference"],
                criteria_list=a.race.format_criteria_list(crit),
            )
        )
    elif step == "clean":
        a.clean.ArticleCleaner(a.api.AIClient())._clean_text(case["article"], lang)
    elif step == "fact_extract":
        a.api.answer = "[]"
        a.extract.run([{"id": 1, "prompt": "p", "article": case["article"]}], str(tmp / "e.jsonl"), {1: lang})
    elif step == "fact_dedup":
        a.api.answer = "[1]"
        cits = [{"fact": s, "ref_idx": "1", "url": "https://example.org/u"} for s in case["statements"]]
        a.dedup.run([{"id": 1, "citations": cits}], str(tmp / "d.jsonl"), {1: lang})
    else:
        a.api.answer = json.dumps([{"idx": i + 1, "result": "supported"} for i in range(len(case["statements"]))])
        a.validate.validate(
            ("https://example.org/u", {"url_content": case["reference"], "facts": case["statements"], "article_id": 1}),
            {1: lang},
        )
    assert len(a.sent) == 1, f"{step}: the authors' code sent {len(a.sent)} prompts"
    return [{"role": "user", "content": a.sent[0]}]


# --------------------------------------------------------------------------------------- the cases
def cases() -> list[dict[str, Any]]:
    """Self-authored inputs (one per step and language)."""
    crit = {
        "dimension_weight": {
            "comprehensiveness": 0.4,
            "insight": 0.3,
            "instruction_following": 0.2,
            "readability": 0.1,
        },
        "criterions": {
            d: [{"criterion": f"{d}: 覆盖 coverage", "explanation": 'Does it "quote" {braces}?', "weight": 1.0}]
            for d in DIMS
        },
    }
    out: list[dict[str, Any]] = []
    for lang, prompt, art in (
        (
            "en",
            "Compare two heat-pump designs.",
            "Heat pumps move heat [1].\n\n## References\n[1] https://example.org/hp",
        ),
        ("zh", "比较两种热泵设计。", "热泵搬运热量[1]。\n\n参考文献\n[1] https://example.org/hp"),
    ):
        out += [
            {
                "step": "race",
                "language": lang,
                "prompt": prompt,
                "criteria": crit,
                "target": art,
                "reference": "Ref {x} report.",
            },
            {"step": "clean", "language": lang, "article": art},
            {"step": "fact_extract", "language": lang, "article": art},
            {
                "step": "fact_dedup",
                "language": lang,
                "statements": ["Heat pumps move heat.", "Heat is moved by heat pumps."],
            },
            {
                "step": "fact_validate",
                "language": lang,
                "reference": "A page {about} heat pumps.",
                "statements": ["Heat pumps move heat.", "They are 300% efficient."],
            },
        ]
    return out


def _goldens() -> list[dict[str, Any]]:
    return json.loads(GOLDENS.read_text(encoding="utf-8"))["cases"]


def test_pack_matches_the_goldens() -> None:
    gold = _goldens()
    assert [g["inputs"] for g in gold] == cases()
    for g in gold:
        assert digest(pack_messages(g["inputs"])) == g["sha256"], f"{g['inputs']['step']}/{g['inputs']['language']}"


def test_the_authors_code_still_produces_the_goldens(authors: types.SimpleNamespace, tmp_path: Path) -> None:
    for g in _goldens():
        got = authors_messages(authors, g["inputs"], tmp_path)
        assert digest(got) == g["sha256"], f"{g['inputs']['step']}/{g['inputs']['language']}"


ANSWERS = [
    '{"comprehensiveness": [], "insight": [], "instruction_following": [], "readability": []}',
    'Sure!\n```json\n{"insight": [{"criterion": "a", "article_1_score": 7, "article_2_score": 6}]}\n```',
    'text {"a": {"b": 1}} more {"c": 2}',
    'start {"a": 1 broken } and {"b": 2} end',
    '"comprehensiveness": [{"criterion": "x", "article_1_score": 6.5, "article_2_score": 4}] "insight": '
    '[{"criterion": "y", "article_1_score": 3, "article_2_score": 2}] readability',
    "no json at all",
    "```json\n[1, 2]\n```",
]


def test_our_json_extractor_agrees_with_theirs(authors: types.SimpleNamespace) -> None:
    for text in ANSWERS:
        assert extract_json(text) == authors.json_extractor.extract_json_from_markdown(text), text


if __name__ == "__main__":  # regenerate the goldens from the authors' code (mirror required)
    import tempfile

    root = mirror_root()
    if root is None:
        raise SystemExit("set REPORTBENCH_AUTHORS_MIRROR to a mirror holding the pinned commit")
    restore: dict[str, Any] = {}
    gen = _authors_modules(root, lambda p: sys.path.insert(0, p), restore.__setitem__)
    a = next(gen)
    with tempfile.TemporaryDirectory() as tmp:
        out = [{"inputs": c, "sha256": digest(authors_messages(a, c, Path(tmp)))} for c in cases()]
    GOLDENS.parent.mkdir(parents=True, exist_ok=True)
    GOLDENS.write_text(
        json.dumps({"authors": f"{pack.REPO}@{pack.COMMIT}", "cases": out}, ensure_ascii=False, indent=1) + "\n"
    )
    print(f"wrote {len(out)} goldens to {GOLDENS}")


def test_our_tasks_through_the_authors_pack() -> None:
    """judge.prompts=authors: our typed inputs -> the authors' messages, their answer formats -> our outputs."""
    from reportbench_deepresearch_bench import benchmark  # noqa: F401  (registers the tasks)

    from reportbench.judges.tasks import get_task
    from reportbench.prompt_packs.judging import authors_prompt

    def through(name: str, inputs: dict[str, Any], raw: str) -> Any:
        task = get_task(name)
        prompt = authors_prompt(task)
        typed = task.input_model(**inputs)
        assert prompt.messages(typed)[0]["role"] == "user" and len(prompt.messages(typed)) == 1
        return prompt.parse(raw, typed)

    answer = {d: [{"criterion": "c", "article_1_score": 8, "article_2_score": 6}] for d in DIMS}
    race_in = {"task_prompt": "Q", "criteria": "{}", "article_1": "A", "article_2": "B", "language": "en"}
    got = through("drb_race", race_in, "Scores:\n```json\n" + json.dumps(answer) + "\n```")
    assert got.insight[0].article_2_score == 6.0
    cits = through("drb_fact_extract", {"article": "x", "language": "zh"}, '[{"fact": "f", "ref_idx": 1, "url": "u"}]')
    assert cits.citations[0].ref_idx == "1"
    kept = through("drb_fact_dedup", {"statements": ["a", "b"], "language": "en"}, "```json\n[2]\n```")
    assert kept.keep == [2]
    verdicts = '[{"idx": 1, "result": "unknown"}]'
    assert (
        through("drb_fact_validate", {"reference": "p", "statements": ["a"], "language": "en"}, verdicts)
        .results[0]
        .result
        == "unknown"
    )
    assert len(through("drb_clean", {"article": "x", "language": "zh"}, "y" * 150).article) == 150


def test_authors_result_format_reproduces_their_published_race_means() -> None:
    """Their results/race/<model>/raw_results.jsonl averaged our way (_authors_race) gives their race_result.txt."""
    from reportbench_deepresearch_bench.benchmark import _authors_race

    root = mirror_root()
    assert root is not None
    model = root / "results" / "race" / "claude-3-7-sonnet-latest"
    if not (model / "raw_results.jsonl").is_file():
        pytest.skip("the mirror has no results/race/claude-3-7-sonnet-latest")
    rows = [json.loads(x) for x in (model / "raw_results.jsonl").read_text().splitlines() if x.strip()]
    ok = [{"race_overall": r["overall_score"], **{f"race_{d}": r[d] for d in DIMS}} for r in rows if "error" not in r]
    ours = _authors_race(ok)
    theirs = dict(line.split(": ") for line in (model / "race_result.txt").read_text().splitlines() if line.strip())
    assert ours == {k: float(v) for k, v in theirs.items()}
