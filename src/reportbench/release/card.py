"""Hugging Face-style dataset cards (`README.md`) for every release directory and export.

Why: users recognise a Hub card — a YAML header (`configs`, `license`, `size_categories`, tags) that
`datasets.load_dataset(<dir>, <config>)` reads, then a summary, how to load, the fields of every table with
their descriptions and types, byte sizes, the licence and the benchmark paper's citation. The card is a pure
function of the release and its files (no dates but the release's own `created_at`), so writing a release twice
still gives identical bytes. `CARD.md` (release/format.py) is kept as is; `README.md` is the superset.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

SPLIT = "test"
CARD_FILE = "CARD.md"  # the reportbench card of a release directory (format.write_release writes it first)

# The benchmark papers (seed texts in ../shared/seeds; arXiv ids as the specs cite them).
CITATIONS: dict[str, str] = {
    "deepscholar": """@article{patel2025deepscholar,
  title   = {DeepScholar-Bench: A Live Benchmark and Automated Evaluation for Generative Research Synthesis},
  author  = {Patel, Liana and Arabzadeh, Negar and Gupta, Harshit and Sundar, Ankita and Stoica, Ion and
             Zaharia, Matei and Guestrin, Carlos},
  journal = {arXiv preprint arXiv:2508.20033},
  year    = {2025}
}""",
    "researcherbench": """@article{xu2025researcherbench,
  title   = {ResearcherBench: Evaluating Deep AI Research Systems on the Frontiers of Scientific Inquiry},
  author  = {Xu, Tianze and Lu, Pengrui and Ye, Lyumanshan and Hu, Xiangkun and Liu, Pengfei},
  journal = {arXiv preprint arXiv:2507.16280},
  year    = {2025}
}""",
    "deer": """@article{han2025deer,
  title   = {DEER: A Comprehensive and Reliable Benchmark for Deep-Research Expert Reports},
  author  = {Han, Janghoon and Kim, Heegyu and Lee, Changho and Lee, Dahm and Park, Min Hyung and Song, Hosung and
             Choi, Stanley Jungkyu and Lee, Moontae and Lee, Honglak},
  journal = {arXiv preprint arXiv:2512.17776},
  year    = {2025}
}""",
    "researchqa": """@misc{li2025researchqa,
  title  = {ResearchQA: Evaluating Scholarly Question Answering at Scale Across 75 Fields with Survey-Mined
            Questions and Rubrics},
  author = {Li, S. Yifei and Chang, Allen and Malaviya, Chaitanya and Yatskar, Mark},
  year   = {2025}
}""",
    "liveresearchbench": """@article{wang2025liveresearchbench,
  title   = {LiveResearchBench: A Live Benchmark for User-Centric Deep Research in the Wild},
  author  = {Wang, Jiayu and Ming, Yifei and Dulepet, Riya and Chen, Qinglin and Xu, Austin and Ke, Zixuan and
             Sala, Frederic and Albarghouthi, Aws and Xiong, Caiming and Joty, Shafiq},
  journal = {arXiv preprint arXiv:2510.14240},
  year    = {2025}
}""",
}

_LICENCES = [  # (pattern in our free-text licence, Hub id); first match wins
    (r"apache[- ]?2", "apache-2.0"),
    (r"\bmit\b", "mit"),
    (r"cc[- ]by[- ]nc[- ]sa[- ]?4", "cc-by-nc-sa-4.0"),
    (r"cc[- ]by[- ]nc[- ]?4", "cc-by-nc-4.0"),
    (r"cc[- ]by[- ]sa[- ]?4", "cc-by-sa-4.0"),
    (r"cc[- ]by[- ]?4", "cc-by-4.0"),
    (r"cc0", "cc0-1.0"),
]


def hub_licence(licence: str | None) -> str:
    """Our licence text -> a Hub licence id, or "other" (the text then goes into `license_name`)."""
    text = (licence or "").lower()
    for pattern, hub in _LICENCES:
        if re.search(pattern, text):
            return hub
    return "other"


def size_category(n: int) -> str:
    """The Hub's size bucket for the number of examples in the main table."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "1M<n<10M" if n < 10_000_000 else "n>10M"


