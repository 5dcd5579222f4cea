"""The import graph of src/reportbench/ (function-local imports included, `if TYPE_CHECKING:` blocks excluded) has
no cycle and no import from a lower layer to a higher one. The layer order is written once, in the `layers` block
of docs/architecture.md, and read from there; each test that a planted cycle or upward import is caught runs on
a copy of the tree in a temp dir.

Function-local imports of reportbench modules are there only for a measured import cost, and each says so in one
format, on its line or the line before: `# lazy: +N ms to import (python -X importtime)` (N: what the import adds
to the importing module). Anything else (no comment, another reason, another wording) fails."""

from __future__ import annotations

import ast
import functools
import re
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "reportbench"


# ------------------------------------------------------------------------------------------------ the graph
def modules(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package under `src` (a package is its __init__)."""
    out = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@functools.cache
def _parse_source(text: str, name: str) -> ast.Module:
    """Each distinct source parsed once per session: the planted-import tests copy the tree and change one file,
    so the others parse the same text again (read-only trees: nothing here mutates them)."""
    return ast.parse(text, name)


def parse(path: Path, src: Path) -> tuple[str, ast.Module]:
    """(text, tree) of a module file under `src`."""
    text = path.read_text(encoding="utf-8")
    return text, _parse_source(text, path.relative_to(src).as_posix())


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """Line numbers inside `if TYPE_CHECKING:` blocks (never executed: not an import at run time)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(src: Path) -> dict[str, dict[str, int]]:
    """module -> {imported module of the package: first line}, module-level and function-local alike."""
    mods = modules(src)

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {}
    for mod, path in mods.items():
        _, tree = parse(path, src)
        skip = _type_checking_lines(tree)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package
                    for _ in range(node.level - 1):
                        up = up.rpartition(".")[0]
                    base = f"{up}.{base}" if base else up
                # `from pkg import submodule` imports the submodule; `from mod import name` the module
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            if not targets or node.lineno in skip:
                continue
            for target in targets:
                if target == PACKAGE or target.startswith(PACKAGE + "."):
                    found = known(target)
                    if found and found != mod:
                        edges.setdefault(found, node.lineno)
        graph[mod] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


LAZY = re.compile(r"#.*\blazy: \+\d+ ms to import \(python -X importtime\)")


def _says_cost(line: str) -> bool:
    """The line carries the one accepted comment (after code, or as a comment line of its own)."""
    return bool(LAZY.search(line))


def uncommented_local_imports(src: Path) -> dict[str, int]:
    """`path::function::imported module` -> line, for every import of a reportbench module inside a function
    without `# lazy: +N ms to import (python -X importtime)` on its own line or as the comment line before
    (`if TYPE_CHECKING:` blocks excluded)."""
    mods = modules(src)
    out: dict[str, int] = {}
    for mod, path in mods.items():
        text, tree = parse(path, src)
        lines = text.splitlines()
        skip = _type_checking_lines(tree)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in skip:
                    continue
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                else:
                    base = node.module or ""
                    if node.level:
                        up = package
                        for _ in range(node.level - 1):
                            up = up.rpartition(".")[0]
                        base = f"{up}.{base}" if base else up
                    targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
                ours = sorted(t for t in targets if t == PACKAGE or t.startswith(PACKAGE + "."))
                if not ours:
                    continue
                same = _says_cost(lines[node.lineno - 1])
                before = node.lineno > 1 and lines[node.lineno - 2].strip().startswith("#")
                before = before and _says_cost(lines[node.lineno - 2])
                if not (same or before):
                    rel = path.relative_to(src).as_posix()
                    for target in ours:
                        out.setdefault(f"{rel}::{fn.name}::{target}", node.lineno)
    return out


# ----------------------------------------------------------------------------------------------- the layers
def read_layers(doc: Path) -> list[tuple[str, list[str]]]:
    """The ```layers block of docs/architecture.md: `N. name: entry entry ...`, bottom layer first.

    An entry names a module and everything under it (`judges`), or only what is under it (`protocols.*`);
    a module belongs to its most specific entry."""
    text = doc.read_text(encoding="utf-8")
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, f"{doc}: no ```layers block"
    layers = []
    for line in block.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"\d+\.\s+([\w-]+):\s+(.+)", line)
        assert m, f"{doc}: cannot read layer line {line!r}"
        layers.append((m.group(1), m.group(2).split()))
    return layers


def layer_of(module: str, layers: list[tuple[str, list[str]]]) -> int | None:
    """Index of the layer whose most specific entry matches `module` (None: no entry matches)."""
    rel = module.removeprefix(PACKAGE).lstrip(".")
    best: tuple[float, int] | None = None
    for i, (_, entries) in enumerate(layers):
        for entry in entries:
            if entry == "." and rel == "":
                score = 0.0
            elif entry.endswith(".*") and rel.startswith(entry[:-1]):
                score = len(entry) - 1.5
            elif entry not in (".",) and not entry.endswith(".*") and (rel == entry or rel.startswith(entry + ".")):
                score = float(len(entry))
            else:
                continue
            if best is None or score > best[0]:
                best = (score, i)
    return None if best is None else best[1]


