"""Probe behind docs/offline-judge.md: prints the offline judge's separation figures (AUC, agreement).

Run: python bench/offline_judge_probe.py (the DeepScholar parts need ../shared/data; the pairs are
self-authored in bench/offline_judge_pairs.py)."""

import collections
import csv
import glob
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
csv.field_size_limit(10**9)
from offline_judge_pairs import PAIRS, REFS
from reportbench.judges.offline import resolve_params
from reportbench.judges.tasks import get_task
from reportbench.judges.tasks.important_reference import ImportantReferenceInput
from reportbench.judges.tasks.nugget_assign import NuggetAssignInput
from reportbench.judges.tasks.nugget_create import NuggetCreateInput
from reportbench.judges.tasks.nugget_score import NuggetScoreInput
from reportbench.judges.tasks.organization import OrganizationInput
from reportbench.judges.tasks.relevance import RelevanceInput
from reportbench.judges.tasks.support import SupportInput

P = resolve_params({})
D = str(Path(__file__).resolve().parents[1].parent / "shared/data/deepscholar-bench/dataset") + "/"


def auc(pos, neg):
    return sum(1 if a > b else 0.5 if a == b else 0 for a in pos for b in neg) / (len(pos) * len(neg))


def kappa(a, b):
    n = len(a)
    labels = sorted(set(a) | set(b))
    po = sum(x == y for x, y in zip(a, b, strict=False)) / n
    pe = sum((a.count(l) / n) * (b.count(l) / n) for l in labels)
    return (po - pe) / (1 - pe) if pe < 1 else float("nan")


print("== 1. support probe (held-out self-authored pairs)")
t = get_task("support")
by = collections.defaultdict(list)
t0 = time.perf_counter()
for ref, claim, label, split in PAIRS:
    if split != "probe":
        continue
    v = t.offline(SupportInput(claim=claim, reference=REFS[ref]), P)
    by[label].append((v.output.supported, v.signals["S"]))
dt = time.perf_counter() - t0
for label in ("support", "topical", "contra"):
    print(f"  {label:8s} n={len(by[label])} judged supported={sum(x for x, _ in by[label])}")
pos = [s for _, s in by["support"]]
print(
    "  AUC(S) support vs topical {:.3f}, vs contradiction {:.3f}".format(auc(pos, [s for _, s in by["topical"]]), auc(pos, [s for _, s in by["contra"]]))
)
print("  %.1f ms per pair" % (1000 * dt / 50))
# dev for reference
byd = collections.defaultdict(list)
for ref, claim, label, split in PAIRS:
    if split != "dev":
        continue
    v = t.offline(SupportInput(claim=claim, reference=REFS[ref]), P)
    byd[label].append(v.output.supported)
print("  dev:", {k: f"{sum(v)}/{len(v)}" for k, v in byd.items()})

papers = {r["arxiv_id"]: r for r in csv.DictReader(open(D + "papers_with_related_works.csv"))}
res = {}
for f in sorted(glob.glob(D + "gt_nuggets_outputs/*/res.json")):
    j = json.load(open(f))
    res[j["qid"]] = j
qids = sorted(q for q in res if q in papers)
held = [q for i, q in enumerate(qids) if i % 2 == 1]

print("== 2. nugget_assign vs GPT-4.1 labels (DeepScholar gt nuggets vs their own exemplar), held-out half")
t = get_task("nugget_assign")
gold, pred, cross_pred = [], [], []
t0 = time.perf_counter()
calls = 0
for i, q in enumerate(held):
    nug = res[q]["nuggets"]
    v = t.offline(
        NuggetAssignInput(
            query=res[q]["query"], passage=papers[q]["clean_latex_related_works"], nuggets=[n["text"] for n in nug]
        ),
        P,
    )
    gold += [n["assignment"] for n in nug]
    pred += v.output.labels
    calls += 1
    other = papers[held[(i + 1) % len(held)]]["clean_latex_related_works"]
    v2 = t.offline(NuggetAssignInput(query=res[q]["query"], passage=other, nuggets=[n["text"] for n in nug]), P)
    cross_pred += v2.output.labels
    calls += 1
