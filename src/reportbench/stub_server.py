"""A loopback OpenAI-compatible chat server for tests and benchmarks (never for results).

Why it exists: judge code must be exercised end to end through the real litellm/openai HTTP stack
(retries, timeouts, JSON mode, usage, cost) without a network or a key. The server answers
`POST /v1/chat/completions`, Anthropic's `POST /v1/messages` (same answers, Anthropic's response shape; no
fault injection) and `GET /v1/models` (plus `GET /stats` with per-fault counters).

Answers are deterministic: a responder maps (messages, response_format) to text. The default one
returns JSON valid for the requested `json_schema`, with every value derived from the sha256 of the
request content, so the same request always gets the same answer. Rules (regex on the last user
message → answer) take precedence over the responder. With `judge_formats=True` (the CLI's default,
`--answers judge`) every benchmark's judge steps are answered in their own formats (JUDGE_FORMATS: each rule
recognises one format from what the request states), so a throughput or plumbing run of any benchmark works
offline; a request no rule recognises gets an answer marked UNRECOGNISED_PREFIX and is counted (`unrecognised`).

Output budgets: an answer longer than the request's `max_tokens` / `max_completion_tokens` (o200k tokens) is
cut there with `finish_reason: "length"`, as a provider does (`cap_output`); a responder can return long
answers (e.g. recorded ones) to test a step's budget.

Faults are injected per request with a rate per kind (`429`, `500`, `timeout`, `malformed`,
`truncated`). Fatal faults (`FATAL_FAULT_KINDS`: `401` invalid key, `404` model not found, `quota`
= 429 `insufficient_quota`, `context_length` = 400 `context_length_exceeded`) answer with the OpenAI
error JSON those cases really produce, so tests drive litellm's own exception mapping; they are never
part of `fault_rate`, only of explicit `faults={...}`. The draw is seeded *per request content and
occurrence number* (the n-th time the same request arrives), not per arrival order, so a concurrent
client sees the same faults on every run: reproducible tests, and a retried request gets a fresh draw.

Use in-process (`async with StubServer(...) as s: s.base_url`), from sync code
(`with stub_server_thread(...) as s:`), or as a process:
`python -m reportbench.stub_server --port 8765 --latency-ms 200 --fault-rate 0.0`
(also `reportbench stub-server ...`); it prints `listening on <base_url>` once ready.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from aiohttp import web
from pydantic import Field

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.pricing import o200k_tokenizer

FAULT_KINDS: tuple[str, ...] = ("429", "500", "timeout", "malformed", "truncated")
FATAL_FAULT_KINDS: tuple[str, ...] = ("401", "404", "quota", "context_length")
"""Faults no retry can fix (see reportbench.judges.errors); only injected when named in `faults`."""
EXTRA_FAULT_KINDS: tuple[str, ...] = ("reset", "drip")
"""Transport faults, only injected when named in `faults` (so `fault_rate` draws stay as they were):
`reset` drops the connection with a TCP RST before any byte of the answer; `drip` sends the correct answer
slowly, in small chunks spread over `drip_s` seconds (within the client's timeout it is just slow; beyond
it, a timeout)."""

# (status, OpenAI error body) for each fatal fault, as api.openai.com sends them ({model} is filled in)
FATAL_FAULT_BODIES: dict[str, tuple[int, dict[str, Any]]] = {
    "401": (
        401,
        {
            "message": "Incorrect API key provided: {key}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        },
    ),
    "404": (
        404,
        {
            "message": "The model `{model}` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        },
    ),
    "quota": (
        429,
        {
            "message": "You exceeded your current quota, please check your plan and billing details. For more "
            "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        },
    ),
    "context_length": (
        400,
        {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "131072 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        },
    ),
}

Responder = Callable[[list[dict[str, Any]], dict[str, Any] | None], str]
"""(messages, response_format or None) -> the assistant message content."""


def request_digest(messages: Sequence[Mapping[str, Any]], response_format: Mapping[str, Any] | None) -> str:
    """sha256 of the request content that determines the answer (messages + response_format)."""
    blob = json.dumps([list(messages), response_format], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------------------------
# Deterministic schema-driven answers
# ------------------------------------------------------------------------------------------------


class _HashStream:
    """An endless stream of pseudo-random numbers from a digest (deterministic, no global RNG)."""

    def __init__(self, seed: str) -> None:
        self._rng = random.Random(seed)

    def unit(self) -> float:
        return self._rng.random()

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[int(self._rng.random() * len(seq)) % len(seq)]

    def randint(self, lo: int, hi: int) -> int:
        return self._rng.randint(lo, hi)

    def hex(self, n: int = 8) -> str:
        return "".join(self._rng.choice("0123456789abcdef") for _ in range(n))


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return _resolve(node, root)


def value_for_schema(
    schema: Mapping[str, Any], stream: _HashStream, root: Mapping[str, Any] | None = None, depth: int = 0
) -> Any:
    """A value valid for a (pydantic-style) JSON schema, drawn from `stream`."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    if depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return stream.choice(list(schema["enum"]))
    for combo in ("anyOf", "oneOf", "allOf"):
        if combo in schema:
            options = [s for s in schema[combo] if _resolve(s, root).get("type") != "null"] or schema[combo]
            return value_for_schema(options[0], stream, root, depth + 1)
    typ = schema.get("type")
    if isinstance(typ, list):
        non_null = [t for t in typ if t != "null"] or typ
        typ = non_null[0]
    if typ == "object" or (typ is None and "properties" in schema):
        props: Mapping[str, Any] = schema.get("properties", {})
        return {name: value_for_schema(sub, stream, root, depth + 1) for name, sub in props.items()}
    if typ == "array":
        lo = int(schema.get("minItems", 1))
        hi = int(schema.get("maxItems", max(lo, 3)))
        n = stream.randint(lo, max(lo, hi))
        return [value_for_schema(schema.get("items", {}), stream, root, depth + 1) for _ in range(n)]
    if typ == "boolean":
        return stream.unit() < 0.5
    if typ == "integer":
        lo = int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
        hi = int(schema.get("maximum", schema.get("exclusiveMaximum", lo + 11) - 1))
        return stream.randint(lo, max(lo, hi))
    if typ == "number":
        lo = float(schema.get("minimum", 0.0))
        hi = float(schema.get("maximum", 1.0))
        return round(lo + (hi - lo) * stream.unit(), 4)
    if typ == "null":
        return None
    return f"stub-{stream.hex()}"


# "label each of the 7 nuggets" / "with exactly 7 labels" (the nugget-assignment prompt): a DeepScholar run needs
# exactly that many labels, or every nugget_assign answer fails to parse
_LABEL_COUNT_RE = re.compile(r"(?:each of the|exactly)\s+(\d{1,4})\s+(?:nuggets|labels)\b", re.IGNORECASE)


def _match_label_count(
    value: Any, schema: Mapping[str, Any], messages: list[dict[str, Any]], stream: _HashStream
) -> None:
    """Resize a `labels` array to the count the request asks for (in place); other answers are untouched."""
    if not isinstance(value, dict) or not isinstance(value.get("labels"), list):
        return
    text = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, Mapping))
    found = _LABEL_COUNT_RE.search(text)
    if not found:
        return
    items = _resolve(schema, schema).get("properties", {}).get("labels", {}).get("items", {})
    value["labels"] = [value_for_schema(items, stream, schema) for _ in range(int(found.group(1)))]


