"""How a benchmark's task ids are spelled in file and folder names, and its authors' numeric convention.

A report file lands on a task only through a rule the benchmark declares (`TaskNaming`, on
`BenchmarkSpec.task_naming` and in each protocol package). A bare number is read only with the benchmark's
own convention — DeepScholar's released baselines are 0-based rows of the task list, ResearcherBench's authors
number questions 1…65 (→ `q1…q65`) — and never by guessing: a benchmark without a numeric convention leaves
`1.md` unmapped, and the system stage stops (docs/mapping.md). Only ASCII digits count as a number: `٠.md` and
`０.md` map to no task.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from reportbench.types import strip_arxiv_version

NumberRule = Literal["none", "row_index", "id_number"]
ASCII_NUMBER = re.compile(r"[0-9]{1,9}", re.ASCII)
_ANY_DIGITS = re.compile(r"\d+")
# control, format (bidi overrides, zero-width) and line/paragraph separator characters: never part of a task name,
# and printed raw they move a terminal's cursor or reorder what it shows
_UNPRINTABLE = frozenset({"Cc", "Cf", "Zl", "Zp"})


def unprintable(text: str) -> list[str]:
    """The characters of `text` a name must not hold (escaped, e.g. '\\n', '\\x1b', '\\u202e')."""
    return [c.encode("unicode_escape").decode("ascii") for c in text if unicodedata.category(c) in _UNPRINTABLE]


def terminal_safe(text: str, *, keep: str = "\n") -> str:
    """`text` with every control or format character except those in `keep` escaped, for printing names an
    attacker chose (an ESC sequence in a file name would otherwise drive the terminal)."""
    return "".join(
        c if c in keep or unicodedata.category(c) not in _UNPRINTABLE else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


@dataclass(frozen=True)
class TaskNaming:
    """A benchmark's file-name rules for its task ids.

    - `numbers`: what a bare number means — `none` (nothing: unmapped), `row_index` (0-based row of the
      release's task list, DeepScholar's released baselines), `id_number` (the authors' own number, formatted
      with `number_format`, e.g. `q{n}`).
    - `prefixes` / `suffixes`: decorations around an id in a file name (LRB: `qid_<id>_report.md`).
    - `separators`: characters of an id that a file name may spell differently (`/` as `_`).
    - `arxiv_versions`: an arXiv id with another (or no) version suffix still maps (DeepScholar).
    - `group_number`: a numbered folder inside a group folder (`<group>/<n>`) -> task id (DEER's
      `<domain>/<n>`), or None when the pair names no task.
    """

    spelled: str
    numbers: NumberRule = "none"
    number_format: str | None = None
    number_range: tuple[int, int] | None = None  # id_number: the authors' full range (a subset release lacks some)
    numbers_note: str = ""
    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    separators: tuple[tuple[str, str], ...] = (("/", "_"),)
    arxiv_versions: bool = False
    group_number: Callable[[str, int], str | None] | None = field(default=None, compare=False)

    def describe(self) -> str:
        """One line for messages and docs."""
        nums = {
            "none": "a bare number is not read (no numeric convention)",
            "row_index": "a bare number n is row n (0-based) of the release's task list",
            "id_number": f"a bare number n is task {self.number_format or '{n}'}",
        }[self.numbers]
        return f"ids spelled {self.spelled}; {nums}" + (f" ({self.numbers_note})" if self.numbers_note else "")


DEFAULT_NAMING = TaskNaming(spelled="<task id>", prefixes=("qid_",), suffixes=("_report",), arxiv_versions=True)


@dataclass(frozen=True)
class NameMatch:
    """Where one file name lands: a task id and the rule that matched, or why it maps to nothing."""

    task_id: str | None
    rule: str
    note: str = ""  # e.g. "version differs from task id"
    outside_release: bool = False  # a valid task of the benchmark that this (sub)release does not hold


class NameIndex:
    """All spellings of a release's task ids under one `TaskNaming`, for looking file names up."""

    def __init__(
        self, task_ids: list[str], naming: TaskNaming = DEFAULT_NAMING, full_task_ids: list[str] | None = None
    ) -> None:
        """`full_task_ids`: when the release is a quick subset (`limit`, release/subset.py), the full release's
        ids in its order. A name of one of those tasks is `outside_release` (ignored, not a mapping failure), and
        a bare number under `row_index` stays a row of the full list (row 5 is the same task at any limit)."""
        self.task_ids = list(task_ids)
        self.naming = naming
        self.full_task_ids = list(full_task_ids) if full_task_ids else None
        self._lookup: dict[str, tuple[str, str]] = {}
        for tid in task_ids:
            for alias, rule in self._aliases(tid):
                self._lookup.setdefault(alias, (tid, rule))
        self._subset_outside: dict[str, str] = {}  # alias -> task id of the full release that this subset does not hold
        inside = set(self.task_ids)
        for tid in self.full_task_ids or []:
            if tid not in inside:
                for alias, _rule in self._aliases(tid):
                    if alias not in self._lookup:
                        self._subset_outside.setdefault(alias, tid)

    def _aliases(self, tid: str) -> list[tuple[str, str]]:
        n = self.naming
        bases: list[tuple[str, str]] = [(tid, "task id")]
        for a, b in n.separators:
            if a in tid:
                bases.append((tid.replace(a, b), f"task id ('{a}' spelled '{b}')"))
        if n.arxiv_versions:
            for base, rule in list(bases):
                bare = strip_arxiv_version(base)
                if bare != base:
                    bases.append((bare, f"{rule}, without arXiv version"))
        out = list(bases)
        for base, _rule in bases:
            for p in n.prefixes:
                out.append((f"{p}{base}", f"{p}<id>"))
                for s in n.suffixes:
                    out.append((f"{p}{base}{s}", f"{p}<id>{s}"))
            for s in n.suffixes:
                out.append((f"{base}{s}", f"<id>{s}"))
        return out

    def examples(self, n: int = 3) -> str:
        """Valid file names of this release, for messages: 'e.g. q1.md, q2.md, q3.md (3 tasks)'."""
        shown = [f"{tid.replace('/', '_')}.md" for tid in self.task_ids[:n]]  # a file name holds no '/'
        more = f", … of {len(self.task_ids)}" if len(self.task_ids) > n else ""
        return f"e.g. {', '.join(shown)}{more}: `reportbench ls tasks`" if shown else "none: the release has no tasks"

    def _not_a_task(self, why: str) -> NameMatch:
        """A name no rule maps to any task: which rule was applied and what valid names look like."""
        rule = f"ids spelled {self.naming.spelled}"
        return NameMatch(None, "", f"{why} ({rule}; valid names {self.examples()}); not read")

    def _outside(self, tid: str, how: str) -> NameMatch:
        """A task of the benchmark that this (sub)release does not hold: listed, never read as another task."""
        return NameMatch(
            None, "", f"{how} task {tid}: a task of the benchmark, not in this release (valid names "
            f"{self.examples()}); not read", outside_release=True,
        )

    def _named_number(self, stem: str) -> int | None:
        """n when `stem` is the authors' id spelling of a number (`q9` for `q{n}`), else None."""
        fmt = self.naming.number_format
        if self.naming.numbers != "id_number" or not fmt or fmt.count("{n}") != 1:
            return None
        head, _, tail = fmt.partition("{n}")
        if stem.startswith(head) and stem.endswith(tail):
            core = stem[len(head) : len(stem) - len(tail)] if tail else stem[len(head) :]
            if ASCII_NUMBER.fullmatch(core):
                return int(core)
        return None

    def match(self, stem: str) -> NameMatch:
        """The task a file or folder name (without its report suffix) maps to, under the declared rules. A name
        with a control character or surrounding whitespace maps to nothing (`demo-0001\\n.md` is not demo-0001)."""
        bad = unprintable(stem)
        if bad or stem != stem.strip():
            what = f"control or format character {', '.join(dict.fromkeys(bad))}" if bad else "surrounding whitespace"
            return NameMatch(None, "", f"name has a {what}; not read as a task id")
        hit = self._lookup.get(stem)
        if hit is not None:
            return NameMatch(hit[0], hit[1])
        if self.naming.arxiv_versions:
            bare = strip_arxiv_version(stem)
            hit = self._lookup.get(bare) if bare != stem else None
            if hit is not None:
                return NameMatch(hit[0], f"{hit[1]} (other arXiv version)", "version differs from task id")
        if ASCII_NUMBER.fullmatch(stem):
            return self._number(int(stem))
        outside = self._subset_outside.get(stem) or (
            self._subset_outside.get(strip_arxiv_version(stem)) if self.naming.arxiv_versions else None
        )
        if outside is not None:
            return NameMatch(None, "", f"task {outside} is not in this subset release (limit)", outside_release=True)
        if _ANY_DIGITS.fullmatch(stem):
            return self._not_a_task(f"{stem!r} is a number in non-ASCII digits, never read as a task number")  # ٠.md
        named = self._named_number(stem)
        rng = self.naming.number_range
        if named is not None and rng is not None and rng[0] <= named <= rng[1]:  # `q9.md` as `9.md`: one message
            return self._outside(stem, f"{stem!r} names")
        return self._not_a_task(f"{stem!r} is not a task id of this release")

    def _number(self, n: int) -> NameMatch:
        rule = self.naming.numbers
        if rule == "row_index" and self.full_task_ids is not None:
            if n >= len(self.full_task_ids):
                why = f"number {n} is outside the full task list (0-based rows, {len(self.full_task_ids)} tasks)"
                return NameMatch(None, "", why)
            tid = self.full_task_ids[n]
            if tid in self._lookup and self._lookup[tid][0] == tid:
                return NameMatch(tid, "number = 0-based row of the full release's task list")
            why = f"row {n} is task {tid}, not in this subset release (limit)"
            return NameMatch(None, "", why, outside_release=True)
        if rule == "row_index":
            if n >= len(self.task_ids):
                rows = len(self.task_ids)
                return self._not_a_task(f"number {n} is outside the task list (0-based rows, {rows} tasks)")
            return NameMatch(self.task_ids[n], "number = 0-based row of the task list")
        if rule == "id_number" and self.naming.number_format:
            tid = self.naming.number_format.format(n=n)
            if tid in self._lookup and self._lookup[tid][0] == tid:
                return NameMatch(tid, f"number n = task {self.naming.number_format}")
            rng = self.naming.number_range
            if rng is not None and rng[0] <= n <= rng[1]:
                return self._outside(tid, f"number {n} names")
            return self._not_a_task(f"number {n} names task {tid}, which the benchmark does not have")
        return self._not_a_task("a bare number is not a task id here")

    def match_group(self, group: str, n: int) -> NameMatch:
        """A numbered folder `<group>/<n>` (DEER's `<domain>/<n>`)."""
        fn = self.naming.group_number
        if fn is None:
            return NameMatch(None, "", "numbered folders inside group folders are not a layout of this benchmark")
        tid = fn(group, n)
        if tid is not None and tid in self._subset_outside:
            return NameMatch(None, "", f"{group}/{n} is task {tid}, not in this subset release (limit)",
                             outside_release=True)
        if tid is None or tid not in self._lookup or self._lookup[tid][0] != tid:
            return NameMatch(None, "", f"{group}/{n} names task {tid}, which the release does not have")
        return NameMatch(tid, "<group>/<n> folder")