dt = time.perf_counter() - t0
print(
    f"  papers={len(held)} nuggets={len(gold)} gold support share={gold.count('support') / len(gold):.3f} offline support share={pred.count('support') / len(pred):.3f}"
)
print(f"  3-way accuracy={sum(a == b for a, b in zip(gold, pred, strict=False)) / len(gold):.3f} kappa={kappa(gold, pred):.3f}")
gb = [g == "support" for g in gold]
pb = [p == "support" for p in pred]
print(
    f"  binary (support vs rest) accuracy={sum(a == b for a, b in zip(gb, pb, strict=False)) / len(gb):.3f} kappa={kappa(gb, pb):.3f}"
)
print("  confusion gold->pred:", dict(collections.Counter(zip(gold, pred, strict=False))))
print(
    f"  nuggets vs another paper exemplar: support={cross_pred.count('support') / len(cross_pred):.3f} partial={cross_pred.count('partial_support') / len(cross_pred):.3f}"
)
print("  %.1f ms per call (~%d nuggets)" % (1000 * dt / calls, len(gold) / len(held)))

print("== 3. nugget_score vs GPT-4.1 vital/okay (held-out half; top_terms/min chosen on the other half)")
t = get_task("nugget_score")
gold, pred = [], []
for q in sorted(res)[1::2]:
    nug = res[q]["nuggets"]
    v = t.offline(NuggetScoreInput(query=res[q]["query"], nuggets=[n["text"] for n in nug]), P)
    gold += [n["importance"] for n in nug]
    pred += v.output.importance
print(
    f"  nuggets={len(gold)} gold vital={gold.count('vital') / len(gold):.3f} offline vital={pred.count('vital') / len(pred):.3f} accuracy={sum(a == b for a, b in zip(gold, pred, strict=False)) / len(gold):.3f} kappa={kappa(gold, pred):.3f}"
)

print("== 4. nugget_create (offline sentence nuggets vs GPT-4.1 nuggets)")
t = get_task("nugget_create")
ta = get_task("nugget_assign")
counts, llm_counts, covered = [], [], []
for q in qids:
    v = t.offline(
        NuggetCreateInput(query=res[q]["query"], passage=papers[q]["clean_latex_related_works"], max_nuggets=30), P
    )
    counts.append(len(v.output.nuggets))
    llm_counts.append(len(res[q]["nuggets"]))
    # how many LLM nuggets are 'support' against the offline nuggets joined as a passage
    a = ta.offline(
        NuggetAssignInput(
            query="", passage="\n\n".join(v.output.nuggets), nuggets=[n["text"] for n in res[q]["nuggets"]]
        ),
        P,
    )
    covered += [l == "support" for l in a.output.labels]
print(
    f"  nuggets per paper: offline mean {statistics.mean(counts):.1f} (max {max(counts)}), LLM mean {statistics.mean(llm_counts):.1f}; LLM nuggets lexically supported by the offline nuggets: {sum(covered) / len(covered):.3f}"
)

print(
    "== 5. relevance: references cited by the paper vs references of another paper in the same arXiv category (held-out half)"
)
t = get_task("relevance")
cites = [r for r in csv.DictReader(open(D + "recovered_citations.csv")) if r["parent_paper_arxiv_id"] in papers]
bycite = collections.defaultdict(list)
for c in cites:
    bycite[c["parent_paper_arxiv_id"]].append(c)
ids = sorted(bycite)
heldp = ids[1::2]
random.seed(0)
scores = {"own": [], "other": []}
t0 = time.perf_counter()
n = 0
for pid in ids:
    p = papers[pid]
    others = [
        c
        for o in ids
        if o != pid and papers[o]["categories"].split()[0] == p["categories"].split()[0]
        for c in bycite[o]
    ]
    own_s = random.sample(bycite[pid], min(8, len(bycite[pid])))
    oth_s = random.sample(others, min(8, len(others)))
    if pid not in heldp:
        continue
    for kind, group in (("own", own_s), ("other", oth_s)):
        for c in group:
            ab = c["cited_paper_abstract"] if c["is_arxiv_paper"] == "True" else c["search_res_content"]
            v = t.offline(
                RelevanceInput(
                    paper_title=p["title"],
                    paper_abstract=p["abstract"],
                    exemplar=p["clean_latex_related_works"],
                    ref_title=c["cited_paper_title"],
                    ref_abstract=ab or "",
                ),
                P,
            )
            scores[kind].append(v.output.score)
            n += 1
