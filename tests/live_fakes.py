"""Offline stand-ins for export.arxiv.org, api.openalex.org and arxiv.org/src, served through `responses`.

The data is self-authored in the services' real formats (tests/fixtures/live/): `arxiv_entries.xml` holds
Atom `<entry>` elements exactly as the arXiv API returns them, `openalex_works.json` holds OpenAlex work
objects. The callbacks answer the queries our code sends (id_list, cat+submittedDate, ti:"..." OR ...,
filter=doi:a|b, filter=title.search:"a" OR "b", select, per-page, start/max_results) by selecting from that
data and wrapping it in each API's envelope, so the real `arxiv` and `pyalex` client code parses every byte.
Every request is recorded in `calls` for the request-count assertions.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import responses
from lxml import etree

FIX = Path(__file__).parent / "fixtures" / "live"
ATOM = "http://www.w3.org/2005/Atom"
NS = {"atom": ATOM, "arxiv": "http://arxiv.org/schemas/atom"}
_ID_RE = re.compile(r"^(\d{4}\.\d{4,5}|[a-z][a-z\-]*(\.[A-Z]{2})?/\d{7})(v\d+)?$")

ARXIV_API = re.compile(r"https://export\.arxiv\.org/api/query\?.*")
OPENALEX_WORKS = re.compile(r"https://api\.openalex\.org/works\?.*")
EPRINT = re.compile(r"https?://arxiv\.org/src/.+")


def norm(text: str | None) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", (text or "").lower()).split())


@dataclass
class ArxivEntry:
    base_id: str
    version: int
    title: str
    categories: list[str]
    published: str  # YYYYMMDDHHMM, for submittedDate ranges
    xml: str


def load_arxiv_entries(path: Path = FIX / "arxiv_entries.xml") -> dict[str, ArxivEntry]:
    root = etree.parse(str(path)).getroot()
    out: dict[str, ArxivEntry] = {}
    for e in root.iterfind("atom:entry", NS):
        short = e.findtext("atom:id", namespaces=NS).rsplit("/abs/", 1)[1]
        m = _ID_RE.match(short)
        assert m, short
        pub = e.findtext("atom:published", namespaces=NS)
        out[m.group(1)] = ArxivEntry(
            base_id=m.group(1),
            version=int(short.rsplit("v", 1)[1]),
            title=" ".join(e.findtext("atom:title", namespaces=NS).split()),
            categories=[c.get("term") for c in e.iterfind("atom:category", NS)],
            published=re.sub(r"\D", "", pub)[:12],
            xml=etree.tostring(e, encoding="unicode"),
        )
    return out


def atom_feed(entries: list[ArxivEntry], total: int, start: int, per_page: int, url: str) -> bytes:
    """The arXiv API feed envelope (namespaces and opensearch elements as the live API sends them)."""
    body = "\n".join(e.xml for e in entries)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom">\n'
        f"  <id>https://arxiv.org/api/{hashlib.sha1(url.encode()).hexdigest()[:27]}</id>\n"
        "  <title>arXiv Query</title>\n"
        "  <updated>2025-06-10T00:00:00Z</updated>\n"
        f'  <link href="{url.replace("&", "&amp;")}" type="application/atom+xml"/>\n'
        f"  <opensearch:itemsPerPage>{per_page}</opensearch:itemsPerPage>\n"
        f"  <opensearch:totalResults>{total}</opensearch:totalResults>\n"
        f"  <opensearch:startIndex>{start}</opensearch:startIndex>\n"
        f"{body}\n</feed>\n"
    ).encode()


@dataclass
class FakeArxiv:
    entries: dict[str, ArxivEntry] = field(default_factory=load_arxiv_entries)
    calls: list[str] = field(default_factory=list)

    def callback(self, request: Any) -> tuple[int, dict[str, str], bytes]:
        self.calls.append(request.url)
        q = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query, keep_blank_values=True).items()}
        start, per_page = int(q.get("start", 0)), int(q.get("max_results", 10))
        ids = [i for i in q.get("id_list", "").split(",") if i]
        query = q.get("search_query", "")
        if ids:
            bad = [i for i in ids if not _ID_RE.match(i)]
            if bad:
                return 400, {"Content-Type": "application/atom+xml"}, atom_feed([], 1, 0, 1, request.url)
            hits = [self.entries[m.group(1)] for i in ids if (m := _ID_RE.match(i)) and m.group(1) in self.entries]
        elif query.startswith("cat:"):
            cat = re.match(r"cat:(\S+)", query).group(1)
            lo, hi = re.search(r"submittedDate:\[(\d{12}) TO (\d{12})\]", query).groups()
            hits = [e for e in self.entries.values() if cat in e.categories and lo <= e.published <= hi]
            hits.sort(key=lambda e: e.published, reverse=True)
        else:
            phrases = [norm(p) for p in re.findall(r'ti:"([^"]*)"', query)]
            hits = sorted(
                (e for e in self.entries.values() if any(p and p in norm(e.title) for p in phrases)),
                key=lambda e: e.base_id,
            )
        page = hits[start : start + per_page]
        return (
            200,
            {"Content-Type": "application/atom+xml; charset=utf-8"},
            atom_feed(page, len(hits), start, per_page, request.url),
        )


def _load_works() -> list[dict[str, Any]]:
    return json.loads((FIX / "openalex_works.json").read_text())["works"]


@dataclass
class FakeOpenAlex:
    works: list[dict[str, Any]] = field(default_factory=_load_works)
    calls: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    reject_dois: set[str] = field(default_factory=set)  # a batch containing one -> HTTP 400 (bad query)
    fail_all: bool = False  # every request -> HTTP 503

    def callback(self, request: Any) -> tuple[int, dict[str, str], str]:
        self.calls.append(request.url)
        self.headers.append(dict(request.headers))
        if self.fail_all:
            return 503, {"Content-Type": "application/json"}, json.dumps({"error": "Service Unavailable"})
        q = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
        flt = q.get("filter", "")
        if flt.startswith("doi:"):
            dois = {d.lower() for d in flt[len("doi:") :].split("|")}
            if dois & self.reject_dois:
                body = {
                    "error": "Invalid query parameters error.",
                    "message": f"bad doi in {sorted(dois & self.reject_dois)}",
                }
                return 400, {"Content-Type": "application/json"}, json.dumps(body)
            hits = [w for w in self.works if w["doi"] and w["doi"].lower().removeprefix("https://doi.org/") in dois]
        elif flt.startswith("title.search:"):
            phrases = [norm(p) for p in re.findall(r'"([^"]*)"', flt)]
            hits = [w for w in self.works if any(p and p in norm(w["display_name"]) for p in phrases)]
        else:
            return (
                400,
                {"Content-Type": "application/json"},
                json.dumps({"error": "unsupported in fixture", "message": flt}),
            )
        per_page = int(q.get("per-page", 25))
        select = q.get("select")
        page = hits[:per_page]
        if select:
            keep = select.split(",")
            page = [{k: w.get(k) for k in keep} for w in page]
        body = {
            "meta": {
                "count": len(hits),
                "db_response_time_ms": 11,
                "page": 1,
                "per_page": per_page,
                "groups_count": None,
            },
            "results": page,
            "group_by": [],
        }
        return 200, {"Content-Type": "application/json"}, json.dumps(body)


# ----------------------------------------------------------------------------------------------- e-prints


def targz(files: dict[str, str | bytes]) -> bytes:
    """A gzip'd tar e-print (what arXiv serves for multi-file sources)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in sorted(files.items()):
            raw = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            info.mtime = 1_700_000_000
            tf.addfile(info, io.BytesIO(raw))
    return buf.getvalue()


