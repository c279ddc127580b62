"""The pure decisions of topic -> Iceberg translation (lakehouse.translate), against
brute-force models: which records a read_committed reader sees, what a commit records and where
translation resumes, record -> key_value row. Batches are real magic-2 bytes built and decoded
by protocol.records, as the log holds them."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from lakehouse.translate import (Aborted, committed_records, covered_last_offset, dlq_table_name,
                                 key_value_row, last_offsets, resume_offsets, summary_for, table_name,
                                 table_of_other_topic)
from protocol.records.batch import iter_batch_positions
from protocol.records.record import Record, build_batch, decode_batch, end_txn_marker

PIDS = (1, 2, 3)
# one op: ("data", pid or -1 for a non-transactional producer, records) or ("end", pid, commit)
op = st.one_of(st.tuples(st.just("data"), st.sampled_from((-1, *PIDS)), st.integers(1, 3)),
               st.tuples(st.just("end"), st.sampled_from(PIDS), st.booleans()))


def build_log(ops):
    """(log bytes, aborted [(pid, first, marker offset)], kept offsets by the model, LSO)."""
    out, offset = [], 0
    open_txn: dict[int, tuple[int, list[int]]] = {}  # pid -> (first offset, its record offsets)
    kept: set[int] = set()
    aborted = []
    for kind, pid, arg in ops:
        if kind == "data":
            recs = [Record(offset + i, 1000 + offset + i, b"k", b"v%d" % (offset + i), []) for i in range(arg)]
            out.append(build_batch(recs, base_offset=offset, producer_id=pid if pid > 0 else -1,
                                   producer_epoch=0, base_sequence=0, is_transactional=pid > 0))
            offs = list(range(offset, offset + arg))
            if pid > 0:
                first, held = open_txn.get(pid, (offset, []))
                open_txn[pid] = (first, held + offs)
            else:
                kept.update(offs)
            offset += arg
        elif pid in open_txn:
            first, held = open_txn.pop(pid)
            out.append(build_batch([end_txn_marker(arg, 0, 5000, offset)], base_offset=offset, producer_id=pid,
                                   producer_epoch=0, is_transactional=True, is_control=True))
            if arg:
                kept.update(held)
            else:
                aborted.append((pid, first, offset))
            offset += 1
    lso = min((first for first, _ in open_txn.values()), default=offset)
    return b"".join(out), aborted, kept, lso


def batches_of(data: bytes):
    return [decode_batch(data, pos) for pos, _ in iter_batch_positions(data)]


@settings(max_examples=300, deadline=None)
@given(st.lists(op, max_size=30), st.data())
def test_committed_records_is_what_read_committed_sees(ops, data):
    log, aborted, kept, lso = build_log(ops)
    start = data.draw(st.integers(0, lso))
    # what collect_aborted_transactions answers: the aborted transactions overlapping the read
    overlapping = [Aborted(pid, first) for pid, first, marker in aborted if marker >= start and first < lso]
    got = [r.offset for _, r in committed_records(batches_of(log), overlapping, start, lso)]
    assert got == sorted(o for o in kept if start <= o < lso)


@given(st.dictionaries(st.integers(0, 50), st.integers(-1, 10**6), max_size=8),
       st.dictionaries(st.integers(0, 50), st.integers(0, 10**6), max_size=8))
def test_summary_records_every_partition_and_resume_is_one_past(previous, advance):
    covered = {p: previous.get(p, -1) + d for p, d in advance.items()}
    summary = summary_for(previous, covered)
    assert all(isinstance(v, str) for v in summary.values())  # Iceberg summaries are string maps
    held = last_offsets(summary)
    assert held == {**previous, **covered}
    assert resume_offsets(summary) == {p: o + 1 for p, o in held.items()}
    # other engines' and pyiceberg's own summary keys are ignored
    assert last_offsets({**summary, "added-records": "3", "hourglass.partition.x.last-offset": "1"}) == held


@given(st.integers(0, 20), st.integers(1, 10**6))
def test_a_commit_never_goes_back(p, last):
    try:
        summary_for({p: last}, {p: last - 1})
    except ValueError:
        return
    raise AssertionError("a commit going back was accepted")


@given(st.integers(0, 100), st.integers(0, 100), st.lists(st.integers(0, 200), max_size=10))
def test_covered_last_offset(start, span, ends):
    limit = start + span
    ends = sorted(ends)
    got = covered_last_offset(start, limit, ends)
    reached = [min(e, limit - 1) for e in ends if e >= start]
    assert got == (reached[-1] if reached else None)


headers = st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=4)


@given(st.integers(0, 99), st.integers(0, 2**40), st.integers(-1, 2**41), st.one_of(st.none(), st.binary(max_size=8)),
       st.one_of(st.none(), st.binary(max_size=8)), headers, st.booleans())
def test_key_value_row(partition, offset, ts, key, value, hs, log_append):
    batch = build_batch([Record(offset, ts, key, value, hs)], base_offset=offset,
                        log_append_time=max(ts, 0) if log_append else None)
    h, [r] = decode_batch(batch)
    row = key_value_row(partition, h, r)
    meta = row["redpanda"]
    assert (meta["partition"], meta["offset"], meta["key"], row["value"]) == (partition, offset, key, value)
    assert meta["timestamp_type"] == (1 if log_append else 0)
    expected_ts = max(ts, 0) if log_append else ts
    assert meta["timestamp"] == (expected_ts * 1000 if expected_ts >= 0 else None)
    assert [(x["key"], x["value"]) for x in meta["headers"]] == hs


@given(st.sampled_from(["", "aa", "bb"]), st.sampled_from(["", "aa", "bb"]))
def test_a_table_is_of_the_topic_id_it_records(written_by, now):
    summary = summary_for({}, {0: 5}, written_by)
    assert last_offsets(summary) == {0: 5}
    assert table_of_other_topic(summary, now) == (written_by != "" and now != "" and written_by != now)
    assert not table_of_other_topic({}, now)  # a table with no snapshot yet is anyone's


def test_table_names_follow_redpanda():
    assert table_name("orders.v1") == "orders.v1"
    assert dlq_table_name("orders.v1") == "orders.v1~dlq"


def test_partition_spec_text():
    from storage.log_config import parse_iceberg_partition_spec as parse
    assert parse("(day(redpanda.timestamp))") == (("day", "redpanda.timestamp"),)
    assert parse(" ( hour( redpanda.timestamp ) , redpanda.partition ) ") == \
        (("hour", "redpanda.timestamp"), ("identity", "redpanda.partition"))
    assert parse("()") == ()
    for bad in ("day(redpanda.timestamp)", "(day(value))", "(hour(redpanda.partition))", "(bucket[4](redpanda.partition))",
                "(day(redpanda.timestamp), hour(redpanda.timestamp))", "(redpanda.partition,)"):
        try:
            parse(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad} was accepted")
