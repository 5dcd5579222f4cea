"""The shell commands README.md and docs/*.md show a user, extracted by one rule (not a test module).

What counts as a documented command (tests/test_docs_commands.py runs every one of them):

- Every command of a fenced block labelled ```bash, ```sh or ```shell: one command per line, a line ending in
  `\\` continues on the next, a `for … done` / `while … done` / `if … fi` compound is one command. Whole-line
  comments are dropped; a trailing comment (`  # …`, outside quotes) is kept apart as the command's note.
- Every line starting with `$ ` of a fenced ```console block (the other lines are the output it shows).
- In a table whose header names a `command` column, every code span of that column that starts with a program
  (`reportbench`, `dvc`, `python`, `pip`, `pytest`).
- Not commands: code spans in prose, and unlabelled / `text` / `yaml` / `python` / `json` fences (listings,
  diagrams, outputs, config). An unlabelled fence whose lines look like commands is drift: label it.

A command that needs an API key or the network says so in its note: `needs: NAME[, NAME…]` where each NAME is an
environment variable (`OPENAI_API_KEY`) or `network` — e.g. `dvc exp run -S judge=llm   # needs: OPENAI_API_KEY`.
`grep -rn 'needs:' README.md docs/` lists them all.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

SHELL_LANGS = ("bash", "sh", "shell")
PROGRAMS = ("reportbench", "dvc", "python", "python3", "pip", "pytest")
LOOKS_LIKE_COMMAND = re.compile(r"^\s*(\$ |(reportbench|dvc|pip|pytest|python3?) )")
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_NEEDS = re.compile(r"needs:\s*([A-Za-z0-9_, ]+)")


@dataclass(frozen=True)
class DocCommand:
    """One documented command: where it is, its exact text (as a user would paste it) and what it needs."""

    doc: str  # path relative to the repository root
    line: int  # 1-based line of its first line
    text: str  # the command, continuation lines joined with "\\\n" as written, comments removed
    note: str = ""  # the trailing comment(s), without "#"
    source: str = "block"  # block | console | table
    needs: tuple[str, ...] = field(default=())

    @property
    def key(self) -> tuple[str, str]:
        """How the test's table names it: the doc and the command's text (whitespace runs collapsed)."""
        return self.doc, normalize(self.text)


def normalize(text: str) -> str:
    return " ".join(text.replace("\\\n", " ").split())


def doc_files(repo: Path) -> list[Path]:
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def split_comment(line: str) -> tuple[str, str]:
    """(code, comment) of one shell line: `#` starts a comment at a word start outside quotes."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def _needs(note: str) -> tuple[str, ...]:
    m = _NEEDS.search(note)
    return tuple(n.strip() for n in m.group(1).split(",") if n.strip()) if m else ()


def _shell_block(doc: str, first_line: int, body: list[str]) -> list[DocCommand]:
    out: list[DocCommand] = []
    pending: list[str] = []
    notes: list[str] = []
    start = 0
    depth = 0
    for offset, raw in enumerate(body):
        code, comment = split_comment(raw.strip())
        if not code and not pending:
            continue  # blank or whole-line comment
        if not pending:
            start = first_line + offset
        if comment:
            notes.append(comment)
        words = code.replace(";", " ").split()
        if words and words[0] in ("for", "while", "if"):
            depth += 1
        if words and words[0] in ("done", "fi"):
            depth -= 1
        if code.endswith("\\"):
            pending.append(code)
            continue
        pending.append(code)
        if depth > 0:
            continue
        text = "\n".join(pending)
        note = "; ".join(notes)
        out.append(DocCommand(doc, start, text, note, "block", _needs(note)))
        pending, notes = [], []
    assert not pending, f"{doc}:{start}: unterminated command {pending!r}"
    return out


def _console_block(doc: str, first_line: int, body: list[str]) -> list[DocCommand]:
    out = []
    for offset, raw in enumerate(body):
        if raw.lstrip().startswith("$ "):
            code, comment = split_comment(raw.lstrip()[2:])
            out.append(DocCommand(doc, first_line + offset, code, comment, "console", _needs(comment)))
    return out


def _table_commands(doc: str, lines: list[str]) -> list[DocCommand]:
    out = []
    col: int | None = None
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            col = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if col is None:
            if i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]):
                hits = [j for j, c in enumerate(cells) if re.search(r"\bcommand\b", c, re.I)]
                col = hits[0] if hits else -1
            continue
        if col < 0 or col >= len(cells) or set(line) <= set("|:- "):
            continue
        for span in re.findall(r"`([^`]+)`", cells[col]):
            if span.split()[0] in PROGRAMS:
                out.append(DocCommand(doc, i + 1, span, "", "table", ()))
    return out


@dataclass
class Extraction:
    commands: list[DocCommand]
    unlabelled_commands: list[str]  # "doc:line" of unlabelled fences that hold command-like lines (drift)


def extract(repo: Path) -> Extraction:
    """Every documented command of README.md and docs/*.md, in document order."""
    commands: list[DocCommand] = []
    unlabelled: list[str] = []
    for path in doc_files(repo):
        doc = path.relative_to(repo).as_posix()
        lines = path.read_text(encoding="utf-8").split("\n")
        commands += _table_commands(doc, lines)
        i = 0
        while i < len(lines):
            m = _FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            lang, start = m.group(2), i + 1
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                j += 1
            body = lines[i + 1 : j]
            if lang in SHELL_LANGS:
                commands += _shell_block(doc, start + 1, body)
            elif lang == "console":
                commands += _console_block(doc, start + 1, body)
            elif lang in ("", "text") and any(LOOKS_LIKE_COMMAND.match(b) for b in body):
                unlabelled.append(f"{doc}:{start}")
            i = j + 1
    commands.sort(key=lambda c: (c.doc != "README.md", c.doc, c.line))
    return Extraction(commands, unlabelled)


def census(commands: list[DocCommand]) -> str:
    """A short table: documented commands per file and how many need a key or the network."""
    per_doc = Counter(c.doc for c in commands)
    keyed = Counter(c.doc for c in commands if c.needs)
    rows = [f"{doc:32s} {n:4d} commands, {keyed[doc]:3d} key/network" for doc, n in per_doc.items()]
    rows.append(f"{'total':32s} {len(commands):4d} commands, {sum(keyed.values()):3d} key/network")
    return "\n".join(rows)


if __name__ == "__main__":  # python tests/docs_commands.py: the census and every command
    repo = Path(__file__).resolve().parents[1]
    found = extract(repo)
    for c in found.commands:
        print(f"{c.doc}:{c.line} [{c.source}{' needs ' + ','.join(c.needs) if c.needs else ''}] {normalize(c.text)}")
    print(census(found.commands))
    if found.unlabelled_commands:
        print("unlabelled fences with commands:", ", ".join(found.unlabelled_commands))
