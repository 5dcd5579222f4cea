"""BM25 of reports against a release's task questions, computed sparsely: the shift check's scorer.

The task questions are the BM25 documents and each report's distinct terms the query (Okapi BM25 with
rank-bm25's defaults and idf floor, so the numbers are the ones `rank_bm25.BM25Okapi.get_scores` gives). The
questions become one scipy.sparse matrix of per-term weights; a block of reports is one sparse product against
it, so the work per report is its own terms' postings, not a Python loop over every task. Only the top
`TOP_K` candidates of each report are kept (with its own task's score), never the reports × tasks matrix.

Terms: lower-cased words of 3+ letters or digits in any alphabetic script (minus a short English stop list),
and, for Chinese / Japanese / Korean, overlapping character bigrams of every CJK run. Bigrams are the standard
dictionary-free indexing unit for CJK retrieval (Lucene's CJKAnalyzer, the NTCIR baselines): no segmenter
dictionary to load or pin, no out-of-vocabulary misses on technical terms, and close to word-based retrieval in
quality for matching a question to a long answer. Before, only ASCII words counted: a Chinese question had no
terms at all, so its report could be matched to nothing (spurious warnings) and a shift among Chinese reports
was invisible.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

# rank_bm25.BM25Okapi's defaults (k1, b, epsilon: the floor for a negative idf, as a share of the mean idf)
K1 = 1.5
B = 0.75
EPSILON = 0.25
TOP_K = 10  # candidate tasks kept per report
# a query term found in more than MAX_POSTINGS questions is left out: its idf is at most ln((N - 500) / 500)
# (it lifts hundreds of tasks almost alike) and its posting list would make the work per report grow with N;
# below 1,000 tasks nothing is left out (the real releases have 27-100 tasks with a report)
MAX_POSTINGS = 500
BLOCK_CELLS = 2_000_000  # report x task scores held at once (8 MB): reports are scored in blocks of that size
STATS_ROWS = 1000  # reports the column z-score statistics are estimated on (all of them up to that many)

_CJK_CHARS = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
_WORD = re.compile(r"[^\W_]{3,}")
_STOP = frozenset(
    "the and for are but not you all any can had her was one our out has have this that with from they will "
    "what when which who how why their there these those into than then them been were also more most such "
    "about over under between while where each other some only very its it's may might would could should "
    "report research provide include including based using use used per via".split()
)


def terms(text: str) -> list[str]:
    """The matching terms of a text: words (any alphabetic script, lower-cased, 3+ characters, no stop words)
    and the character bigrams of its CJK runs (a lone CJK character counts as itself)."""
    low = text.lower()
    out: list[str] = []
    for run in _CJK_RUN.findall(low):
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    if out:
        low = _CJK_RUN.sub(" ", low)
    out.extend(w for w in _WORD.findall(low) if w not in _STOP)
    return out


def distinct_terms(text: str) -> set[str]:
    """The distinct terms of `terms(text)`, computed set-wise (a report is a BM25 query: each term counts once)."""
    low = text.lower()
    out: set[str] = set()
    runs = _CJK_RUN.findall(low)
    for run in runs:
        out.update([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    if runs:
        low = _CJK_RUN.sub(" ", low)
    out.update(_WORD.findall(low))
    return out - _STOP


@dataclass
class Candidates:
    """What the scorer keeps of one report: its own task's score and its best-scoring other tasks."""

    row: int  # the report's index in the scored list
    own: float
    tasks: np.ndarray  # task indices, best first (at most TOP_K; never the report's own task)
    scores: np.ndarray