def gzip_tex(text: str, name: str = "main.tex") -> bytes:
    """A gzip'd single .tex (what arXiv serves for single-file sources; FNAME set like arXiv's)."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename=name, mode="wb", fileobj=buf, mtime=1_700_000_000) as gz:
        gz.write(text.encode())
    return buf.getvalue()


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def long_related_work(n_sentences: int = 110) -> dict[str, str]:
    """A paper whose related work exceeds 1000 words (cites resolve, so only the length rule drops it)."""
    keys = [f"k{i}" for i in range(6)]
    sents = [
        f"Prior study number {i} examined a closely related question in considerable depth~\\cite{{{keys[i % 6]}}}."
        for i in range(n_sentences)
    ]
    main = (
        "\\documentclass{article}\n\\begin{document}\n\\section{Related Work}\n"
        + "\n".join(sents)
        + "\n\\section{Method}\nText.\n\\bibliography{refs}\n\\end{document}\n"
    )
    bib = "\n".join(f"@misc{{{k}, title = {{Synthetic Prior Study {k}}}, year = {{2020}}}}" for k in keys)
    return {"main.tex": main, "refs.bib": bib}


def default_eprints() -> dict[str, bytes]:
    """id (versioned) -> bytes arXiv would serve; ids absent here answer 404."""
    e = FIX / "eprints"
    good = targz(tree(e / "2513.00101"))
    return {
        "2513.00101v1": good,
        "2513.00102v1": gzip_tex((e / "2513.00102" / "main.tex").read_text()),
        # 2513.00104v1: absent -> 404
        "2513.00105v1": good[: len(good) // 2],  # truncated download: a broken tarball
        "2513.00106v1": targz(long_related_work()),
        "2513.00107v1": targz(tree(e / "2513.00107")),
        "2513.00108v1": b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n%%EOF\n",
        "2513.00109v1": targz(tree(e / "2513.00109")),
    }


@dataclass
class FakeEprints:
    files: dict[str, bytes] = field(default_factory=default_eprints)
    calls: list[str] = field(default_factory=list)

    def callback(self, request: Any) -> tuple[int, dict[str, str], bytes]:
        self.calls.append(request.url)
        key = request.url.rsplit("/src/", 1)[1]
        data = self.files.get(key)
        if data is None:
            return 404, {"Content-Type": "text/html"}, b"<html><body>404 Not Found</body></html>"
        ctype = "application/pdf" if data.startswith(b"%PDF") else "application/gzip"
        return 200, {"Content-Type": ctype}, data


@dataclass
class FakeServices:
    arxiv: FakeArxiv = field(default_factory=FakeArxiv)
    openalex: FakeOpenAlex = field(default_factory=FakeOpenAlex)
    eprints: FakeEprints = field(default_factory=FakeEprints)

    def install(self, rsps: responses.RequestsMock) -> FakeServices:
        rsps.add_callback(responses.GET, ARXIV_API, callback=self.arxiv.callback)
        rsps.add_callback(responses.GET, OPENALEX_WORKS, callback=self.openalex.callback)
        rsps.add_callback(responses.GET, EPRINT, callback=self.eprints.callback)
        return self

    @property
    def n_calls(self) -> int:
        return len(self.arxiv.calls) + len(self.openalex.calls) + len(self.eprints.calls)


def live_test_params(base: dict[str, Any], tmp: Path, **live: Any) -> dict[str, Any]:
    """Composed params with the live section pointed at tmp (cache) and pacing/retries off (fakes answer at once)."""
    import copy

    p = copy.deepcopy(base)
    cfg = p["live"]
    cfg.update(
        {
            "name": "fixture-2025-06",
            "categories": ["cs.CL", "cs.IR"],
            "window": {"start": "2025-06-01", "end": "2025-06-07"},
        }
    )
    cfg["http"].update(
        {
            "cache_dir": str(tmp / "http-cache"),
            "arxiv_interval_s": 0.0,
            "openalex_interval_s": 0.0,
            "retries": 0,
            "backoff_factor": 0.0,
        }
    )
    for key, value in live.items():
        node = cfg
        parts = key.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = value
    p["judge"]["runtime"]["progress"] = False
    return p


def all_urls(groups: Iterable[list[str]]) -> list[str]:
    return [u for g in groups for u in g]
