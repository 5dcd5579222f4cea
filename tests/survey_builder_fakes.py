"""Offline stand-ins for the survey builder: OpenAlex `/works` (listing + title search), arXiv e-prints, and a
scripted stub generator/judge.

Data is self-authored (tests/fixtures/survey_builder/): `openalex_surveys.json` (eight fictional surveys as
OpenAlex work objects), `openalex_cited.json` (works the citation check can find), `eprints/<id>/` (LaTeX),
`script.json` (the scripted generator/judge decisions). The OpenAlex callback evaluates the filters our code
sends (type, publication window, field, arXiv source, title.search, select, cursor paging) so the real pyalex
client parses every byte; every request is recorded for the request-count assertions. The responder answers
each survey-builder prompt (recognised by its system message) in that prompt's JSON format, from the script
or from the prompt text itself — deterministic, so the judge cache makes a rebuild free.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import responses

from live_fakes import norm, targz, tree

FIX = Path(__file__).parent / "fixtures" / "survey_builder"
OPENALEX_WORKS = re.compile(r"https://api\.openalex\.org/works\?.*")
EPRINT = re.compile(r"https?://arxiv\.org/src/.+")
SCRIPT: dict[str, Any] = json.loads((FIX / "script.json").read_text())


def _works(name: str) -> list[dict[str, Any]]:
    return json.loads((FIX / name).read_text())["works"]


def _split_filter(flt: str) -> dict[str, str]:
    """`a:b,c:d` -> {a: b, c: d}; commas inside a quoted title.search value stay."""
    out: dict[str, str] = {}
    for part in re.findall(r'(?:[^,"]|"[^"]*")+', flt):
        key, _, value = part.partition(":")
        out[key] = value
    return out


@dataclass
class FakeOpenAlex:
    surveys: list[dict[str, Any]] = field(default_factory=lambda: _works("openalex_surveys.json"))
    cited: list[dict[str, Any]] = field(default_factory=lambda: _works("openalex_cited.json"))
    calls: list[str] = field(default_factory=list)
    fail_listing: bool = False

    def _listing(self, f: dict[str, str]) -> list[dict[str, Any]]:
        types = set(f["type"].split("|"))
        lo, hi = f.get("from_publication_date", ""), f.get("to_publication_date", "9999")
        words = [norm(w) for w in re.findall(r'"([^"]*)"', f["title.search"])]
        hits = []
        for w in self.surveys:
            if w["type"] not in types or not lo <= w["publication_date"] <= hi:
                continue
            fid = f.get("primary_topic.field.id")
            if fid and not w["primary_topic"]["field"]["id"].endswith(fid):
                continue
            if "locations.source.id" in f and not any(
                (loc.get("source") or {}).get("id", "").endswith(f["locations.source.id"]) for loc in w["locations"]
            ):
                continue
            if any(k.split()[0][:5] in norm(w["display_name"]) for k in words):  # OpenAlex stems: "surveying" hits
                hits.append(w)
        return sorted(hits, key=lambda w: w["publication_date"], reverse=True)

    def callback(self, request: Any) -> tuple[int, dict[str, str], str]:
        self.calls.append(request.url)
        q = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
        f = _split_filter(q.get("filter", ""))
        if "type" in f:
            if self.fail_listing:
                return 503, {"Content-Type": "application/json"}, json.dumps({"error": "Service Unavailable"})
            hits = self._listing(f)
        elif "title.search" in f:
            phrases = [norm(p) for p in re.findall(r'"([^"]*)"', f["title.search"])]
            hits = [w for w in self.cited if any(p and p in norm(w["display_name"]) for p in phrases)]
        else:
            return 400, {"Content-Type": "application/json"}, json.dumps({"error": "unsupported", "message": str(f)})
        per_page = int(q.get("per-page", 25))
        cursor = q.get("cursor")
        start = 0 if cursor in (None, "*") else int(cursor.removeprefix("c"))
        page = hits[start : start + per_page]
        nxt = f"c{start + per_page}" if cursor is not None and start + per_page < len(hits) else None
        if q.get("select"):
            keep = q["select"].split(",")
            page = [{k: w.get(k) for k in keep} for w in page]
        meta = {"count": len(hits), "db_response_time_ms": 9, "page": None if cursor else 1, "per_page": per_page,
                "next_cursor": nxt, "groups_count": None}  # fmt: skip
        return 200, {"Content-Type": "application/json"}, json.dumps({"meta": meta, "results": page, "group_by": []})


def default_eprints() -> dict[str, bytes]:
    e = FIX / "eprints"
    return {
        "2605.01001": targz(tree(e / "2605.01001")),
        "2605.01002": targz(tree(e / "2605.01002")),
        "2605.01003": targz(tree(e / "2605.01003")),
        "2605.01004": targz(tree(e / "2605.01002")),  # never requested: the review check drops it first
        "2605.01006": b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n%%EOF\n",
        "2605.01008": targz(tree(e / "2605.01008")),
    }


@dataclass
class FakeEprints:
    files: dict[str, bytes] = field(default_factory=default_eprints)
    calls: list[str] = field(default_factory=list)

    def callback(self, request: Any) -> tuple[int, dict[str, str], bytes]:
        self.calls.append(request.url)
        data = self.files.get(request.url.rsplit("/src/", 1)[1])
        if data is None:
            return 404, {"Content-Type": "text/html"}, b"<html><body>404 Not Found</body></html>"
        return 200, {"Content-Type": "application/gzip"}, data


@dataclass
class FakeServices:
    openalex: FakeOpenAlex = field(default_factory=FakeOpenAlex)
    eprints: FakeEprints = field(default_factory=FakeEprints)

    def install(self, rsps: responses.RequestsMock) -> FakeServices:
        rsps.add_callback(responses.GET, OPENALEX_WORKS, callback=self.openalex.callback)
        rsps.add_callback(responses.GET, EPRINT, callback=self.eprints.callback)
        return self

    @property
    def n_calls(self) -> int:
        return len(self.openalex.calls) + len(self.eprints.calls)


# -------------------------------------------------------------------------------------- scripted responder
def _system_to_task(prompts_dir: Path) -> dict[str, str]:
    import yaml

    out = {}
    for p in sorted((prompts_dir / "survey_builder").glob("*.yaml")):
        data = yaml.safe_load(p.read_text())
        out[" ".join(str(data["system"]).split())] = p.stem
    return out


def _field(user: str, label: str) -> str:
    m = re.search(rf"^{re.escape(label)}:? ?(.*)$", user, flags=re.MULTILINE)
    return m.group(1).strip() if m else ""


def _block(user: str, start: str, end: str) -> str:
    return user.split(start, 1)[1].split(end, 1)[0].strip()


def _numbered(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^\[\d+\] (.*)$", text, flags=re.MULTILINE)]


def _strip(s: str) -> str:
    return re.sub(r"\s+([,.;:])", r"\1", re.sub(r"\s*\[[^\[\]]{1,200}\]", "", s)).strip()


def _clause(sentence: str) -> str:
    s = sentence.strip().rstrip(".")
    return s[0].lower() + s[1:]


def make_responder(prompts_dir: Path, script: dict[str, Any] | None = None) -> Any:
    """A stub-server responder that plays the scripted generator/judge for every survey-builder prompt."""
    script = script or SCRIPT
    tasks = _system_to_task(prompts_dir)

    def respond(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        system = " ".join(str(messages[0]["content"]).split()) if messages[0]["role"] == "system" else ""
        user = str(messages[-1]["content"])
        task = tasks.get(system)
        if task is None:
            return "unrecognised prompt"
        if task == "survey_check":
            title = _field(user, "Title")
            ok = title not in script["not_reviews"]
            why = "synthesises prior work" if ok else "primary survey data"
            return json.dumps({"is_literature_review": ok, "reason": why})
        if task == "question_tree":
            n = len(_numbered(user))
            nodes = [{"id": "Q1", "question": "What does the section establish?", "sentences": list(range(1, n + 1))}]
            for k, start in enumerate(range(1, n + 1, 2), start=1):
                ids = list(range(start, min(n, start + 1) + 1))
                nodes.append({"id": f"Q1.{k}", "question": f"What do sentences {ids} say?", "sentences": ids})
            return json.dumps({"nodes": nodes})
        if task == "query_answer":
            section = _field(user, "Section")
            sents = _numbered(_block(user, "Sentences:", "Question tree"))
            plan = script["queries"].get(section) or {"query": f"What is known about {section.lower()}?",
                                                      "sentences": list(range(1, len(sents) + 1))}  # fmt: skip
            answer = " ".join(_strip(sents[i - 1]) for i in plan["sentences"])
            return json.dumps({"query": plan["query"], "answer": answer, "sentences": plan["sentences"]})
        if task in ("self_containment", "answer_variability"):
            query = _field(user, "Query")
            default = 8 if task == "self_containment" else 2
            score = next((v for k, v in script[task].items() if k in query), default)
            return json.dumps({"score": score, "reason": f"scripted {task}"})
        if task == "rephrase":
            answer = _block(user, "Answer:", "Rewrite the query")
            return json.dumps({"query": _field(user, "Query"), "answer": " ".join(answer.split())})
        if task == "citation_in_query":
            has = bool(re.search(r"et al\.|\[\d+\]", _field(user, "Query")))
            return json.dumps({"has_citation": has, "reason": "author-year mention" if has else "none"})
        if task == "field_alignment":
            query = _field(user, "Query")
            aligned = not any(k in query for k in script["misaligned"])
            return json.dumps({"aligned": aligned, "reason": "scripted"})
        if task.startswith("rubric_") and task != "rubric_rank":  # the six generators share one system message
            m = re.search(r"Write exactly (\d+) (information|depth|citation) rubric items", user)
            n, kind = int(m.group(1)), m.group(2)
            if "Reference answer (from a recent survey):" not in user:  # parametric: the query only
                query = _field(user, "Query").rstrip("?")
                if kind == "citation":
                    return json.dumps({"items": script["parametric"]["citation"][:n]})
                vacuous = f"Does the response {'mention' if kind == 'information' else 'discuss'} {_clause(query)}?"
                items = [vacuous, *script["parametric"][kind], vacuous]
                return json.dumps({"items": (items * n)[:n]})
            answer = _block(user, "Reference answer (from a recent survey):", "References the survey cites")
            sents = [s for s in re.split(r"(?<=\.) (?=[A-Z])", answer) if s]
            if kind == "citation":
                refs = re.findall(r"^\[[^\]]+\] (.*?) \((\d{4}|n\.d\.)\)\. (.+)$", user, flags=re.MULTILINE)
                items = []
                for authors, year, title in refs[:n]:
                    first = authors.split(",")[0].strip().split()[-1] if authors.strip() else "Unknown"
                    items.append({"text": f"Does the response cite {first} et al. ({year}) (title: {title})?",
                                  "first_author": first, "year": int(year) if year.isdigit() else None,
                                  "title": title})  # fmt: skip
                return json.dumps({"items": items})
            verb = "state that" if kind == "information" else "explain in detail why"
            offset = 0 if kind == "information" else 4
            items = [f"Does the response {verb} {_clause(sents[(offset + i) % len(sents)])}?" for i in range(n)]
            return json.dumps({"items": items})
        if task == "rubric_rank":  # a fixed "importance" order (hash of the text) mixes both sets; last one a dup
            items = _numbered(user)
            n = len(items)
            dups = [n] if n >= 10 else []
            keep = [i for i in range(1, n + 1) if i not in dups]
            keep.sort(key=lambda i: hashlib.sha256(items[i - 1].encode()).hexdigest())
            return json.dumps({"ranking": keep, "duplicates": dups})
        return "unhandled task"

    return respond
