"""Transaction index tests; mirror Kafka's TransactionIndexTest, plus a property test of
``collect_aborted_txns`` against Kafka's own linear walk over the entries."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from storage.index import CorruptIndexError
from storage.index.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex, parse_entries

BASE = 0


def make(tmp_path, base=BASE, name="00000000000000000000.txnindex"):
    return TransactionIndex(tmp_path / name, base)


# the entries of Kafka's TransactionIndexTest
KAFKA_TXNS = [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 5, 15, 13), AbortedTxn(2, 18, 35, 25),
              AbortedTxn(3, 32, 50, 40)]


def filled(tmp_path, txns=KAFKA_TXNS):
    idx = make(tmp_path)
    for t in txns:
        idx.append(t)
    return idx


def test_file_is_created_at_the_first_append_only(tmp_path):
    idx = make(tmp_path)
    assert idx.is_empty and not (tmp_path / idx.path.name).exists()
    idx.reset()
    idx.truncate_to(0)
    assert idx.collect_aborted_txns(0, 100) == ([], False)
    assert not idx.path.exists(), "reads, reset and truncation create no file"
    idx.append(AbortedTxn(1, 0, 5, 6))
    assert idx.path.stat().st_size == ENTRY_SIZE


def test_entry_layout_is_kafkas(tmp_path):
    """AbortedTxn: version int16 (0), producer id, first, last and last stable offset int64."""
    idx = make(tmp_path)
    idx.append(AbortedTxn(0x0102030405060708, 11, 22, 23))
    assert idx.path.read_bytes() == struct.pack(">hqqqq", 0, 0x0102030405060708, 11, 22, 23)
    assert len(idx.path.read_bytes()) == 34


def test_position_set_correctly_when_opened(tmp_path):
    """testPositionSetCorrectlyWhenOpened: a reopened index appends after its entries."""
    txns = KAFKA_TXNS
    filled(tmp_path).close()
    again = make(tmp_path)
    again.append(AbortedTxn(4, 55, 60, 56))
    assert again.all_aborted_txns() == txns + [AbortedTxn(4, 55, 60, 56)]
    assert make(tmp_path).all_aborted_txns() == txns + [AbortedTxn(4, 55, 60, 56)]


def test_sanity_check(tmp_path):
    """testSanityCheck: an entry whose last offset is below the base offset is corrupt."""
    idx = make(tmp_path, base=0)
    idx.append(AbortedTxn(0, 0, 10, 11))
    idx.append(AbortedTxn(1, 5, 15, 13))
    idx.close()
    with pytest.raises(CorruptIndexError):
        make(tmp_path, base=20).sanity_check()
    make(tmp_path, base=10).sanity_check()


def test_unknown_version_is_refused(tmp_path):
    (tmp_path / "x.txnindex").write_bytes(struct.pack(">hqqqq", 1, 1, 2, 3, 4))
    with pytest.raises(CorruptIndexError, match="version 1"):
        TransactionIndex(tmp_path / "x.txnindex", 0).all_aborted_txns()


def test_last_offset_must_increase(tmp_path):
    """testLastOffsetMustIncrease / testLastOffsetCannotDecrease (also after a reopen)."""
    idx = make(tmp_path)
    idx.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(0, 0, 15, 11))
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(0, 0, 10, 11))
    idx.close()
    with pytest.raises(ValueError):
        make(tmp_path).append(AbortedTxn(0, 0, 14, 11))


def test_collect_aborted_transactions(tmp_path):
    """testCollectAbortedTransactions."""
    txns = KAFKA_TXNS
    idx = filled(tmp_path)
    assert idx.collect_aborted_txns(0, 100) == (txns, False)
    assert idx.collect_aborted_txns(0, 32) == (txns[:3], True)
    assert idx.collect_aborted_txns(0, 33) == (txns, True)
    assert idx.collect_aborted_txns(0, 40) == (txns, True)
    assert idx.collect_aborted_txns(36, 40) == ([txns[3]], True)
    assert idx.collect_aborted_txns(51, 100) == ([], False)
    assert idx.collect_aborted_txns(11, 13) == ([txns[1]], True)


def test_truncate(tmp_path):
    """testTruncate: entries whose marker is at or past the offset go, file included."""
    txns = [AbortedTxn(0, 0, 10, 2), AbortedTxn(1, 5, 15, 16), AbortedTxn(2, 18, 35, 25),
            AbortedTxn(3, 32, 50, 40)]
    idx = filled(tmp_path, txns)
    idx.truncate_to(51)
    assert idx.collect_aborted_txns(0, 100).aborted_transactions == txns
    idx.truncate_to(50)
    assert idx.collect_aborted_txns(0, 100).aborted_transactions == txns[:3]
    assert idx.path.stat().st_size == 3 * ENTRY_SIZE
    idx.append(AbortedTxn(9, 40, 45, 46))
    idx.close()
    assert make(tmp_path).all_aborted_txns() == txns[:3] + [AbortedTxn(9, 40, 45, 46)]


def test_reset_rename_delete(tmp_path):
    idx = make(tmp_path)
    idx.append(AbortedTxn(0, 0, 10, 11))
    idx.reset()
    assert idx.is_empty and idx.path.stat().st_size == 0, "reset keeps an empty file (Kafka truncates it)"
    idx.append(AbortedTxn(0, 0, 10, 11))
    idx.rename_to(tmp_path / "00000000000000000000.txnindex.deleted")
    assert idx.path.name.endswith(".deleted") and idx.path.exists()
    idx.append(AbortedTxn(1, 11, 12, 13))
    idx.flush()
    assert len(parse_entries(idx.path.read_bytes())) == 2
    assert idx.delete_if_exists() and not idx.path.exists()
    missing = make(tmp_path, name="00000000000000000099.txnindex")
    missing.rename_to(tmp_path / "00000000000000000099.txnindex.swap")   # no file: only the name moves
    assert not missing.path.exists() and missing.path.name.endswith(".swap")


def test_torn_tail_is_ignored_and_overwritten(tmp_path):
    idx = make(tmp_path)
    idx.append(AbortedTxn(0, 0, 10, 11))
    idx.close()
    with open(idx.path, "ab") as f:
        f.write(b"\x00" * 20)   # a crash in the middle of an append
    again = make(tmp_path)
    assert again.all_aborted_txns() == [AbortedTxn(0, 0, 10, 11)]
    again.append(AbortedTxn(1, 12, 14, 15))
    assert make(tmp_path).all_aborted_txns() == [AbortedTxn(0, 0, 10, 11), AbortedTxn(1, 12, 14, 15)]


def kafka_collect(entries, fetch_offset, upper_bound_offset):
    """Kafka's TransactionIndex.collectAbortedTxns, literally: a walk from the first entry."""
    out = []
    for e in entries:
        if e.last_offset >= fetch_offset and e.first_offset < upper_bound_offset:
            out.append(e)
        if e.last_stable_offset >= upper_bound_offset:
            return out, True
    return out, False


