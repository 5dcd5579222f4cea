"""Reading back the parsed reports our own `system@` stage wrote (`<run>/reports.jsonl`), cheaply.

Why: a parsed report is ~70 KB of JSON, two thirds of it `sentences` (each sentence's text and claim), and
validating all of it into ~140 `Sentence` models per report was most of the judge stage's cost outside the judge
(issue 36). Most judge steps never read the sentences (ResearchQA's coverage reads the body and the reference
list). So a stored report is validated now except for its sentences, which are validated the first time they
are read. The file is ours, not a system's: the untrusted input was validated when `system@` parsed it.

A hand-edited or corrupt file still stops with the file, line and field: the part validated up front is
validated in full (every field but `sentences`, unknown fields refused); a line that does not split as our
writer writes it (keys reordered, reformatted) is validated whole as before; and bad sentences raise, naming
file, line and field, when a step first reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import PrivateAttr, TypeAdapter, ValidationError

from reportbench.types import Report, Sentence

# pydantic's compact JSON (Report.model_dump_json, what system@ writes) puts the fields in declaration order:
# ..., "body": "...", "sentences": [...], "sources": {...}, ...  Inside a JSON string a quote is always escaped,
# so `,"sentences":` and `,"sources":` (a comma right before an unescaped quote) only ever occur as these keys.
_SENTENCES_KEY = b',"sentences":'
_SOURCES_KEY = b',"sources":'
_SENTENCES = TypeAdapter(list[Sentence])

class StoredReport(Report):
    """A `Report` read from a run folder: `sentences` validated when first read (then kept like any field)."""

    _raw_sentences: bytes | None = PrivateAttr(default=None)
    _where: str = PrivateAttr(default="")

    def __getattr__(self, name: str) -> Any:
        if name == "sentences":
            return self._load_sentences()
        return super().__getattr__(name)  # type: ignore[misc]

    def _load_sentences(self) -> list[Sentence]:
        try:
            sentences = _SENTENCES.validate_json(self._raw_sentences or b"[]")
        except ValidationError as exc:  # raised again at every read: never an empty list in its place
            err = exc.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in ("sentences", *err["loc"]))
            raise ValueError(f"{self._where} is not a valid Report: {loc}: {err['msg']}") from None
        self._raw_sentences = None
        fields = self.__dict__  # in Report's field order, as a validated Report has them (its JSON's key order)
        ordered = {name: sentences if name == "sentences" else fields[name] for name in Report.model_fields}
        fields.clear()
        fields.update(ordered)
        return sentences

    def _complete(self) -> StoredReport:
        if "sentences" not in self.__dict__:
            self._load_sentences()
        return self

    # what reads the fields' dict directly sees the sentences too
    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return super(StoredReport, self._complete()).model_dump(*args, **kwargs)

    def model_dump_json(self, *args: Any, **kwargs: Any) -> str:
        return super(StoredReport, self._complete()).model_dump_json(*args, **kwargs)

    def model_copy(self, *args: Any, **kwargs: Any) -> Any:
        return super(StoredReport, self._complete()).model_copy(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        """Equal to the `Report` validated from the same line (pydantic's own __eq__ also compares the class)."""
        if not isinstance(other, Report):
            return NotImplemented
        if isinstance(other, StoredReport):
            other._complete()
        self._complete()
        return self.__dict__ == other.__dict__ and self.__pydantic_extra__ == other.__pydantic_extra__

    __hash__ = None  # type: ignore[assignment]  # as BaseModel's

    def __iter__(self) -> Any:
        return super(StoredReport, self._complete()).__iter__()

    def __repr_args__(self) -> Any:
        return super(StoredReport, self._complete()).__repr_args__()

    def __getstate__(self) -> dict[Any, Any]:
        return super(StoredReport, self._complete()).__getstate__()


def _split(line: bytes) -> tuple[bytes, bytes] | None:
    """(the line without its sentences, the sentences' JSON array) when it is laid out as our writer writes it."""
    a = line.find(_SENTENCES_KEY)
    if a < 0:
        return None
    b = line.rfind(_SOURCES_KEY)  # the same key as the first one after the sentences: it occurs once
    if b < a:
        return None
    raw = line[a + len(_SENTENCES_KEY) : b]
    if not (raw.startswith(b"[") and raw.endswith(b"]")):
        return None
    return line[:a] + line[b:], raw


def read_stored_reports(run_dir: Path | str) -> list[Report]:
    """The reports of `<run_dir>/reports.jsonl` (what `systems.read_reports` returns), sentences validated lazily.

    An invalid line raises ValueError naming the file, the line and the field, as `read_reports` does."""
    path = Path(run_dir) / "reports.jsonl"
    reports: list[Report] = []
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip(b"\r\n")
            if not line.strip():
                continue
            parts = _split(line)
            report = None
            if parts is not None:
                try:  # every field but the sentences (absent: their default, replaced below), unknown ones refused
                    report = StoredReport.model_validate_json(parts[0])
                except ValidationError:
                    report = None  # not as our writer lays it out: validated whole below, with its message
            if report is None:
                try:
                    reports.append(Report.model_validate_json(line))
                except ValueError as exc:
                    raise ValueError(f"{path}: line {lineno} is not a valid Report: {exc}") from exc
                continue
            del report.__dict__["sentences"]  # read from the raw JSON when first asked for
            report.__pydantic_fields_set__.add("sentences")
            report._raw_sentences = parts[1]  # type: ignore[index]
            report._where = f"{path}: line {lineno}"
            reports.append(report)
    return reports
