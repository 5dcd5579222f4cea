"""digest.memo_tree_digest: a file's sha256 is read from the memo only while its stat is the one it was hashed
with (DVC's state db, plus ctime and git's racily-clean rule); anything else is hashed again."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reportbench import digest

pytestmark = pytest.mark.core

def later() -> int:
    """A clock an hour on: every file written so far is old enough to be memoised. Read at each call, not at
    import: a slow suite (CI at load 20 took 78 min) reached a module-level "hour on" before these tests ran."""
    return time.time_ns() + 3600 * 10**9


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files actually read and hashed."""
    names: list[str] = []
    real = digest._file_sha256

    def counting(path: Path) -> str:
        names.append(path.name)
        return real(path)

    monkeypatch.setattr(digest, "_file_sha256", counting)
    return names


def _run(root: Path) -> Path:
    run = root / "run"
    run.mkdir()
    (run / "reports.jsonl").write_text('{"report_id": "r1"}\n' * 100)
    (run / "outcomes.jsonl").write_text('{"ok": true}\n')
    return run


def test_an_unchanged_folder_is_not_read_again(tmp_path: Path, hashed: list[str]) -> None:
    run, memo = _run(tmp_path), tmp_path / "memo.sqlite"
    first = digest.memo_tree_digest(run, memo, now_ns=later())
    assert sorted(hashed) == ["outcomes.jsonl", "reports.jsonl"]
    assert digest.memo_tree_digest(run, memo, now_ns=later()) == first
    assert len(hashed) == 2  # the second digest read no file
    assert digest.memo_tree_digest(run, None) == first  # the memo changes the cost, never the digest


def test_a_same_size_edit_with_its_mtime_put_back_is_hashed_again(tmp_path: Path, hashed: list[str]) -> None:
    run, memo = _run(tmp_path), tmp_path / "memo.sqlite"
    first = digest.memo_tree_digest(run, memo, now_ns=later())
    f = run / "reports.jsonl"
    st = f.stat()
    f.write_text('{"report_id": "r2"}\n' * 100)  # the same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime (DVC's key alone would not see it)
    assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    assert digest.memo_tree_digest(run, memo, now_ns=later()) != first
    assert hashed.count("reports.jsonl") == 2 and hashed.count("outcomes.jsonl") == 1


def test_a_file_replaced_by_another_is_hashed_again(tmp_path: Path, hashed: list[str]) -> None:
    run, memo = _run(tmp_path), tmp_path / "memo.sqlite"
    first = digest.memo_tree_digest(run, memo, now_ns=later())
    f = run / "outcomes.jsonl"
    tmp = tmp_path / "new"
    tmp.write_text('{"ok": fals}\n')
    os.utime(tmp, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns))
    tmp.replace(f)  # a new inode with the same size and mtime
    assert digest.memo_tree_digest(run, memo, now_ns=later()) != first
    assert hashed.count("outcomes.jsonl") == 2


def test_a_file_written_within_the_same_tick_is_not_memoised(tmp_path: Path, hashed: list[str]) -> None:
    """Hashed right after it was written (the clock is now): an edit in the same timestamp tick would keep its
    stat, so it is not memoised and the next digest reads it again."""
    run, memo = _run(tmp_path), tmp_path / "memo.sqlite"
    first = digest.memo_tree_digest(run, memo)
    f = run / "reports.jsonl"
    st = f.stat()
    f.write_text('{"report_id": "r3"}\n' * 100)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    # ctime too, as if the edit fell in the same tick: only the racy rule can tell
    digest_again = digest.memo_tree_digest(run, memo)
    assert digest_again != first
    assert hashed.count("reports.jsonl") == 2 and hashed.count("outcomes.jsonl") == 2


def test_a_corrupt_memo_is_ignored(tmp_path: Path, hashed: list[str]) -> None:
    run, memo = _run(tmp_path), tmp_path / "memo.sqlite"
    memo.write_bytes(b"not a database" * 100)
    first = digest.memo_tree_digest(run, memo, now_ns=later())
    assert first == digest.memo_tree_digest(run, None)


