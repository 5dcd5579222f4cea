"""`reportbench annotate`: a self-contained, offline HTML page for labelling a sample of judged items.

Why a static page: a maintainer must be able to label 100-300 items in an hour on any machine, with no server
and no network. The page shows one item at a time (claim + source, rubric item + report passage: every input
field of the judge task), keeps progress in the browser's localStorage, and exports the human-label CSV that the
agreement stage reads (docs/agreement.md). The judge's own verdict is hidden by default (press `v` to reveal):
seeing it first would anchor the annotator. The sample is stratified by the judge's verdict and seeded.
"""

from __future__ import annotations

import argparse
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reportbench.agreement.records import HUMAN_LABEL_COLUMNS
from reportbench.agreement.sampling import stratified_sample
from reportbench.benchmark_arg import add_benchmark_argument

MAX_FIELD_CHARS = 20_000  # a page longer than this is cut in the page (the label still refers to the item)


def collect_items(
    params: Mapping[str, Any],
    benchmark: str,
    release_dir: Path,
    runs_dir: Path,
    judgments_dir: Path,
    pages_dir: Path | None = None,
    tasks: Sequence[str] | None = None,
    member: str | None = None,
) -> list[dict[str, Any]]:
    """Every judged item of `tasks` (judge task names; None = all) with its inputs and the judge's verdict."""
    # lazy: +652 ms to import (python -X importtime)
    from reportbench.agreement.stage import _load_member, rebuild_items
    from reportbench.config import require  # lazy: +50 ms to import (python -X importtime)
    from reportbench.pipeline import _load_pages, read_release  # lazy: +436 ms to import (python -X importtime)

    systems = list(require(params, f"plan.benchmarks.{benchmark}.systems"))
    members = list(require(params, f"plan.benchmarks.{benchmark}.members"))
    member = member or members[0]
    release = read_release(Path(release_dir), benchmark)
    items_by_step, step_task, _ = rebuild_items(
        params, benchmark, release, Path(runs_dir), Path(judgments_dir), _load_pages(pages_dir), member, systems
    )
    out: list[dict[str, Any]] = []
    for (system, step), items in sorted(items_by_step.items()):
        task = step_task[step]
        if tasks and task not in tasks:
            continue
        recorded, _ = _load_member(Path(judgments_dir), system, member)
        verdicts = {j.item_id: j for j in recorded.get(step, [])}
        for item in items:
            j = verdicts.get(item.item_id)
            verdict = None if j is None or not j.ok else (j.label if j.label is not None else j.value)
            fields = {k: _text(v) for k, v in item.inputs.items()}
            out.append(
                {
                    "benchmark": benchmark,
                    "system": system,
                    "task": task,
                    "item_id": item.item_id,
                    "fields": fields,
                    "judge": None if verdict is None else str(verdict),
                    "explanation": (j.explanation or "") if j is not None else "",
                }
            )
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, list | tuple):
        text = "\n".join(f"{i}. {_text(v)}" for i, v in enumerate(value, 1))
    elif isinstance(value, Mapping):
        text = json.dumps(value, ensure_ascii=False, indent=1)
    else:
        text = str(value)
    return text if len(text) <= MAX_FIELD_CHARS else text[:MAX_FIELD_CHARS] + " [... cut for the page]"


