"""The suite's order under `pytest -n auto` (tests/conftest.py): what each worker starts with.

Why: xdist hands the first unit of the order to each worker. When both first units copied the reproduced pipeline,
one worker built it (`dvc repro`, a minute or more) while the other sat on the template's file lock (seen in CI:
one worker without CPU for the whole build)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

import conftest

pytestmark = pytest.mark.core


@dataclass
class FakeScenario:
    state: str
    schedule_cost: float


@dataclass
class FakeItem:
    nodeid: str
    fixturenames: tuple[str, ...] = ()
    callspec: Any = None
    module: Any = field(default_factory=lambda: SimpleNamespace())


def scenario(name: str, state: str, cost: float) -> FakeItem:
    return FakeItem(f"tests/test_docs_commands.py::test_documented_commands_run_as_written[{name}]",
                    ("tmp_path", "request"), SimpleNamespace(params={"scenario": FakeScenario(state, cost)}))


def collection() -> list[FakeItem]:
    return [
        FakeItem("tests/test_unit.py::test_a"),
        FakeItem("tests/test_estimate_offline.py::test_a"),
        FakeItem("tests/test_estimate_offline.py::test_b"),
        FakeItem("tests/test_dvc_tidy.py::test_a", ("repo", "reproduced_template")),
        FakeItem("tests/test_dvc_tidy.py::test_b", ("repo", "reproduced_template")),
        scenario("stub-judge", "reproduced", 300),
        scenario("stub-judge-batch", "reproduced", 280),
        scenario("suite-commands", "fresh", 30),
        FakeItem("tests/test_agent_storm.py::test_a", (), None, SimpleNamespace(NEEDS_AGENT_VENV=True)),
    ]


def ordered_units(workers: int) -> list[str]:
    items = collection()
    config = SimpleNamespace(workerinput={"workercount": workers}) if workers > 1 else SimpleNamespace()
    conftest.pytest_collection_modifyitems(config, items)  # type: ignore[arg-type]
    return list(dict.fromkeys(conftest._unit(i.nodeid) for i in items))


def test_each_worker_starts_with_work_that_does_not_wait_for_the_template_but_one() -> None:
    units = ordered_units(workers=2)
    assert units[0].endswith("[stub-judge]")  # the longest unit that needs the template builds it
    assert units[1] == "tests/test_estimate_offline.py"  # the longest that does not: no wait on the lock
    assert units[2].endswith("[stub-judge-batch]")  # then longest first
    assert units[-1] == "tests/test_agent_storm.py"  # the agent venvs' tests last (CI builds them meanwhile)


def test_three_workers_start_two_units_that_do_not_need_the_template() -> None:
    units = ordered_units(workers=3)
    template_units = {"tests/test_dvc_tidy.py"} | {u for u in units if "stub-judge" in u}
    assert units[0] in template_units
    assert not {units[1], units[2]} & template_units


def test_a_units_tests_stay_together_in_file_order() -> None:
    items = collection()
    conftest.pytest_collection_modifyitems(SimpleNamespace(), items)  # type: ignore[arg-type]
    ids = [i.nodeid for i in items]
    assert ids.index("tests/test_dvc_tidy.py::test_b") == ids.index("tests/test_dvc_tidy.py::test_a") + 1
    first = ids.index("tests/test_estimate_offline.py::test_a")
    assert ids.index("tests/test_estimate_offline.py::test_b") == first + 1


def test_units_of_equal_cost_keep_their_collection_order_in_every_process() -> None:
    """xdist stops the run when two workers collect different orders: ties are broken by collection order, never by
    a set's order (which differs per process with string hash randomisation)."""
    agents = SimpleNamespace(NEEDS_AGENT_VENV=True)
    names = [f"tests/test_agent_kind{n:02d}.py" for n in range(20)]
    items = [FakeItem("tests/test_unit.py::test_a"), *(FakeItem(f"{n}::test_a", (), None, agents) for n in names)]
    conftest.pytest_collection_modifyitems(SimpleNamespace(), items)  # type: ignore[arg-type]
    assert [conftest._unit(i.nodeid) for i in items] == ["tests/test_unit.py", *names]
