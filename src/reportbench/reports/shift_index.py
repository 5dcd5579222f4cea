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
BLOCK_ROWS = 256  # reports scored per sparse product: bounds the transient score block to 256 x tasks

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
        self.weights = tf.T.tocsr()  # vocabulary x tasks: a query block times this is its scores
        self.n_tasks = n

    def query_matrix(self, texts: Iterable[str]) -> sparse.csr_matrix:
        """One row per text: 1 for each distinct term the tasks know (BM25 counts a distinct query term once)."""
        indptr = [0]
        indices: list[int] = []
        vocab = self.vocab
        for text in texts:
            ids = {j for t in set(terms(text)) if (j := vocab.get(t)) is not None}
            indices.extend(sorted(ids))
            indptr.append(len(indices))
        data = np.ones(len(indices), dtype=np.float64)
        return sparse.csr_matrix(
            (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
            shape=(len(indptr) - 1, self.weights.shape[0]),
        )

    def blocks(self, queries: sparse.csr_matrix) -> Iterable[tuple[int, sparse.csr_matrix]]:
        """(first row, scores of BLOCK_ROWS reports x all tasks), sparse: a task sharing no term scores 0."""
        for start in range(0, queries.shape[0], BLOCK_ROWS):
            yield start, (queries[start : start + BLOCK_ROWS] @ self.weights).tocsr()

    def column_stats(self, queries: sparse.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of each task's score over all reports (zeros included)."""
        total = np.zeros(self.n_tasks)
        squares = np.zeros(self.n_tasks)
        for _, block in self.blocks(queries):
            total += np.bincount(block.indices, weights=block.data, minlength=self.n_tasks)
            squares += np.bincount(block.indices, weights=block.data**2, minlength=self.n_tasks)
        m = max(queries.shape[0], 1)
        mean = total / m
        return mean, np.sqrt(np.maximum(squares / m - mean**2, 0.0))

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
        out: list[Candidates] = []
        for start, block in self.blocks(queries):
            for r in range(block.shape[0]):
                lo, hi = block.indptr[r], block.indptr[r + 1]
                cols, vals = block.indices[lo:hi], block.data[lo:hi]
                row = start + r
                mine = int(own[row])
                hit = np.flatnonzero(cols == mine)
                raw_own = float(vals[hit[0]]) if hit.size else 0.0
                if mean is not None and std is not None:
                    vals = (vals - mean[cols]) / std[cols]
                    own_score = (raw_own - mean[mine]) / std[mine]
                else:
                    own_score = raw_own
                keep = cols != mine
                cols, vals = cols[keep], vals[keep]
                if cols.size > TOP_K:
                    part = np.argpartition(-vals, TOP_K - 1)[:TOP_K]
                    cols, vals = cols[part], vals[part]
                order = np.lexsort((cols, -vals))  # best first; ties by task order (stable across runs)
                out.append(Candidates(row, float(own_score), cols[order], vals[order]))
        return out


def finite(x: float) -> float:
    """A score rounded for the record (3 decimals), NaN-safe."""
    return round(x, 3) if math.isfinite(x) else x
