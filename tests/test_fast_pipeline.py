"""Issue 23 "fast to iterate": what keeps the default `dvc repro` cheap without losing a behaviour.

- the agreement stages exist only when asked for (`plan.agreement`);
- sentence splitting loads Punkt without nltk's package import (which pulls scipy.stats), same sentences;
- bench/pipeline_startup.py reads the per-stage CPU its shim records.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reportbench.plan import PlanError, agreement_enabled, build_plan

BENCHMARKS = {
    "deepscholar": {"release": {"name": "demo", "source": "data/demo/deepscholar"}, "systems": {}},
    "deer": {"release": {"name": "demo"}, "systems": {}, "stages": {"fetch": True}},
}


@pytest.mark.core
@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (None, False),
        ({"second_judge": "none"}, False),
        ({"second_judge": "stub"}, True),
        ({"second_judge": {"name": "gpt41", "backend": "litellm"}}, True),
        ({"enabled": True, "second_judge": "none"}, True),
        ({"enabled": False, "second_judge": "stub"}, False),
    ],
)
def test_agreement_stages_exist_only_when_asked_for(cfg: dict | None, expected: bool) -> None:
    assert agreement_enabled(cfg) is expected
    plan = build_plan(BENCHMARKS, None, agreement=cfg)
    assert sorted(plan["agreement"]) == (["deepscholar", "deer"] if expected else [])


@pytest.mark.core
def test_agreement_plan_entry_names_what_the_stage_reads() -> None:
    plan = build_plan(BENCHMARKS, None, agreement={"second_judge": "stub"})
    assert plan["agreement"]["deer"] == {
        "release": "demo",
        "source": "src/reportbench/protocols/deer",  # a release built in code depends on its benchmark's code
        "cross_dep": "data/releases/deer/demo",
        "pages_dep": "data/pages/deer/demo",
    }
    with pytest.raises(PlanError, match="agreement.enabled"):
        agreement_enabled({"enabled": "sometimes"})


SPLIT_THEN_IMPORT = """
import json, sys
from reportbench.reports import sentences
text = "We use e.g. BM25 here. Smith et al. disagree. Fig. 2 shows it. Done."
light = sentences.split_sentences(text, extra_abbreviations=())
loaded = {"scipy": "scipy" in sys.modules, "nltk": sorted(m for m in sys.modules if m.startswith("nltk"))}
import nltk  # the real package, complete, after the light load
sentences._tokenizer.cache_clear()
full = sentences.split_sentences(text, extra_abbreviations=())
print(json.dumps({"light": light, "full": full, "complete": hasattr(nltk, "sent_tokenize"), **loaded}))
"""


@pytest.mark.integration
def test_sentence_splitting_skips_nltk_package_import_and_splits_as_nltk() -> None:
    proc = subprocess.run([sys.executable, "-c", SPLIT_THEN_IMPORT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["scipy"] is False and out["nltk"] == [], out  # nothing of nltk left behind for a later import
    assert out["complete"], "a later `import nltk` must get the whole package"
    assert out["light"] == ["We use e.g.", "BM25 here.", "Smith et al. disagree.", "Fig.", "2 shows it.", "Done."]
    assert out["full"] == out["light"]  # Punkt loaded through nltk's package import splits the same way


def _bench() -> object:
    path = Path(__file__).resolve().parents[1] / "bench" / "pipeline_startup.py"
    spec = importlib.util.spec_from_file_location("pipeline_startup", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.core
def test_bench_reads_shell_times_and_names_stages_like_dvc() -> None:
    bench = _bench()
    assert bench.shell_times_cpu("0m1.250000s,0m0.250000s") == pytest.approx(1.5)  # type: ignore[attr-defined]
    assert bench.shell_times_cpu("1m2.5s,0m0.5s") == pytest.approx(63.0)  # type: ignore[attr-defined]
    cmd = ["stages/run_system.py", "--benchmark", "deer", "--system", "careful_writer", "--out", "x"]
    assert bench.stage_label(cmd) == "system@deer.careful_writer"  # type: ignore[attr-defined]
    assert bench.stage_label(["stages/judge.py", "--benchmark", "deer", "--out", "x"]) == "judge@deer"  # type: ignore[attr-defined]
    assert bench.stage_label(["stages/build_site.py", "--all", "--site", "site"]) == "site"  # type: ignore[attr-defined]