def problems(src: Path, doc: Path) -> list[str]:
    """Every cycle, every module without a layer, every import from a lower layer to a higher one."""
    graph = imports(src)
    layers = read_layers(doc)
    out = [f"cycle: {' <-> '.join(c)}" for c in cycles(graph)]
    where = {m: layer_of(m, layers) for m in graph}
    out += [f"{m}: in no layer of {doc.name}" for m, layer in sorted(where.items()) if layer is None]
    for mod, edges in sorted(graph.items()):
        for target, line in sorted(edges.items()):
            a, b = where[mod], where[target]
            if a is not None and b is not None and b > a:
                out.append(
                    f"upward: {mod} (layer {layers[a][0]}) imports {target} (layer {layers[b][0]}) at line {line}"
                )
    return out


# ------------------------------------------------------------------------------------------------- the tests
def test_no_cycles_and_no_upward_imports() -> None:
    found = problems(ROOT / "src", ROOT / "docs" / "architecture.md")
    assert found == [], "\n".join(found)


def test_function_local_imports_say_why() -> None:
    found = sorted(f"{k} (line {v})" for k, v in uncommented_local_imports(ROOT / "src").items())
    assert not found, (
        "function-local imports without `# lazy: +N ms to import (python -X importtime)` (on the line or the "
        "comment line before; N measured with `python -X importtime -c 'import reportbench.<module>'`): "
        "hoist them to module level or annotate them:\n" + "\n".join(found)
    )


@pytest.fixture()
def tree_copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "src" / PACKAGE, tmp_path / "src" / PACKAGE, ignore=shutil.ignore_patterns("*.pyc"))
    return tmp_path / "src"


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _planted() -> None:\n    {line}\n")


def test_a_planted_upward_import_fails(tree_copy: Path) -> None:
    _append(tree_copy / PACKAGE / "types.py", "from reportbench.pipeline import run_system  # noqa")
    found = problems(tree_copy, ROOT / "docs" / "architecture.md")
    assert any(p.startswith("upward: reportbench.types ") and "reportbench.pipeline" in p for p in found), found


def test_a_planted_cycle_fails(tree_copy: Path) -> None:
    _append(tree_copy / PACKAGE / "jsonio.py", "import reportbench.progress  # noqa")
    _append(tree_copy / PACKAGE / "progress.py", "from reportbench import jsonio  # noqa")
    found = problems(tree_copy, ROOT / "docs" / "architecture.md")
    assert "cycle: reportbench.jsonio <-> reportbench.progress" in found, found


def test_a_planted_unannotated_local_import_fails(tree_copy: Path) -> None:
    path = tree_copy / PACKAGE / "progress.py"
    path.write_text(
        path.read_text()
        + "\n\ndef _planted() -> None:\n    from reportbench import jsonio\n"
        + "\n\ndef _annotated() -> None:\n    # lazy: +40 ms to import (python -X importtime)\n"
        + "    from reportbench import stale\n"
        + "\n\ndef _inline() -> None:\n"
        + "    from reportbench import stale  # lazy: +4 ms to import (python -X importtime)\n"
        + "\n\ndef _other_reason() -> None:\n    # pure data, no heavy import\n    from reportbench import bounds\n"
        + "\n\ndef _no_figure() -> None:\n    from reportbench import types  # lazy: cheap\n"
    )
    found = uncommented_local_imports(tree_copy)
    assert "reportbench/progress.py::_planted::reportbench.jsonio" in found
    assert "reportbench/progress.py::_other_reason::reportbench.bounds" in found
    assert "reportbench/progress.py::_no_figure::reportbench.types" in found
    assert not any("::_annotated::" in k or "::_inline::" in k for k in found)


def test_type_checking_imports_are_not_edges(tree_copy: Path) -> None:
    path = tree_copy / PACKAGE / "types.py"
    planted = "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import reportbench.cli\n"
    path.write_text(path.read_text() + planted)
    assert "reportbench.cli" not in imports(tree_copy)["reportbench.types"]


def test_the_pack_layer_hands_its_resolver_to_the_judges() -> None:
    """The judges import no prompt pack: importing the stage functions hands the authors' resolver in, and a
    process that never loaded the pack layer gets one clear error, not a silent fallback to our wording."""
    import subprocess
    import sys

    import reportbench.pipeline  # noqa: F401
    from reportbench.judges import prompt_modes
    from reportbench.prompt_packs import judging

    assert prompt_modes._AUTHORS["prompt"] is judging.authors_prompt
    code = "from reportbench.judges.prompt_modes import authors_prompt\nauthors_prompt(None)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "no prompt pack is loaded" in proc.stderr
