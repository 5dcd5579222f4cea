"""Offline search: BM25 (rank-bm25) over the release's corpus, the embedded default (no network, no key)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from reportbench.agents.search.types import Doc, SearchHit

_TOKEN = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25Backend:
    name = "bm25"
    offers_raw_content = False  # abstracts only: pages come through the spine's fetcher

    def __init__(self, docs: Sequence[Doc]) -> None:
        self.docs = [d for d in docs if d.url]
        # the corpus is the endpoint: another release's corpus answers the same query differently
        digest = hashlib.sha256()
        for d in self.docs:
            digest.update(json.dumps([d.url, d.title, d.text, d.published]).encode())
            digest.update(b"\n")
        self.endpoint = f"corpus:{digest.hexdigest()[:16]}"
        self._index = None
        if self.docs:
            from rank_bm25 import BM25Okapi

            self._index = BM25Okapi([_tokens(f"{d.title} {d.text}") or ["_"] for d in self.docs])

    def search(self, query: str, max_results: int) -> list[SearchHit]:
        """Top `max_results` documents with a positive score (none when the corpus is empty)."""
        if self._index is None:
            return []
        scores = self._index.get_scores(_tokens(query))
        order = sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))
        return [
            SearchHit(
                title=self.docs[i].title,
                url=self.docs[i].url,
                content=self.docs[i].text[:2000],
                score=float(scores[i]),
                published=self.docs[i].published,
            )
            for i in order[:max_results]
            if scores[i] > 0
        ]
