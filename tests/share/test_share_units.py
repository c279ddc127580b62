"""Pure pieces of share groups: the simple assignor, group config parsing, and the replay of
ShareSnapshot/ShareUpdate records."""
import pytest
from hypothesis import given, settings, strategies as st

from broker.groups.group_configs import GroupConfigError, parse_auto_offset_reset, parse_duration_ms
from broker.share.group import simple_assign
from broker.share.partition import ACCEPT, RELEASE, SharePartition
from broker.share.state_log import (
    SHARE_SNAPSHOT, SHARE_UPDATE, ShareSnapshotValue, ShareUpdateValue, encode_key, encode_value, replay,
)

TID = bytes(range(16))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.integers(1, 8))
def test_simple_assignor_covers_every_partition_and_every_member(members, partitions):
    subs = {f"m{i}": ["t"] for i in range(members)}
    out = simple_assign(subs, {"t": (TID, partitions)})
    owned = {m: a.get(TID, frozenset()) for m, a in out.items()}
    assert all(owned.values())  # every member gets work
    assert set().union(*owned.values()) == set(range(partitions))  # every partition is fetched
    if members <= partitions:  # no sharing needed: each partition has one member
        assert sum(len(ps) for ps in owned.values()) == partitions


def test_auto_offset_reset_values():
    assert parse_auto_offset_reset("earliest") == ("earliest", 0)
    assert parse_auto_offset_reset("by_duration:PT1H") == ("by_duration", 3_600_000)
    assert parse_duration_ms("P1DT2H3M4.5S") == ((24 + 2) * 60 + 3) * 60_000 + 4500
    for bad in ("by_duration:1h", "by_duration:P", "sometimes", "by_duration:-PT1H"):
        with pytest.raises(GroupConfigError):
            parse_auto_offset_reset(bad)


def test_replay_lays_updates_over_their_snapshot_and_ignores_orphans():
    key = ("g", TID, 0)
    B = ShareSnapshotValue.StateBatch
    U = ShareUpdateValue.StateBatch
    snap = ShareSnapshotValue(snapshot_epoch=3, state_epoch=1, leader_epoch=0, start_offset=10, create_timestamp=0,
                              write_timestamp=0, state_batches=[B(first_offset=10, last_offset=14, delivery_state=0,
                                                                  delivery_count=1)])
    upd = ShareUpdateValue(snapshot_epoch=3, leader_epoch=0, start_offset=12,
                           state_batches=[U(first_offset=13, last_offset=13, delivery_state=2, delivery_count=1)])
    stale = ShareUpdateValue(snapshot_epoch=2, leader_epoch=0, start_offset=14, state_batches=[])
    recs = [(encode_key(SHARE_SNAPSHOT, key), encode_value(SHARE_SNAPSHOT, snap)),
            (encode_key(SHARE_UPDATE, key), encode_value(SHARE_UPDATE, upd)),
            (encode_key(SHARE_UPDATE, key), encode_value(SHARE_UPDATE, stale))]
    state = replay(recs)[key]
    assert state.start_offset == 12 and state.state_epoch == 1
    assert state.batches() == [(12, 12, 0, 1), (13, 13, 2, 1), (14, 14, 0, 1)]
    sp = SharePartition(0)
    sp.load(state.start_offset, state.batches())
    assert sp.acquire("m", [(12, 20, False)], now=0, max_records=3) == [(12, 12, 2), (14, 14, 2), (15, 15, 1)]
    sp.acknowledge("m", 12, 12, [ACCEPT], now=0)
    sp.acknowledge("m", 14, 15, [RELEASE], now=0)
    assert sp.start_offset == 14
    # a tombstone forgets the share-partition
    assert replay(recs + [(encode_key(SHARE_SNAPSHOT, key), None)]) == {}
