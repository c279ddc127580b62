"""Share groups as a new user meets them, with confluent-kafka's ShareConsumer on each
librdkafka the tests cover (2.15 and the virtualenv's 2.16; tests/helpers/librdkafka.py):
sparse partitions, partitions added and a topic recreated while consuming, several
consumers over 10,000 records each delivered once, and the close races -- acknowledgements
sent with the close, against the leave heartbeat -- run 50 rounds in one test.

The scenarios run in a child process (tests/share/ck_scenarios.py) so each librdkafka runs
the same code; the assertions are here.
"""
from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType,
)

from tests.helpers.librdkafka import releases, run_scenario
from tests.quotas.test_quota_throttling import set_quota

RELEASES = releases()


@pytest.fixture
def sbroker(broker_factory):
    # a 5 s lock: long enough that nothing here expires on a loaded host, short enough that a
    # record wrongly left locked shows up as a stuck round rather than a hang
    return broker_factory({"group.share.heartbeat.interval.ms": 1000, "group.share.min.heartbeat.interval.ms": 1000,
                           "group.share.record.lock.duration.ms": 5000,
                           "group.share.min.record.lock.duration.ms": 1000})


def setup(bs: str, topic: str, partitions: int, group: str, per_partition: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result()
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result()
    if per_partition:
        p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
        for part, n in per_partition.items():
            for i in range(n):
                p.produce(topic, value=b"%d-%d" % (part, i), partition=part)
        assert p.flush(10) == 0


def once_each(got) -> Counter:
    return Counter((p, o) for _t, p, o, *_ in got)


@pytest.mark.parametrize("release", RELEASES)
def test_sparse_partitions_deliver_every_record(sbroker, release):
    """Records on partitions 0, 2 and 4 of 5: the empty partitions' answers (an empty record
    set each) must not spoil the others'."""
    bs = sbroker.bootstrap
    setup(bs, "sparse", 5, "g", {0: 10, 2: 10, 4: 10})
    out = run_scenario(release, "consume", bs=bs, topic="sparse", group="g", n=30)
    seen = once_each(out["got"])
    assert sorted(seen) == sorted((p, o) for p in (0, 2, 4) for o in range(10)), out["errors"]
    assert set(seen.values()) == {1}
    assert out["errors"] == []


@pytest.mark.parametrize("release", RELEASES)
def test_max_poll_records_does_not_split_a_batch(sbroker, release):
    """Kafka 4.2's default share acquire mode (batch-optimized, KIP-1206): max.poll.records
    is a soft limit, the batch holding the last record allowed is acquired and delivered whole."""
    bs = sbroker.bootstrap
    setup(bs, "batched", 1, "g")
    p = Producer({"bootstrap.servers": bs, "linger.ms": 200})
    for i in range(10):
        p.produce("batched", value=b"%d" % i)
    assert p.flush(10) == 0  # one batch of ten
    out = run_scenario(release, "consume", bs=bs, topic="batched", group="g", n=10,
                       config={"max.poll.records": 3})
    assert out["first_poll"] == list(range(10)), out
    assert sorted(o for _t, _p, o, *_ in out["got"]) == list(range(10))


@pytest.mark.parametrize("release", RELEASES)
def test_partitions_added_while_consuming_are_delivered(sbroker, release):
    bs = sbroker.bootstrap
    setup(bs, "grow", 1, "g", {0: 10})
    out = run_scenario(release, "added", bs=bs, topic="grow", group="g")
    seen = once_each(out["got"])
    assert sorted(seen) == sorted((p, o) for p in (0, 1, 2) for o in range(10)), out["errors"]
    assert set(seen.values()) == {1}


@pytest.mark.parametrize("release", RELEASES)
def test_a_recreated_topic_is_delivered_again(sbroker, release):
    bs = sbroker.bootstrap
    setup(bs, "again", 1, "g", {0: 10})
    out = run_scenario(release, "recreated", bs=bs, topic="again", group="g")
    first, second = out["got"][:10], out["got"][10:]
    assert sorted(o for _t, _p, o, *_ in first) == list(range(10))
    assert sorted(v for *_, v in second) == sorted(f"new{p}-{i}" for p in (0, 1) for i in range(10)), out
    assert out["errors"] == []


@pytest.mark.parametrize("release", RELEASES)
def test_a_topic_recreated_with_the_same_partition_count_is_delivered_again(sbroker, release):
    """Same name, same partition count, a new topic id: only the id tells the share
    coordinator the subscribed topic changed (Kafka's subscription metadata hash includes
    it), so the members must get a new assignment naming the new id."""
    bs = sbroker.bootstrap
    setup(bs, "same", 1, "g", {0: 10})
    out = run_scenario(release, "recreated", bs=bs, topic="same", group="g", partitions=1)
    first, second = out["got"][:10], out["got"][10:]
    assert sorted(o for _t, _p, o, *_ in first) == list(range(10))
    assert sorted(v for *_, v in second) == sorted(f"new0-{i}" for i in range(10)), out
    assert out["errors"] == []


@pytest.mark.parametrize("consumers", [2, 3])
@pytest.mark.parametrize("release", RELEASES)
def test_consumers_with_explicit_commits_get_each_record_once(broker_factory, release, consumers):
    """10,000 records produced onto two partitions while two or three consumers (three share
    a partition) consume them: every record delivered exactly once, delivery count 1."""
    b = broker_factory({})
    bs = b.bootstrap
    setup(bs, "work", 2, "g")
    out = run_scenario(release, "many", bs=bs, topic="work", group="g", n=10_000, partitions=2,
                       consumers=consumers)
    seen = Counter((p, o) for _i, p, o, _n in out["got"])
    assert len(seen) == 10_000, out["errors"][:5]
    assert set(seen.values()) == {1}, [k for k, n in seen.items() if n > 1][:10]
    assert {n for *_, n in out["got"]} == {1}
    assert out["errors"] == []
    assert len({i for i, *_ in out["got"]}) >= 2  # the work was shared


def check_close_race(out: dict, variant: str) -> None:
    """No ACCEPTed or REJECTed record ever comes back; every RELEASEd or unacknowledged one
    comes back, one delivery count higher; the acknowledgement callback never saw an error."""
    assert out["callback_errors"] == [], out["callback_errors"][:5]
    assert out["callback_calls"] >= 50  # called in every close, with the acknowledgements it carried
    assert out["stuck"] == [], out["stuck"][:5]
    assert out["missing_at_end"] == []
    assert out["errors"] == []
    history: dict[str, list] = {}
    for _r, v, count, action in out["deliveries"]:
        history.setdefault(v, []).append((count, action))
    for v, h in history.items():
        for k, (count, action) in enumerate(h):
            assert count == k + 1, (v, h)
            if action in ("accept", "reject"):
                assert k == len(h) - 1, f"{v} delivered again after {action}: {h}"
            else:
                assert k < len(h) - 1, f"{v} never delivered again after {action}: {h}"
    actions = Counter(a for *_, a in out["deliveries"])
    if variant == "types":
        assert actions["release"] and actions["reject"]
    else:
        assert actions["none"]


@pytest.mark.parametrize("variant", ["types", "partial"])
@pytest.mark.parametrize("release", RELEASES)
def test_acknowledgements_sent_with_close_are_applied(sbroker, release, variant):
    """50 rounds, each a new consumer that acknowledges and closes at once: librdkafka sends
    the leave heartbeat and the final ShareAcknowledge together on two connections. Every
    round must come out as Kafka has it, whichever lands first."""
    bs = sbroker.bootstrap
    setup(bs, "race", 1, "g")
    out = run_scenario(release, "close_race", bs=bs, topic="race", group="g", variant=variant, rounds=50)
    check_close_race(out, variant)


QUOTA = 20_000.0  # bytes/s


@pytest.mark.parametrize("release", RELEASES)
def test_share_fetch_is_held_to_the_consumer_byte_rate(broker_factory, release):
    """ShareFetch counts against the same consumer_byte_rate as Fetch (Kafka's KafkaApis): a
    share consumer whose client id has a 20 KB/s quota gets about that over 4 s, told by
    throttle_time_ms, while one without a quota on the same broker takes all 400 KB.
    A throttled answer carries no records and its acquisitions are given back: every record
    the slow consumer got was a first delivery. (Three samples of 1 s, as tests/quotas: a
    fresh client may burst two windows' worth.)"""
    # heartbeats every second: a member gets its partition one heartbeat after its join
    b = broker_factory({"quota.window.num": 3, "quota.window.size.seconds": 1,
                        "group.share.heartbeat.interval.ms": 1000, "group.share.min.heartbeat.interval.ms": 1000})
    bs = b.bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("rated", 1)])["rated"].result()
    for g in ("slow", "fast"):
        res = ConfigResource(ResourceType.GROUP, g, incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([res])[res].result()
    # batches of ~16 records: a batch larger than the quota window could never be fetched
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "batch.size": 16384})
    for _ in range(400):
        p.produce("rated", b"y" * 1000)
        p.poll(0)
    assert p.flush(30) == 0
    set_quota(bs, [("client-id", "slowc")], "consumer_byte_rate", QUOTA)
    slow = run_scenario(release, "rate", bs=bs, topic="rated", group="slow", client_id="slowc", seconds=4)
    # the free consumer has all the time a loaded host needs; it stops once it has everything
    fast = run_scenario(release, "rate", bs=bs, topic="rated", group="fast", client_id="fastc", seconds=60,
                        until=400_000)
    assert fast["bytes"] == 400_000 and not any(t > 0 for t in fast["throttles"]), fast["throttles"]
    # 4 s at 20 KB/s plus the two-window burst of a fresh client, and one window's worth
    assert 0 < slow["bytes"] <= QUOTA * (4 + 2 + 1), slow["bytes"]
    assert any(t > 0 for t in slow["throttles"]), slow["throttles"]
    assert {c for _p, _o, c in slow["got"]} == {1}, slow["got"]
    assert slow["errors"] == [] and fast["errors"] == []
