"""LaTeX side of the live release builder: safe extraction, section, cleaning, cite keys, bibliography.

All fixtures are self-authored (tests/fixtures/latex/ and strings below); archives are built at test time.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import tarfile
import uuid
from pathlib import Path

import pytest

from reportbench.live_builder import cli as build_cli
from reportbench.live_builder.latex import (
    LatexConfig,
    clean_section,
    delatex,
    extract_cite_keys,
    extract_paper,
    find_related_work,
    mask_comments,
    parse_bbl,
    parse_bib,
    remove_comments,
)
from reportbench.live_builder.safe_extract import (
    ExtractionError,
    ExtractLimits,
    extract_source,
    safe_member_path,
)

pytestmark = pytest.mark.core

LATEX = Path(__file__).resolve().parent / "fixtures" / "latex"
BASIC = LATEX / "project_basic"
BBL = LATEX / "project_bbl"
AUTHORS_SECTION_RE = re.compile(
    r"\\section\*?\{(Related\s+Work|Related\s+Works)\}(.*?)(?=\\section|\Z)", re.DOTALL | re.IGNORECASE
)


def _doc(body: str) -> str:
    return "\\documentclass{article}\n\\begin{document}\n" + body + "\n\\end{document}\n"


def _tar_gz(src_dir: Path, out: Path, prefix: str = "") -> Path:
    with tarfile.open(out, "w:gz") as tf:
        for p in sorted(src_dir.rglob("*")):
            tf.add(p, arcname=prefix + p.relative_to(src_dir).as_posix(), recursive=False)
    return out


def _add_bytes(tf: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tf.addfile(info, io.BytesIO(data))


LONG = "Prior studies of widgets are many and varied; we summarise them here in some detail. " * 2


# ---------------------------------------------------------------------------------------------- comments


def test_remove_comments_is_escape_aware() -> None:
    text = "reached 50\\% accuracy % a real comment\nline\\\\% comment after a line break\n\\\\\\% kept"
    assert remove_comments(text) == "reached 50\\% accuracy \nline\\\\\n\\\\\\% kept"
    masked = mask_comments(text)
    assert len(masked) == len(text) and "real comment" not in masked and "50\\% accuracy" in masked


# ---------------------------------------------------------------------------------------------- cleaning

RAW = (
    "\\label{sec:rw}\n"
    "Widgets reach 50\\% accuracy~\\cite{a} % TODO drop this\n"
    "\\begin{figure}[t]\\includegraphics{x}\\caption{X \\cite{f}}\\label{fig:x}\\end{figure}\n"
    "\\begin{figure*}\nwide\n\\end{figure*}\n"
    "\\begin{subfigure}{0.5\\linewidth}sub\\end{subfigure}\n"
    "\\subsection{Families}\\label{sec:fam}\nMore text.\n"
)


def test_clean_section_keeps_comments_like_the_published_data() -> None:
    out = clean_section(RAW, keep_comments=True)
    assert out.startswith("Widgets reach 50\\% accuracy~\\cite{a} % TODO drop this")
    assert "figure" not in out and "subfigure" not in out and "\\label" not in out
    assert "\\subsection{Families}More text." in out  # label plus one newline removed, as the authors did
    assert out == out.strip()


def test_clean_section_strip_comments_keeps_escaped_percent() -> None:
    out = clean_section(RAW, keep_comments=False)
    assert "TODO" not in out
    assert "50\\% accuracy~\\cite{a}" in out


def test_clean_section_order_comments_before_figures() -> None:
    # authors' order: comments go first, so a commented-out \end{figure} no longer ends the figure
    raw = "A\n\\begin{figure}x\n% \\end{figure}\nB\n\\begin{figure}y\\end{figure}\nC"
    assert clean_section(raw, keep_comments=True) == "A\n\nB\n\nC"
    assert clean_section(raw, keep_comments=False) == "A\n\nC"


# ---------------------------------------------------------------------------------------------- cite keys


def test_cite_keys_multi_key_optional_args_and_natbib_variants() -> None:
    text = (
        "See \\citep[see][p.~3]{a, b} and \\citet{c}; \\citet*{d}, \\citealp{e}, \\citeauthor{f} "
        "(\\citeyear{f}). Also \\Citet{g} and \\cite {h ,a}.\n"
        "% \\cite{commented}\n"
        "Price: 5\\% \\cite{i} % \\cite{after_comment}\n"
        "\\citep[e.g.][]{j}"
    )
    assert extract_cite_keys(text) == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]


def test_cite_keys_biblatex_and_nocite() -> None:
    text = (
        "\\parencite{p1} \\textcite[5]{p2} \\autocite{p3} \\footcite{p4} \\smartcite{p5} "
        "\\cites{m1}[p.~2]{m2}{m3} \\parencites[see][]{m4}{m5} \\nocite{n1} \\nocite{*}"
    )
    assert extract_cite_keys(text) == ["p1", "p2", "p3", "p4", "p5", "m1", "m2", "m3", "m4", "m5"]
    assert extract_cite_keys(text, include_nocite=True)[-1] == "n1"


def test_cite_keys_authors_style_is_kept_as_a_switch() -> None:
    # where the authors' \cite[^{}]*\{([^}]+)\} differs from a real natbib/biblatex parse
    text = "\\parencite{p} \\citetext{see also} \\citep[see {Sec.~2}]{k} \\Citet{big} \\cite{x}"
    assert extract_cite_keys(text) == ["p", "k", "big", "x"]
    assert extract_cite_keys(text, style="authors") == ["see also", "Sec.~2", "x"]


def test_cite_keys_dedupe_is_exact_and_first_appearance() -> None:
    assert extract_cite_keys("\\cite{b,a} \\cite{a,B} \\cite{b}") == ["b", "a", "B"]


# ---------------------------------------------------------------------------------------------- headings


@pytest.mark.parametrize(
    "heading",
    [
        "\\section{Related Work}",
        "\\section*{Related Work}",
        "\\section {Related  Works}",
        "\\section*  {related\nwork}",
        "\\section[RW]{Related Work}",
        "\\section{Related Work\\label{sec:rw}}",
        "\\section{Background and Related Work}",
        "\\section{Literature Review}",
        "\\section{Prior Works}",
    ],
)
def test_heading_forms(heading: str) -> None:
    text = _doc(f"\\section{{Intro}}\nhi\n{heading}\n{LONG}\n\\section{{Method}}\nm")
    found = find_related_work(text)
    assert found is not None
    assert found[1] == LONG.strip()


def test_section_matches_authors_regex_on_default_names() -> None:
    body = (
        f"\\section{{Intro}}\nx\n\\section{{Related Works}}\n\\label{{sec:rw}}\n{LONG}\n\\subsection{{A}}\n"
    )
    body += f"{LONG}\n\\paragraph{{B}} {LONG}\n\\section*{{Method}}\nm"
    text = _doc(body)
    found = find_related_work(text)
    m = AUTHORS_SECTION_RE.search(text)
    assert found is not None and m is not None
    assert found == ("Related Works", m.group(2).strip())


def test_section_ends_and_commented_headings() -> None:
    text = _doc(
        f"% \\section{{Related Work}}\n\\section{{Related Work}}\n{LONG}\n% \\section{{Not an end}}\n"
        f"{LONG}\n\\appendix\n\\section{{Proofs}}"
    )
    found = find_related_work(text)
    assert found is not None
    assert found[1].startswith("Prior studies") and found[1].endswith(
        "% \\section{Not an end}\n" + LONG.strip()
    )
    for end in ("\\bibliography{refs}", "\\end{document}", "\\chapter{Next}", "\\printbibliography"):
        t = f"\\section{{Related Work}}\n{LONG}\n{end}\ntrailing"
        assert find_related_work(t) == ("Related Work", LONG.strip())
    # authors' behaviour (run to the end of the file) is available by turning back-matter stops off
    t = f"\\section{{Related Work}}\n{LONG}\n\\bibliography{{refs}}"
    assert find_related_work(t, LatexConfig(stop_at_backmatter=False))[1].endswith("\\bibliography{refs}")


def test_subsection_and_synonyms_and_min_chars() -> None:
    t = f"\\section{{Intro}}\n\\subsection{{Related Work}}\n{LONG}\n\\subsection{{Other}}\nx\n\\section{{M}}"
    assert find_related_work(t) is None  # like the authors, a subsection is not a section start
    found = find_related_work(t, LatexConfig(heading_levels=["section", "subsection"]))
    assert found == ("Related Work", LONG.strip())
    t2 = f"\\section{{State of the Art}}\n{LONG}\n\\section{{M}}"
    assert find_related_work(t2) is None
    assert find_related_work(t2, LatexConfig(section_titles=["State of the Art"])) is not None
    short = "\\section{Related Work}\nToo short.\n\\section{M}"
    assert find_related_work(short) is None
    assert find_related_work(short, LatexConfig(min_section_chars=0)) == ("Related Work", "Too short.")


def test_title_priority_prefers_related_work_over_synonyms() -> None:
    t = f"\\section{{Literature Review}}\n{LONG} L\n\\section{{Related Work}}\n{LONG} R\n\\section{{M}}"
    assert find_related_work(t)[1].endswith(" R")


# ---------------------------------------------------------------------------------------------- project


def test_project_main_file_inputs_and_section() -> None:
    p = extract_paper(BASIC)
    assert p.ok, p.failure_reason
    assert p.main_file == "main.tex"  # not supplement.tex, the other \documentclass file
    assert p.input_files == [
        "sections/intro.tex",
        "sections/related.tex",
        "sections/related_sub.tex",
        "sections/method.tex",
    ]
    assert p.section_title == "Related  Work" and p.section_file == "sections/related.tex"
    assert p.raw_section is not None and p.clean_section is not None
    assert p.raw_section.startswith("\\label{sec:related}\nEarly widget studies")
    assert p.raw_section.endswith("surveyed the field \\cite{lambda2012}.")  # nested \input expanded
    assert "Our method" not in p.raw_section
    assert "%\\section{Commented Out Heading}" in p.raw_section  # commented heading does not end it
    assert not any("old_related" in w for w in p.warnings)  # commented-out \input is not followed
    # cleaned (comments kept): no label/figures, escaped \% and the comment survive
    assert "\\label" not in p.clean_section and "figure" not in p.clean_section
    assert "50\\% accuracy~\\cite{alpha2020, beta2019} % the real comment" in p.clean_section
    assert p.word_count == len(p.clean_section.split())


def test_project_cite_keys_and_bibliography() -> None:
    p = extract_paper(BASIC)
    assert p.cite_keys == [
        "alpha2020", "beta2019", "gamma2021", "delta2018", "epsilon2022", "zeta2017", "eta2016",
        "theta2015", "figonly2000", "Iota2014", "iota2014", "kappa2013", "lambda2012",
    ]  # fmt: skip
    assert "ghost2001" not in p.cite_keys  # it sits in a comment
    assert p.unresolved_keys == ["figonly2000"]
    assert p.bib_files == ["refs.bib", "extra/refs.bib"]
    by = {e.key: e for e in p.bib_entries}
    assert len(p.bib_entries) == 11  # Iota2014 and iota2014 share one entry
    a = by["alpha2020"]
    assert a.title == "Widgets: A Überblick of Études"  # first of the duplicate keys, de-LaTeXed
    assert a.authors == ["Jörg Müller", "Jane Smith"]
    assert a.venue == "Proceedings of the Widget Conference (WC)"  # @string macro + concatenation
    assert (a.year, a.fields["month"], a.doi) == (2020, "July", "10.1234/widget.2020.001")
    assert by["Beta2019"].arxiv_id == "1901.00001"  # key matched case-insensitively; journal = arXiv:X
    assert by["gamma2021"].arxiv_id == "2101.12345"  # eprint, version stripped
    assert by["delta2018"].arxiv_id == "1801.00002"  # CoRR abs/X
    assert by["epsilon2022"].arxiv_id == "2203.00003"  # url
    assert by["zeta2017"].arxiv_id == "1705.00004"  # DOI 10.48550/arXiv.X
    assert by["eta2016"].url == "http://example.org/eta_book"
    assert by["eta2016"].title == "The Eta Book of Widgets & Gadgets"
    assert by["kappa2013"].source_file == "extra/refs.bib"  # same basename, other folder
    assert any("duplicate key" in w and "alpha2020" in w for w in p.warnings)


def test_project_strip_comments_switch() -> None:
    p = extract_paper(BASIC, LatexConfig(keep_comments=False))
    assert p.clean_section is not None and not p.keep_comments
    assert "real comment" not in p.clean_section and "Commented Out" not in p.clean_section
    assert "50\\% accuracy~\\cite{alpha2020, beta2019}" in p.clean_section
    assert p.raw_section == extract_paper(BASIC).raw_section  # raw never changes


def test_input_include_nesting_cycles_missing_and_traversal(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "parts" / "deep").mkdir(parents=True)
    (root / "main.tex").write_text(
        _doc(
            "\\section{Intro}\nx\n\\input{parts/a}\n\\input{nope}\n\\input{../../etc/passwd}\n"
            "\\section{Method}\n\\bibliography{r}"
        )
    )
    (root / "parts" / "a.tex").write_text("\\section*{Related Work}\n\\include{parts/deep/b.tex}\n")
    (root / "parts" / "deep" / "b.tex").write_text(f"{LONG}\\cite{{k1}}\n\\input parts/deep/c\n")
    (root / "parts" / "deep" / "c.tex").write_text("\\citep{k2}\n\\input{parts/a}\n")  # cycle back to a
    (root / "r.bib").write_text("@misc{k1, title={K one}}\n@misc{k2, title={K two}}\n")
    p = extract_paper(root)
    assert p.ok and p.cite_keys == ["k1", "k2"] and not p.unresolved_keys
    assert p.section_file == "parts/a.tex"
    assert p.raw_section is not None and p.raw_section.endswith("\\input{parts/a}")  # cycle left as is
    w = " | ".join(p.warnings)
    assert "include cycle" in w and "\\input{nope} not found" in w and "etc/passwd} not found" in w
    deep = extract_paper(root, LatexConfig(max_input_depth=1))
    # depth 1 cuts main -> a -> b; the authors-style fallback reads a.tex on its own (c still cut)
    assert deep.ok and deep.cite_keys == ["k1"] and deep.section_file == "parts/a.tex"
    assert "max_input_depth" in " ".join(deep.warnings) and "on its own" in " ".join(deep.warnings)


def test_subfile_import_and_expansion_budget(tmp_path: Path) -> None:
    (tmp_path / "chap").mkdir()
    (tmp_path / "main.tex").write_text(
        _doc("\\section{Intro}\nx\n\\subfile{chap/rw}\n\\subimport{chap/}{m}\n")
    )
    (tmp_path / "chap" / "rw.tex").write_text(
        "\\documentclass[../main]{subfiles}\n\\begin{document}\n\\section{Related Work}\n"
        f"{LONG}\\cite{{s1}}\n\\end{{document}}\n"
    )
    (tmp_path / "chap" / "m.tex").write_text("\\section{Method}\nm\n\\input{n}\n")  # relative to chap/
    (tmp_path / "chap" / "n.tex").write_text("nested\n")
    p = extract_paper(tmp_path)
    assert p.main_file == "main.tex" and p.input_files == ["chap/rw.tex", "chap/m.tex", "chap/n.tex"]
    assert p.raw_section == LONG + "\\cite{s1}"
    # exponential \input fan-out is cut by max_expanded_chars
    (tmp_path / "chap" / "n.tex").write_text("\\input{chap/o}\n" * 50)
    (tmp_path / "chap" / "o.tex").write_text("\\input{chap/q}\n" * 50)
    (tmp_path / "chap" / "q.tex").write_text("y" * 1000 + "\n")
    big = extract_paper(tmp_path, LatexConfig(max_expanded_chars=100_000))
    assert big.raw_section == p.raw_section and any("max_expanded_chars" in w for w in big.warnings)


def test_no_section_and_no_bibliography_are_values(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "main.tex").write_text(_doc("\\section{Intro}\nx\n\\section{Experiments}\ny"))
    p = extract_paper(tmp_path / "a")
    assert (p.ok, p.failure) == (False, "no_section")
    assert p.failure_reason is not None and "'Experiments'" in p.failure_reason
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "main.tex").write_text(_doc(f"\\section{{Related Work}}\n{LONG}\\cite{{q}}\n"))
    q = extract_paper(tmp_path / "b")
    assert (q.ok, q.failure, q.unresolved_keys) == (False, "no_bibliography", ["q"])
    assert extract_paper(tmp_path / "missing").failure == "no_source"


def test_bbl_only_project() -> None:
    p = extract_paper(BBL)
    assert p.ok and p.section_title == "Related Works"
    assert p.cite_keys == ["nu2010", "xi2009", "omicron2008", "pi2007"] and not p.unresolved_keys
    assert p.bib_files == ["main.bbl"]
    assert any("gadgets.bib referenced but not in the source" in w for w in p.warnings)
    by = {e.key: e for e in p.bib_entries}
    assert by["nu2010"].title == "Gadgets considered Harmful"
    assert by["nu2010"].authors == ["Nina Nu", "Max Mu"] and by["nu2010"].year == 2010
    assert by["nu2010"].venue == "Proceedings of the Gadget Symposium"
    assert by["xi2009"].title == "A överview of gadgets" and by["xi2009"].arxiv_id == "0901.00005"
    assert by["xi2009"].authors == ["Xavier Xi", "Yara Yi", "Zoe Zi"]
    assert by["omicron2008"].url == "https://example.org/gadgets"
    assert by["omicron2008"].doi == "10.5555/gadget.2008"
    assert by["pi2007"].source_format == "bbl"


def test_inline_thebibliography(tmp_path: Path) -> None:
    bbl = (BBL / "main.bbl").read_text()
    (tmp_path / "paper.tex").write_text(
        _doc(f"\\section{{Related Work}}\n{LONG}\\citep{{pi2007}}\n\\section{{End}}\n{bbl}")
    )
    p = extract_paper(tmp_path / "paper.tex")  # a single .tex file as SOURCE
    assert p.ok and p.bib_files == ["paper.tex#thebibliography"]
    assert p.bib_entries[0].title == "The gadget transformer"


def test_parse_bib_bare_values_macros_and_quotes() -> None:
    bib = r"""