dt = time.perf_counter() - t0
for kind, v in scores.items():
    cnt = collections.Counter(v)
    print(
        f"  {kind:5s} n={len(v)} score 0/1/2 = {cnt[0]}/{cnt[1]}/{cnt[2]}  relevance rate (mean/2)={statistics.mean(v) / 2:.3f}"
    )
print("  AUC(score) own vs other {:.3f}; {:.1f} ms per call".format(auc(scores["own"], scores["other"]), 1000 * dt / n))

print("== 6. organization: exemplar vs degraded copies of itself (all 63 papers, both orders)")
t = get_task("organization")


def paragraphs(text):
    return [b for b in text.split("\n\n") if b.strip()]


from reportbench.judges.lexical import is_heading_line, split_sentences


def merge(text):  # no headings, one block
    return " ".join(s for s in split_sentences(text) if not is_heading_line(s))


def shuffle(text, seed):  # same sentences, random order, same paragraph count of ~equal size
    sents = [s for s in split_sentences(text) if not is_heading_line(s)]
    r = random.Random(seed)
    r.shuffle(sents)
    k = max(1, len(paragraphs(text)))
    size = max(1, len(sents) // k)
    return "\n\n".join(" ".join(sents[i : i + size]) for i in range(0, len(sents), size))


def redundant(text, seed):  # repeat a third of the sentences at the end of their paragraphs
    r = random.Random(seed)
    out = []
    for b in paragraphs(text):
        ss = split_sentences(b)
        out.append(" ".join(ss + [x for x in ss if not is_heading_line(x) and r.random() < 0.34]))
    return "\n\n".join(out)


res6 = collections.defaultdict(list)
swaps_ok = 0
total = 0
t0 = time.perf_counter()
for pid, p in sorted(papers.items()):
    ex = p["clean_latex_related_works"]
    for name, deg in (("merged", merge(ex)), ("shuffled", shuffle(ex, pid)), ("redundant", redundant(ex, pid))):
        v1 = t.offline(
            OrganizationInput(paper_title=p["title"], paper_abstract=p["abstract"], section_a=ex, section_b=deg), P
        )
        v2 = t.offline(
            OrganizationInput(paper_title=p["title"], paper_abstract=p["abstract"], section_a=deg, section_b=ex), P
        )
        total += 1
        swaps_ok += v1.output.decision != v2.output.decision
        res6[name].append(((v1.output.decision == "A") + (v2.output.decision == "B")) / 2)
dt = time.perf_counter() - t0
for name, v in res6.items():
    print(f"  original preferred over {name:9s}: win rate {statistics.mean(v):.3f} (n={len(v)})")
print(f"  swap flips the decision: {swaps_ok}/{total}; %.1f ms per call" % (1000 * dt / (2 * total)))

print("== 7. important_reference: share labelled important (recovered citations, bib key given)")
t = get_task("important_reference")
imp = collections.Counter()
how = collections.Counter()
for c in cites:
    p = papers[c["parent_paper_arxiv_id"]]
    content = c["cited_paper_abstract"] if c["is_arxiv_paper"] == "True" else c["search_res_content"]
    v = t.offline(
        ImportantReferenceInput(
            paper_title=p["title"],
            paper_abstract=p["abstract"],
            related_work=p["clean_latex_related_works"],
            cited_title=c["cited_paper_title"],
            cited_authors=c["bib_paper_authors"],
            cited_content=content or "",
            citation_key=c["citation_shorthand"],
        ),
        P,
    )
    imp[(c["is_arxiv_paper"], v.output.important)] += 1
    how[v.explanation.split("located by: ")[-1].rstrip(")")] += 1
for arx in ("True", "False"):
    tot = imp[(arx, True)] + imp[(arx, False)]
    print(f"  is_arxiv={arx}: important {imp[(arx, True)]}/{tot} = {imp[(arx, True)] / tot:.3f}")
print("  located by:", dict(how))
