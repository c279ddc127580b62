"""Partition directories on disk with no topic record (e.g. copied in from another broker) are
adopted as topics at start-up: partition count from the highest partition dir, topic id from
``partition.metadata``; directories that are not ``<topic>-<partition>`` are left alone."""
import confluent_kafka as ck
from confluent_kafka.admin import AdminClient


def test_partition_dirs_without_topic_record_are_adopted(broker_factory):
    b = broker_factory()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([ck.admin.NewTopic("legacy", 2, 1)])["legacy"].result(10)
    p = ck.Producer({"bootstrap.servers": b.bootstrap})
    for i in range(5):
        p.produce("legacy", value=f"1-{i}".encode(), partition=1)
    assert p.flush(10) == 0
    topic_id = str(admin.describe_topics(ck.TopicCollection(["legacy"]))["legacy"].result(10).topic_id)
    b.stop()

    (b.data_dir / ".hourglass" / "topics" / "legacy.json").unlink()  # the topic record is gone
    (b.data_dir / "not_a_partition").mkdir()
    (b.data_dir / "legacy-x").mkdir()
    b.start()

    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    md = admin.list_topics(timeout=10)
    assert sorted(md.topics["legacy"].partitions) == [0, 1]
    assert "not_a_partition" not in md.topics and "legacy-x" not in md.topics
    assert str(admin.describe_topics(ck.TopicCollection(["legacy"]))["legacy"].result(10).topic_id) == topic_id

    c = ck.Consumer({"bootstrap.servers": b.bootstrap, "group.id": "adopt", "auto.offset.reset": "earliest"})
    c.assign([ck.TopicPartition("legacy", 1, 0)])
    got = []
    while len(got) < 5:
        m = c.poll(10)
        assert m is not None, f"only {got} consumed"
        assert m.error() is None, m.error()
        got.append(m.value().decode())
    c.close()
    assert got == [f"1-{i}" for i in range(5)]
