"""Static extraction of prompt templates from the authors' source text: `ast` only, never import or exec.

Why static: the authors' modules import heavy or network-bound packages and may run code at import; we only
need their string literals and the shape of their f-strings. A `Template` keeps an f-string's literal parts
and its fields (each named by the field's source expression, e.g. `len(nuggets)` or `query`), so a pack
fills it with values it computes itself; a `.format` string becomes the same structure.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class ExtractError(ValueError):
    """The source does not contain the expected symbol in a form we can read statically."""


@dataclass(frozen=True)
class Field:
    """One replacement field: its source expression, the `!r`/`!s`/`!a` conversion and the format spec."""

    expr: str
    conversion: str = ""
    spec: str = ""


@dataclass(frozen=True)
class Template:
    """Literal text interleaved with fields; `render` fills fields by expression text."""

    parts: tuple[str | Field, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(p.expr for p in self.parts if isinstance(p, Field))

    @property
    def text(self) -> str:
        """The literal text; only for templates without fields."""
        if self.fields:
            raise ExtractError(f"template has fields {list(self.fields)}; use render()")
        return "".join(p for p in self.parts if isinstance(p, str))

    def __add__(self, other: Template) -> Template:
        return Template(self.parts + other.parts)

    def render(self, values: Mapping[str, Any] | None = None, /, **kw: Any) -> str:
        """Fill every field like Python would (conversion, then `format(value, spec)`); a missing value is an error."""
        vals = {**(values or {}), **kw}
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            if p.expr not in vals:
                raise ExtractError(f"no value for template field {p.expr!r}; fields: {list(self.fields)}")
            v = vals[p.expr]
            if p.conversion == "r":
                v = repr(v)
            elif p.conversion == "s":
                v = str(v)
            elif p.conversion == "a":
                v = ascii(v)
            out.append(format(v, p.spec))
        return "".join(out)

    @classmethod
    def literal(cls, text: str) -> Template:
        return cls((text,))

    @classmethod
    def from_format_string(cls, text: str) -> Template:
        """A `str.format` template: `{name}` fields, `{{`/`}}` escapes (as `.format` reads them)."""
        parts: list[str | Field] = []
        for lit, name, spec, conv in string.Formatter().parse(text):
            if lit:
                parts.append(lit)
            if name is not None:
                if name == "" or name.isdigit():
                    raise ExtractError("positional .format fields are not supported")
                parts.append(Field(name, conv or "", spec or ""))
        return cls(tuple(parts))


def format_template(text: str, values: Mapping[str, Any]) -> str:
    """`text.format(**values)` through the Template path (same semantics, clearer errors)."""
    return Template.from_format_string(text).render(values)


def sequential_replace(text: str, pairs: Iterable[tuple[str, str]]) -> str:
    """`text.replace(m1, v1).replace(m2, v2)...` in order, exactly like the authors' marker chains.

    Reproduces their substitution bug on purpose: a value inserted for an early marker that contains a later
    marker is itself rewritten by the later replace.
    """
    for marker, value in pairs:
        text = text.replace(marker, value)
    return text


# -- ast helpers --------------------------------------------------------------------------------------


def parse_module(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise ExtractError(f"source does not parse: {exc}") from exc


def _as_template(node: ast.expr, consts: Mapping[str, str] | None = None) -> Template:
    """A str constant, f-string, or `+` concatenation of those (names resolved from `consts`, else fields)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Template.literal(node.value)
    if isinstance(node, ast.JoinedStr):
        parts: list[str | Field] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            elif isinstance(v, ast.FormattedValue):
                conv = "" if v.conversion == -1 else chr(v.conversion)
                spec = ""
                if v.format_spec is not None:
                    spec_t = _as_template(v.format_spec, consts)
                    if spec_t.fields:
                        raise ExtractError("nested fields in a format spec are not supported")
                    spec = spec_t.text
                parts.append(Field(ast.unparse(v.value), conv, spec))
            else:  # pragma: no cover - ast never produces other nodes here
                raise ExtractError(f"unexpected f-string node {type(v).__name__}")
        return Template(tuple(parts))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _as_template(node.left, consts) + _as_template(node.right, consts)
    if isinstance(node, ast.Name):
        if consts is not None and node.id in consts:
            return Template.literal(consts[node.id])
        return Template((Field(node.id),))
    raise ExtractError(f"not a string expression: {ast.unparse(node)[:80]}")


