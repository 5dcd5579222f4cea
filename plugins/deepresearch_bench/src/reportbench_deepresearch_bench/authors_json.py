"""The authors' lenient JSON extraction (`utils/json_extractor.py`), re-implemented in our words as a parser mode.

Their `extract_json_from_markdown` tries, in order: the whole text as an object; the first ```json fence (string
search, then regex); the whole text as any JSON; the first balanced {...}; first '{' to last '}'; and finally a
keyword scrape that rebuilds {dimension: [{criterion, article_1_score, article_2_score}]} from regexes.
`judging.race.parser: authors` uses this; the default (`strict`) accepts one JSON object and nothing else.
A golden test compares this function with theirs on self-authored answers when the mirror is available.
"""

from __future__ import annotations

import json
import re

_DIMS = ("comprehensiveness", "insight", "instruction_following", "readability")


def _valid(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def extract_json(text: object) -> str | None:
    """The JSON string their extractor would return for `text`, or None."""
    if not isinstance(text, str):
        return None
    s = text.strip()
    if s.startswith("{") and s.endswith("}") and _valid(s):
        return s
    i = text.find("```json")
    if i != -1 and "```" in text[i + 7 :]:
        start = i + 7
        end = text.find("```", start)
        if end > start and _valid(text[start:end].strip()):
            return text[start:end].strip()
    m = re.search(r"```json\s*([\s\S]*?)\s*```", text)
    if m and _valid(m.group(1).strip()):
        return m.group(1).strip()
    if _valid(s):
        return s
    start = text.find("{")
    if start != -1:
        level = 0
        for k, ch in enumerate(text[start:]):
            if ch == "{":
                level += 1
            elif ch == "}":
                level -= 1
                if level == 0:
                    cand = text[start : start + k + 1]
                    if _valid(cand):
                        return cand
                    break
    end = text.rfind("}")
    if start != -1 and end > start and _valid(text[start : end + 1]):
        return text[start : end + 1]
    return _keyword_scrape(text)


def _keyword_scrape(text: str) -> str | None:
    """Their last resort: per dimension, zip the criterion / article_1_score / article_2_score regex hits."""
    if not ("comprehensiveness" in text and "article_1_score" in text and "article_2_score" in text):
        return None
    result: dict[str, list[dict[str, object]]] = {}
    for dim in _DIMS:
        if dim not in text:
            continue
        result[dim] = []
        pos = _find_dim(text, dim, 0, first=True)
        if pos == -1:
            continue
        nxt = len(text)
        for other in _DIMS:
            if other == dim:
                continue
            p = text.find(f'"{other}"', pos)
            if p == -1:
                p = text.find(f"'{other}'", pos)
            if p == -1:
                p = text.find(other, pos + len(dim))
            if p != -1 and p < nxt:
                nxt = p
        chunk = text[pos:nxt]
        crits = [m.group(1) for m in re.finditer(r'"criterion"\s*:\s*"([^"]+)"', chunk)]
        s1 = [float(m.group(1)) for m in re.finditer(r'"article_1_score"\s*:\s*(\d+\.?\d*)', chunk)]
        s2 = [float(m.group(1)) for m in re.finditer(r'"article_2_score"\s*:\s*(\d+\.?\d*)', chunk)]
        for k in range(min(len(crits), len(s1), len(s2))):
            result[dim].append({"criterion": crits[k], "article_1_score": s1[k], "article_2_score": s2[k]})
    if any(result.values()):
        return json.dumps(result)
    return None


def _find_dim(text: str, dim: str, start: int, first: bool) -> int:
    p = text.find(f'"{dim}"', start)
    if p == -1:
        p = text.find(f"'{dim}'", start)
    if p == -1:
        p = text.find(dim, start)
    return p
