"""Per-benchmark presets (`-S <b>/preset=published|paper|defaults`): what each sets, switch by switch, and why.

A preset is a Hydra group file `conf/<b>/preset/<name>.yaml` applied after the benchmark's own values, so it
wins over them. Each leaf it sets carries a trailing `# src: ...` comment naming where the value comes from (a
paper section or the authors' file); a `# with: ...` line names what the preset needs beside it that it does
not set itself. A preset may set the root `fetch` group (the page fetcher the authors used): `conf/fetch/` comes
before the benchmarks in the defaults list, so a preset overrides it and an explicit `-S fetch.<key>` still wins.
This module reads those files as text, so `reportbench ls presets` needs neither Hydra nor the benchmarks
installed, and a preset without a source for a switch is a test failure (tests/test_presets.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

PRESET_NAMES = ("defaults", "paper", "published")
_LEAF = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.\-]+):(?P<value>[^#]*?)\s*(?:#\s*src:\s*(?P<src>.*))?$")
_WITH = re.compile(r"^#\s*with:\s*(?P<what>.*?)\s*(?:#\s*src:\s*(?P<src>.*))?$")


@dataclass(frozen=True)
class Switch:
    path: str  # dotted, from the config root (e.g. benchmarks.deer.judging.mode)
    value: str  # as written in the YAML
    source: str  # the `# src:` comment ("" when missing)


@dataclass
class Preset:
    benchmark: str
    name: str
    description: str
    switches: list[Switch] = field(default_factory=list)
    needs: list[Switch] = field(default_factory=list)  # `# with:` lines

    @property
    def unsourced(self) -> list[str]:
        return [s.path for s in self.switches if not s.source]


def parse_preset(path: Path, benchmark: str) -> Preset:
    """The switches a preset file sets (leaves only), with their `# src:` comments."""
    text = path.read_text(encoding="utf-8")
    yaml.safe_load(text)  # a broken preset fails here, naming nothing wrong silently
    comments = [ln.lstrip("# ").strip() for ln in text.splitlines() if ln.startswith("#")]
    description = next((c for c in comments if not c.startswith("@package") and not c.startswith("with:")), "")
    preset = Preset(benchmark, path.stem, description)
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        with_match = _WITH.match(line)
        if with_match:
            preset.needs.append(Switch("", with_match["what"], with_match["src"] or ""))
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LEAF.match(line)
        if m is None:
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        value = m["value"].strip()
        if value:
            dotted = ".".join([k for _, k in stack] + [m["key"]])
            preset.switches.append(Switch(dotted, value, (m["src"] or "").strip()))
        else:
            stack.append((indent, m["key"]))
    return preset


def presets(conf: Path = Path("conf")) -> dict[str, dict[str, Preset]]:
    """{benchmark: {preset name: Preset}} for every `conf/<b>/preset/*.yaml`."""
    out: dict[str, dict[str, Preset]] = {}
    for folder in sorted(conf.glob("*/preset")):
        b = folder.parent.name
        out[b] = {p.stem: parse_preset(p, b) for p in sorted(folder.glob("*.yaml"))}
    return out


def format_presets(conf: Path = Path("conf"), benchmark: str | None = None) -> list[str]:
    """`reportbench ls presets`: per benchmark and preset, every switch it sets, its value and its source."""
    lines: list[str] = []
    for b, by_name in presets(conf).items():
        if benchmark and b != benchmark:
            continue
        for name, p in by_name.items():
            lines.append(f"{b}/preset={name}: {p.description}")
            if not p.switches:
                lines.append("    (sets nothing: the shipped defaults)")
            for s in p.switches:
                lines.append(f"    {s.path} = {s.value}    [{s.source or 'NO SOURCE'}]")
            for s in p.needs:
                lines.append(f"    with {s.value}    [{s.source or 'NO SOURCE'}]")
    return lines
