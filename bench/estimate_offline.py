"""Wall time and CPU of `reportbench estimate` for every `reportbench reproduce` entry, with the network cut.

Run from the repo root with the venv active:  `python bench/estimate_offline.py [--no-unshare]`

For each entry of `reportbench reproduce --list`, `reportbench reproduce <entry>` prints the commands that run the
table; every `reportbench estimate ...` among them is run exactly as printed (plus `--json`), in a new user and
network namespace (`unshare -rn`: no interface but a loopback that is down, so no request can leave) when the
kernel allows it, else with the network open and counted. Either way a Python audit hook (`sitecustomize.py` on
PYTHONPATH) counts every socket connect and name lookup that reaches the interpreter's socket module, and the
estimate's own JSON says how many it refused (`network_requests_refused`). Printed per command: exit code, wall
seconds, CPU seconds (user + sys of the child), requests counted, refused, pages not cached, and the first
"cannot know" line. The 1-minute load average is printed with the figures (wall time on a shared machine is
inflated by other load; CPU is the steadier figure). docs/scale.md quotes the result.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AUDIT_HOOK = """
import os, sys
_log = os.environ.get("RB_NETWORK_AUDIT_LOG")
_EVENTS = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
           "socket.sendto", "socket.sendmsg"}
def _hook(event, args):
    if _log and event in _EVENTS:
        with open(_log, "a", encoding="utf-8") as f:
            f.write(f"{event} {args!r:.200}\\n")
sys.addaudithook(_hook)
"""


def unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def estimate_commands(reportbench: str) -> list[tuple[str, list[str]]]:
    """(reproduce entry, argv) for every `reportbench estimate` command the entries print."""
    listing = subprocess.run([reportbench, "reproduce", "--list"], capture_output=True, text=True, check=True).stdout
    rows = [ln.split() for ln in listing.splitlines()[1:] if ln.strip() and "/" in ln.split()[0]]
    entries = [r[0] for r in rows if r[1] == "no"]  # an offline entry runs its table: it prints no estimate
    out = []
    for entry in entries:
        shown = subprocess.run([reportbench, "reproduce", entry], capture_output=True, text=True).stdout
        for line in shown.splitlines():
            if line.strip().startswith("reportbench estimate"):
                out.append((entry, shlex.split(line.strip())))
    return out


def run_one(argv: list[str], reportbench: str, hook_dir: Path, cut: bool) -> dict:
    log = hook_dir / "audit.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(hook_dir), "RB_NETWORK_AUDIT_LOG": str(log)}
    cmd = [reportbench, *argv[1:], "--json"]
    if cut:
        cmd = ["unshare", "-rn", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary: dict = {}
    if proc.returncode == 0:
        summary = json.loads(proc.stdout)
    cannot = [ln for ln in proc.stderr.splitlines() if "cannot know here" in ln or ln.startswith("error:")]
    return {
        "rc": proc.returncode,
        "wall": wall,
        "cpu": cpu,
        "requests": len(log.read_text().splitlines()) if log.is_file() else 0,
        "refused": summary.get("network_requests_refused"),
        "pages": summary.get("pages_not_cached"),
        "first": (cannot[0] if cannot else "")[:110],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-unshare", action="store_true", help="leave the network open (the audit hook still counts)")
    args = ap.parse_args()
    reportbench = shutil.which("reportbench") or str(Path(sys.executable).parent / "reportbench")
    cut = not args.no_unshare and unshare_works()
    print(f"network: {'cut (unshare -rn)' if cut else 'open, counted'}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'entry':<30} {'rc':>3} {'wall s':>7} {'cpu s':>6} {'requests':>8} {'refused':>7} {'pages?':>6}  "
          "first note")
    with tempfile.TemporaryDirectory() as tmp:
        hook_dir = Path(tmp)
        (hook_dir / "sitecustomize.py").write_text(AUDIT_HOOK)
        worst = 0.0
        for entry, argv in estimate_commands(reportbench):
            r = run_one(argv, reportbench, hook_dir, cut)
            worst = max(worst, r["wall"])
            print(f"{entry:<30} {r['rc']:>3} {r['wall']:>7.1f} {r['cpu']:>6.1f} {r['requests']:>8} "
                  f"{r['refused'] if r['refused'] is not None else '—':>7} "
                  f"{r['pages'] if r['pages'] is not None else '—':>6}  {r['first']}")
    print(f"slowest: {worst:.1f} s wall; load average now {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