class TaskIndex:
    """Okapi BM25 over the task texts, as one sparse (tasks x vocabulary) matrix of per-term weights."""

    def __init__(self, task_texts: Sequence[str]) -> None:
        self.vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        vals: list[int] = []
        lengths = np.zeros(len(task_texts), dtype=np.float64)
        for i, text in enumerate(task_texts):
            toks = terms(text)
            lengths[i] = len(toks)
            counts: dict[int, int] = {}
            for t in toks:
                j = self.vocab.setdefault(t, len(self.vocab))
                counts[j] = counts.get(j, 0) + 1
            rows.extend([i] * len(counts))
            cols.extend(counts)
            vals.extend(counts.values())
        n = len(task_texts)
        tf = sparse.csr_matrix(
            (np.asarray(vals, dtype=np.float64), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
            shape=(n, max(len(self.vocab), 1)),
        )
        df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float64)
        idf = np.log(n - df + 0.5) - np.log(df + 0.5)
        floor = EPSILON * (float(idf.mean()) if idf.size else 0.0)
        idf[idf < 0] = floor
        avgdl = float(lengths.mean()) if n and lengths.mean() > 0 else 1.0
        norm = K1 * (1 - B + B * lengths / avgdl)  # per task
        data = tf.data
        row_of = np.repeat(np.arange(n), np.diff(tf.indptr))
        tf.data = idf[tf.indices] * data * (K1 + 1) / (data + norm[row_of])
        # vocabulary x tasks: a query block times this is its scores (float32: half the memory traffic of the
        # dense score blocks; BM25 scores need no more than 7 digits)
        self.weights = tf.T.tocsr().astype(np.float32)
        common = set(np.flatnonzero(df > MAX_POSTINGS).tolist())
        self.query_vocab = {t: j for t, j in self.vocab.items() if j not in common} if common else self.vocab
        self.n_tasks = n

    def query_matrix(self, texts: Iterable[str]) -> sparse.csr_matrix:
        """One row per text: 1 for each distinct term the tasks know (BM25 counts a distinct query term once),
    except the terms of more than MAX_POSTINGS questions."""
        return self.stack([self.query_row(text) for text in texts])

    def query_row(self, text: str) -> np.ndarray:
        """One text's row of `query_matrix`: the sorted ids of its distinct known terms (a small int32 array,
        no list of Python ints), so a caller can take it as each report is read and drop the report."""
        vocab = self.query_vocab
        return np.sort(np.fromiter((vocab[t] for t in vocab.keys() & distinct_terms(text)), dtype=np.int32))

    def stack(self, rows: Sequence[np.ndarray]) -> sparse.csr_matrix:
        """The query matrix of rows from `query_row`."""
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([r.size for r in rows], out=indptr[1:])
        indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int32)
        return sparse.csr_matrix(
            (np.ones(indices.size, dtype=np.float32), indices, indptr), shape=(len(rows), self.weights.shape[0])
        )

    def blocks(self, queries: sparse.csr_matrix) -> Iterable[tuple[int, np.ndarray]]:
        """(first row, scores of a block of reports x all tasks as a dense array): BLOCK_CELLS bounds its size,
        so memory stays flat in the number of tasks and reports."""
        rows = max(1, BLOCK_CELLS // max(self.n_tasks, 1))
        for start in range(0, queries.shape[0], rows):
            yield start, (queries[start : start + rows] @ self.weights).toarray()

    def column_stats(self, queries: sparse.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of each task's score over the reports (zeros included), estimated on at
        most STATS_ROWS evenly spaced reports: exact up to that many, and linear in N beyond."""
        m = queries.shape[0]
        sample = queries[np.unique(np.linspace(0, m - 1, min(m, STATS_ROWS)).astype(np.int64))] if m else queries
        total = np.zeros(self.n_tasks)
        squares = np.zeros(self.n_tasks)
        for _, block in self.blocks(sample):
            total += block.sum(axis=0)
            squares += (block**2).sum(axis=0)
        k = max(sample.shape[0], 1)
        mean = total / k
        return mean, np.sqrt(np.maximum(squares / k - mean**2, 0.0))

    def candidates(
        self, queries: sparse.csr_matrix, own: Sequence[int], standardise: bool
    ) -> list[Candidates]:
        """Per report: its own task's score and the TOP_K other tasks scoring highest. With `standardise`, each
        task's scores are z-scores over the reports (a long, generic question otherwise attracts every report);
        a task sharing no term with a report is never its candidate."""
        mean = std = None
        if standardise:
            mean, std = self.column_stats(queries)
            std = std + 1e-9
        own_arr = np.asarray(own, dtype=np.int64)
        k = min(TOP_K, max(self.n_tasks - 1, 1))
        out: list[Candidates] = []
        for start, raw in self.blocks(queries):
            n = raw.shape[0]
            mine = own_arr[start : start + n]
            at = np.arange(n)
            scores = (raw - mean) / std if mean is not None and std is not None else raw.copy()
            own_scores = scores[at, mine].copy()
            scores[raw <= 0] = -np.inf  # shares no term with the report
            scores[at, mine] = -np.inf
            top = np.argpartition(-scores, k - 1, axis=1)[:, :k] if self.n_tasks > k else np.tile(
                np.arange(self.n_tasks), (n, 1))
            top_scores = np.take_along_axis(scores, top, axis=1)
            for r in range(n):
                cols, vals = top[r], top_scores[r]
                ok = np.isfinite(vals)
                cols, vals = cols[ok], vals[ok]
                order = np.lexsort((cols, -vals))  # best first; ties by task order (stable across runs)
                out.append(Candidates(start + r, float(own_scores[r]), cols[order], vals[order]))
        return out


def finite(x: float) -> float:
    """A score rounded for the record (3 decimals), NaN-safe."""
    return round(x, 3) if math.isfinite(x) else x
