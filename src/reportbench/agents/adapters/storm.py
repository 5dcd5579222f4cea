"""Adapter: Stanford OVAL's STORM (PyPI `knowledge-storm`), run inside its own venv.

STORM's wiki pipeline (perspective-guided conversations -> outline -> article -> polish) runs unchanged via
`STORMWikiRunner`, with DeepScholar-bench's reported configuration as defaults (3 perspectives, up to 3
search queries per turn, top 15 results per query, 30 collected references per section) and all five LM
roles set to `knowledge_storm.lm.LitellmModel("openai/<llm.model>", api_base=<budget proxy>)`.
Search: STORM's own `TavilySearchRM`, whose `tavily.TavilyClient` is replaced by one pointed at the search
proxy (`api_base_url`), and which passes `max_results=search_top_k` (STORM 1.1.1's TavilySearchRM builds
the argument but never passes it, so Tavily's default of 5 applied).

The encoder: STORM 1.1.1 embeds snippets with sentence-transformers' `paraphrase-MiniLM-L6-v2`, downloaded
from the Hugging Face hub on first use. `options.encoder`:
- `sentence-transformers` (default, STORM as published): needs the model in the HF cache or hub access;
- `hashed`: our stand-in, a deterministic hashed bag-of-words vector (no download) for offline runs and
  tests; it changes which snippets STORM retrieves per section, so runs with it are NOT STORM-as-published
  and the result says so in `agent_version`.

Output: `storm_gen_article_polished.txt` (`[n]` markers) and `url_to_info.json` (`url_to_unified_index`),
turned into the report body plus the numbered reference list. Other options: `max_conv_turn`,
`max_perspective`, `max_search_queries_per_turn`, `search_top_k`, `retrieve_top_k`, `max_thread_num`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
# this file's name would shadow the agent's own package (open_deep_research is even a namespace package, which
# any plain module of that name beats): our folder leaves sys.path and the shared helpers load by file path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
_spec = importlib.util.spec_from_file_location("_oss_common", _HERE / "_oss_common.py")
assert _spec is not None and _spec.loader is not None
common = importlib.util.module_from_spec(_spec)
sys.modules["_oss_common"] = common
_spec.loader.exec_module(common)

DEEPSCHOLAR_ARGS = {"max_conv_turn": 3, "max_perspective": 3, "max_search_queries_per_turn": 3,
                    "search_top_k": 15, "retrieve_top_k": 30, "max_thread_num": 3}
# the names DeepScholar-bench's description uses (conf/*/systems/agents.yaml) -> STORMWikiRunnerArguments
ALIASES = {"perspectives": "max_perspective", "max_queries_per_turn": "max_search_queries_per_turn",
           "max_refs_per_section": "retrieve_top_k"}
HASH_DIM = 512
ST_MODEL = "paraphrase-MiniLM-L6-v2"  # what STORM 1.1.1's StormInformationTable loads


class HashedEncoder:
    """Stand-in for SentenceTransformer: L2-normalised hashed bag of lower-cased word tokens (offline only)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def _one(self, text: str) -> Any:
        import numpy as np

        v = np.zeros(HASH_DIM, dtype="float32")
        for tok in re.findall(r"[a-z0-9]+", str(text).lower()):
            v[int(hashlib.md5(tok.encode()).hexdigest()[:8], 16) % HASH_DIM] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def encode(self, texts: Any, **kwargs: Any) -> Any:
        import numpy as np

        if isinstance(texts, str):
            return self._one(texts)
        return np.stack([self._one(t) for t in texts]) if len(texts) else np.zeros((0, HASH_DIM), "float32")


def _load_sentence_encoder(cls: Any) -> Any:
    """STORM's encoder, loaded BEFORE any LLM call: STORM needs it only after its whole research phase, so a
    missing model would otherwise fail the task after the budget was spent."""
    try:
        return cls(ST_MODEL)
    except Exception as exc:  # no hub access and not in the HF cache: one clear message
        raise RuntimeError(
            f"sentence-transformers could not load {ST_MODEL!r} ({type(exc).__name__}); put it in the Hugging Face "
            "cache (HF_HOME, passed through options.env) or set options.encoder: hashed (not STORM as published)"
        ) from None


def _tavily_rm(req: dict[str, Any], k: int, stats: dict[str, Any]) -> Any:
    from knowledge_storm.rm import TavilySearchRM
    from tavily import TavilyClient

    base = str(req["search"]["base_url"]).rstrip("/")
    key = common.search_key(req)

    class ProxyTavily(TavilyClient):  # type: ignore[misc, valid-type]
        def search(self, query: str, *a: Any, **kw: Any) -> Any:
            kw.setdefault("max_results", k)
            stats["queries"].append(query)
            return super().search(query, *a, **kw)

    rm = TavilySearchRM(tavily_search_api_key=key, k=k, include_raw_content=False)
    rm.tavily_client = ProxyTavily(api_key=key, api_base_url=base)
    return rm


