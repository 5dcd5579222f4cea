"""Cited-URL collection and normalisation: one cache key per page, every raw spelling kept.

Why: reports cite the same page as `https://Example.org:443/a?utm_source=x#sec` and `https://example.org/a`;
fetching both would double the traffic and split the evidence. `normalise_url` makes the cache key, the raw
spellings stay in the records so a reader can see what each system actually wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from reportbench.types import Report

DEFAULT_PORTS = {"http": 80, "https": 443}

# Query parameters that identify a click or a campaign, never the page (exact names, lower-cased).
TRACKING_PARAMS = frozenset(
    {
        "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "ttclid", "li_fat_id",
        "igshid", "mc_cid", "mc_eid", "ref_src", "ref_url", "_hsenc", "_hsmi", "__hstc", "__hssc", "__hsfp",
        "hsctatracking", "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "vero_conv", "_ga", "_gl",
        "rb_clickid", "s_cid", "spm", "wickedid", "cmpid",
    }
)
TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "ga_")

# Bare links in a report body; parentheses are allowed inside and unbalanced trailing ones trimmed later.
_BARE_URL_RE = re.compile(r"""https?://[^\s<>"'`\[\]{}|\\^]+""", re.IGNORECASE)
_TRAILING_PUNCT = ".,;:!?*_~'\""


def _is_tracking(name: str) -> bool:
    n = name.lower()
    return n in TRACKING_PARAMS or n.startswith(TRACKING_PREFIXES)


def _clean_query(query: str) -> str:
    """Drop tracking parameters, keep the others exactly as written and in order."""
    if not query:
        return ""
    kept = [p for p in query.split("&") if p and not _is_tracking(p.split("=", 1)[0])]
    return "&".join(kept)


def normalise_url(raw: str) -> str:
    """The cache key of a cited URL.

    Lower-cases scheme and host, drops a trailing dot on the host, default ports, the fragment (text fragments
    `#:~:text=` included) and tracking parameters; an empty http(s) path becomes `/`. Path and the remaining
    query are kept as written (servers may treat them case-sensitively). Unparseable input is returned
    stripped, so it still gets a record (the guard refuses it later).
    """
    s = raw.strip()
    try:
        parts = urlsplit(s)
        port = parts.port
    except ValueError:
        return s
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo:
        netloc = f"{userinfo}@{host}"
    if port is not None and DEFAULT_PORTS.get(scheme) != port:
        netloc = f"{netloc}:{port}"
    path = parts.path
    if not path and scheme in DEFAULT_PORTS and host:
        path = "/"
    return urlunsplit((scheme, netloc, path, _clean_query(parts.query), ""))


def _trim_link(url: str) -> str:
    """Drop sentence punctuation and unbalanced closing brackets a bare link picked up from prose/markdown."""
    while url:
        if url[-1] in _TRAILING_PUNCT:
            url = url[:-1]
        elif url[-1] == ")" and url.count(")") > url.count("("):
            url = url[:-1]
        else:
            break
    return url


def find_bare_links(text: str) -> list[str]:
    """http(s) links written in running text or markdown `[label](url)`, in order of appearance."""
    return [u for u in (_trim_link(m.group(0)) for m in _BARE_URL_RE.finditer(text or "")) if u]


@dataclass
class UrlRef:
    """One distinct page: its normalised key, every raw spelling, and which (system, report_id) cited it."""

    url: str
    raw_urls: list[str] = field(default_factory=list)
    cited_by: list[tuple[str, str]] = field(default_factory=list)

    def add(self, raw: str, system: str, report_id: str) -> None:
        if raw not in self.raw_urls:
            self.raw_urls.append(raw)
        if (system, report_id) not in self.cited_by:
            self.cited_by.append((system, report_id))


def report_urls(report: Report) -> list[str]:
    """Raw URLs a report points to: its sources' `.url` (reference-list order), then bare links in the body."""
    out: list[str] = []
    for src in report.sources.values():
        if src.url and src.url.strip():
            out.append(src.url.strip())
    out.extend(find_bare_links(report.body))
    return out


def collect_urls(reports: Iterable[Report]) -> list[UrlRef]:
    """Distinct cited pages over many reports, sorted by normalised URL (deterministic stage output)."""
    refs: dict[str, UrlRef] = {}
    for report in reports:
        for raw in report_urls(report):
            key = normalise_url(raw)
            if not key:
                continue
            refs.setdefault(key, UrlRef(url=key)).add(raw, report.system, report.report_id)
    return [refs[k] for k in sorted(refs)]
