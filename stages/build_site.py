"""Stage `site`: with `--all`, every enabled benchmark's leaderboard page + per-sample viewer
(site/benchmarks/<b>/<R>/) and site/index.html; `--benchmark <b>` builds one folder, neither the index only.
docs/site.md."""

import argparse
from pathlib import Path

from reportbench.pipeline import setup_logging
from reportbench.preflight import stage_params
from reportbench.site.build import DEFAULT_MAX_SAMPLES, build_benchmark_site, build_index, build_site
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import exit_ok, guard_stage

if __name__ == "__main__":
    guard_stage()  # dies with dvc; SIGTERM/SIGHUP stop its children too (docs/reliability.md)
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", help="build this benchmark's folder; without it, build the index page")
    ap.add_argument("--all", action="store_true", help="every enabled benchmark's folder, then the index page")
    ap.add_argument("--site", type=Path, default=Path("site"))
    ap.add_argument(
        "--max-samples",
        type=int,
        default=DEFAULT_MAX_SAMPLES,
        help="sample pages per (benchmark, system); the rest: `reportbench view`",
    )
    args = ap.parse_args()
    with exit_on_error():
        params = stage_params()
        if args.all:
            # reuse: a sample page whose inputs did not change is copied from the page cache (site/page_reuse.py)
            c = build_site(params, Path("."), args.site, max_samples=args.max_samples, reuse=True)
            print(f"site: {c['system_pages']} system pages, {c['sample_pages']} sample pages "
                  f"({c['reused_pages']} unchanged, reused), {args.site}/index.html")
        elif args.benchmark:
            c = build_benchmark_site(
                params, args.benchmark, Path("."), args.site, max_samples=args.max_samples, reuse=True
            )
            print(f"site@{args.benchmark}: {c['system_pages']} system pages, {c['sample_pages']} sample pages "
                  f"({c['reused_pages']} unchanged, reused)")
        else:
            print(f"site: {build_index(params, Path('.'), args.site)}")
    exit_ok()  # done: exit 0 without the interpreter's teardown (reportbench.stage_guard)
