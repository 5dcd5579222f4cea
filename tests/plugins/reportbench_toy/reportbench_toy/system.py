"""The toy's two systems as one program (`kind: command`): reads the task JSON, writes a markdown report."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

REPORTS = {
    "thorough": {
        "t1": "The sky is blue because of scattering of sunlight by air molecules [1]. Shorter blue "
        "wavelengths scatter more than red ones [1].\n\n## References\n[1] Sky colour explained. "
        "https://example.org/sky\n",
        "t2": "Trees shed leaves to save water in winter [1].\n\n## References\n[1] Why trees shed leaves: "
        "deciduous trees save water in winter.\n",
    },
    "terse": {
        "t1": "The sky is blue [1].\n\n## References\n[1] Gone. https://example.org/missing\n",
        "t2": "Leaves fall.\n",
    },
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--style", choices=sorted(REPORTS), required=True)
    ap.add_argument("--task", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    task = json.loads(args.task.read_text(encoding="utf-8"))
    args.out.write_text(REPORTS[args.style][task["task_id"]], encoding="utf-8")


if __name__ == "__main__":
    main()
