"""`nugget_score`: label each nugget vital or okay for the query (nuggetizer scorer step)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.lexical import LexicalSpace, content_tokens, has_citation, round_score
from reportbench.judges.offline import section_params
from reportbench.judges.tasks._parsing import numbered, parse_json_output

Importance = Literal["vital", "okay"]


class NuggetScoreInput(JudgeInput):
    query: str
    nuggets: list[str]

    def prompt_values(self) -> dict[str, Any]:
        return {"query": self.query, "nuggets": numbered(self.nuggets), "num_nuggets": len(self.nuggets)}


class NuggetScoreOutput(JudgeOutput):
    importance: list[Importance]

    def value(self) -> float | None:
        """Share of vital nuggets; undefined (None -> NaN) with no nuggets."""
        if not self.importance:
            return None
        return sum(1 for x in self.importance if x == "vital") / len(self.importance)


def parse(raw: str, inputs: NuggetScoreInput) -> NuggetScoreOutput:
    output = parse_json_output(raw, NuggetScoreOutput)
    if len(output.importance) != len(inputs.nuggets):
        raise ParseError(
            f"expected {len(inputs.nuggets)} importance labels (one per nugget), got {len(output.importance)}"
        )
    return output


def top_terms(query: str, nuggets: list[str], k: int) -> list[str]:
    """The k content terms with the highest tf·idf over the nuggets + query (idf across the nuggets).

    A stand-in for 'salient against a background corpus', which the offline judge does not have.
    """
    docs = [content_tokens(n) for n in nuggets]
    space = LexicalSpace.fit(docs)
    tf: Counter[str] = Counter(t for d in docs for t in d)
    tf.update(content_tokens(query))
    weights = {
        t: round_score(c * space.idf.get(t, space.default_idf)) for t, c in tf.items() if t in space.idf
    }
    return [t for t, _ in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def offline(inputs: NuggetScoreInput, params: dict[str, Any]) -> OfflineVerdict:
    """vital if the nugget still carries a citation marker or holds >= min_top_terms of the top terms."""
    p = section_params(params, "nugget_score")
    terms = top_terms(inputs.query, inputs.nuggets, int(p["top_terms"]))
    term_set = set(terms)
    labels: list[Importance] = []
    parts: list[str] = []
    for i, nugget in enumerate(inputs.nuggets, start=1):
        hits = sorted(term_set & set(content_tokens(nugget)))
        cited = has_citation(nugget)
        label: Importance = "vital" if cited or len(hits) >= int(p["min_top_terms"]) else "okay"
        labels.append(label)
        parts.append(f"{i}. {label} ({len(hits)} top terms{', cited' if cited else ''})")
    output = NuggetScoreOutput(importance=labels)
    share = output.value()
    return OfflineVerdict(
        output=output,
        explanation=f"top terms {terms}; vital if cited or >= {p['min_top_terms']} top terms: "
        + "; ".join(parts),
        signals={"vital_share": round_score(share)} if share is not None else {},
    )


TASK = JudgeTask(
    name="nugget_score",
    prompt_id="deepscholar/nugget_score.yaml",
    input_model=NuggetScoreInput,
    output_model=NuggetScoreOutput,
    parse=parse,
    offline=offline,
    description="Label each nugget vital (a good answer must have it) or okay (worthwhile, not essential).",
)