def module_constants(source: str) -> dict[str, str]:
    """Every module-level `NAME = <str literal | concatenation of literals>` (later assignments win)."""
    out: dict[str, str] = {}
    for stmt in parse_module(source).body:
        target, value = _simple_assign(stmt)
        if target is None or value is None:
            continue
        try:
            t = _as_template(value, out)
        except ExtractError:
            continue
        if not t.fields:
            out[target] = t.text
    return out


def module_constant(source: str, name: str) -> str:
    consts = module_constants(source)
    if name not in consts:
        raise ExtractError(f"no module-level string constant {name!r}")
    return consts[name]


def _simple_assign(stmt: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return stmt.target.id, stmt.value
    return None, None


def function_node(source: str, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The one function (or method, or nested function) called `name` anywhere in the module."""
    found = [
        n
        for n in ast.walk(parse_module(source))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
    ]
    if len(found) != 1:
        raise ExtractError(f"expected exactly one function {name!r}, found {len(found)}")
    return found[0]


def _in_order(node: ast.AST) -> list[ast.AST]:
    """Descendants in source order (ast.walk is breadth-first), not descending into nested functions."""
    out: list[ast.AST] = []

    def visit(n: ast.AST) -> None:
        for child in ast.iter_child_nodes(n):
            out.append(child)
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.JoinedStr):
                visit(child)

    visit(node)
    return out


def function_assignments(source: str, func: str, var: str) -> list[Template]:
    """Each `var = <string expr>` inside `func`, in source order (branches included)."""
    out: list[Template] = []
    for n in _in_order(function_node(source, func)):
        if isinstance(n, ast.stmt):
            target, value = _simple_assign(n)
            if target == var and value is not None:
                out.append(_as_template(value))
    if not out:
        raise ExtractError(f"{func}: no assignment to {var!r}")
    return out


def function_accumulated(source: str, func: str, var: str) -> Template:
    """`var = a` then `var += b` ... in `func`'s top-level body: the concatenated template."""
    acc: Template | None = None
    for stmt in function_node(source, func).body:
        target, value = _simple_assign(stmt)
        if target == var and value is not None:
            acc = _as_template(value)
        elif (
            isinstance(stmt, ast.AugAssign)
            and isinstance(stmt.op, ast.Add)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == var
        ):
            if acc is None:
                raise ExtractError(f"{func}: {var!r} += before any assignment")
            acc = acc + _as_template(stmt.value)
    if acc is None:
        raise ExtractError(f"{func}: no assignment to {var!r}")
    return acc


def function_return(source: str, func: str) -> Template:
    """The string expression of `func`'s first `return`."""
    for n in _in_order(function_node(source, func)):
        if isinstance(n, ast.Return) and n.value is not None:
            return _as_template(n.value)
    raise ExtractError(f"{func}: no return of a string expression")


def function_fstrings(source: str, func: str) -> list[Template]:
    """Every f-string in `func`, in source order (outermost only)."""
    return [_as_template(n) for n in _in_order(function_node(source, func)) if isinstance(n, ast.JoinedStr)]


def function_messages(source: str, func: str) -> list[tuple[str, Template | None]]:
    """The first list literal of `{"role": ..., "content": ...}` dicts in `func`.

    Content that is a string expression becomes a Template; anything else (e.g. a call to a helper that
    builds the content) is None, for the pack to fill from that helper.
    """
    for n in _in_order(function_node(source, func)):
        if isinstance(n, ast.List) and n.elts and all(isinstance(e, ast.Dict) for e in n.elts):
            msgs: list[tuple[str, Template | None]] = []
            for d in n.elts:
                assert isinstance(d, ast.Dict)
                kv = {
                    k.value: v
                    for k, v in zip(d.keys, d.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)
                }
                role = kv.get("role")
                if not (isinstance(role, ast.Constant) and isinstance(role.value, str)) or "content" not in kv:
                    break
                try:
                    content: Template | None = _as_template(kv["content"])
                except ExtractError:
                    content = None
                msgs.append((role.value, content))
            else:
                return msgs
    raise ExtractError(f"{func}: no list of role/content message dicts")


def call_keywords(source: str, func: str, callee_attr: str) -> list[dict[str, Any]]:
    """Keyword constants of each call `<x>.<callee_attr>(...)` or `<callee_attr>(...)` inside `func`.

    Non-constant keyword values are reported as `ast.unparse` text wrapped in a `Field`.
    """
    out: list[dict[str, Any]] = []
    for n in _in_order(function_node(source, func)):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name != callee_attr:
            continue
        kws: dict[str, Any] = {}
        for kw in n.keywords:
            if kw.arg is None:
                continue
            try:
                kws[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                kws[kw.arg] = Field(ast.unparse(kw.value))
        out.append(kws)
    return out


def function_defaults(source: str, func: str) -> dict[str, Any]:
    """Literal default values of `func`'s parameters."""
    node = function_node(source, func)
    args = node.args
    pos = args.posonlyargs + args.args
    out: dict[str, Any] = {}
    for a, d in zip(pos[len(pos) - len(args.defaults) :], args.defaults, strict=True):
        try:
            out[a.arg] = ast.literal_eval(d)
        except ValueError:
            continue
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if d is not None:
            try:
                out[a.arg] = ast.literal_eval(d)
            except ValueError:
                continue
    return out


def class_literal_fields(source: str, cls: str) -> dict[str, tuple[Any, ...] | str]:
    """A pydantic-style class's annotated fields: `Literal[...]` -> the tuple of allowed values, else the
    annotation's source text (e.g. 'str'). Used to build strict parsers and JSON schemas statically."""
    for n in ast.walk(parse_module(source)):
        if isinstance(n, ast.ClassDef) and n.name == cls:
            out: dict[str, tuple[Any, ...] | str] = {}
            for stmt in n.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    ann = stmt.annotation
                    if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "Literal":
                        sl = ann.slice
                        elts: Sequence[ast.expr] = sl.elts if isinstance(sl, ast.Tuple) else [sl]
                        out[stmt.target.id] = tuple(ast.literal_eval(e) for e in elts)
                    else:
                        out[stmt.target.id] = ast.unparse(ann)
            return out
    raise ExtractError(f"no class {cls!r}")


def literal_assignments(source: str, func: str, var: str) -> list[Any]:
    """Each `var = <literal>` inside `func` (numbers, strings, tuples ...), in source order."""
    out: list[Any] = []
    for n in _in_order(function_node(source, func)):
        if isinstance(n, ast.stmt):
            target, value = _simple_assign(n)
            if target == var and value is not None:
                try:
                    out.append(ast.literal_eval(value))
                except ValueError:
                    continue
    if not out:
        raise ExtractError(f"{func}: no literal assignment to {var!r}")
    return out


def assignments_anywhere(source: str, var: str) -> list[Template]:
    """Each `var = <string expr>` anywhere in the module (any function or the top level), in source order."""
    out: list[Template] = []
    for n in _in_order(parse_module(source)):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            out.extend(_assignments_in(n, var))
        elif isinstance(n, ast.stmt):
            target, value = _simple_assign(n)
            if target == var and value is not None:
                out.append(_as_template(value))
    if not out:
        raise ExtractError(f"no assignment to {var!r}")
    return out


def _assignments_in(fn: ast.AST, var: str) -> list[Template]:
    out: list[Template] = []
    for n in _in_order(fn):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            out.extend(_assignments_in(n, var))
        elif isinstance(n, ast.stmt):
            target, value = _simple_assign(n)
            if target == var and value is not None:
                out.append(_as_template(value))
    return out


def argparse_default(source: str, flag: str) -> Any:
    """The literal `default=` of `parser.add_argument("<flag>", ...)` anywhere in the module."""
    for n in ast.walk(parse_module(source)):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add_argument"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and n.args[0].value == flag
        ):
            for kw in n.keywords:
                if kw.arg == "default":
                    return ast.literal_eval(kw.value)
    raise ExtractError(f"no add_argument({flag!r}, default=...)")
