"""A Streams group as records of ``__consumer_offsets`` (``broker.groups.streams_records``), pure:

- round trip: the records of a group, replayed as the offsets log replays them (latest record
  per key), rebuild the same group (members, epochs, assignments with their epochs, targets,
  topology), for random groups (hypothesis);
- the delta: nothing to write when nothing changed (the target epoch's timestamp alone is no
  change); a member removed leaves tombstones for exactly its three records; a deleted group's
  last record is its metadata tombstone.
"""
from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.groups import streams_topology as T
from broker.groups.offsets_log import LoadedState, OffsetsLog
from broker.groups.schemas import decode_key
from broker.groups.streams_assignment import AssignmentState, MemberState, Tasks
from broker.groups.streams_group import StreamsGroup, StreamsMember
from broker.groups.streams_records import apply_delta, group_from_records, group_records, records_delta

SETTINGS = settings(max_examples=100, deadline=None, database=None)

TOPOLOGY = T.StreamsTopology(2, (
    T.Subtopology("0", ("events",), ("app-by-key-repartition",)),
    T.Subtopology("1", ("regions",), (), (T.TopicInfo("app-store-changelog", 0, 0, (("cleanup.policy", "compact"),)),),
                  (T.TopicInfo("app-by-key-repartition", 4, 3, (("retention.ms", "-1"),)),),
                  (frozenset({"regions", "app-by-key-repartition"}),)),
))

_tasks = st.frozensets(st.tuples(st.sampled_from(["0", "1"]), st.integers(0, 5)), max_size=6)


@st.composite
def groups(draw):
    g = StreamsGroup("app")
    g.group_epoch = draw(st.integers(1, 1000))
    g.target_assignment_epoch = draw(st.integers(0, g.group_epoch))
    g.topology = draw(st.sampled_from([None, TOPOLOGY]))
    for i in range(draw(st.integers(0, 4))):
        mid = f"m{i}"
        assigned = Tasks(draw(_tasks), draw(_tasks), draw(_tasks))
        pending = Tasks(draw(_tasks), draw(_tasks), draw(_tasks))
        epoch = draw(st.integers(0, g.group_epoch))
        m = StreamsMember(mid, instance_id=draw(st.sampled_from([None, f"i{i}"])), rack_id=draw(st.sampled_from([None, "r"])),
                          client_id=f"c{i}", client_host="/127.0.0.1", rebalance_timeout_ms=draw(st.integers(-1, 60000)),
                          topology_epoch=draw(st.integers(-1, 3)), process_id=f"p{i % 2}",
                          user_endpoint=draw(st.sampled_from([None, ("h", 65535), ("app.local", 1)])),
                          client_tags=tuple(draw(st.lists(st.tuples(st.text(max_size=3), st.text(max_size=3)), max_size=2))),
                          assignment=AssignmentState(epoch, draw(st.integers(0, epoch)),
                                                     draw(st.sampled_from(list(MemberState)[:3])), assigned, pending),
                          task_epochs={t: draw(st.integers(0, epoch)) for t in assigned.active | pending.active})
        g.members[mid] = m
        if draw(st.booleans()):
            g.target[mid] = Tasks(draw(_tasks), draw(_tasks), draw(_tasks))
    return g


def replay(records):
    """What ``OffsetsLog.load`` makes of these records (key bytes, value bytes or None)."""
    state = LoadedState()
    for k, v in records:
        _, key = decode_key(k)
        OffsetsLog._replay_streams_record(state, int.from_bytes(k[:2], "big"), key, k, v)
    return state


def _same(a: StreamsGroup, b: StreamsGroup) -> None:
    assert (a.group_id, a.group_epoch, a.target_assignment_epoch, a.topology) == \
           (b.group_id, b.group_epoch, b.target_assignment_epoch, b.topology)
    assert a.target == b.target
    strip = {mid: replace(m, task_offsets=(), task_end_offsets=()) for mid, m in a.members.items()}
    assert strip == b.members


@SETTINGS
@given(groups())
def test_records_rebuild_the_group(g):
    written = group_records(g, 1234, 1, now_ms=5)
    state = replay(list(written.items()))
    assert state.streams_written["app"] == written
    back, mhash = group_from_records("app", state.streams_groups["app"])
    assert mhash == 1234
    _same(g, back)
    # and from the rebuilt group, the same records (the timestamp aside): nothing to write
    assert records_delta(written, group_records(back, 1234, 1, now_ms=99)) == []


@SETTINGS
@given(groups())
def test_a_removed_member_leaves_its_tombstones_and_a_deleted_group_ends_with_its_metadata(g):
    written = group_records(g, 0, 0)
    for mid in list(g.members):
        g.members.pop(mid)
        g.target.pop(mid, None)
        g.group_epoch += 1
        delta = records_delta(written, group_records(g, 0, 0))
        gone = {decode_key(k)[0] for k, v in delta if v is None}
        assert gone <= {19, 21, 22} and all(decode_key(k)[1].member_id == mid for k, v in delta if v is None)
        assert 19 in gone and 22 in gone
        written = apply_delta(written, delta)
    delta = records_delta(written, {})
    assert delta and all(v is None for _, v in delta) and decode_key(delta[-1][0])[0] == 17
    state = replay(list(group_records(g, 0, 0).items()) + delta)
    assert "app" not in state.streams_groups


def test_the_last_group_type_written_wins_on_replay():
    """A group name reused across protocols: a classic or consumer group written after a Streams
    group replaces it on replay, and a Streams group written after a classic one replaces that."""
    from types import SimpleNamespace as NS
    from broker.groups.consumer_group import encode_record, group_epoch_record
    from broker.groups.schemas import GroupMetadataValue, encode_versioned, group_metadata_key
    g = StreamsGroup("app")
    g.group_epoch = 3
    streams = list(group_records(g, 0, 0).items())
    classic = (group_metadata_key("app"), encode_versioned(GroupMetadataValue, GroupMetadataValue(
        protocol_type="consumer", generation=1, protocol="range", leader=None, current_state_timestamp=-1,
        members=[]), 3))
    consumer = encode_record(group_epoch_record("app", 4, 0))
    plog = NS(topic="__consumer_offsets", partition=0)
    for later, check in ((classic, lambda s: s.groups.get("app") is not None),
                         (consumer, lambda s: "app" in s.consumer_groups)):
        state = LoadedState()
        for k, v in streams + [later]:
            OffsetsLog._apply(OffsetsLog, k, v, state, plog)
        assert "app" not in state.streams_groups and check(state)
        state = LoadedState()
        for k, v in [later] + streams:
            OffsetsLog._apply(OffsetsLog, k, v, state, plog)
        assert "app" in state.streams_groups and state.groups.get("app") is None and "app" not in state.consumer_groups
