"""The share-partition state machine against a brute-force model of KIP-932's promises."""
from hypothesis import given, settings, strategies as st

from broker.share.partition import (
    ACCEPT, ACQUIRED, REJECT, RELEASE, RENEW, InvalidRecordState, InvalidRequest, SharePartition,
)

LOCK, LIMIT = 100, 3


def test_acquire_ack_release_reject_and_lock_expiry():
    sp = SharePartition(0, lock_duration_ms=LOCK, delivery_count_limit=LIMIT)
    assert sp.acquire("a", [(0, 9, False)], now=0, max_records=500) == [(0, 9, 1)]
    assert sp.acquire("b", [(0, 9, False)], now=1, max_records=500) == []
    sp.acknowledge("a", 0, 3, [ACCEPT], now=2)
    sp.acknowledge("a", 4, 5, [RELEASE, REJECT], now=2)
    assert sp.start_offset == 4
    assert sp.acquire("b", [(4, 9, False)], now=3, max_records=500) == [(4, 4, 2)]
    try:
        sp.acknowledge("b", 6, 6, [ACCEPT], now=3)  # held by a
        raise AssertionError("acknowledged a record of another member")
    except InvalidRecordState:
        pass
    # a's lock on 6..9 expires: they go to b with count 2; a cannot acknowledge them any more
    assert sp.acquire("b", [(4, 9, False)], now=LOCK + 1, max_records=500) == [(6, 9, 2)]
    try:
        sp.acknowledge("a", 6, 6, [ACCEPT], now=LOCK + 2)
        raise AssertionError("acknowledged after the lock expired")
    except InvalidRecordState:
        pass


def test_delivery_count_limit_archives():
    sp = SharePartition(0, lock_duration_ms=LOCK, delivery_count_limit=2)
    for n in (1, 2):
        assert sp.acquire("a", [(0, 0, False)], now=0, max_records=1) == [(0, 0, n)]
        sp.acknowledge("a", 0, 0, [RELEASE], now=0)
    assert sp.acquire("a", [(0, 0, False)], now=0, max_records=1) == []
    assert sp.start_offset == 1


def test_give_back_undoes_an_undelivered_acquisition():
    """A throttled ShareFetch answer delivers nothing: its records are AVAILABLE again at once,
    with the delivery count they had (so ten throttled answers never archive a record)."""
    sp = SharePartition(0, lock_duration_ms=LOCK, delivery_count_limit=2)
    for _ in range(10):
        got = sp.acquire("a", [(0, 4, False)], now=0, max_records=500)
        assert got == [(0, 4, 1)]
        assert sp.give_back("a", got) == [0, 1, 2, 3, 4]
    sp.acquire("a", [(0, 4, False)], now=0, max_records=500)
    sp.acknowledge("a", 0, 1, [RELEASE], now=0)  # released: a second delivery comes next
    assert sp.give_back("b", [(2, 4, 1)]) == []  # another member's records are not touched
    assert sp.give_back("a", [(0, 4, 1)]) == [2, 3, 4]  # 0..1 are no longer a's
    assert sp.acquire("b", [(0, 4, False)], now=0, max_records=500) == [(0, 1, 2), (2, 4, 1)]


def test_max_record_locks_and_markers_and_persisted_state():
    sp = SharePartition(10, max_record_locks=3)
    assert sp.acquire("a", [(10, 12, False), (13, 13, True), (14, 20, False)], now=0, max_records=99) == [(10, 12, 1)]
    sp.acknowledge("a", 10, 10, [ACCEPT], now=0)
    # the marker at 13 takes the freed lock slot and is archived, never delivered
    assert sp.acquire("a", [(13, 13, True), (14, 20, False)], now=0, max_records=99) == []
    sp.acknowledge("a", 11, 11, [RELEASE], now=0)
    sp.acknowledge("a", 12, 12, [ACCEPT], now=0)
    # start 11 (available), 12 acknowledged, 13 archived: three in flight, 14 waits
    assert sp.acquire("a", [(11, 11, False), (14, 20, False)], now=0, max_records=99) == [(11, 11, 2)]
    sp.acknowledge("a", 11, 11, [ACCEPT], now=0)
    assert sp.acquire("a", [(14, 20, False)], now=0, max_records=2) == [(14, 15, 1)]
    sp.acknowledge("a", 15, 15, [RELEASE], now=0)
    restored = SharePartition(0, max_record_locks=3)
    restored.load(sp.start_offset, sp.state_batches())
    # acquired records come back available (their locks died with the broker), counts kept
    assert restored.start_offset == 14
    assert restored.acquire("b", [(14, 20, False)], now=0, max_records=99) == [(14, 15, 2), (16, 16, 1)]


