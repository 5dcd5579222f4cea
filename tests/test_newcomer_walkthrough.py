"""docs/systems.md's "Bring your own system" walk-through, followed literally (issue 24, item 1): every command of
the section's `bash` blocks, as written and in order, is the docs test's `systems-walkthrough` scenario
(tests/test_docs_commands.py: run in a copy of the session's reproduced working tree, conftest.py
`reproduced_template`, so the walk-through's `dvc repro` pays only for what is new, as the doc says); the results it
promises are checked there, right after its last command (`walkthrough_results`). Offline (default judge), one
benchmark. Here: the section is there, and the scenario is exactly its commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.core
SECTION = "## Bring your own system: the whole path"


def walkthrough_commands(doc: str) -> list[str]:
    """The command lines (comments stripped, none skipped) of the `bash` blocks of the walk-through section."""
    body = doc.split(SECTION, 1)[1].split("\n## ", 1)[0]
    cmds = []
    for block in re.findall(r"```bash\n(.*?)```", body, flags=re.S):
        for line in block.splitlines():
            cmd = line.split("  #", 1)[0].strip()
            if cmd:
                cmds.append(cmd)
    return cmds


def test_doc_has_the_walkthrough(repo_root: Path) -> None:
    cmds = walkthrough_commands((repo_root / "docs" / "systems.md").read_text())
    assert any(c.startswith("reportbench systems add deepscholar my_system --folder") for c in cmds)
    assert "dvc repro" in cmds and "reportbench compose --check" in cmds
    assert not any("conf/systems/" in c for c in cmds)


def test_the_docs_test_runs_the_walkthrough_as_written_in_order(repo_root: Path) -> None:
    """The walk-through runs once in CI: as the docs test's `systems-walkthrough` scenario (in a copy of the
    session's reproduced template, with a user's environment), its commands exactly these, in this order; what the
    walk-through promises is checked there right after its last command (test_docs_commands.walkthrough_results:
    the system group file, the leaderboard rows, the estimate's line, a bare compose keeping the system). This
    test used to run the same commands in a copy of its own."""
    from test_docs_commands import RESULT_CHECKS, SCENARIOS, doc_text, walkthrough_results

    [scenario] = [s for s in SCENARIOS if s.name == "systems-walkthrough"]
    assert scenario.state == "reproduced"
    expected = walkthrough_commands((repo_root / "docs" / "systems.md").read_text())
    assert [doc_text(step) for step in scenario.steps] == expected
    assert RESULT_CHECKS[("systems-walkthrough", expected[-1])] is walkthrough_results