@st.composite
def index_entries(draw):
    """Entries as a partition writes them: markers (last offsets) strictly increase, a
    transaction starts at or before its marker, and the LSO at an abort is the first offset
    of another open transaction (which began before the marker) or the marker's next offset."""
    n = draw(st.integers(0, 25))
    out, last = [], draw(st.integers(0, 20))
    for _ in range(n):
        last += draw(st.integers(1, 12))
        first = draw(st.integers(0, last))
        lso = draw(st.one_of(st.just(last + 1), st.integers(0, last)))
        out.append(AbortedTxn(draw(st.integers(0, 5)), first, last, lso))
    return out


@settings(max_examples=300, deadline=None)
@given(entries=index_entries(), queries=st.lists(st.tuples(st.integers(0, 350), st.integers(0, 350)),
                                                  min_size=1, max_size=20),
       cut=st.integers(0, 350))
def test_collect_matches_kafkas_linear_walk(tmp_path_factory, entries, queries, cut):
    d = tmp_path_factory.mktemp("txn")
    idx = TransactionIndex(d / "00000000000000000000.txnindex", 0)
    for e in entries:
        idx.append(e)
    reopened = TransactionIndex(d / "00000000000000000000.txnindex", 0)
    for fetch, upper in queries:
        expected = kafka_collect(entries, fetch, upper)
        assert tuple(idx.collect_aborted_txns(fetch, upper)) == expected
        assert tuple(reopened.collect_aborted_txns(fetch, upper)) == expected
    idx.truncate_to(cut)
    kept = [e for e in entries if e.last_offset < cut]
    assert TransactionIndex(d / "00000000000000000000.txnindex", 0).all_aborted_txns() == kept
    for fetch, upper in queries:
        assert tuple(idx.collect_aborted_txns(fetch, upper)) == kafka_collect(kept, fetch, upper)


# ---- the segment owns its transaction index (Kafka's LogSegmentTest txn-index cases) ----

def test_segment_carries_its_txn_index_through_renames_truncation_and_delete(tmp_path):
    from storage.index.txn_index import TxnIndexSearchResult
    from storage.producer_state import CompletedTxn
    from storage.segment import LogSegment

    seg = LogSegment(tmp_path, 100, index_interval_bytes=10, max_index_size=1200)
    assert seg.txn_index.path.name == f"{100:020d}.txnindex" and not seg.txn_index.path.exists()
    seg.update_txn_index(CompletedTxn(7, 90, 110, False), 111)        # a commit leaves no entry
    assert not seg.txn_index.path.exists()
    seg.update_txn_index(CompletedTxn(7, 90, 112, True), 113)
    seg.update_txn_index(CompletedTxn(8, 105, 120, True), 121)
    assert seg.collect_aborted_txns(100, 115) == TxnIndexSearchResult(
        [AbortedTxn(7, 90, 112, 113), AbortedTxn(8, 105, 120, 121)], True)
    seg.change_file_suffixes("", ".deleted")
    assert (tmp_path / f"{100:020d}.txnindex.deleted").exists() and seg.has_suffix(".deleted")
    seg.change_file_suffixes(".deleted", "")
    seg.truncate_to(115)
    assert seg.txn_index.all_aborted_txns() == [AbortedTxn(7, 90, 112, 113)]
    seg.flush()
    seg.close()
    again = LogSegment(tmp_path, 100, index_interval_bytes=10, max_index_size=1200, file_already_exists=True)
    assert again.txn_index.all_aborted_txns() == [AbortedTxn(7, 90, 112, 113)]
    again.sanity_check()
    again.recover()   # an empty log: recovery empties the index (the loader's replay refills it)
    assert again.txn_index.is_empty
    again.delete_if_exists()
    assert not list(tmp_path.iterdir())
