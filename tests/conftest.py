"""Shared pytest fixtures. Tests never touch the network; data from ../shared is optional."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("dvc_helpers")  # its checks report like the tests' own asserts

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _shared_dir() -> Path | None:
    env = os.environ.get("REPORTBENCH_SHARED")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared")
    for c in candidates:
        if (c / "data").is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (benchmark authors' public data). Skips the test cleanly when it is absent."""
    d = _shared_dir()
    if d is None:
        pytest.skip("../shared is not present (public benchmark data); skipping")
    return d


def authors_mirror_path() -> Path | None:
    """The authors' sources at their pinned commits (`<owner>/<repo>/<commit>/<path>`): $REPORTBENCH_AUTHORS_MIRROR,
    else <shared>/authors/mirror ($REPORTBENCH_SHARED or ../shared, where CI has it); None when neither exists."""
    env = os.environ.get("REPORTBENCH_AUTHORS_MIRROR")
    shared = _shared_dir()
    candidates = [Path(env)] if env else []
    if shared is not None:
        candidates.append(shared / "authors" / "mirror")
    return next((c for c in candidates if c.is_dir()), None)


@pytest.fixture()
def authors_mirror(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The authors' mirror, set as REPORTBENCH_AUTHORS_MIRROR for this test; skips cleanly without one."""
    path = authors_mirror_path()
    if path is None:
        pytest.skip("the authors' mirror is not present (REPORTBENCH_AUTHORS_MIRROR or ../shared/authors/mirror)")
    monkeypatch.setenv("REPORTBENCH_AUTHORS_MIRROR", str(path))
    return path


@pytest.fixture(scope="session")
def deepscholar_data(shared_dir: Path) -> Path:
    d = shared_dir / "data" / "deepscholar-bench"
    if not d.is_dir():
        pytest.skip("../shared/data/deepscholar-bench is not present")
    return d


_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0", ""}


@pytest.fixture(autouse=True)
def _no_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never touch the network: any connection or DNS lookup beyond loopback fails loudly.

    (The stub LLM server and in-process fakes listen on loopback; recorded HTTP is replayed without sockets.)
    Subprocesses started by a test are not covered; they run with the same offline settings.
    """
    import socket

    if request.node.get_closest_marker("live"):
        return  # opt-in tests against real services (skipped without keys)
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def _check(address: object) -> None:
        if isinstance(address, tuple) and address and str(address[0]) not in _LOOPBACK:
            raise RuntimeError(f"test tried to reach the network: {address!r}")

    def connect(self: socket.socket, address: object) -> None:
        _check(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: object) -> int:
        _check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host is not None and str(host) not in _LOOPBACK:
            raise RuntimeError(f"test tried to resolve a network host: {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture(scope="session")
def reproduced_template(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The working tree copied into a fresh git repository (one commit) and `dvc repro` run once, for the
    session. Tests that need a reproduced default pipeline copy it (`dvc_helpers.copy_repo_state`) instead of
    paying for another full repro; nothing may modify the template itself.

    Under pytest-xdist the workers share one template (built by the first worker to get here, under a file
    lock, in the run's common temp folder): a full repro is the most expensive fixture of the suite."""
    import fcntl
    import json

    from dvc_helpers import Reproduced, copy_working_tree, run_timed

    if not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the folder every worker's basetemp lives in, for this run only
    folder, record = root / "reproduced", root / "reproduced.json"
    with open(root / "reproduced.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.is_file():
            dest = copy_working_tree(REPO_ROOT, folder / "repo")
            output, seconds = run_timed([sys.executable, "-m", "dvc", "repro"], dest, timeout=900)
            record.write_text(json.dumps({"output": output, "seconds": seconds}))
        done = json.loads(record.read_text())
    return Reproduced(folder / "repo", done["output"], done["seconds"])


@pytest.fixture(scope="session")
def judge_pipeline_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """judge_dvc_helpers.copy_repo (DeepScholar's demo, one system) with its release and system stages run once,
    for the judge-reliability DVC tests (test_kill_judge, test_judge_retry_dvc) to copy (`copy_repo_state`):
    they fault or kill the judge stage, which those stages do not reach (no judge setting is among their params).
    Nothing may modify the template itself."""
    from judge_dvc_helpers import compose, copy_repo, dvc

    repo = copy_repo(REPO_ROOT, tmp_path_factory.mktemp("judge_pipeline") / "repo")
    compose(repo, "http://127.0.0.1:9/v1")  # each test composes again with its own stub's URL
    proc = dvc(repo, "repro", "system@deepscholar.careful_writer")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return repo


@pytest.fixture()
def stub_search() -> Iterator[Any]:
    """A loopback Tavily/Exa-compatible search server (self-authored results): `.tavily_url`, `.exa_url`, `.counts`."""
    from reportbench.agents.search.stub import stub_search_thread

    with stub_search_thread() as server:
        yield server


# ------------------------------------------------------------------------------------ scheduling (`pytest -n auto`)
# The suite is bound by its few long DVC tests, not by its cores: run the longest first and hand each worker the next
# unit as it frees up (longest processing time first), so no long test starts last. A unit is a test module (its
# module fixtures are set up once, on one worker), except the tests named in OWN_UNIT: each of those is a unit of its
# own. Costs are rough seconds on one core, for ordering only (nothing asserts them): the docs scenarios say theirs
# (test_docs_commands.Scenario.schedule_cost); MODULE_COST holds the other long modules of the clean-clone CI log;
# any other test counts DEFAULT_COST.
OWN_UNIT = ("tests/test_docs_commands.py::test_documented_commands_run_as_written[",)
MODULE_COST = {
    "tests/test_estimate_offline.py": 150,
    "tests/test_dvc_tidy.py": 60,
    "tests/test_executor_ray.py": 45,
    "tests/test_agents_provider_dvc.py": 40,
    "tests/test_judge_retry_dvc.py": 35,
    "tests/test_live_dvc.py": 35,
    "tests/test_kill_judge.py": 35,
    "tests/test_judge_faults.py": 30,
    "tests/test_scale_dvc.py": 25,
    "tests/test_dvc_pipeline.py": 25,
}
DEFAULT_COST = 0.2


def _unit(nodeid: str) -> str:
    return nodeid if nodeid.startswith(OWN_UNIT) else nodeid.split("::", 1)[0]


def _cost(item: pytest.Item) -> float:
    params = getattr(getattr(item, "callspec", None), "params", {})
    for value in params.values():
        if hasattr(value, "schedule_cost"):
            return float(value.schedule_cost)
    return DEFAULT_COST


def _needs_template(item: pytest.Item) -> bool:
    """Whether the test copies the session's reproduced pipeline (`reproduced_template`): through its fixtures, or as
    a docs scenario that starts from the reproduced state (it asks for the fixture at run time)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return "reproduced_template" in getattr(item, "fixturenames", ()) or any(
        getattr(value, "state", None) == "reproduced" for value in params.values())


def template_first_order(units: list[str], cost: dict[str, float], needs_template: set[str], workers: int) -> list[str]:
    """`units` longest first, except that the first template unit leads and the next `workers - 1` are the longest
    units that do not need the template: xdist hands the first unit to each worker, so one worker builds the template
    (a full `dvc repro`, under a file lock) while the others run work that does not wait for it. Longest first
    alone gave both workers a docs scenario: one built the template, the other sat on the lock for the whole build."""
    ranked = sorted(units, key=lambda u: -cost[u])
    first = next((u for u in ranked if u in needs_template), None)
    if first is None:
        return ranked
    others = [u for u in ranked if u not in needs_template][: max(workers - 1, 0)]
    lead = [first, *others]
    return lead + [u for u in ranked if u not in lead]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that need an agent kind's venv run last: CI builds those venvs in the background meanwhile (.ci/run),
    so the tests before them never wait for the build (docs/agents.md §11.5). Before them, the units by cost, the
    longest first, led by one template unit and, on the other workers, units that do not need the template
    (template_first_order); a unit's tests stay together and in file order (stable sort)."""
    unit_cost: dict[str, float] = {}
    needs_template: set[str] = set()
    for item in items:
        unit = _unit(item.nodeid)
        unit_cost[unit] = unit_cost.get(unit, MODULE_COST.get(unit, 0.0)) + _cost(item)
        if _needs_template(item):
            needs_template.add(unit)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    # in collection order (a list, not a set): every xdist worker must compute the same order, and a set's order of
    # strings differs per process (hash randomisation; CI stopped on "Different tests were collected")
    last = list(dict.fromkeys(
        _unit(i.nodeid) for i in items if getattr(getattr(i, "module", None), "NEEDS_AGENT_VENV", False)))
    at_end = set(last)
    order = template_first_order([u for u in unit_cost if u not in at_end], unit_cost, needs_template, workers)
    order += sorted(last, key=lambda u: -unit_cost[u])
    rank = {unit: n for n, unit in enumerate(order)}
    items.sort(key=lambda item: rank[_unit(item.nodeid)])


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `pytest -n …` without an explicit `--dist`: units (see above) handed out in collection order, one at a
    time to whichever worker is about to run out, never reordered by their number of tests."""
    if config.getvalue("dist") != "load":
        return None  # `--dist loadscope` / `loadfile` / … asked for explicitly: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    config.option.loadscopereorder = False
    return UnitScheduling(config, log)