@STRING{jw = {Journal of } # "Widgets"}
@string{ JWX = jw # { X} }
@article{Key1,
  title = "A {GPU}-friendly ``widget''",
  author = {van der Berg, Jan and {Widget Consortium} and Doe, Jr., John},
  journal = JWX, year = 1999, month = dec, volume = 3,
  url = {https://doi.org/10.1000/xyz-1}
}
@inproceedings{key2, title = {T\'{e}l\'{e}com \emph{and} $\alpha$-nets}, booktitle = {Proc. of WC},
  date = {2021-05-04}, eprint = {cs/0112017v1}, eprinttype = {arxiv}}
@misc{key3, title = {Broken
"""
    entries, warnings = parse_bib(bib, "x/refs.bib")
    by = {e.key: e for e in entries}
    e1 = by["Key1"]
    assert e1.title == 'A GPU-friendly "widget"'
    assert e1.authors == ["Jan van der Berg", "Widget Consortium", "John Doe Jr."]
    assert (e1.venue, e1.year, e1.fields["month"], e1.fields["volume"]) == (
        "Journal of Widgets X",
        1999,
        "December",
        "3",
    )
    assert e1.doi == "10.1000/xyz-1" and e1.url == "https://doi.org/10.1000/xyz-1"
    e2 = by["key2"]
    assert e2.title == "Télécom and α-nets" and e2.year == 2021
    assert e2.arxiv_id == "cs/0112017" and e2.venue == "Proc. of WC" and e2.source_file == "x/refs.bib"
    assert any("could not be parsed" in w for w in warnings)


def test_parse_bbl_biblatex() -> None:
    bbl = r"""
\refsection{0}
  \datalist[entry]{nty/global//global/global}
    \entry{vaswani2017}{inproceedings}{}
      \name{author}{2}{}{%
        {{hash=1}{%
           family={Vaswani},
           familyi={V\bibinitperiod},
           given={Ashish},
           giveni={A\bibinitperiod}}}%
        {{hash=2}{%
           family={Sh{\"a}zeer},
           given={Noam}}}%
      }
      \field{booktitle}{Advances in Widgets}
      \field{title}{Attention Is All You {Need}}
      \field{year}{2017}
      \field{eprint}{1706.03762}
      \field{eprinttype}{arXiv}
      \verb{doi}
      \verb 10.5555/3295222
      \endverb
    \endentry
  \enddatalist
\endrefsection
"""
    (e,) = parse_bbl(bbl, "main.bbl")
    assert (e.key, e.entry_type, e.title, e.year) == (
        "vaswani2017",
        "inproceedings",
        "Attention Is All You Need",
        2017,
    )
    assert e.authors == ["Ashish Vaswani", "Noam Shäzeer"]
    assert (e.arxiv_id, e.doi, e.venue, e.source_format) == (
        "1706.03762",
        "10.5555/3295222",
        "Advances in Widgets",
        "biblatex-bbl",
    )


def test_delatex_minimal() -> None:
    assert (
        delatex(r"{\v{S}}koda {\ss} \o{} Erd\H{o}s \c{c}a na\"{\i}ve \& 100\%")
        == "Škoda ß ø Erdős ça naïve & 100%"
    )
    assert delatex(r"\textbf{Bold} \href{http://x}{link} --- pre--post~end") == "Bold link — pre–post end"


# ---------------------------------------------------------------------------------------------- archives


def test_single_file_gzip_source(tmp_path: Path) -> None:
    tex = _doc(
        f"\\section{{Related Work}}\n{LONG}\\cite{{k}}\n\\begin{{thebibliography}}{{1}}\n"
        "\\bibitem{k} A. Author.\n\\newblock Title K.\n\\newblock 2020.\n\\end{thebibliography}"
    ).encode()
    buf = io.BytesIO()
    with gzip.GzipFile(filename="paper.tex", mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(tex)
    res = extract_source(buf.getvalue(), tmp_path / "out")
    assert (res.kind, res.files) == ("gzip_tex", ["paper.tex"])
    assert (tmp_path / "out" / "paper.tex").read_bytes() == tex  # decompressed, not the gzip bytes
    anon = extract_source(gzip.compress(tex, mtime=0), tmp_path / "anon")
    assert anon.files == ["main.tex"]
    src = tmp_path / "2501.00001v1"  # arXiv's file name has no extension
    src.write_bytes(gzip.compress(tex, mtime=0))
    p = extract_paper(src)
    assert p.ok and p.cite_keys == ["k"] and p.bib_entries[0].title == "Title K"


def test_plain_tex_and_pdf(tmp_path: Path) -> None:
    res = extract_source(b"\\documentclass{article}\n", tmp_path / "t")
    assert (res.kind, res.files) == ("tex", ["main.tex"])
    with pytest.raises(ExtractionError, match="PDF"):
        extract_source(gzip.compress(b"%PDF-1.5 ..."), tmp_path / "p")
    assert not (tmp_path / "p").exists()


def test_tar_gz_and_plain_tar_project(tmp_path: Path) -> None:
    folder = extract_paper(BASIC)
    tgz = _tar_gz(BASIC, tmp_path / "src.tar.gz", prefix="./")
    p = extract_paper(tgz)
    assert p.ok and p.skipped_members == []
    assert (p.raw_section, p.cite_keys, p.bib_entries) == (
        folder.raw_section,
        folder.cite_keys,
        folder.bib_entries,
    )
    res = extract_source(tgz, tmp_path / "x")
    assert res.kind == "tar.gz" and "sections/related_sub.tex" in res.files
    plain = tmp_path / "src.tar"
    with tarfile.open(plain, "w") as tf:
        tf.add(BBL / "main.tex", arcname="main.tex")
        tf.add(BBL / "main.bbl", arcname="main.bbl")
    res2 = extract_source(plain.read_bytes(), tmp_path / "y")
    assert (res2.kind, res2.files) == ("tar", ["main.bbl", "main.tex"])
    assert extract_paper(plain).ok


def _malicious(tmp_path: Path, abs_target: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        _add_bytes(tf, "main.tex", _doc(f"\\section{{Related Work}}\n{LONG}\\cite{{k}}").encode())
        _add_bytes(tf, "../escape.tex", b"escaped")
        _add_bytes(tf, "sub/../../escape2.tex", b"escaped")
        _add_bytes(tf, abs_target, b"absolute")
        for name, target, kind in [
            ("passwd_link", "/etc/passwd", tarfile.SYMTYPE),
            ("inner_link.tex", "main.tex", tarfile.SYMTYPE),
            ("dir_link", "..", tarfile.SYMTYPE),
            ("hard_out", "../outside.txt", tarfile.LNKTYPE),
            ("hard_etc", "/etc/passwd", tarfile.LNKTYPE),
        ]:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tf.addfile(info)
        for name, kind in [
            ("dev_null", tarfile.CHRTYPE),
            ("blk", tarfile.BLKTYPE),
            ("fifo", tarfile.FIFOTYPE),
        ]:
            info = tarfile.TarInfo(name)
            info.type = kind
            tf.addfile(info)
        _add_bytes(tf, "big.pdf", b"x" * 5000)
        _add_bytes(tf, "dir_link/through_link.tex", b"through a link")
        _add_bytes(tf, "ok/refs.bib", b"@misc{k, title={K}}")
    return buf.getvalue()


def test_malicious_tarball_writes_nothing_outside(tmp_path: Path) -> None:
    abs_target = f"/tmp/reportbench-evil-{uuid.uuid4().hex}"
    data = _malicious(tmp_path, abs_target)
    before = set(tmp_path.rglob("*"))
    dest = tmp_path / "dest"
    res = extract_source(data, dest, ExtractLimits(max_file_bytes=4096))
    assert res.files == ["dir_link/through_link.tex", "main.tex", "ok/refs.bib"]
    # nothing outside dest, no links, no devices
    after = set(tmp_path.rglob("*"))
    assert {p for p in after - before if dest not in p.parents and p != dest} == set()
    assert not Path(abs_target).exists() and not (tmp_path / "escape.tex").exists()
    for p in dest.rglob("*"):
        assert not p.is_symlink() and (p.is_file() or p.is_dir())
    assert (dest / "dir_link").is_dir() and not (dest / "dir_link").is_symlink()
    reasons = {s.name: s.reason for s in res.skipped}
    assert reasons["../escape.tex"] == "parent-directory reference (..)"
    assert reasons["sub/../../escape2.tex"] == "parent-directory reference (..)"
    assert reasons[abs_target] == "absolute path"
    assert "symlink" in reasons["passwd_link"] and "/etc/passwd" in reasons["passwd_link"]
    assert "symlink" in reasons["inner_link.tex"]  # all links skipped, even internal ones
    assert "hardlink" in reasons["hard_out"] and "hardlink" in reasons["hard_etc"]
    assert all("device" in reasons[n] for n in ("dev_null", "blk", "fifo"))
    assert reasons["big.pdf"].startswith("too large")
    # the paper is still usable, and the skipped members are reported with it
    src = tmp_path / "evil.tar.gz"
    src.write_bytes(data)
    p = extract_paper(src, LatexConfig(limits=ExtractLimits(max_file_bytes=4096)))
    assert p.ok and p.cite_keys == ["k"] and len(p.skipped_members) == len(res.skipped)


def test_extraction_caps_raise_and_clean_up(tmp_path: Path) -> None:
    data = _malicious(tmp_path, "/abs.tex")
    with pytest.raises(ExtractionError, match="max_file_bytes"):
        extract_source(data, tmp_path / "a", ExtractLimits(max_file_bytes=4096, strict_file_size=True))
    with pytest.raises(ExtractionError, match="max_members"):
        extract_source(data, tmp_path / "b", ExtractLimits(max_members=3))
    with pytest.raises(ExtractionError, match="max_total_bytes"):
        extract_source(data, tmp_path / "c", ExtractLimits(max_total_bytes=1000))
    bomb = gzip.compress(b"a" * 2_000_000)  # a gzip'd "single file" that inflates past the cap
    with pytest.raises(ExtractionError):
        extract_source(bomb, tmp_path / "d", ExtractLimits(max_file_bytes=1_000_000))
    for d in "abcd":
        assert not (tmp_path / d).exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ExtractionError, match="not empty"):
        extract_source(data, tmp_path / "full")
    big_tar = io.BytesIO()
    with tarfile.open(fileobj=big_tar, mode="w:gz") as tf:
        _add_bytes(tf, "a.tex", b"a" * 300_000)
    with pytest.raises(ExtractionError, match="max_stream_bytes"):
        extract_source(big_tar.getvalue(), tmp_path / "e", ExtractLimits(max_stream_bytes=100_000))
    only = extract_source(data, tmp_path / "f", ExtractLimits(max_file_bytes=4096, only_suffixes=[".tex"]))
    assert only.files == ["dir_link/through_link.tex", "main.tex"]


def test_corrupt_archives_raise_extraction_error(tmp_path: Path) -> None:
    good = _tar_gz(BASIC, tmp_path / "src.tar.gz").read_bytes()
    with pytest.raises(ExtractionError, match="corrupt"):
        extract_source(good[: len(good) // 2], tmp_path / "half")
    assert not (tmp_path / "half").exists()
    truncated = tmp_path / "trunc.tar.gz"
    truncated.write_bytes(good[: len(good) // 2])
    p = extract_paper(truncated)
    assert (p.ok, p.failure) == (False, "no_source") and "corrupt" in (p.failure_reason or "")


def test_safe_member_path() -> None:
    assert str(safe_member_path("./a/./b.tex")) == "a/b.tex"
    assert safe_member_path("a\\..\\b") == "backslash in name (ambiguous path separator)"
    assert safe_member_path("C:/x") == "absolute path"
    assert safe_member_path("a/\x00") == "NUL byte in name"


# ---------------------------------------------------------------------------------------------- CLI


def _run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    parser = argparse.ArgumentParser(prog="reportbench")
    build_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    return code, json.loads(capsys.readouterr().out)


def test_cli_latex(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run_cli(["latex", str(BASIC)], capsys)
    assert code == 0 and out["ok"] and out["keep_comments"] is True
    assert out["cite_keys"][:2] == ["alpha2020", "beta2019"] and out["unresolved_keys"] == ["figonly2000"]
    assert {"raw_section", "clean_section", "bib_entries", "warnings"} <= out.keys()
    code, out = _run_cli(["latex", str(BASIC), "--strip-comments"], capsys)
    assert code == 0 and "real comment" not in out["clean_section"]
    tgz = _tar_gz(BBL, tmp_path / "bbl.tgz")
    code, out = _run_cli(["latex", str(tgz), "--synonym", "Introduction", "--only-synonyms"], capsys)
    assert code == 1 and out["failure"] == "no_section"  # "An introduction." is < 100 chars
    code, out = _run_cli(["latex", str(tmp_path / "nope")], capsys)
    assert code == 1 and out["failure"] == "no_source"