def label_choices(items: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Per judge task, the labels offered: what the judge used (numbers in order), at least supported/not."""
    seen: dict[str, set[str]] = {}
    for it in items:
        if it["judge"] is not None:
            seen.setdefault(it["task"], set()).add(str(it["judge"]))
    out = {}
    for task, labels in seen.items():
        try:
            out[task] = sorted(labels, key=float)
        except ValueError:
            out[task] = sorted(labels)
    for task in {it["task"] for it in items}:
        out.setdefault(task, ["supported", "not_supported"])
    return out


def sample(items: Sequence[Mapping[str, Any]], n: int, seed: int = 0) -> list[Mapping[str, Any]]:
    """Stratified by (judge task, the judge's verdict), seeded."""
    return stratified_sample(list(items), [f"{it['task']}|{it['judge']}" for it in items], n, seed)


def render_page(benchmark: str, items: Sequence[Mapping[str, Any]], choices: Mapping[str, list[str]]) -> str:
    payload = json.dumps({"benchmark": benchmark, "items": list(items), "choices": choices, "columns":
                          [*HUMAN_LABEL_COLUMNS, "note"]}, ensure_ascii=False).replace("</", "<\\/")  # fmt: skip
    return _PAGE.replace("__TITLE__", html.escape(f"reportbench annotate: {benchmark}")).replace("__DATA__", payload)


def write_page(path: Path, benchmark: str, items: Sequence[Mapping[str, Any]]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_page(benchmark, items, label_choices(items)), encoding="utf-8")
    return path


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f6f6f4;color:#222}
header{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:8px 16px;display:flex;gap:16px;
align-items:center;flex-wrap:wrap}
main{max-width:1000px;margin:16px auto;padding:0 16px}
.field{background:#fff;border:1px solid #ddd;border-radius:6px;margin:10px 0;padding:8px 12px}
.field h3{margin:0 0 4px;font-size:12px;text-transform:uppercase;color:#666}
.field pre{white-space:pre-wrap;margin:0;font:inherit;max-height:45vh;overflow:auto}
.labels button{margin:4px;padding:8px 14px;font-size:15px;border:1px solid #999;border-radius:4px;background:#fff}
.labels button.on{background:#2b6cb0;color:#fff;border-color:#2b6cb0}
.meta{color:#666;font-size:13px}.judge{color:#9b2c2c;display:none}.judge.show{display:block}
kbd{border:1px solid #aaa;border-radius:3px;padding:0 4px;font-size:12px}
progress{width:200px}
</style></head><body>
<header><strong>__TITLE__</strong><progress id="bar"></progress><span id="count"></span>
<label>annotator <input id="who" size="10"></label>
<button id="export">Export CSV</button>
<span class="meta"><kbd>1</kbd>-<kbd>9</kbd> label, <kbd>&larr;</kbd>/<kbd>&rarr;</kbd> move,
<kbd>u</kbd> next unlabelled, <kbd>n</kbd> note, <kbd>v</kbd> show the judge's verdict</span></header>
<main><div class="meta" id="where"></div><div id="fields"></div>
<div class="labels" id="labels"></div><div><input id="note" placeholder="note (optional)" size="80"></div>
<div class="judge" id="judge"></div></main>
<script>
const DATA = __DATA__;
const KEY = "reportbench-annotate:" + DATA.benchmark + ":" + DATA.items.length + ":" + (DATA.items[0]||{}).item_id;
let state = JSON.parse(localStorage.getItem(KEY) || '{"labels":{},"notes":{},"pos":0,"who":""}');
const id = it => it.system + "\\u001f" + it.task + "\\u001f" + it.item_id;
const save = () => localStorage.setItem(KEY, JSON.stringify(state));
function show() {
  const it = DATA.items[state.pos], k = id(it), choices = DATA.choices[it.task] || [];
  document.getElementById("where").textContent =
    `item ${state.pos + 1} of ${DATA.items.length} - ${it.task} - ${it.system} - ${it.item_id}`;
  const f = document.getElementById("fields"); f.innerHTML = "";
  for (const [name, text] of Object.entries(it.fields)) {
    const d = document.createElement("div"); d.className = "field";
    const h = document.createElement("h3"); h.textContent = name;
    const p = document.createElement("pre"); p.textContent = text; d.append(h, p); f.append(d);
  }
  const l = document.getElementById("labels"); l.innerHTML = "";
  choices.forEach((c, i) => { const b = document.createElement("button"); b.textContent = `${i + 1}: ${c}`;
    if (state.labels[k] === c) b.className = "on"; b.onclick = () => setLabel(c); l.append(b); });
  document.getElementById("note").value = state.notes[k] || "";
  const j = document.getElementById("judge"); j.classList.remove("show");
  j.textContent = `judge: ${it.judge} - ${it.explanation}`;
  const n = Object.keys(state.labels).length;
  document.getElementById("count").textContent = `${n} / ${DATA.items.length} labelled`;
  const bar = document.getElementById("bar"); bar.max = DATA.items.length; bar.value = n;
  document.getElementById("who").value = state.who;
}
function setLabel(c) { state.labels[id(DATA.items[state.pos])] = c; save(); move(1); }
function move(d) { state.pos = Math.max(0, Math.min(DATA.items.length - 1, state.pos + d)); save(); show(); }
function nextOpen() { for (let i = 1; i <= DATA.items.length; i++) { const p = (state.pos + i) % DATA.items.length;
  if (!(id(DATA.items[p]) in state.labels)) { state.pos = p; save(); show(); return; } } }
const q = s => /[",\\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
document.getElementById("export").onclick = () => {
  const rows = [DATA.columns.join(",")];
  for (const it of DATA.items) { const k = id(it); if (!(k in state.labels)) continue;
    rows.push([it.benchmark, it.system, it.task, it.item_id, state.labels[k], state.who || "anonymous",
               state.notes[k] || ""].map(x => q(String(x))).join(",")); }
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([rows.join("\\n") + "\\n"], {type: "text/csv"}));
  a.download = "human_labels.csv"; a.click();
};
document.getElementById("who").oninput = e => { state.who = e.target.value; save(); };
document.getElementById("note").oninput = e => { state.notes[id(DATA.items[state.pos])] = e.target.value; save(); };
document.addEventListener("keydown", e => {
  if (e.target.tagName === "INPUT") { if (e.key === "Enter" || e.key === "Escape") e.target.blur(); return; }
  const choices = DATA.choices[DATA.items[state.pos].task] || [];
  if (/^[1-9]$/.test(e.key) && +e.key <= choices.length) setLabel(choices[+e.key - 1]);
  else if (e.key === "ArrowRight") move(1); else if (e.key === "ArrowLeft") move(-1);
  else if (e.key === "u") nextOpen();
  else if (e.key === "n") { e.preventDefault(); document.getElementById("note").focus(); }
  else if (e.key === "v") document.getElementById("judge").classList.toggle("show");
});
show();
</script></body></html>
"""


# ------------------------------------------------------------------------------------------------------- CLI
def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "annotate",
        help="write an offline HTML page to label a stratified sample of judged items (exports human_labels.csv)",
        description=__doc__.split("\n")[0],
    )
    add_benchmark_argument(p, required=True, help="the benchmark whose judged items are sampled")
    p.add_argument("--params", type=Path, default=Path("params.yaml"), help="params file (default: params.yaml)")
    p.add_argument("--task", action="append", default=None, help="judge task(s) to sample (default: all)")
    p.add_argument("-n", "--n", type=int, default=150, help="items in the sample (100-300 is an hour's work)")
    p.add_argument("--seed", type=int, default=0, help="seed of the stratified sample (same seed, same items)")
    p.add_argument("--member", default=None, help="ensemble member whose verdicts stratify (default: the first)")
    p.add_argument("--out", type=Path, default=None, help="default: annotate/<benchmark>-<release>.html")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    import sys

    from reportbench.config import load_params  # lazy: +50 ms to import (python -X importtime)

    params = load_params(args.params)
    entry = (params.get("plan") or {}).get("benchmarks", {}).get(args.benchmark)
    if entry is None:
        enabled = ", ".join((params.get("plan") or {}).get("benchmarks", {}))
        print(f"error: benchmark {args.benchmark!r} is not enabled in {args.params}; choices: {enabled}",
              file=sys.stderr)
        return 2
    release = entry["release"]
    judgments = Path("data/judgments") / args.benchmark / release
    if not judgments.is_dir():
        print(f"error: {judgments} does not exist; run `dvc repro` first", file=sys.stderr)
        return 2
    pages = Path("data/pages") / args.benchmark / release
    items = collect_items(
        params, args.benchmark, Path("data/releases") / args.benchmark / release,
        Path("data/runs") / args.benchmark / release, judgments, pages if pages.is_dir() else None,
        args.task, args.member,
    )  # fmt: skip
    if not items:
        print(f"error: no judged items of task(s) {args.task} in {judgments}", file=sys.stderr)
        return 2
    picked = sample(items, args.n, args.seed)
    out = args.out or Path("annotate") / f"{args.benchmark}-{release}.html"
    write_page(out, args.benchmark, picked)
    print(f"wrote {out}: {len(picked)} of {len(items)} items (stratified by judge verdict, seed {args.seed})")
    return 0