def _yaml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def yaml_header(
    *,
    pretty_name: str,
    licence: str | None,
    configs: Sequence[tuple[str, str]],
    n_examples: int,
    tags: Sequence[str],
    default: str | None = None,
    fingerprints: Mapping[str, str] | None = None,
) -> str:
    """The card's YAML front matter; `configs` = [(config name, data file path relative to the card)].

    `fingerprints` (config -> text naming the benchmark, release and content hash) become each config's
    `description`. Why: `datasets` keys its cache by folder name, config name and a hash of the card's configs,
    not by the files' bytes, so two releases both called `demo` with identical configs shared one cache entry
    and `load_dataset` returned the other benchmark's (or a stale) table."""
    hub = hub_licence(licence)
    lines = ["---", f"pretty_name: {_yaml_str(pretty_name)}", f"license: {hub}"]
    if hub == "other":
        lines.append(f"license_name: {_yaml_str(licence or 'unspecified')}")
    lines += ["language:", "- en", "task_categories:", "- text-generation", "- question-answering"]
    lines += ["tags:", *[f"- {t}" for t in tags], "size_categories:", f"- {size_category(n_examples)}", "configs:"]
    for name, path in configs:
        lines.append(f"- config_name: {name}")
        if name == default:
            lines.append("  default: true")
        if fingerprints and name in fingerprints:
            lines.append(f"  description: {_yaml_str(fingerprints[name])}")
        lines += ["  data_files:", f"  - split: {SPLIT}", f"    path: {path}"]
    lines.append("---")
    return "\n".join(lines)


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _field_rows(schema: Mapping[str, Any], descriptions: Mapping[str, str]) -> list[str]:
    rows = ["| field | type | description |", "|---|---|---|"]
    for name, dtype in schema.items():
        desc = (descriptions.get(name) or "").replace("|", "\\|").replace("\n", " ")
        rows.append(f"| `{name}` | {dtype} | {desc} |")
    return rows


def _citation(benchmark: str) -> list[str]:
    cite = CITATIONS.get(benchmark)
    if cite is None:
        return ["No paper citation is registered for this benchmark."]
    return ["If you use this release, please cite the benchmark's paper:", "", "```bibtex", cite, "```"]


