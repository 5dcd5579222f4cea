"""Loopback test doubles for the producing systems: a scripted LLM responder and an arXiv replay server.

FOR PLUMBING TESTS AND DEMOS ONLY. Numbers produced against these doubles measure nothing about any model.

- `scripted_responder`: plugs into `reportbench.stub_server.StubServer(responder=...)` and answers the
  DeepScholar-ref prompts with deterministic, *plausible* text (keyword queries from the topic, lexical
  relevance decisions, an extractive section citing `[n]`), so the whole pipeline can run end to end
  offline and its output has real structure to score. Any other request gets the stub's default answer.
- `ArxivReplay`: recorded arXiv API Atom responses served by request-matching rules (a cassette:
  `index.json` maps a regex on the decoded `search_query` to a recorded feed file). Served over loopback
  HTTP (`arxiv_replay_thread`) for subprocesses such as `dvc repro`, or through `responses` in-process.

Run both for `conf/systems/with_ref.yaml` (defaults: LLM on 8765, arXiv replay on 8766, the demo fixtures):
`python -m reportbench.systems.devservices --arxiv-fixtures tests/fixtures/systems/arxiv`
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from reportbench.stub_server import default_responder, stub_server_thread
from reportbench.systems.retrieval import terms

EMPTY_FEED = b"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: empty</title>
  <id>http://arxiv.org/api/empty</id>
  <updated>2025-11-01T00:00:00-05:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:itemsPerPage>
</feed>
"""


# --------------------------------------------------------------------------------------- LLM responder


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    j = text.find(end, i + len(start))
    return text[i + len(start) : j if j >= 0 else len(text)].strip()


def _keywords(text: str) -> list[str]:
    """Distinct content words by frequency, ties by first position (deterministic)."""
    words = terms(text)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    return sorted(set(words), key=lambda w: (-words.count(w), first[w]))


def _overlap(a: str, b: str) -> int:
    return len(set(terms(a)) & set(terms(b)))


def _topic_text(user: str) -> str:
    topic = _between(user, "<Report topic>", "</Report topic>") or _between(user, "<User query>", "</User query>")
    return topic.split("Here is the paper abstract:", 1)[-1]


def _aggregate(user: str) -> str:
    context = _between(user, "<Source material>", "</Source material>")
    blocks = re.findall(r"^\[(\d+)\] Title: (.*?)\nAbstract: (.*?)(?=\n\n\[\d+\] Title: |\Z)", context, re.S | re.M)
    sentences = []
    for number, title, abstract in blocks[:12]:
        first = re.split(r"(?<=[.!?])\s+", " ".join(abstract.split()), maxsplit=1)[0].rstrip(".")
        short = title.split(":")[0].strip()
        if first.startswith("We "):
            sentences.append(f"The authors of {short} {first[3:]} [{number}].")
        elif first and first != "(no abstract)":
            sentences.append(f"{short} is relevant prior work: {first} [{number}].")
        else:
            sentences.append(f"{short} is relevant prior work [{number}].")
    paragraphs = [" ".join(sentences[i : i + 3]) for i in range(0, len(sentences), 3)]
    return "## Related Works\n\n" + ("\n\n".join(paragraphs) or "No source material was provided.") + "\n"


def scripted_responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
    """Deterministic answers for the DeepScholar-ref prompts (recognised by their wording)."""
    user = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
    if "distinct arXiv search queries" in user:
        match = re.search(r"Generate (\d+) distinct", user)
        n = int(match.group(1)) if match else 2
        words = _keywords(_topic_text(user))
        later_round = "(none yet" not in _between(user, "<Background>", "</Background>")
        start = 3 * n if later_round else 0
        queries = [" ".join(words[start + 3 * i : start + 3 * i + 3]) for i in range(n)]
        return json.dumps({"queries": [q for q in queries if q] or ["related work"]})
    if "<Search results>" in user:
        titles = re.findall(r"^- (.*?):", _between(user, "<Search results>", "</Search results>"), re.M)
        return json.dumps({"summary": "Found so far: " + "; ".join(titles[:5]) + "."})
    if "is the article relevant" in user or "how relevant is the article" in user:
        article = _between(user, "<Article>", "</Article>")
        shared = _overlap(article, _topic_text(user))
        why = f"the article shares {shared} content words with the query"
        if "how relevant" in user:
            return json.dumps({"reasoning": why, "score": min(10, shared)})
        return json.dumps({"reasoning": why, "relevant": shared >= 3})
    if "<Source material>" in user:
        return _aggregate(user)
    return default_responder(messages, response_format)


# ----------------------------------------------------------------------------------------- arXiv replay


class ArxivReplay:
    """Recorded arXiv API answers chosen by regex rules on the decoded `search_query` (first match wins)."""

    def __init__(self, fixture_dir: str | Path) -> None:
        self.dir = Path(fixture_dir)
        index = json.loads((self.dir / "index.json").read_text(encoding="utf-8"))
        self.rules = [(re.compile(r["match"]), self.dir / r["file"]) for r in index.get("rules", [])]
        default = index.get("default")
        self.default = (self.dir / default) if default else None
        self.queries: list[str] = []
        self._lock = threading.Lock()

    def answer(self, query_string: str) -> bytes:
        """The recorded feed for a request's query string (an empty feed when no rule matches)."""
        params = parse_qs(query_string)
        search_query = (params.get("search_query") or [""])[0]
        with self._lock:
            self.queries.append(search_query)
        if int((params.get("start") or ["0"])[0]) > 0:
            return EMPTY_FEED
        for pattern, path in self.rules:
            if pattern.search(search_query):
                return path.read_bytes()
        return self.default.read_bytes() if self.default else EMPTY_FEED


@contextlib.contextmanager
def arxiv_replay_thread(fixture_dir: str | Path, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[Any]:
    """Serve an ArxivReplay at `http://host:port/api/query` from a daemon thread; yields the server
    with `.url` (pass as `search.arxiv_url`) and `.replay` (for assertions)."""
    replay = ArxivReplay(fixture_dir)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            parts = urlsplit(self.path)
            if parts.path.rstrip("/") != "/api/query":
                self.send_error(404)
                return
            body = replay.answer(parts.query)
            self.send_response(200)
            self.send_header("Content-Type", "application/atom+xml; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence access logs
            return

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.url = f"http://{host}:{server.server_address[1]}/api/query"  # type: ignore[attr-defined]
    server.replay = replay  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name="arxiv-replay", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


# ------------------------------------------------------------------------------------------------ CLI


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Loopback LLM stub (scripted) + arXiv replay, for with_ref demos")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--llm-port", type=int, default=8765)
    ap.add_argument("--arxiv-port", type=int, default=8766)
    ap.add_argument("--arxiv-fixtures", default="tests/fixtures/systems/arxiv")
    ap.add_argument("--latency-ms", type=float, default=0.0)
    args = ap.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with (
        stub_server_thread(
            host=args.host,
            port=args.llm_port,
            latency_ms=args.latency_ms,
            responder=scripted_responder,
            model_ids=("stub-judge", "stub-ref"),
        ) as llm,
        arxiv_replay_thread(args.arxiv_fixtures, host=args.host, port=args.arxiv_port) as arxiv,
    ):
        print(f"llm listening on {llm.base_url}", flush=True)
        print(f"arxiv replay listening on {arxiv.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while not stop.wait(0.5):
                pass
    print(f"llm counts: {json.dumps(dict(llm.counts), sort_keys=True)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