def test_read_only_speed_caches_read_the_memo_but_create_and_store_nothing(tmp_path: Path, hashed: list[str]) -> None:
    """`reportbench estimate` writes no cache (issue 32): inside `speed_caches_read_only` the memo, the
    written-reports registry and the stored releases are read, never created or written."""
    from reportbench.reports.stored import register_written
    from reportbench.unit_reuse import cached_release

    run, memo, registry, releases = _run(tmp_path), tmp_path / "m.sqlite", tmp_path / "w.sqlite", tmp_path / "rel"
    with digest.speed_caches_read_only():
        first = digest.memo_tree_digest(run, memo=memo, now_ns=later())
        register_written(run / "reports.jsonl", registry)
        assert cached_release(run, "deepscholar", lambda: {"tasks": 1}, cache_dir=releases) == {"tasks": 1}
    assert not memo.exists() and not registry.exists() and not releases.exists()
    digest.memo_tree_digest(run, memo=memo, now_ns=later())  # writable again: memoised
    hashed.clear()
    with digest.speed_caches_read_only():
        assert digest.memo_tree_digest(run, memo=memo, now_ns=later()) == first
    assert hashed == []  # read from the memo


# ------------------------------------------------------------- the files system@ wrote, memoised as it wrote them
def test_the_run_folder_system_at_wrote_is_not_hashed_again_by_the_judge_stage(
    tmp_path: Path, hashed: list[str]
) -> None:
    """system@ registers its reports.jsonl right after writing the folder (`register_written`): the folder's files
    are memoised then, although racily new, so the judge stage's first digest (now, not an hour later) reads none."""
    from reportbench.reports.stored import register_written

    run, memo = _run(tmp_path), tmp_path / "memo.sqlite"
    register_written(run / "reports.jsonl", tmp_path / "written.sqlite", memo)
    assert sorted(hashed) == ["outcomes.jsonl", "reports.jsonl"]  # once each, by system@
    hashed.clear()
    assert digest.memo_tree_digest(run, memo) == digest.memo_tree_digest(run, None)
    assert hashed == ["outcomes.jsonl", "reports.jsonl"]  # only by the memo-less digest: the memoised one read none


def test_files_written_in_a_tick_the_file_systems_clock_has_not_left_are_not_memoised(
    tmp_path: Path, hashed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The racily-clean rule for files vouched for as written: a file system whose clock still shows the files'
    newest ctime (a coarse one: FAT's 2 s) could give a later edit the same stat, so nothing is memoised."""
    run, memo = _run(tmp_path), tmp_path / "memo.sqlite"
    newest = max(max(f.stat().st_mtime_ns, f.stat().st_ctime_ns) for f in run.iterdir())
    monkeypatch.setattr(digest, "_fs_now", lambda folder: newest)  # the clock has not ticked since the writes
    assert digest.memoise_written(run, memo, patience_s=0.01)["reports.jsonl"] == digest._file_sha256(
        run / "reports.jsonl"
    )
    hashed.clear()
    digest.memo_tree_digest(run, memo, now_ns=later())
    assert sorted(hashed) == ["outcomes.jsonl", "reports.jsonl"]  # nothing was memoised: both hashed again
    monkeypatch.setattr(digest, "_fs_now", lambda folder: newest + 1)  # one tick on: memoised
    run2 = tmp_path / "run2"
    run.rename(run2)
    digest.memoise_written(run2, memo, patience_s=0.01)
    hashed.clear()
    digest.memo_tree_digest(run2, memo)
    assert hashed == []


def test_an_edit_right_after_system_at_memoised_its_folder_is_seen(tmp_path: Path, hashed: list[str]) -> None:
    """Edited at once (the same size, its mtime put back): the file system's clock had passed the write before the
    files were hashed, so the edit's ctime differs from the one memoised and the file is hashed again."""
    run, memo = _run(tmp_path), tmp_path / "memo.sqlite"
    digest.memoise_written(run, memo)
    first = digest.memo_tree_digest(run, memo)
    f = run / "reports.jsonl"
    st = f.stat()
    f.write_text('{"report_id": "r9"}\n' * 100)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    hashed.clear()
    assert digest.memo_tree_digest(run, memo) != first and hashed == ["reports.jsonl"]