def default_responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
    """JSON valid for the requested json_schema (or a small JSON object / text), from the request hash."""
    stream = _HashStream(request_digest(messages, response_format))
    rtype = (response_format or {}).get("type")
    if rtype == "json_schema":
        spec = response_format.get("json_schema", {}) if response_format else {}
        schema = spec.get("schema") or {"type": "object"}
        value = value_for_schema(schema, stream)
        _match_label_count(value, schema, messages, stream)
        return json.dumps(value, ensure_ascii=False)
    if rtype == "json_object":
        return json.dumps({"answer": f"stub-{stream.hex()}", "score": round(stream.unit(), 4)})
    report = _REPORT_MATERIAL_RE.search(str(messages[-1].get("content", "")) if messages else "")
    if report:  # "rewrite the report below" (DeepResearch Bench's clean step): the report itself, unchanged
        return report.group(1).strip()
    return f"stub answer {stream.hex(16)}"


def anthropic_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Messages API request's conversation as chat messages (`system` first, content blocks joined as text),
    so both APIs get the same answer for the same conversation."""

    def text(content: Any) -> str:
        if isinstance(content, list):
            return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
        return str(content or "")

    system = text(body.get("system"))
    out = [{"role": "system", "content": system}] if system else []
    return out + [{"role": m.get("role"), "content": text(m.get("content"))} for m in body.get("messages") or []]


# a plain-text request whose material is one report (`<<<REPORT … REPORT>>>`) asks for that report rewritten
_REPORT_MATERIAL_RE = re.compile(r"<<<REPORT\n(.*?)\nREPORT>>>", re.S)


# ------------------------------------------------------------------------------------------------
# Judge-format answers: every benchmark's judge steps, recognised by the answer format the request asks for
# ------------------------------------------------------------------------------------------------
#
# Why: a throughput or plumbing run of a benchmark through `reportbench stub-server` needs answers its judge
# steps parse. Each rule below recognises ONE answer format from what the request itself states (the format
# instruction the prompt ends with, or the response_format schema it sends) — never from the benchmark's name or
# a guess — and writes a deterministic answer in that format from the request's sha256 (same request, same
# answer, so reruns are byte-identical). A request no rule recognises gets UNRECOGNISED_PREFIX + a hex digest
# (parsed by no step, so it shows up as a parse failure) and is counted as `unrecognised` in the server's counts
# (GET /stats, and the counts the CLI prints on exit).

UNRECOGNISED_PREFIX = "stub: unrecognised judge request (no rule of reportbench.stub_server.JUDGE_FORMATS matches)"

RESEARCHQA_LABELS: tuple[str, ...] = ("Not at all", "Barely", "Moderately", "Mostly", "Completely")
"""ResearchQA's coverage labels (protocols/researchqa/labels.py LABELS; a test keeps the two equal: this layer
may not import the protocol)."""

_Rule = Callable[[str, "dict[str, Any] | None", _HashStream], "str | None"]


def _request_text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, Mapping))


def _schema_of(fmt: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if (fmt or {}).get("type") != "json_schema":
        return None
    schema = ((fmt or {}).get("json_schema") or {}).get("schema")
    return schema if isinstance(schema, dict) else None


def _why(stream: _HashStream) -> str:
    return f"stub justification {stream.hex(8)}"


def _yes_no(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """ResearcherBench rubric (ours: "the first word must be yes or no"; the authors': 'Your answer must begin
    with either "yes" or "no"'): plain text starting with the verdict and a colon."""
    if not re.search(r'first word must be yes or no|answer must begin with either "yes" or "no"', text):
        return None
    return f"{stream.choice(['yes', 'no'])}: {_why(stream)}"


def _bare_binary(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """DeepScholar's authors' support prompt: "just return '1' or '0'"."""
    if "just return '1' or '0'" not in text:
        return None
    return stream.choice(["1", "0"])


_NUGGET_LIST_RE = re.compile(
    r"label each of the (\d+) nuggets either as ([\w ,]+?) using.*Only return the list of labels \(List\[str\]\)", re.S
)


def _nugget_label_list(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """The nuggetizer's assignment prompt (DeepScholar authors'): a Python list literal of one label per nugget."""
    found = _NUGGET_LIST_RE.search(text)
    if not found or fmt:
        return None
    labels = [w.strip() for w in re.split(r",|\bor\b", found.group(2)) if w.strip()]
    return repr([stream.choice(labels) for _ in range(int(found.group(1)))])


def _rating_lines(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """ResearchQA coverage: one rating label per rubric question, a line each (ours: "Reply with exactly N lines";
    the authors': the questions listed between "Questions:" and a closing "Output:")."""
    found = re.search(r"Reply with exactly (\d+) lines, one rating per line", text)
    if found:
        n = int(found.group(1))
    elif "\nQuestions:\n" in text and text.rstrip().endswith("Output:"):
        block = text.split("\nQuestions:\n", 1)[1].rsplit("Output:", 1)[0].strip()
        n = len([ln for ln in block.split("\n") if ln.strip()])
    else:
        return None
    return "\n".join(stream.choice(RESEARCHQA_LABELS) for _ in range(n))


def _better_json(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """ResearchQA pairwise, ours: {"better": "Response 1|2", "justification": …}."""
    if '{"better": "<Response 1 or Response 2>"' not in text:
        return None
    return json.dumps({"better": stream.choice(["Response 1", "Response 2"]), "justification": _why(stream)})


def _judgement_block(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """ResearchQA pairwise, the authors': **output: {"judgement": "Response 1|2"}** then Justification:."""
    if 'Judgement: **output: {"judgement": "_" }**' not in text:
        return None
    verdict = stream.choice(["Response 1", "Response 2"])
    return f'**output: {{"judgement": "{verdict}"}}**\nJustification: {_why(stream)}'


def _fill_skeleton(node: Any, stream: _HashStream) -> Any:
    """A JSON answer skeleton filled in: "1-10 or N/A"-style ranges become integers in range, other strings text."""
    if isinstance(node, dict):
        return {k: _fill_skeleton(v, stream) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill_skeleton(v, stream) for v in node]
    if isinstance(node, str):
        bounds = re.fullmatch(r"(\d+)-(\d+)(?: or N/A)?", node.strip())
        if bounds:
            return stream.randint(int(bounds.group(1)), int(bounds.group(2)))
        return _why(stream)
    return node


def _json_skeleton(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """DEER rubric, ours: "Answer with only one JSON object of exactly this shape …:" followed by the skeleton."""
    found = re.search(r"Answer with only one JSON object of exactly this shape[^\n]*:\n", text)
    if not found:
        return None
    try:
        skeleton, _ = json.JSONDecoder().raw_decode(text[found.end():].lstrip())
    except json.JSONDecodeError:
        return None
    return json.dumps(_fill_skeleton(skeleton, stream), ensure_ascii=False)


def _scores_in_range(node: Any, lo: int, hi: int, stream: _HashStream) -> Any:
    if isinstance(node, dict):
        if set(node) == {"description", "score"}:
            return {"description": node["description"], "score": stream.randint(lo, hi)}
        return {k: _scores_in_range(v, lo, hi, stream) for k, v in node.items()}
    return node


def _scored_schema(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """DEER rubric, the authors': a json_schema request whose prompt says "Scores must be integers from A to B":
    the schema's answer with every {description, score} cell scored in that range."""
    schema = _schema_of(fmt)
    found = re.search(r"Scores must be integers from (\d+) to (\d+)", text)
    if schema is None or not found:
        return None
    value = value_for_schema(schema, stream)
    return json.dumps(_scores_in_range(value, int(found.group(1)), int(found.group(2)), stream), ensure_ascii=False)


_POSITION_RE = re.compile(r"^(L\d+\.S\d+):", re.M)


def _claims_for_targets(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """DEER claim extraction: one claim per target sentence, at that sentence's label. Ours: the targets are the
    <<<SENTENCES block; the authors' (schema ClaimExtractionResponse): the labelled lines ending the request."""
    schema = _schema_of(fmt) or {}
    block = re.search(r"<<<SENTENCES\n(.*?)\nSENTENCES>>>", text, re.S)
    if block and '"position" must be the label of one of the target sentences' in text:
        targets = _POSITION_RE.findall(block.group(1))
    elif schema.get("title") == "ClaimExtractionResponse":
        tail: list[str] = []
        for line in reversed(text.rstrip().split("\n")):
            m = _POSITION_RE.match(line)
            if not m:
                break
            tail.append(m.group(1))
        targets = tail[::-1]
    else:
        return None
    claims = [
        {"position": pos, "claim": f"stub claim {stream.hex(8)}", "claim_type": stream.choice(["D", "E", "F"]),
         "rationale": _why(stream), "numeric": False, "citations": [], "implicit_citations": [],
         "cross_references": []}
        for pos in targets
    ]
    return json.dumps({"claims": claims})


def _claims_array(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """ResearcherBench claim extraction, the authors': "Return a JSON array containing all claim objects"."""
    if "Return a JSON array containing all claim objects" not in text or fmt:
        return None
    return json.dumps([{"claim": f"stub claim {stream.hex(8)}", "context": f"stub context {stream.hex(8)}",
                        "source": ""}])


_JSON_TEMPLATE_RE = re.compile(r"Answer with only this JSON object(?: and)?,? no other text:\n")
_BARE_CHOICE_RE = re.compile(r"<(-?\d+(?:\.\d+)?) or (-?\d+(?:\.\d+)?)>")


def _fill_template(node: Any, stream: _HashStream) -> Any:
    if isinstance(node, dict):
        return {k: _fill_template(v, stream) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill_template(v, stream) for v in node]
    if isinstance(node, str):
        choice = re.fullmatch(r"<(.+?) or (.+?)>", node)
        if choice:
            return stream.choice([choice.group(1), choice.group(2)])
        return f"stub {node.strip('<>')} {stream.hex(6)}" if node.startswith("<") else node
    return node


def _json_template(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """Our prompts' "Answer with only this JSON object, no other text:" + a one-object template whose values are
    placeholders (<1 or 0> a number to choose, "<A or B>" a string to choose, "<…>" free text), e.g.
    LiveResearchBench's relevance and support steps, ResearcherBench's claims."""
    found = _JSON_TEMPLATE_RE.search(text)
    if not found:  # (before a schema: a schema sent as an Anthropic tool loses its bounds, the template keeps them)
        return None
    raw = _BARE_CHOICE_RE.sub(lambda m: stream.choice([m.group(1), m.group(2)]), text[found.end():].lstrip())
    try:
        template, _ = json.JSONDecoder().raw_decode(raw)
    except json.JSONDecodeError:
        return None
    return json.dumps(_fill_template(template, stream), ensure_ascii=False)


def _race_criteria(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """DeepResearch Bench RACE, the authors': for every criterion of the request's <criteria_list>, per dimension,
    {criterion, analysis, article_1_score, article_2_score} (scores 0-10)."""
    found = re.search(r"<criteria_list>\n(.*?)\n</criteria_list>", text, re.S)
    if not found or "article_1_score" not in text:
        return None
    try:
        criteria = json.loads(found.group(1))
    except json.JSONDecodeError:
        return None
    if not isinstance(criteria, dict):
        return None
    out = {
        dim: [{"criterion": c.get("criterion", ""), "analysis": _why(stream),
               "article_1_score": round(10 * stream.unit(), 1), "article_2_score": round(10 * stream.unit(), 1)}
              for c in items if isinstance(c, dict)]
        for dim, items in criteria.items() if isinstance(items, list)
    }
    return json.dumps(out, ensure_ascii=False)


def _checklist_evaluations(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """LiveResearchBench checklists, the authors' (presentation p1…, coverage q1…): {"evaluations": {id: {score
    0|1, justification}}} for every criterion id the request lists ("- p1: …")."""
    if not re.search(r'"evaluations"|^(?:CHECKLIST ITEMS TO VERIFY|PRESENTATION CRITERIA TO EVALUATE):$', text, re.M):
        return None
    ids = list(dict.fromkeys(re.findall(r"(?m)^-\s*([pq]\d+):", text)))
    if not ids:
        return None
    return json.dumps({"evaluations": {i: {"score": stream.choice([0, 1]), "justification": _why(stream)}
                                       for i in ids}})


def _pointwise_issues(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """LiveResearchBench consistency / citation association (ours and the authors'): specific_issues, total_issues
    (their count), score 10-100, justification."""
    authors = "- specific_issues:" in text and "- total_issues:" in text and "Integer from 10-100" in text
    ours = '"specific_issues": ["<' in text and '"score": <integer 10-100>' in text
    if not (authors or ours):
        return None
    issues = [f"stub issue {stream.hex(6)}" for _ in range(stream.randint(0, 3))]
    return json.dumps({"specific_issues": issues, "total_issues": len(issues), "score": stream.randint(10, 100),
                       "justification": _why(stream)})


_DEPTH_DIMS = ("granularity", "insight", "critique", "evidence", "density")


def _depth_pair(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """LiveResearchBench depth (pairwise; ours and the authors'): winner, per-report dimension scores 0-5 and their
    total, justification, major flaws; the winner follows the authors' rule (difference > 1, else tie)."""
    if '"winner": "A" | "B" | "tie"' not in text and '"winner": "<A, B or tie>"' not in text:
        return None
    scores = {}
    for side in ("A", "B"):
        dims = {d: stream.randint(0, 5) for d in _DEPTH_DIMS}
        scores[side] = {**dims, "total": sum(dims.values())}
    diff = scores["A"]["total"] - scores["B"]["total"]
    winner = "A" if diff > 1 else "B" if diff < -1 else "tie"
    return json.dumps({"winner": winner, "scores": scores, "justification": _why(stream),
                       "major_flaws": {"A": [], "B": []}})


_CLEAN_ARTICLE_RE = re.compile(
    r'\n"(.*)"\n\s*\n(?:Please return the cleaned article in full|请返回清洗后的文章全文)', re.S
)


def _rewrite_report(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """DeepResearch Bench article cleaning: the article itself, unchanged (a valid cleaning of a report without
    citation apparatus). Ours: "Rewrite the report below" + <<<REPORT; the authors': the quoted article before
    "Please return the cleaned article in full" (or its Chinese original)."""
    if "Rewrite the report below" in text:
        found = _REPORT_MATERIAL_RE.search(text)
        return found.group(1).strip() if found else None
    found = _CLEAN_ARTICLE_RE.search(text)
    return found.group(1).strip() if found else None


def _fact_list(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """DeepResearch Bench fact extraction, the authors': a JSON list of {fact, ref_idx, url}; the stub cites
    nothing (an empty list is a valid answer: "no citations marked")."""
    if "Output only the JSON list directly" not in text and "直接输出json列表" not in text:
        return None
    return "[]"


def _schema_answer(text: str, fmt: dict[str, Any] | None, stream: _HashStream) -> str | None:
    """Any other json_schema request (ours with a schema-capable model, Anthropic tool use, the authors' schema
    steps): a value valid for the schema (label arrays sized to the count the request asks for)."""
    schema = _schema_of(fmt)
    if schema is None:
        return None
    value = value_for_schema(schema, stream)
    _match_label_count(value, schema, [{"content": text}], stream)
    return json.dumps(value, ensure_ascii=False)


JUDGE_FORMATS: tuple[tuple[str, _Rule], ...] = (
    ("yes_no", _yes_no),
    ("bare_binary", _bare_binary),
    ("nugget_label_list", _nugget_label_list),
    ("rating_lines", _rating_lines),
    ("better_json", _better_json),
    ("judgement_block", _judgement_block),
    ("json_skeleton", _json_skeleton),
    ("scored_schema", _scored_schema),
    ("claims_for_targets", _claims_for_targets),
    ("claims_array", _claims_array),
    ("race_criteria", _race_criteria),
    ("checklist_evaluations", _checklist_evaluations),
    ("pointwise_issues", _pointwise_issues),
    ("depth_pair", _depth_pair),
    ("rewrite_report", _rewrite_report),
    ("fact_list", _fact_list),
    ("json_template", _json_template),
    ("json_schema", _schema_answer),
)
"""(name, rule) in the order tried: specific formats first, the generic schema answer last."""


def judge_format_answer(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> tuple[str, str]:
    """(the name of the rule that recognised the request, its answer), or ('unrecognised', a marked answer)."""
    stream = _HashStream(request_digest(messages, response_format))
    text = _request_text(messages)
    for name, rule in JUDGE_FORMATS:
        answer = rule(text, response_format, stream)
        if answer is not None:
            return name, answer
    if (response_format or {}).get("type") == "json_object":  # still a JSON object, as the request asks
        return "unrecognised", json.dumps({"stub": UNRECOGNISED_PREFIX, "answer": f"stub-{stream.hex()}",
                                           "score": round(stream.unit(), 4)})
    return "unrecognised", f"{UNRECOGNISED_PREFIX} {stream.hex(16)}"


def judge_format_responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
    """judge_format_answer's answer alone (a Responder)."""
    return judge_format_answer(messages, response_format)[1]


# ------------------------------------------------------------------------------------------------
# Server
# ------------------------------------------------------------------------------------------------


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _rough_tokens(text: str) -> int:
    return max(1, len(text.split()))


# -- output budgets: a long answer is cut at the request's max_tokens, as a provider does ----------------


def output_tokens(text: str) -> list[Any]:
    """The answer as tokens (o200k_base ids, or 4-character pieces without a tokenizer)."""
    enc = o200k_tokenizer()
    if enc is None:
        return [text[i : i + 4] for i in range(0, len(text), 4)]
    return list(enc.encode(text, disallowed_special=()))


def cap_output(content: str, body: Mapping[str, Any], completion_tokens: int) -> tuple[str, str, int]:
    """(content, finish_reason, completion tokens) under the request's `max_tokens` /
    `max_completion_tokens`: an answer longer than the budget is cut there with finish_reason "length"."""
    cap = body.get("max_completion_tokens") or body.get("max_tokens")
    if not isinstance(cap, int) or cap <= 0 or len(content) <= cap:  # a token is at least one character
        return content, "stop", completion_tokens
    tokens = output_tokens(content)
    if len(tokens) <= cap:
        return content, "stop", len(tokens)
    enc = o200k_tokenizer()
    cut = "".join(tokens[:cap]) if enc is None else enc.decode(tokens[:cap])
    return cut, "length", cap


class StubServer:
    """Scripted OpenAI-compatible server; see the module docstring.

    `faults` maps a kind in FAULT_KINDS to its probability per request (their sum must be ≤ 1);
    `fault_rate` is shorthand for that total spread evenly over all kinds. `counts` tallies
    requests, answers and each fault kind served, for assertions.
    """

    def __init__(
        self,
        *,
        batch_delay_s: float = 0.3,
        batch_expire: int = 0,
        batch_line_fault_rate: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_ms: float = 0.0,
        responder: Responder | None = None,
        rules: Sequence[tuple[str, str]] = (),
        faults: Mapping[str, float] | None = None,
        fault_rate: float = 0.0,
        seed: int = 0,
        timeout_sleep_s: float = 30.0,
        require_api_key: str | None = None,
        model_ids: Sequence[str] = ("stub-judge",),
        context_window_chars: int | None = None,
        drip_s: float = 0.4,
        judge_formats: bool = False,
    ) -> None:
        self.host = host
        # answers in each judge step's own format (JUDGE_FORMATS), counted per format in `counts`
        self.judge_formats = judge_formats and responder is None
        self.port = port
        # batch APIs (OpenAI files + batches, Anthropic message batches): see _BatchEndpoints
        self.batch_delay_s = batch_delay_s  # a batch completes this long after it was created
        self.batch_expire = batch_expire  # the first N batches expire with half their lines done
        self.batch_line_fault_rate = batch_line_fault_rate  # per line, seeded: a 500 in the output file
        self.request_log: list[tuple[float, str, str]] = []
        """(time, method, path) of every HTTP request in arrival order (rate-limit tests read it)."""
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.latency_s = latency_ms / 1000.0
        self.responder: Responder = responder or default_responder
        self.rules = [(re.compile(pattern, re.S), answer) for pattern, answer in rules]
        if faults is None:
            faults = {k: fault_rate / len(FAULT_KINDS) for k in FAULT_KINDS} if fault_rate > 0 else {}
        known = FAULT_KINDS + FATAL_FAULT_KINDS + EXTRA_FAULT_KINDS
        unknown = set(faults) - set(known)
        if unknown:
            raise ValueError(f"unknown fault kind(s) {sorted(unknown)}; known: {known}")
        if sum(faults.values()) > 1.0 + 1e-9:
            raise ValueError("fault rates sum to more than 1")
        self.faults = {k: float(v) for k, v in faults.items() if v > 0}
        self.seed = seed
        self.timeout_sleep_s = timeout_sleep_s
        self.require_api_key = require_api_key
        self.context_window_chars = context_window_chars  # longer requests get context_length_exceeded
        self.model_ids = list(model_ids)
        self.drip_s = drip_s
        self.counts: Counter[str] = Counter()
        self.chat_log: list[tuple[str, str]] = []
        """(request digest, outcome) per chat request in arrival order; outcome 'ok' or the fault kind."""
        self._seen: Counter[str] = Counter()
        self._generation = 0  # bumped by reset_counts: a request that arrived before a reset is not logged after it
        self._runner: web.AppRunner | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, e.g. http://127.0.0.1:8765/v1 (pass as the judge's api_base)."""
        return f"http://{self.host}:{self.port}/v1"

    def make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._log_request], client_max_size=1024**3)
        _BatchEndpoints(self).add_routes(app)
        _ResponsesEndpoints(self).add_routes(app)
        app.router.add_get("/log", self._log)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        # Anthropic's Messages API: litellm posts `<api_base>/v1/messages`, so the documented api_base
        # http://127.0.0.1:8765/v1 arrives at /v1/v1/messages (and a bare http://127.0.0.1:8765 at /v1/messages)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/stats", self._stats)
        return app

    async def start(self) -> StubServer:
        if self.port == 0:
            self.port = _free_port(self.host)
        # short shutdown_timeout: a "timeout" fault may still be sleeping in a handler when we stop
        self._runner = web.AppRunner(
            self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024, reuse_address=True)
        await site.start()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> StubServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def reset_counts(self) -> None:
        self.counts.clear()
        self._seen.clear()
        self.chat_log.clear()
        self._generation += 1

    def digests(self, outcome: str | None = None) -> list[str]:
        """Request digests in the log (those with `outcome`, e.g. 'ok', when given), arrival order."""
        return [d for d, o in self.chat_log if outcome is None or o == outcome]

    # -- behaviour -------------------------------------------------------------------------------

    def answer_for(self, messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        """The scripted answer: first matching rule on the last user message, else the responder."""
        last_user = next(
            (str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), ""
        )
        for pattern, answer in self.rules:
            if pattern.search(last_user):
                return answer
        if self.judge_formats:
            name, answer = judge_format_answer(messages, response_format)
            self.counts[f"format:{name}"] += 1
            if name == "unrecognised":
                self.counts["unrecognised"] += 1
            return answer
        return self.responder(messages, response_format)

    def _draw_fault(self, digest: str) -> str | None:
        if not self.faults:
            return None
        n = self._seen[digest]
        self._seen[digest] += 1
        u = random.Random(f"{self.seed}:{digest}:{n}").random()
        acc = 0.0
        for kind in FAULT_KINDS + FATAL_FAULT_KINDS + EXTRA_FAULT_KINDS:  # keeps earlier seeded draws unchanged
            acc += self.faults.get(kind, 0.0)
            if u < acc:
                return kind
        return None

    @web.middleware
    async def _log_request(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.request_log.append((time.time(), request.method, request.path))
        return await handler(request)

    async def _log(self, request: web.Request) -> web.Response:
        return web.json_response([list(e) for e in self.request_log if e[2] != "/log"])

    def completion_for(self, body: Mapping[str, Any], content: str | None = None) -> tuple[dict[str, Any], int, int]:
        """(chat.completion payload, prompt tokens, completion tokens) for a request body, as /chat answers
        (`content`: a faulty answer to send instead of the stub's own)."""
        messages = list(body.get("messages") or [])
        response_format = body.get("response_format")
        digest = request_digest(messages, response_format)
        if content is None:
            content = self.answer_for(messages, response_format)
        prompt_tokens = sum(_rough_tokens(str(m.get("content", ""))) for m in messages)
        completion_tokens = _rough_tokens(content)
        content, finish_reason, completion_tokens = cap_output(content, body, completion_tokens)
        n = body.get("n")
        # `n` answers to one request, each billed, as a provider does
        choices = n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 128 else 1
        payload = {
            "id": f"chatcmpl-stub-{digest[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub-judge"),
            "system_fingerprint": "reportbench-stub",
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
                for i in range(choices)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens * choices,
                "total_tokens": prompt_tokens + completion_tokens * choices,
            },
        }
        return payload, prompt_tokens, completion_tokens * choices

    async def _models(self, request: web.Request) -> web.Response:
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "reportbench-stub"} for m in self.model_ids
        ]
        return web.json_response({"object": "list", "data": data})

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(dict(self.counts))

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.counts["requests"] += 1
        if self.require_api_key is not None:
            auth = request.headers.get("Authorization", "")
            given = auth.removeprefix("Bearer ").strip()
            if given != self.require_api_key:
                self.counts["401"] += 1
                # Deliberately echo the key back, as careless providers do, so tests can prove the
                # client scrubs it from every record.
                msg = f"Incorrect API key provided: {given}"
                return web.json_response(
                    {"error": {"message": msg, "type": "invalid_request_error", "code": "invalid_api_key"}},
                    status=401,
                )
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.counts["bad_request"] += 1
            return web.json_response(
                {"error": {"message": "body is not JSON", "type": "invalid_request_error"}}, status=400
            )
        messages = body.get("messages") or []
        response_format = body.get("response_format")
        digest = request_digest(messages, response_format)
        arrived_in = self._generation
        fault = self._draw_fault(digest)
        if self.context_window_chars is not None and fault is None:
            if sum(len(str(m.get("content", ""))) for m in messages) > self.context_window_chars:
                fault = "context_length"  # a property of this request: every retry gets the same answer

        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)

        if fault is not None:
            self.counts[fault] += 1
        if arrived_in == self._generation:
            self.chat_log.append((digest, fault or "ok"))
        if fault == "reset":
            self._reset(request)
            return web.Response(status=500)  # never reaches the client: the connection is gone
        if fault in FATAL_FAULT_BODIES:
            status, error = FATAL_FAULT_BODIES[fault]
            given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            shown = f"{given[:3]}*****{given[-4:]}" if len(given) > 8 else "*****"  # OpenAI's partial echo
            message = error["message"].replace("{key}", shown).replace("{model}", str(body.get("model")))
            return web.json_response({"error": {**error, "message": message}}, status=status)
        if fault == "429":
            return web.json_response(
                {"error": {"message": "stub: rate limited", "type": "rate_limit_error"}},
                status=429,
                headers={"retry-after": "0"},
            )
        if fault == "500":
            return web.json_response(
                {"error": {"message": "stub: internal error", "type": "server_error"}}, status=500
            )
        if fault == "timeout":
            await asyncio.sleep(self.timeout_sleep_s)
            return web.json_response({"error": {"message": "stub: too late", "type": "timeout"}}, status=504)

        payload, _, _ = self.completion_for(body, '{"oops": ' if fault == "malformed" else None)
        if payload["choices"][0]["finish_reason"] == "length":
            self.counts["length"] += 1
        raw = json.dumps(payload).encode("utf-8")
        if fault == "truncated":
            # Promise the full body, send half of it, then drop the connection.
            resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            resp.content_length = len(raw)
            await resp.prepare(request)
            await resp.write(raw[: len(raw) // 2])
            if request.transport is not None:
                request.transport.close()
            return resp
        if fault == "drip":
            resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            resp.content_length = len(raw)
            await resp.prepare(request)
            pieces = 8
            step = max(1, -(-len(raw) // pieces))
            for start in range(0, len(raw), step):
                await asyncio.sleep(self.drip_s / pieces)
                await resp.write(raw[start : start + step])
            await resp.write_eof()
            return resp
        self.counts["ok"] += 1
        return web.Response(body=raw, content_type="application/json")

    async def _messages(self, request: web.Request) -> web.Response:
        """Anthropic's `POST /v1/messages`: the same answer as chat completions for the same conversation, in
        Anthropic's shape (content blocks, `stop_reason`, usage `input_tokens`/`output_tokens`). A request with
        a tool (how litellm asks Anthropic for JSON output) or an `output_format` JSON schema gets its answer as
        that schema's JSON; a text answer over `max_tokens` is cut there (`stop_reason: max_tokens`)."""
        self.counts["requests"] += 1
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.counts["bad_request"] += 1
            return web.json_response(
                {"type": "error", "error": {"type": "invalid_request_error", "message": "body is not JSON"}},
                status=400,
            )
        messages = anthropic_messages(body)
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("input_schema")]
        schema = tools[0]["input_schema"] if tools else (body.get("output_format") or {}).get("schema")
        fmt = {"type": "json_schema", "json_schema": {"schema": schema}} if schema else None
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        answer = self.answer_for(messages, fmt)
        self.chat_log.append((request_digest(messages, fmt), "ok"))
        content: list[dict[str, Any]]
        if tools:
            content = [{"type": "tool_use", "id": "toolu_stub", "name": tools[0]["name"], "input": json.loads(answer)}]
            stop = "tool_use"
        else:
            answer, finish, _ = cap_output(answer, {"max_tokens": body.get("max_tokens")}, 0)
            content = [{"type": "text", "text": answer}]
            stop = "max_tokens" if finish == "length" else "end_turn"
        self.counts["ok"] += 1
        return web.json_response(
            {
                "id": f"msg_stub_{request_digest(messages, fmt)[:24]}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "stub-judge"),
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": sum(_rough_tokens(str(m.get("content", ""))) for m in messages),
                    "output_tokens": _rough_tokens(answer),
                },
            }
        )

    @staticmethod
    def _reset(request: web.Request) -> None:
        """Drop the connection with a TCP RST (SO_LINGER 0), as a crashed proxy or load balancer does."""
        transport = request.transport
        if transport is None:
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()


# ------------------------------------------------------------------------------------------------
# Batch APIs: OpenAI files + batches, Anthropic message batches
# ------------------------------------------------------------------------------------------------

_EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."


class _BatchEndpoints:
    """The documented shapes of the batch endpoints, answered from the same responder as /chat/completions.

    A batch completes `batch_delay_s` after creation (`in_progress` before); its lines are answered when it is
    first retrieved after that. The first `batch_expire` batches end `expired` with only half their lines
    answered (OpenAI: the rest in the error file with code `batch_expired`; Anthropic: result type `expired`).
    `batch_line_fault_rate` turns a seeded share of lines into per-line 500 errors (a fresh draw per
    occurrence, so a resubmitted line can succeed). Counters: `batches_created`, `batch_lines`,
    `batch_lines_failed`, `batch_lines_expired`, `batch_polls`, `files_uploaded`.
    """

    def __init__(self, server: StubServer) -> None:
        self.s = server
        self._line_seen: Counter[str] = Counter()

    def add_routes(self, app: web.Application) -> None:
        r = app.router
        r.add_post("/v1/files", self.upload)
        r.add_get("/v1/files/{file_id}/content", self.file_content)
        r.add_post("/v1/batches", self.create_openai)
        r.add_get("/v1/batches/{batch_id}", self.retrieve_openai)
        r.add_post("/v1/messages/batches", self.create_anthropic)
        r.add_get("/v1/messages/batches/{batch_id}", self.retrieve_anthropic)
        r.add_get("/v1/messages/batches/{batch_id}/results", self.results_anthropic)

    # -- shared -----------------------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        n = len(self.s.batches) + len(self.s.files)
        return f"{prefix}_stub{n:06d}{random.Random(time.time()).randrange(16**6):06x}"

    def _line_fails(self, custom_id: str, body: Mapping[str, Any]) -> bool:
        rate = self.s.batch_line_fault_rate
        if rate <= 0:
            return False
        key = f"{custom_id}:{request_digest(list(body.get('messages') or []), body.get('response_format'))}"
        n = self._line_seen[key]
        self._line_seen[key] += 1
        return random.Random(f"{self.s.seed}:batch:{key}:{n}").random() < rate

    def _due(self, batch: Mapping[str, Any]) -> bool:
        return time.time() - float(batch["_created"]) >= self.s.batch_delay_s

    def _register(self, batch: dict[str, Any], n_lines: int) -> None:
        counts = self.s.counts
        batch["_created"] = time.time()
        batch["_expire"] = counts["batches_created"] < self.s.batch_expire
        counts["batches_created"] += 1
        counts["batch_lines"] += n_lines
        self.s.batches[batch["id"]] = batch

    # -- OpenAI -----------------------------------------------------------------------------------

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        field = form.get("file")
        data = field.file.read() if hasattr(field, "file") else str(field or "").encode("utf-8")
        file_id = self._new_id("file")
        self.s.files[file_id] = data
        self.s.counts["files_uploaded"] += 1
        return web.json_response(
            {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
             "filename": getattr(field, "filename", "batch.jsonl"), "purpose": str(form.get("purpose", "batch"))}
        )

    async def file_content(self, request: web.Request) -> web.Response:
        data = self.s.files.get(request.match_info["file_id"])
        if data is None:
            return web.json_response({"error": {"message": "No such File object", "type": "invalid_request_error"}},
                                     status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def create_openai(self, request: web.Request) -> web.Response:
        body = await request.json()
        data = self.s.files.get(str(body.get("input_file_id")))
        if data is None:
            return web.json_response({"error": {"message": "input file not found", "type": "invalid_request_error"}},
                                     status=400)
        lines = [json.loads(x) for x in data.decode("utf-8").splitlines() if x.strip()]
        batch = {
            "id": self._new_id("batch"),
            "object": "batch",
            "endpoint": body.get("endpoint", "/v1/chat/completions"),
            "input_file_id": body["input_file_id"],
            "completion_window": body.get("completion_window", "24h"),
            "status": "validating",
            "created_at": int(time.time()),
            "output_file_id": None,
            "error_file_id": None,
            "metadata": body.get("metadata"),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "_lines": lines,
        }
        self._register(batch, len(lines))
        return web.json_response(self._public(batch))

    @staticmethod
    def _public(batch: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    async def retrieve_openai(self, request: web.Request) -> web.Response:
        batch = self.s.batches.get(request.match_info["batch_id"])
        if batch is None or batch.get("object") != "batch":
            return web.json_response({"error": {"message": "No such batch", "type": "invalid_request_error"}},
                                     status=404)
        self.s.counts["batch_polls"] += 1
        if batch["status"] in ("validating", "in_progress"):
            if not self._due(batch):
                batch["status"] = "in_progress"
            else:
                self._finish_openai(batch)
        return web.json_response(self._public(batch))

    def _finish_openai(self, batch: dict[str, Any]) -> None:
        lines = batch["_lines"]
        n_done = len(lines) // 2 if batch["_expire"] else len(lines)
        out, err = [], []
        for i, line in enumerate(lines):
            cid = line.get("custom_id")
            req = line.get("body") or {}
            if i >= n_done:
                self.s.counts["batch_lines_expired"] += 1
                err.append({"id": f"batch_req_{i}", "custom_id": cid, "response": None,
                            "error": {"code": "batch_expired", "message": _EXPIRED_MESSAGE}})
            elif self._line_fails(str(cid), req):
                self.s.counts["batch_lines_failed"] += 1
                out.append({"id": f"batch_req_{i}", "custom_id": cid, "error": None, "response": {
                    "status_code": 500, "request_id": f"req_{i}",
                    "body": {"error": {"message": "stub: internal error", "type": "server_error"}}}})
            else:
                payload, _, _ = self.s.completion_for(req)
                out.append({"id": f"batch_req_{i}", "custom_id": cid, "error": None,
                            "response": {"status_code": 200, "request_id": f"req_{i}", "body": payload}})
        for rows, key in ((out, "output_file_id"), (err, "error_file_id")):
            if rows:
                file_id = self._new_id("file")
                self.s.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
                batch[key] = file_id
        ok = sum(1 for r in out if r["response"]["status_code"] == 200)
        batch["request_counts"] = {"total": len(lines), "completed": ok, "failed": len(lines) - ok}
        batch["status"] = "expired" if batch["_expire"] else "completed"

    # -- Anthropic --------------------------------------------------------------------------------

    async def create_anthropic(self, request: web.Request) -> web.Response:
        body = await request.json()
        requests = list(body.get("requests") or [])
        batch = {
            "id": self._new_id("msgbatch"),
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0,
                               "expired": 0},
            "ended_at": None,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "results_url": None,
            "_requests": requests,
        }
        self._register(batch, len(requests))
        return web.json_response(self._public(batch))

    async def retrieve_anthropic(self, request: web.Request) -> web.Response:
        batch = self.s.batches.get(request.match_info["batch_id"])
        if batch is None or batch.get("type") != "message_batch":
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no batch"}},
                                     status=404)
        self.s.counts["batch_polls"] += 1
        if batch["processing_status"] == "in_progress" and self._due(batch):
            self._finish_anthropic(batch, f"http://{request.host}")
        return web.json_response(self._public(batch))

    def _finish_anthropic(self, batch: dict[str, Any], origin: str) -> None:
        reqs = batch["_requests"]
        n_done = len(reqs) // 2 if batch["_expire"] else len(reqs)
        rows = []
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for i, r in enumerate(reqs):
            cid, params = r.get("custom_id"), r.get("params") or {}
            messages = ([{"role": "system", "content": params["system"]}] if params.get("system") else []) + list(
                params.get("messages") or [])
            tools = params.get("tools") or []
            fmt = ({"type": "json_schema", "json_schema": {"schema": tools[0].get("input_schema") or {}}}
                   if tools else None)
            if i >= n_done:
                counts["expired"] += 1
                self.s.counts["batch_lines_expired"] += 1
                rows.append({"custom_id": cid, "result": {"type": "expired"}})
                continue
            if self._line_fails(str(cid), {"messages": messages, "response_format": fmt}):
                counts["errored"] += 1
                self.s.counts["batch_lines_failed"] += 1
                rows.append({"custom_id": cid, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": "api_error", "message": "stub: internal error"}}}})
                continue
            answer = self.s.answer_for(messages, fmt)
            content: list[dict[str, Any]]
            finish = "stop"
            if tools:
                content = [{"type": "tool_use", "id": f"toolu_{i}", "name": tools[0]["name"],
                            "input": json.loads(answer)}]
            else:  # a text answer longer than max_tokens is cut there (stop_reason max_tokens), as Anthropic does
                answer, finish, _ = cap_output(answer, {"max_tokens": params.get("max_tokens")}, 0)
                content = [{"type": "text", "text": answer}]
            stop = "tool_use" if tools else ("max_tokens" if finish == "length" else "end_turn")
            counts["succeeded"] += 1
            rows.append({"custom_id": cid, "result": {"type": "succeeded", "message": {
                "id": f"msg_{i}", "type": "message", "role": "assistant", "model": params.get("model"),
                "content": content, "stop_reason": stop,
                "usage": {"input_tokens": sum(_rough_tokens(str(m.get("content", ""))) for m in messages),
                          "output_tokens": _rough_tokens(answer)}}}})
        batch["_results"] = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
        batch["request_counts"] = counts
        batch["processing_status"] = "ended"
        batch["ended_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        batch["results_url"] = f"{origin}/v1/messages/batches/{batch['id']}/results"

    async def results_anthropic(self, request: web.Request) -> web.Response:
        batch = self.s.batches.get(request.match_info["batch_id"])
        if batch is None or "_results" not in batch:
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no results"}},
                                     status=404)
        return web.Response(body=batch["_results"], content_type="application/binary")


# ------------------------------------------------------------------------------------------------
# A tiny judge task for exercising judge backends against the stub (tests, benchmarks)
# ------------------------------------------------------------------------------------------------

STUB_PROMPT_ID = "stub/support.yaml"
STUB_PROMPT_YAML = """\
id: stub-support
version: "1"
system: |
  You judge whether evidence supports a claim. Answer with a JSON object.
user: |
  Claim: {claim}
  Evidence: {evidence}
  Reply as JSON: {{"supported": "yes"|"no", "score": <0..1>}}.
"""


def stub_support_task(prompts_dir: str | Path, *, prompt_yaml: str = STUB_PROMPT_YAML) -> JudgeTask:
    """Write the demo prompt under `prompts_dir` and return a yes/no support JudgeTask using it.

    Not a benchmark task: it exists so the LLM backend can be driven end to end before (and
    independently of) the real tasks. The stub's default responder answers it with valid JSON.
    """
    path = Path(prompts_dir) / STUB_PROMPT_ID
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != prompt_yaml:
        path.write_text(prompt_yaml, encoding="utf-8")
    return JudgeTask(
        name="stub_support",
        prompt_id=STUB_PROMPT_ID,
        input_model=StubSupportInput,
        output_model=StubSupportOutput,
        parse=parse_stub_support,
        offline=_stub_offline,
        description="demo yes/no support task for the stub server",
    )


class StubSupportInput(JudgeInput):
    claim: str
    evidence: str


class StubSupportOutput(JudgeOutput):
    supported: Literal["yes", "no"]
    score: float = Field(ge=0.0, le=1.0)

    def value(self) -> float | None:
        return self.score

    def label(self) -> str | None:
        return self.supported


def parse_stub_support(raw: str, inputs: Any) -> StubSupportOutput:
    """Strict: the whole answer must be the JSON object, nothing guessed."""
    try:
        return StubSupportOutput.model_validate_json(raw)
    except ValueError as exc:
        raise ParseError(f"not a StubSupportOutput: {str(exc)[:200]}") from exc


def _stub_offline(inputs: Any, params: dict[str, Any]) -> OfflineVerdict:
    claim, evidence = set(inputs.claim.lower().split()), set(inputs.evidence.lower().split())
    overlap = len(claim & evidence) / max(1, len(claim))
    out = StubSupportOutput(supported="yes" if overlap >= 0.5 else "no", score=round(overlap, 4))
    return OfflineVerdict(
        output=out, explanation=f"token overlap {overlap:.2f}", signals={"overlap": overlap}
    )


# ------------------------------------------------------------------------------------------------
# Sync helper and CLI
# ------------------------------------------------------------------------------------------------


class _ResponsesEndpoints:
    """The Responses API's background mode as deep-research models use it: `POST /v1/responses` (with
    `background: true` → `queued`), `GET /v1/responses/{id}` (`in_progress` until `responses_delay_s` after
    creation, then `completed`), `POST /v1/responses/{id}/cancel`. A completed response carries one
    `web_search_call` per `max_tool_calls` (at most 2), a message whose `output_text` cites two self-authored
    pages through `url_citation` annotations, and usage. Counters: `responses_created`, `responses_polls`,
    `responses_cancelled`. Set `server.responses_delay_s` (default 0.2 s) to make runs slower."""

    def __init__(self, server: StubServer) -> None:
        self.s = server
        self.store: dict[str, dict[str, Any]] = {}

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/responses", self.create)
        app.router.add_post("/v1/embeddings", self.embeddings)
        app.router.add_get("/v1/responses/{rid}", self.retrieve)
        app.router.add_post("/v1/responses/{rid}/cancel", self.cancel)

    def _denied(self, request: web.Request) -> web.Response | None:
        want = self.s.require_api_key
        got = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if want is None or got == want:
            return None
        status, body = FATAL_FAULT_BODIES["401"]
        return web.json_response({"error": {**body, "message": body["message"].format(key=got)}}, status=status)

    @staticmethod
    def _completed(rid: str, req: Mapping[str, Any]) -> dict[str, Any]:
        prompt = str(req.get("input") if isinstance(req.get("input"), str) else json.dumps(req.get("input")))
        words = re.findall(r"[A-Za-z]{4,}", prompt)[:6] or ["research"]
        topic = " ".join(words)
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
        urls = [f"https://stub-research.example/{digest}/{k}" for k in (1, 2)]
        first = f"Studies of {topic} report consistent findings across settings."
        second = f" A second line of work on {words[0]} confirms the main effect."
        text = f"# Report on {topic}\n\n{first}{second}\n"
        start1 = text.index(first)
        start2 = text.index(second) + 1
        annotations = [
            {"type": "url_citation", "start_index": start1, "end_index": start1 + len(first), "url": urls[0],
             "title": f"Stub source on {words[0]}"},
            {"type": "url_citation", "start_index": start2, "end_index": start2 + len(second) - 1, "url": urls[1],
             "title": f"Stub follow-up on {words[0]}"},
        ]
        n_search = max(0, min(2, int(req.get("max_tool_calls") or 2)))
        searches = [
            {"type": "web_search_call", "id": f"ws_{rid}_{k}", "status": "completed",
             "action": {"type": "search", "query": f"{topic} {k}"}}
            for k in range(n_search)
        ]
        message = {"type": "message", "id": f"msg_{rid}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": text, "annotations": annotations}]}
        n_in, n_out = _rough_tokens(prompt), _rough_tokens(text)
        return {"output": [*searches, message],
                "usage": {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}}

    def _view(self, rid: str) -> dict[str, Any]:
        entry = self.store[rid]
        base = {"id": rid, "object": "response", "created_at": int(entry["created"]), "model": entry["model"],
                "output": [], "usage": None, "error": None, "incomplete_details": None, "background": True}
        if entry["status"] == "cancelled":
            return {**base, "status": "cancelled"}
        if time.time() - entry["created"] < getattr(self.s, "responses_delay_s", 0.2):
            return {**base, "status": "in_progress" if entry["polls"] else "queued"}
        return {**base, "status": "completed", **self._completed(rid, entry["request"])}

    async def create(self, request: web.Request) -> web.Response:
        if (denied := self._denied(request)) is not None:
            return denied
        req = await request.json()
        self.s.counts["responses_created"] += 1
        rid = f"resp_stub{len(self.store):06d}"
        self.store[rid] = {"created": time.time(), "model": str(req.get("model") or ""), "request": req,
                           "status": "queued", "polls": 0}
        if not req.get("background"):
            self.store[rid]["created"] = 0.0  # answered at once
        return web.json_response(self._view(rid))

    async def retrieve(self, request: web.Request) -> web.Response:
        if (denied := self._denied(request)) is not None:
            return denied
        rid = request.match_info["rid"]
        if rid not in self.store:
            return web.json_response({"error": {"message": f"No response with id '{rid}'."}}, status=404)
        self.s.counts["responses_polls"] += 1
        self.store[rid]["polls"] += 1
        return web.json_response(self._view(rid))

    async def embeddings(self, request: web.Request) -> web.Response:
        """Deterministic unit vectors from each input's sha256 (`dimensions`, default 32): agents that rank chunks
        with embeddings run offline. Counter: `embeddings`."""
        req = await request.json()
        texts = req.get("input")
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts or []]
        dim = int(req.get("dimensions") or 32)
        data = []
        for i, text in enumerate(texts):
            raw = hashlib.sha256(text.encode()).digest() * (dim // 32 + 1)
            vec = [b / 255.0 - 0.5 for b in raw[:dim]]
            norm = sum(v * v for v in vec) ** 0.5 or 1.0
            data.append({"object": "embedding", "index": i, "embedding": [v / norm for v in vec]})
        self.s.counts["embeddings"] += 1
        n = sum(_rough_tokens(t) for t in texts)
        return web.json_response({"object": "list", "data": data, "model": str(req.get("model") or ""),
                                  "usage": {"prompt_tokens": n, "total_tokens": n}})

    async def cancel(self, request: web.Request) -> web.Response:
        rid = request.match_info["rid"]
        if rid not in self.store:
            return web.json_response({"error": {"message": f"No response with id '{rid}'."}}, status=404)
        self.s.counts["responses_cancelled"] += 1
        self.store[rid]["status"] = "cancelled"
        return web.json_response(self._view(rid))


@contextlib.contextmanager
def serve_in_thread(server: Any) -> Iterator[Any]:
    """Run an aiohttp-based server object (`start`/`stop` coroutines) on its own loop in a daemon thread (for
    sync callers: tests, the agent runner's proxies)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    error: list[BaseException] = []

    def _run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.start())
        except BaseException as exc:  # surfaced to the caller below
            error.append(exc)
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.run_until_complete(server.stop())
        # handlers still stalling (a `timeout` or `drip` fault longer than the test) end here, not at loop.close()
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()

    thread = threading.Thread(target=_run, name=f"reportbench-{type(server).__name__}", daemon=True)
    thread.start()
    ready.wait(30)
    if error:
        raise error[0]
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


@contextlib.contextmanager
def stub_server_thread(**kwargs: Any) -> Iterator[StubServer]:
    """Run a StubServer on its own event loop in a daemon thread (for sync tests)."""
    with serve_in_thread(StubServer(**kwargs)) as server:
        yield server


def parse_faults(spec: str | None) -> dict[str, float] | None:
    """'429=0.05,500=0.05' -> {'429': 0.05, '500': 0.05}."""
    if not spec:
        return None
    out: dict[str, float] = {}
    for part in spec.split(","):
        kind, _, rate = part.partition("=")
        out[kind.strip()] = float(rate)
    return out


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8765, help="0 picks a free port (printed at start)")
    p.add_argument("--latency-ms", type=float, default=200.0, help="delay before each answer (default 200)")
    p.add_argument("--fault-rate", type=float, default=0.0, help="total fault probability, spread over kinds")
    p.add_argument(
        "--faults",
        default=None,
        help="per-kind rates, e.g. '429=0.05,timeout=0.02'; fatal kinds: 401, 404, quota, context_length; "
        "transport: reset, drip",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the fault draws (same seed, same faults)")
    p.add_argument("--timeout-sleep-s", type=float, default=30.0, help="how long a `timeout` fault holds a request")
    p.add_argument("--max-seconds", type=float, default=0.0, help="exit after this long (0 = never)")
    p.add_argument(
        "--answers",
        choices=("judge", "plain"),
        default="judge",
        help="judge (default): answer every benchmark's judge steps in their own formats (a request no format rule "
        "recognises gets a marked answer and is counted as `unrecognised`); plain: the schema-only answers "
        "(JSON for a json_schema request, the report echoed for a <<<REPORT rewrite, else 'stub answer <hex>')",
    )


def _serve(args: argparse.Namespace) -> int:
    server = StubServer(
        host=args.host,
        port=args.port,
        latency_ms=args.latency_ms,
        fault_rate=args.fault_rate,
        faults=parse_faults(args.faults),
        seed=args.seed,
        timeout_sleep_s=args.timeout_sleep_s,
        judge_formats=args.answers == "judge",
    )

    async def _main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError):  # SIGTERM -> clean stop (counts get printed)
            loop.add_signal_handler(signal.SIGTERM, stop.set)
        async with server:
            print(f"listening on {server.base_url}", flush=True)
            timeout = args.max_seconds if args.max_seconds > 0 else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout)

    try:
        asyncio.run(_main())
    except KeyboardInterrupt:
        pass
    print(f"stub counts: {json.dumps(dict(server.counts), sort_keys=True)}", file=sys.stderr, flush=True)
    return 0


def register(subparsers: Any) -> None:
    """Add `reportbench stub-server` to the CLI."""
    p = subparsers.add_parser("stub-server", help="run a loopback OpenAI-compatible stub (tests/benchmarks)")
    _add_arguments(p)
    p.set_defaults(func=_serve)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reportbench.stub_server", description=__doc__.split("\n")[0]
    )
    _add_arguments(parser)
    return _serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