# ---- property: the model --------------------------------------------------------------------------
MEMBERS = ["m0", "m1", "m2"]
ops = st.lists(st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 6)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 19), st.integers(0, 3),
              st.sampled_from([ACCEPT, RELEASE, REJECT, RENEW])),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("tick"), st.integers(1, 80)),
    st.tuples(st.just("produce"), st.integers(1, 5)),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_matches_brute_force_model(script):
    sp = SharePartition(0, lock_duration_ms=LOCK, delivery_count_limit=LIMIT, max_record_locks=8)
    now, log_end = 0, 0
    # model: offset -> [holder or None, deadline, count, final]
    model: dict[int, list] = {}

    def model_expire():
        for m in model.values():
            if m[0] is not None and m[1] <= now:
                m[0] = None
                if m[2] >= LIMIT:
                    m[3] = True

    for op in script:
        if op[0] == "produce":
            for off in range(log_end, log_end + op[1]):
                model[off] = [None, 0, 0, False]
            log_end += op[1]
        elif op[0] == "tick":
            now += op[1]
        elif op[0] == "fetch":
            model_expire()
            got = sp.acquire(op[1], [(sp.next_fetch_offset(now), log_end - 1, False)] if log_end else [], now, op[2])
            offs = [o for a, b, _ in got for o in range(a, b + 1)]
            assert len(offs) <= op[2] and offs == sorted(set(offs))
            for a, b, c in got:
                for o in range(a, b + 1):
                    m = model[o]
                    # never handed out while someone holds it, never after it was finished
                    assert m[0] is None and not m[3], (o, m)
                    assert m[2] + 1 == c <= LIMIT
                    m[:3] = [op[1], now + LOCK, c]
            # nothing available is left behind below what was acquired, within the lock limit
            if not got:
                for o, m in model.items():
                    if m[0] is None and not m[3] and o < sp.end_offset:
                        raise AssertionError(f"offset {o} available but not acquired")
        elif op[0] == "ack":
            _, member, first, n, t = op
            model_expire()
            last = first + n
            sp.expire(now)
            # offsets below the start offset inside a batch that reaches the in-flight ones are skipped
            lo = max(first, sp.start_offset)
            ok = last >= lo and all(o in model and model[o][0] == member for o in range(lo, last + 1))
            try:
                sp.acknowledge(member, first, last, [t], now)
                assert ok
            except (InvalidRecordState, InvalidRequest) as exc:
                assert not ok
                # past the in-flight records is a malformed request, anything else a state error
                past = last >= sp.end_offset and first < sp.end_offset or (
                    first >= sp.end_offset > sp.start_offset)
                assert isinstance(exc, InvalidRequest) == past, (exc, first, last, sp.start_offset, sp.end_offset)
                continue
            for o in range(lo, last + 1):
                m = model[o]
                if t == ACCEPT or t == REJECT:
                    m[0], m[3] = None, True
                elif t == RELEASE:
                    m[0] = None
                    m[3] = m[2] >= LIMIT
                else:
                    m[1] = now + LOCK
        elif op[0] == "leave":
            sp.release_member(op[1])
            for m in model.values():
                if m[0] == op[1]:
                    m[0] = None
                    m[3] = m[2] >= LIMIT
        # states agree
        for o, m in model.items():
            s = sp.state_of(o)
            if m[0] is not None and m[1] > now:
                assert s.state == ACQUIRED and s.member_id == m[0]
            if o < sp.start_offset:
                assert m[3]
            assert s.delivery_count == m[2] or o < sp.start_offset
        assert sp.end_offset - sp.start_offset <= 8


# ---- acquire modes (KIP-1206) and Kafka's acknowledgement rules ----------------------------------

def test_batch_optimized_acquires_the_whole_log_batch_record_limit_cuts():
    log = [(0, 4, False), (5, 9, False), (10, 14, False)]
    sp = SharePartition(0)
    # the 7th record is in the batch 5..9: batch-optimized takes that batch whole, no further
    assert sp.acquire("a", log, now=0, max_records=7, batch_optimized=True) == [(0, 9, 1)]
    sp2 = SharePartition(0)
    assert sp2.acquire("a", log, now=0, max_records=7) == [(0, 6, 1)]  # record-limit
    # what record-limit left behind is available to the next fetch
    assert sp2.acquire("b", log[1:], now=0, max_records=2) == [(7, 8, 1)]
    # released records come back a whole log batch at a time too
    sp.acknowledge("a", 0, 9, [RELEASE], now=0)
    assert sp.acquire("b", log, now=0, max_records=1, batch_optimized=True) == [(0, 4, 2)]


def test_acknowledgements_of_one_partition_are_all_or_nothing():
    sp = SharePartition(0)
    sp.acquire("a", [(0, 9, False)], now=0, max_records=10)
    sp.acquire("b", [(10, 11, False)], now=0, max_records=10)
    for batches, exc in (
        ([(0, 1, [ACCEPT]), (10, 10, [ACCEPT])], InvalidRecordState),  # 10 is b's
        ([(0, 1, [ACCEPT]), (5, 20, [ACCEPT])], InvalidRequest),  # past the in-flight records
        ([(0, 1, [ACCEPT]), (1, 2, [ACCEPT])], InvalidRecordState),  # 1 twice: no longer acquired
        ([(3, 4, [ACCEPT]), (0, 1, [ACCEPT])], InvalidRequest),  # out of order
        ([(0, 1, [ACCEPT, 9])], InvalidRequest),  # no such type
        ([(0, 2, [ACCEPT, REJECT])], InvalidRequest),  # two types for three offsets
    ):
        try:
            sp.acknowledge_all("a", batches, now=1)
            raise AssertionError(f"{batches} accepted")
        except exc:
            pass
        assert [sp.state_of(o).state for o in range(10)] == [ACQUIRED] * 10, batches
    sp.acknowledge_all("a", [(0, 1, [ACCEPT]), (2, 3, [REJECT, ACCEPT])], now=1)
    assert sp.start_offset == 4
    # below the start offset and nothing in flight there: a state error, not a malformed request
    try:
        sp.acknowledge_all("a", [(0, 1, [ACCEPT])], now=1)
        raise AssertionError("acknowledged twice")
    except InvalidRecordState:
        pass
    # a batch straddling the start offset acknowledges what is still in flight
    sp.acknowledge_all("a", [(0, 5, [ACCEPT])], now=1)
    assert sp.start_offset == 6
