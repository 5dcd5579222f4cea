"""`reportbench latex SOURCE`: inspect what the live builder extracts from one paper's LaTeX source."""

from __future__ import annotations

import argparse
import json
import sys

from reportbench.live_builder.latex import DEFAULT_SECTION_TITLES, LatexConfig, extract_paper


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `latex` subcommand (called by reportbench.cli)."""
    p = subparsers.add_parser(
        "latex",
        help="extract the related-work section, cite keys and bib entries from a LaTeX source",
        description=(
            "SOURCE is an arXiv e-print (.tar.gz/.tgz/.tar/.gz, extracted safely to a temp dir), a .tex file "
            "or a project folder. Prints JSON; exit code 0 if a section with citations and a bibliography "
            "was found, 1 otherwise."
        ),
    )
    p.add_argument("source", metavar="SOURCE", help="an arXiv e-print archive, a .tex file or a project folder")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--keep-comments",
        dest="keep_comments",
        action="store_true",
        default=True,
        help="keep %% comments in the cleaned section (default; matches the published data)",
    )
    g.add_argument(
        "--strip-comments",
        dest="keep_comments",
        action="store_false",
        help="remove %% comments (escape-aware) like the paper/code describe",
    )
    p.add_argument(
        "--synonym",
        action="append",
        default=[],
        metavar="TITLE",
        help=f"extra accepted section title (repeatable); defaults: {', '.join(DEFAULT_SECTION_TITLES)}",
    )
    p.add_argument(
        "--only-synonyms",
        action="store_true",
        help="use only the --synonym titles instead of adding them to the defaults",
    )
    p.add_argument(
        "--cite-style",
        choices=["broad", "authors"],
        default="broad",
        help="broad natbib/biblatex commands (default) or the authors' exact \\cite regex",
    )
    p.add_argument("--indent", type=int, default=2, help="JSON indent (0 for one line)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Extract and print JSON; never raises on bad sources (failures are in the JSON)."""
    titles = list(args.synonym) if args.only_synonyms else [*DEFAULT_SECTION_TITLES, *args.synonym]
    if not titles:
        print("error: --only-synonyms needs at least one --synonym", file=sys.stderr)
        return 2
    cfg = LatexConfig(section_titles=titles, keep_comments=args.keep_comments, cite_style=args.cite_style)
    paper = extract_paper(args.source, cfg)
    print(json.dumps(paper.model_dump(mode="json"), indent=args.indent or None, ensure_ascii=False))
    return 0 if paper.ok else 1