def _file_sha256(paths: Sequence[Path]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def release_fingerprints(
    benchmark: str, release: str, manifest: Mapping[str, Any], out_dir: Path, configs: Sequence[str]
) -> dict[str, str]:
    """config -> "<benchmark>/<release> <config> sha256:<table hash>" (the manifest's hash, else the file's)."""
    tables = manifest.get("tables") or {}
    out = {}
    for name in configs:
        entry = tables.get(name) or {}
        sha = entry.get("sha256")
        if not sha:
            path = out_dir / str(entry.get("file") or f"{name}.parquet")
            sha = _file_sha256([path]) if path.is_file() else "unknown"
        out[name] = f"{benchmark}/{release} {name} sha256:{sha}"
    return out


def render_release_card(release: Any, manifest: Mapping[str, Any], out_dir: Path, card_md: str, extra: str = "") -> str:
    """The README.md of a release directory (files must already be written: sizes are read from disk)."""
    m = release.meta
    specs = release.table_specs()
    counts = manifest.get("counts") or {}
    # an empty table is not a loadable config (`datasets` raises "corresponds to no data"); it stays listed below
    configs = [(s.name, s.file) for s in specs if counts.get(s.name, 0) > 0]
    tags = ["reportbench", "deep-research", "benchmark", m.benchmark]
    if m.synthetic:
        tags.append("synthetic")
    title = f"{m.benchmark} · {m.name}"
    lines = [
        yaml_header(
            pretty_name=title,
            licence=m.licence,
            configs=configs,
            n_examples=int(counts.get("tasks", 0)),
            tags=tags,
            default="tasks",
            fingerprints=release_fingerprints(m.benchmark, m.name, manifest, out_dir, [c for c, _ in configs]),
        ),
        "",
        f"# {title}",
        "",
    ]
    if m.synthetic:
        lines += ["> **Synthetic data**: self-authored for testing reportbench; none of it describes real work.", ""]
    lines += [
        "## Dataset summary",
        "",
        (
            m.description
            or f"A {m.benchmark} release in reportbench's release format (schema v{manifest.get('schema_version')})."
        ),
        "",
        f"- benchmark: `{m.benchmark}`; release `{m.name}`, created {m.created_at}",
        f"- source: {m.source}",
        f"- one configuration per table; every table is a single `{SPLIT}` split",
        "",
        "## How to load",
        "",
        "```python",
        "import polars as pl",
        'tasks = pl.read_parquet("tasks.parquet")',
        "",
        "import datasets  # pip install datasets",
        'tasks = datasets.load_dataset("<this folder>", "tasks", split="test")',
        "",
        "from reportbench.release.format import read_release  # validated, typed records",
        'release = read_release("<this folder>")',
        "```",
        "",
        "## Dataset structure",
        "",
        "| config (table) | file | rows | bytes |",
        "|---|---|---|---|",
    ]
    total = 0
    for s in specs:
        path = out_dir / s.file
        size = path.stat().st_size if path.is_file() else 0
        total += size
        empty = "" if counts.get(s.name, 0) else " (empty: no config)"
        lines.append(f"| `{s.name}`{empty} | `{s.file}` | {counts.get(s.name, 0)} | {size} ({_human_bytes(size)}) |")
    lines += [
        "",
        f"Total: {total} bytes ({_human_bytes(total)}) of parquet (zstd). `release.json` lists the sha256 "
        "of every file.",
        "",
    ]
    for s in specs:
        descriptions = {n: f.description or "" for n, f in s.model.model_fields.items()}
        lines += [f"### `{s.name}`", "", *_field_rows(s.schema, descriptions), ""]
    lines += ["## Licence", "", f"{m.licence}", "", "## Citation", "", *_citation(m.benchmark), ""]
    body = card_md.split("\n", 1)[1] if card_md.startswith("# ") else card_md
    lines += ["## reportbench release card", "", body.strip(), ""]
    if extra.strip():
        lines += [extra.strip(), ""]
    return "\n".join(lines)


def write_release_card(out_dir: str | Path, release: Any, manifest: Mapping[str, Any], extra: str = "") -> Path:
    """Write `README.md` next to the tables, from `CARD.md` as written (plus `extra`, e.g. the live section)."""
    out = Path(out_dir)
    card_md = (out / CARD_FILE).read_text(encoding="utf-8") if (out / CARD_FILE).is_file() else ""
    path = out / "README.md"
    path.write_text(render_release_card(release, manifest, out, card_md, extra), encoding="utf-8")
    return path


def render_export_card(
    name: str,
    tables: Mapping[str, pl.DataFrame],
    licence: str,
    out_dir: Path,
    *,
    benchmark: str = "deepscholar",
    file_pattern: str = "{config}/test-*.parquet",
    descriptions: Mapping[str, Mapping[str, str]] | None = None,
    intro: str = "",
) -> str:
    """The README.md of an export folder (one sub-folder of parquet files per config)."""
    configs = [(cfg, file_pattern.format(config=cfg)) for cfg, df in tables.items() if df.height > 0]
    main = next(iter(tables), None)
    n = tables[main].height if main is not None else 0
    lines = [
        yaml_header(
            pretty_name=name,
            licence=licence,
            configs=configs,
            n_examples=n,
            tags=["reportbench", "deep-research", "benchmark", benchmark],
            default=main,
            fingerprints={
                cfg: f"{benchmark}/{name} {cfg} sha256:{_file_sha256(sorted((out_dir / cfg).glob('*.parquet')))}"
                for cfg, _ in configs
            },
        ),
        "",
        f"# {name}",
        "",
        intro or f"Export of the reportbench release `{name}` (benchmark `{benchmark}`) as flat parquet tables.",
        "",
        "## How to load",
        "",
        "```python",
        "import polars as pl",
        f'df = pl.read_parquet("{file_pattern.format(config=main or "<config>").replace("*", "00000-of-00001")}")',
        "import datasets  # pip install datasets",
        f'ds = datasets.load_dataset("<this folder>", "{main}", split="test")',
        "```",
        "",
        "## Dataset structure",
        "",
        "| config | rows | bytes |",
        "|---|---|---|",
    ]
    total = 0
    for cfg, df in tables.items():
        size = sum(p.stat().st_size for p in (out_dir / cfg).glob("*.parquet")) if (out_dir / cfg).is_dir() else 0
        total += size
        lines.append(f"| `{cfg}` | {df.height} | {size} ({_human_bytes(size)}) |")
    lines += ["", f"Total: {total} bytes ({_human_bytes(total)}).", ""]
    for cfg, df in tables.items():
        lines += [f"### `{cfg}`", "", *_field_rows(df.schema, (descriptions or {}).get(cfg, {})), ""]
    lines += ["## Licence", "", licence, "", "## Citation", "", *_citation(benchmark), ""]
    return "\n".join(lines)