def storm_report(
    article: str, url_to_index: dict[str, int], url_to_info: dict[str, Any]
) -> tuple[str, list[dict[str, Any]]]:
    """(body, references) from STORM's polished article and its url -> citation index map."""
    refs = []
    for url, n in sorted(url_to_index.items(), key=lambda kv: int(kv[1])):
        info = url_to_info.get(url) or {}
        refs.append({"n": int(n), "url": url, "title": str(info.get("title") or "")})
    cited = common.cited_numbers(article)
    return article.strip() + "\n", [r for r in refs if r["n"] in cited]


def main(req: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    opts = req.get("options") or {}
    encoder = str(opts.get("encoder") or "sentence-transformers")
    if encoder not in ("sentence-transformers", "hashed"):
        raise ValueError(f"options.encoder must be 'sentence-transformers' or 'hashed', not {encoder!r}")
    loaded = None
    if encoder == "sentence-transformers":  # before STORM's own imports (dspy, litellm): a missing model fails sooner
        from sentence_transformers import SentenceTransformer

        loaded = _load_sentence_encoder(SentenceTransformer)
    import knowledge_storm.storm_wiki.modules.storm_dataclass as storm_dataclass
    from knowledge_storm import STORMWikiLMConfigs, STORMWikiRunner, STORMWikiRunnerArguments
    from knowledge_storm.lm import LitellmModel

    if encoder == "hashed":
        storm_dataclass.SentenceTransformer = HashedEncoder  # type: ignore[attr-defined, misc]
    else:  # the class storm_dataclass imported from sentence_transformers, already loaded with STORM's model
        storm_dataclass.SentenceTransformer = lambda *a, **k: loaded  # type: ignore[attr-defined]
    llm = req["llm"]
    lm_kwargs = {"api_key": common.llm_key(req), "api_base": common.llm_base(req), "temperature": 1.0,
                 "top_p": 0.9, "cache": False}
    lms = STORMWikiLMConfigs()
    for setter, max_tokens in (("set_conv_simulator_lm", 500), ("set_question_asker_lm", 500),
                               ("set_outline_gen_lm", 400), ("set_article_gen_lm", 700),
                               ("set_article_polish_lm", 4000)):
        getattr(lms, setter)(LitellmModel(model=f"openai/{llm['model']}", max_tokens=max_tokens, **lm_kwargs))
    for alias, name in ALIASES.items():
        if alias in opts:
            opts = {**opts, name: opts[alias]}
    unknown = set(opts) - set(DEEPSCHOLAR_ARGS) - set(ALIASES) - {"encoder"}
    if unknown:
        raise ValueError(f"unknown storm option(s) {sorted(unknown)}; known: encoder, {', '.join(DEEPSCHOLAR_ARGS)}")
    knobs = {k: int(opts.get(k, v)) for k, v in DEEPSCHOLAR_ARGS.items()}
    out_dir = Path(req.get("workdir") or ".") / "storm"
    args = STORMWikiRunnerArguments(output_dir=str(out_dir), **knobs)
    stats: dict[str, Any] = {"queries": []}
    runner = STORMWikiRunner(args, lms, _tavily_rm(req, knobs["search_top_k"], stats))
    runner.run(topic=req["question"], do_research=True, do_generate_outline=True, do_generate_article=True,
               do_polish_article=True)
    runner.post_run()
    art_dir = Path(runner.article_output_dir)
    polished = art_dir / "storm_gen_article_polished.txt"
    info_path = art_dir / "url_to_info.json"
    version = common.package_version("knowledge-storm") + ("" if encoder != "hashed" else " (encoder: hashed)")
    base = {"queries": stats["queries"], "pages_read": [], "agent_version": version, "models": [llm["model"]]}
    if not polished.is_file() or not info_path.is_file():
        return {**base, "report_markdown": "", "references": [], "outcome": "failed",
                "reason": f"STORM wrote no {polished.name if not polished.is_file() else info_path.name}"}
    info = json.loads(info_path.read_text(encoding="utf-8"))
    body, refs = storm_report(polished.read_text(encoding="utf-8"), dict(info.get("url_to_unified_index") or {}),
                              dict(info.get("url_to_info") or {}))
    return {**base, "report_markdown": common.render(body, refs), "references": refs, "outcome": "ok",
            "reason": None}


if __name__ == "__main__":
    sys.exit(common.run(main))
