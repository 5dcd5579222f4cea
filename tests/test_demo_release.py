"""The synthetic DeepScholar demo release: it builds, is labelled synthetic, and its hand-written reports cite
only corpus documents they list, with exactly the deliberate flaws recorded in systems/expectations.yaml."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from reportbench.release.deepscholar_import import render_task_prompt
from reportbench.release.demo import DEFAULT_DEMO_DIR, DemoSourceError, build_demo_release, cite_keys
from reportbench.release.format import Release, read_release, write_release

pytestmark = pytest.mark.core

DEMO = DEFAULT_DEMO_DIR
SYSTEMS = ("careful_writer", "hasty_writer", "link_dumper")
MONTH13 = re.compile(r"^\d{2}13\.\d{5}$")
REF_LINE = re.compile(r"^\[(\d+)\]\s+(.+)\.\s+arXiv:(\S+)$")
MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\](?!\()")
LINK = re.compile(r"\[([^\]]+)\]\((https?://arxiv\.org/abs/([^)\s]+))\)")
ANY_ARXIV = re.compile(r"(?:arXiv:|arxiv\.org/abs/)(\d{4}\.\d{4,5})")


@pytest.fixture(scope="module")
def demo() -> Release:
    return build_demo_release(DEMO)


@pytest.fixture(scope="module")
def expectations() -> dict:
    return yaml.safe_load((DEMO / "systems" / "expectations.yaml").read_text())


def parse_report(text: str) -> tuple[list[str], dict[str, tuple[str, str]], list[tuple[str, str]]]:
    """(body paragraphs, reference list n -> (title, arXiv id), cited (marker-or-link, arXiv id) in order)."""
    lines = text.strip().splitlines()
    cut = next(
        (i for i, ln in enumerate(lines) if re.fullmatch(r"(#+\s*)?References\s*", ln.strip())), len(lines)
    )
    refs: dict[str, tuple[str, str]] = {}
    for ln in lines[cut + 1 :]:
        if ln.strip():
            m = REF_LINE.match(ln.strip())
            assert m, f"reference line not in '[n] Title. arXiv:ID' form: {ln!r}"
            refs[m.group(1)] = (m.group(2), m.group(3))
    body = "\n".join(lines[:cut])
    paragraphs = [
        p.strip() for p in re.split(r"\n\s*\n", body) if p.strip() and not p.lstrip().startswith("#")
    ]
    cited: list[tuple[str, str]] = []
    for m in re.finditer(f"{MARKER.pattern}|{LINK.pattern}", body):
        if m.group(1):
            for n in re.split(r"\s*,\s*", m.group(1)):
                assert n in refs, f"inline [{n}] has no reference-list entry"
                cited.append((f"[{n}]", refs[n][1]))
        else:
            cited.append((m.group(3), m.group(4)))
    return paragraphs, refs, cited


def report_path(system: str, task_id: str) -> Path:
    return DEMO / "systems" / system / f"{task_id}.md"


# ------------------------------------------------------------------------------------------------- release


def test_demo_builds_and_round_trips(demo: Release, tmp_path: Path) -> None:
    m1 = write_release(demo, tmp_path / "a")
    m2 = write_release(build_demo_release(DEMO), tmp_path / "b")
    assert m1 == m2
    for f in sorted((tmp_path / "a").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name
    back = read_release(tmp_path / "a")
    assert back.task_ids == ["demo-0001", "demo-0002", "demo-0003"]
    assert m1["counts"]["tasks"] == 3 and m1["has_important_refs"] and m1["has_citation_counts"]


def test_demo_is_labelled_synthetic(demo: Release, tmp_path: Path) -> None:
    assert demo.meta.synthetic is True
    write_release(demo, tmp_path)
    assert "SYNTHETIC DATA" in (tmp_path / "CARD.md").read_text()
    readme = (DEMO / "README.md").read_text().lower()
    assert "synthetic" in readme and "self-authored" in readme and "invented" in readme
    ids = [d.arxiv_id for d in demo.corpus if d.arxiv_id] + [
        r.arxiv_id for r in demo.exemplar_ref_rows if r.arxiv_id
    ]
    assert ids and all(MONTH13.match(i) for i in ids)  # month 13: never a real arXiv id
    assert all(c.source == "synthetic" for c in demo.citation_counts)


def test_demo_shape(demo: Release) -> None:
    assert 40 <= len(demo.corpus) <= 60
    assert {c.arxiv_id or c.title for c in demo.citation_counts} == {
        d.arxiv_id or d.title for d in demo.corpus
    }
    for t in demo.tasks:
        refs, nuggets = demo.exemplar_refs(t.task_id), demo.nuggets(t.task_id)
        assert 8 <= len(refs) <= 12 and 8 <= len(nuggets) <= 15
        assert 250 <= len(t.exemplar.split()) <= 450
        assert "\\subsection{" in t.exemplar
        assert [r.ref_key for r in refs] == cite_keys(t.exemplar)
        assert 3 <= len(demo.important_refs(t.task_id)) < len(refs)
        imps = [n.importance for n in nuggets]
        assert imps == sorted(imps, key=lambda x: x != "vital") and "okay" in imps
        assert {n.self_assignment for n in nuggets} >= {"support", "not_support"}
        assert t.task_prompt == render_task_prompt(t.published_date, t.abstract)
        assert any(r.arxiv_id is None for r in refs)  # one non-arXiv reference, as in real data
        for r in refs:
            assert r.abstract and 2 <= len(re.findall(r"[.!?](?:\s|$)", r.abstract)) <= 4, r.ref_key


def test_demo_has_leak_candidates_and_clean_exemplars(demo: Release) -> None:
    for t in demo.tasks:
        cutoff = t.published_date[:10]
        later = [d for d in demo.corpus if d.published_date and d.published_date > cutoff]
        assert later, f"{t.task_id}: no corpus paper after the cut-off to test leakage"
        for r in demo.exemplar_refs(t.task_id):
            doc = demo.corpus_by_arxiv(r.arxiv_id) if r.arxiv_id else None
            if doc is not None:
                assert doc.published_date is not None and doc.published_date < cutoff


def test_shared_refs_are_deduplicated(demo: Release) -> None:
    assert len({d.doc_id for d in demo.corpus}) == len(demo.corpus)
    by_task = [{r.arxiv_id for r in demo.exemplar_refs(t) if r.arxiv_id} for t in demo.task_ids]
    assert by_task[0] & by_task[2]  # zhou2024ragbench and marchetti2024llmjudge are cited by two tasks


def test_bad_source_errors_name_file_and_field(tmp_path: Path) -> None:
    d = tmp_path / "demo"
    shutil.copytree(DEMO, d)
    task = d / "tasks" / "demo-0002.yaml"
    text = task.read_text()
    a = "  - {key: kowalczyk2021lowrank"
    b = "  - {key: ferreira2021kernel"
    lines = text.splitlines()
    ia = next(i for i, ln in enumerate(lines) if ln.startswith(a))
    ib = next(i for i, ln in enumerate(lines) if ln.startswith(b))
    lines[ia], lines[ib] = lines[ib], lines[ia]
    task.write_text("\n".join(lines) + "\n")
    with pytest.raises(DemoSourceError, match=r"demo-0002.yaml: field 'references' keys"):
        build_demo_release(d)

    task.write_text(text.replace('arxiv_id: "2113.02290"', 'arxiv_id: "2113.99999"'))
    with pytest.raises(
        DemoSourceError, match=r"references\[1\] field 'arxiv_id' '2113.99999' is not in corpus"
    ):
        build_demo_release(d)

    task.write_text(
        text.replace('arxiv_id: "2413.02561"', 'arxiv_id: "2513.00530"')
    )  # published after cut-off
    with pytest.raises(
        DemoSourceError, match=r"field 'key' 'okonkwo2024sketch' cites a paper published 2025-07-14"
    ):
        build_demo_release(d)


# ------------------------------------------------------------------------------------------------- reports


def test_every_system_answers_every_task(demo: Release) -> None:
    for system in SYSTEMS:
        files = sorted(p.stem for p in (DEMO / "systems" / system).glob("*.md"))
        assert files == demo.task_ids, system


@pytest.mark.parametrize("system", SYSTEMS)
def test_reports_cite_only_listed_corpus_docs(demo: Release, expectations: dict, system: str) -> None:
    for t in demo.tasks:
        text = report_path(system, t.task_id).read_text()
        paragraphs, refs, cited = parse_report(text)
        for aid in ANY_ARXIV.findall(text):
            assert demo.corpus_by_arxiv(aid) is not None, f"{system}/{t.task_id}: {aid} is not in the corpus"
        for n, (title, aid) in refs.items():
            doc = demo.corpus_by_arxiv(aid)
            assert doc is not None and doc.title == title, f"{system}/{t.task_id} [{n}]"
        assert {n for n in refs} == {c[0].strip("[]") for c in cited if c[0].startswith("[")}, (
            "unused references"
        )
        exp = expectations[system][t.task_id]
        order = list(dict.fromkeys(aid for _, aid in cited))
        assert order == exp["cited"], f"{system}/{t.task_id}"
        cutoff = t.published_date[:10]
        leaks = [a for a in order if (demo.corpus_by_arxiv(a).published_date or "") > cutoff]  # type: ignore[union-attr]
        assert leaks == exp["leaks"], f"{system}/{t.task_id}"
        uncited = [p for p in paragraphs if not MARKER.search(p) and not LINK.search(p)]
        if system != "link_dumper":
            assert len(uncited) == exp["uncited_paragraphs"], f"{system}/{t.task_id}: {uncited}"
        for mc in exp["miscitations"]:
            sentence = next(s for s in re.split(r"(?<=[.!?])\s+", text) if mc["claim"] in s)
            assert mc["marker"] in sentence and refs[mc["marker"].strip("[]")][1] == mc["arxiv_id"]


def test_systems_differ_in_the_intended_direction(demo: Release) -> None:
    for t in demo.tasks:
        exemplar = {r.arxiv_id for r in demo.exemplar_refs(t.task_id) if r.arxiv_id}
        important = {r.arxiv_id for r in demo.important_refs(t.task_id) if r.arxiv_id}
        cov: dict[str, tuple[int, int, int]] = {}
        for system in SYSTEMS:
            paragraphs, _, cited = parse_report(report_path(system, t.task_id).read_text())
            ids = {aid for _, aid in cited}
            words = sum(len(p.split()) for p in paragraphs)
            cov[system] = (len(ids & exemplar), len(ids & important), words)
        careful, hasty, dumper = (cov[s] for s in SYSTEMS)
        assert careful[0] > hasty[0] and careful[0] > dumper[0], (t.task_id, cov)
        assert careful[1] >= hasty[1] and careful[1] >= dumper[1], (t.task_id, cov)
        assert careful[2] > hasty[2] > dumper[2], (t.task_id, cov)
        assert careful[2] <= 600  # the task prompt's word limit


def test_build_release_dispatch(tmp_path: Path) -> None:
    from reportbench.release import build_release

    rel = build_release("demo", DEMO, name="demo-small", max_tasks=2)
    assert rel.meta.name == "demo-small" and rel.task_ids == ["demo-0001", "demo-0002"]
    assert {r.task_id for r in rel.exemplar_ref_rows} == {"demo-0001", "demo-0002"}
    assert write_release(rel, tmp_path)["name"] == "demo-small"
    with pytest.raises(ValueError, match="release kind 'nope'"):
        build_release("nope", DEMO)
