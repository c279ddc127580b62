"""On disk, both ways (issue 33): Apache Kafka's tools read Hourglass's files, and Hourglass
reads Kafka's.

One workload (tests/differential/disk_workload.py: size and time roll, retention, the
cleaner, commits and aborts, LogAppendTime, four codecs, idempotent and transactional
producers, a group's committed offset) is produced through librdkafka to a Hourglass broker
and, separately, to an Apache Kafka 4.x node (the oracle from ``make jvm``); both are stopped
cleanly and their data dirs read by the other side:

- Kafka's ``DumpLogSegments`` (``--deep-iteration --print-data-log``, ``--index-sanity-check``,
  ``--verify-index-only``, and the ``--transaction-log-decoder``/``--offsets-decoder`` for the
  internal topics) over every segment, offset index, time index, transaction index and
  producer snapshot Hourglass wrote: no complaint, and what it prints is what the producers
  were acknowledged (offsets, timestamps, keys, values, codecs, markers, aborted ranges).
- ``hourglass inspect`` and Hourglass's storage over Kafka's partition dirs: the same segments,
  records, timestamps and time index entries Kafka's own tool prints, and offsets-for-times
  answers computed by Hourglass's time index lookup on Kafka's files equal to the ListOffsets
  answers Kafka gave for the same timestamps while it ran.

Both brokers run once per module (module-scoped fixtures): the workload takes ~10 s on
Hourglass, ~45 s with Kafka's start-up on a busy 2-core host.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.differential import disk_workload as W
from tests.differential import kafka_dump as KD
from tests.helpers.broker import REPO_ROOT, BrokerProcess
from tests.helpers.kafka_oracle import KafkaProcess

# One xdist worker runs the whole module, so each broker and its workload run once.
pytestmark = pytest.mark.xdist_group("on_disk")

USER_TOPICS = tuple(W.TOPICS)
MAX_TIMESTAMP = -3


# ------------------------------------------------------------------------------ fixtures
def _settle_and_stop(broker, data_dir: Path) -> None:
    W.wait_settled(data_dir)
    rc = broker.stop()
    assert rc in (0, 143), f"broker exited {rc} on SIGTERM\n{broker.log_tail()}"


@pytest.fixture(scope="module")
def hourglass_disk(tmp_path_factory):
    """A Hourglass data dir after the workload and a clean shutdown, and what was produced."""
    base = tmp_path_factory.mktemp("hourglass-disk")
    b = BrokerProcess(base / "data", W.BROKER_OVERRIDES)
    b.start()
    try:
        res = W.run_workload(b.bootstrap)
        _settle_and_stop(b, b.data_dir)
    finally:
        if b.running:
            b.kill()
    return b.data_dir, res


def _kafka_list_offsets(bootstrap: str, targets: dict[str, list[int]]) -> dict[tuple[str, int], tuple]:
    """Kafka's ListOffsets (v8, read_uncommitted) answers: (topic, target) -> (error, offset, timestamp, epoch)."""
    from hourglass.cli.wire import WireClient
    from protocol.messages.list_offsets import ListOffsetsRequest as LO
    out = {}
    with WireClient(bootstrap) as c:
        for topic, ts_list in targets.items():
            for ts in ts_list:
                r = c.request(2, 8, LO(replica_id=-1, isolation_level=0, topics=[LO.ListOffsetsTopic(
                    name=topic, partitions=[LO.ListOffsetsTopic.ListOffsetsPartition(
                        partition_index=0, current_leader_epoch=-1, timestamp=ts)])]))
                p = r.topics[0].partitions[0]
                out[(topic, ts)] = (p.error_code, p.offset, p.timestamp, p.leader_epoch)
    return out


def _targets(res: W.WorkloadResult) -> dict[str, list[int]]:
    """Per topic: before the first timestamp, every produced timestamp, one past each (between
    records and past the end), out-of-order and repeated ones as produced, and MAX_TIMESTAMP."""
    out = {}
    for topic, recs in res.records.items():
        stamps = sorted({r.timestamp for r in recs})
        picked = set(stamps if len(stamps) <= 60 else stamps[:: max(1, len(stamps) // 60)] + stamps[-3:])
        picked |= {t + 1 for t in list(picked)[:30]} | {stamps[0] - 1, stamps[-1], stamps[-1] + 1}
        out[topic] = sorted(picked) + [MAX_TIMESTAMP]
    return out


@pytest.fixture(scope="module")
def kafka_disk(tmp_path_factory):
    """Kafka's data dir after the same workload and a controlled shutdown, what was produced,
    and Kafka's ListOffsets answers for the ``_targets`` timestamps (asked while it ran)."""
    base = tmp_path_factory.mktemp("kafka-disk")
    k = KafkaProcess(base / "data", W.BROKER_OVERRIDES)
    k.start()
    try:
        res = W.run_workload(k.bootstrap)
        W.wait_settled(k.data_dir)
        answers = _kafka_list_offsets(k.bootstrap, _targets(res))
        rc = k.stop()
        assert rc in (0, 143), f"kafka exited {rc}\n{k.log_tail()}"
    finally:
        if k.running:
            k.kill()
    return k.data_dir, res, answers


# ------------------------------------------------------------------------------ helpers
def _partition_files(data_dir: Path, topic: str, suffixes=KD.SEGMENT_SUFFIXES) -> list[Path]:
    return KD.segment_files(data_dir / f"{topic}-0", suffixes)


def _by_partition(d: KD.DumpResult, data_dir: Path) -> dict[str, dict[Path, KD.FileDump]]:
    out: dict[str, dict[Path, KD.FileDump]] = defaultdict(dict)
    for path, fd in d.files.items():
        out[path.parent.name.rsplit("-", 1)[0]][path] = fd
    return out


def _disk_records(files: dict[Path, KD.FileDump]) -> list[tuple[KD.Batch, KD.Record]]:
    out = []
    for path in sorted(p for p in files if p.suffix == ".log"):
        for b in files[path].batches:
            out += [(b, r) for r in b.records]
    return out


def _bases(files) -> list[int]:
    return sorted(int(p.stem) for p in files if p.suffix == ".log")


def _log_start(data_dir: Path, topic: str) -> int:
    """The log start offset: the checkpointed one, else the first segment's base offset
    (Kafka checkpoints it only when it is above the first segment's base offset)."""
    first = _bases(_partition_files(data_dir, topic, (".log",)))[0]
    for line in (data_dir / "log-start-offset-checkpoint").read_text().splitlines()[2:]:
        t, p, off = line.split()
        if t == topic and p == "0":
            return max(first, int(off))
    return first


def _cleaned_upto(data_dir: Path, topic: str) -> int:
    for line in (data_dir / "cleaner-offset-checkpoint").read_text().splitlines()[2:]:
        t, p, off = line.split()
        if t == topic and p == "0":
            return int(off)
    return 0


def _check_indexes_against_log(files: dict[Path, KD.FileDump], where: str) -> int:
    """Our own reading of each index dump against the same segment's batches (Kafka's tool
    checks it too; this also pins the time index's meaning). Returns the entries seen."""
    seen = 0
    for path, fd in files.items():
        log = files.get(path.with_suffix(".log"))
        if log is None:
            continue
        by_pos = {b.int("position"): b for b in log.batches}
        if path.suffix == ".index":
            offs = [o for o, _ in fd.index]
            assert offs == sorted(set(offs)), f"{where} {path.name}: offsets not increasing {offs}"
            for off, pos in fd.index:
                assert pos in by_pos and by_pos[pos].int("lastOffset") == off, (where, path.name, off, pos)
            seen += len(fd.index)
        elif path.suffix == ".timeindex":
            stamps = [t for t, _ in fd.time_index]
            assert stamps == sorted(set(stamps)), f"{where} {path.name}: timestamps not increasing {stamps}"
            records = [(r.offset, r.timestamp) for b in log.batches for r in b.records]
            last = {b.int("lastOffset"): b for b in log.batches}
            for ts, off in fd.time_index:
                # the entry is (max timestamp so far, last offset of the batch that holds it)
                assert off in last and last[off].max_timestamp == ts, (where, path.name, ts, off)
                assert max(t for o, t in records if o <= off) == ts, (where, path.name, ts, off)
            seen += len(fd.time_index)
    return seen


# ------------------------------------------------------------------------------ Kafka reads Hourglass
@pytest.fixture(scope="module")
def hourglass_dump(hourglass_disk):
    data_dir, _ = hourglass_disk
    files = [f for t in USER_TOPICS for f in _partition_files(data_dir, t)]
    d = KD.dump(files, "--deep-iteration", "--print-data-log")
    assert d.returncode == 0, d.stdout[-3000:] + d.stderr[-3000:]
    return d


def test_dump_log_segments_has_no_complaint_about_hourglass_files(hourglass_disk, hourglass_dump):
    data_dir, _ = hourglass_disk
    d = hourglass_dump
    assert d.complaints() == []
    assert "corrupt" not in (d.stdout + d.stderr).lower()
    assert "exception" not in d.stderr.lower()
    # every file was read, every batch's CRC is valid
    assert {f for t in USER_TOPICS for f in _partition_files(data_dir, t)} == set(d.files)
    batches = [b for fd in d.files.values() for b in fd.batches]
    assert batches and all(b["isvalid"] == "true" and b["magic"] == "2" for b in batches)
    # the only non-consecutive offsets: the tool's -1 before a segment's first record, and
    # the cleaner's gaps in the compacted topic
    for path, pairs in d.gaps().items():
        topic = path.parent.name.rsplit("-", 1)[0]
        first = min(r.offset for b in d.files[path].batches for r in b.records)
        assert pairs[0] == (-1, first), (path, pairs)
        if topic != "compacted":
            assert pairs == [(-1, int(path.stem))], (path, pairs)


def test_dump_log_segments_prints_what_the_producers_were_acknowledged(hourglass_disk, hourglass_dump):
    data_dir, res = hourglass_disk
    parts = _by_partition(hourglass_dump, data_dir)
    for topic in ("size-roll", "time-roll", "txn", "codecs", "retention", "log-append"):
        disk = [(r.offset, r.timestamp, r.key, r.payload) for b, r in _disk_records(parts[topic])
                if b["isControl"] == "false"]
        start = _log_start(data_dir, topic)
        want = [(p.offset, p.timestamp, p.key.decode(), p.value.decode()) for p in res.records[topic]
                if p.offset >= start]
        assert sorted(disk) == sorted(want), topic
    # retention deleted whole segments below the log start offset, nothing else
    start = _log_start(data_dir, "retention")
    assert start > 0 and _bases(parts["retention"])[0] == start
    assert max(p.offset for p in res.records["retention"]) + 1 > _bases(parts["retention"])[-1]
    # size roll: 1 MiB segments; time roll: one segment per round of 20
    assert len(_bases(parts["size-roll"])) >= 3
    assert all(p.stat().st_size <= W.SEGMENT_BYTES for p in parts["size-roll"] if p.suffix == ".log")
    assert _bases(parts["time-roll"]) == [0, 20, 40, 60, 80]
    # timestamp types and LogAppendTime values
    for topic, files in parts.items():
        want = "LogAppendTime" if topic == "log-append" else "CreateTime"
        assert {b.timestamp_type for fd in files.values() for b in fd.batches} == {want}, topic
    lo, hi = res.log_append_window
    assert all(lo <= p.timestamp <= hi for p in res.records["log-append"])
    # the idempotent producer's sequences run on across segments; batches carry its id
    sized = [b for b, _ in _disk_records(parts["size-roll"])]
    assert {b["producerId"] for b in sized} != {"-1"} and len({b["producerId"] for b in sized}) == 1
    seqs = [r.sequence for _, r in _disk_records(parts["size-roll"])]
    assert seqs == list(range(len(seqs)))
    # codecs: each record's batch was written with the codec its producer used
    for b, r in _disk_records(parts["codecs"]):
        assert b["compresscodec"] == res.codec_of_offset[r.offset], (r.offset, b["compresscodec"])


def test_dump_log_segments_shows_the_cleaners_output(hourglass_disk, hourglass_dump):
    data_dir, res = hourglass_disk
    files = _by_partition(hourglass_dump, data_dir)["compacted"]
    produced = {p.offset: p for p in res.records["compacted"]}
    cleaned = _cleaned_upto(data_dir, "compacted")
    assert cleaned > 0
    disk = [r for _, r in _disk_records(files)]
    for r in disk:   # every record on disk is one that was produced, unchanged
        p = produced[r.offset]
        assert (r.timestamp, r.key) == (p.timestamp, p.key.decode()), r
        assert r.payload == (None if p.value is None else p.value.decode()), r
    below = [r for r in disk if r.offset < cleaned]
    assert len({r.key for r in below}) == len(below), "a key twice in the cleaned section"
    latest = {}
    for p in res.records["compacted"]:
        latest[p.key] = p
    on_disk = {r.offset for r in disk}
    for key, p in latest.items():   # the latest value of every key survives (tombstones may go)
        assert p.value is None or p.offset in on_disk, key
    assert len(disk) < len(res.records["compacted"])
    assert _check_indexes_against_log(files, "compacted") > 0


def test_dump_log_segments_shows_markers_and_aborted_transactions(hourglass_disk, hourglass_dump):
    data_dir, res = hourglass_disk
    files = _by_partition(hourglass_dump, data_dir)["txn"]
    recs = _disk_records(files)
    markers = [(r.offset, r.marker) for b, r in recs if b["isControl"] == "true"]
    want = [(max(offs) + 1, "COMMIT" if committed else "ABORT") for committed, offs in res.txns]
    assert markers == want
    assert all(b["isTransactional"] == "true" for b, _ in recs)
    aborted = [e for p, fd in sorted(files.items()) if p.suffix == ".txnindex" for e in fd.txn_index]
    want = [(min(offs), max(offs) + 1) for committed, offs in res.txns if not committed]
    assert [(e["firstOffset"], e["lastOffset"]) for e in aborted] == want
    assert all(e["version"] == 0 and e["lastStableOffset"] == e["lastOffset"] + 1 for e in aborted)
    # each aborted range sits in the .txnindex of the segment that holds its marker
    for p, fd in files.items():
        if p.suffix == ".txnindex":
            seg = files[p.with_suffix(".log")]
            for e in fd.txn_index:
                assert any(r.offset == e["lastOffset"] and r.marker == "ABORT" for b in seg.batches for r in b.records)
    # producer snapshots name the transactional producer
    snaps = [s for p, fd in files.items() if p.suffix == ".snapshot" for s in fd.snapshot]
    assert snaps and {s["producerId"] for s in snaps} == {b["producerId"] for b, _ in recs}


def test_dump_log_segments_agrees_with_every_index_entry(hourglass_disk, hourglass_dump):
    data_dir, _ = hourglass_disk
    parts = _by_partition(hourglass_dump, data_dir)
    entries = {t: _check_indexes_against_log(files, t) for t, files in parts.items()}
    for topic in ("size-roll", "time-roll", "txn", "compacted", "log-append", "codecs"):
        assert entries[topic] > 0, (topic, entries)


def test_index_sanity_check_and_verify_index_only_pass(hourglass_disk):
    data_dir, _ = hourglass_disk
    indexes = [f for t in USER_TOPICS for f in _partition_files(data_dir, t, (".index", ".timeindex"))]
    d = KD.dump(indexes, "--index-sanity-check")
    assert d.returncode == 0 and d.complaints() == [], d.stderr
    assert set(d.files) == set(indexes)
    for path, fd in d.files.items():
        assert fd.passed_sanity or (path.suffix == ".index" and fd.empty), (path, fd.lines)
    v = KD.dump(indexes, "--verify-index-only")
    assert v.returncode == 0 and v.stderr.strip() == "", v.stderr
    assert not any(fd.index or fd.time_index for fd in v.files.values())   # verify only: nothing listed


def test_internal_topics_decode_with_kafkas_decoders(hourglass_disk):
    """__transaction_state and __consumer_offsets records in Kafka's schemas, stamped with the
    leader epoch like every other leader append (Kafka stamps 0 on a single node)."""
    data_dir, _ = hourglass_disk
    for topic, option, must in (("__transaction_state", "--transaction-log-decoder", W.TRANSACTIONAL_ID),
                                ("__consumer_offsets", "--offsets-decoder", W.GROUP)):
        logs = sorted(p for p in data_dir.glob(f"{topic}-*/*.log") if p.stat().st_size)
        assert logs, topic
        d = KD.dump(logs, "--deep-iteration", option)
        assert d.returncode == 0 and d.complaints() == [], (topic, d.stderr)
        text = d.stdout
        assert "Error at offset" not in text and "Unknown record type" not in text, text[-2000:]
        assert must in text
        batches = [b for fd in d.files.values() for b in fd.batches]
        assert batches and {b["partitionLeaderEpoch"] for b in batches} == {"0"}, topic
        assert all(b["isvalid"] == "true" for b in batches)
    assert "CompleteAbort" in KD.dump(sorted(data_dir.glob("__transaction_state-*/*.log")), "--deep-iteration",
                                      "--transaction-log-decoder").stdout


# ------------------------------------------------------------------------------ Hourglass reads Kafka
@pytest.fixture(scope="module")
def kafka_dump(kafka_disk):
    data_dir, _, _ = kafka_disk
    files = [f for t in USER_TOPICS for f in _partition_files(data_dir, t)]
    d = KD.dump(files, "--deep-iteration", "--print-data-log")
    assert d.returncode == 0 and d.complaints() == [], d.stderr
    return d


def test_hourglass_inspect_reads_kafkas_segments(kafka_disk, kafka_dump):
    from hourglass.cli.inspect import inspect_topic
    data_dir, res, _ = kafka_disk
    parts = _by_partition(kafka_dump, data_dir)
    for topic in USER_TOPICS:
        view = inspect_topic(data_dir, topic, {}, show_progress=False)
        assert [p.partition for p in view.partitions] == [0], topic
        p = view.partitions[0]
        files = parts[topic]
        assert [s.base_offset for s in p.segments] == _bases(files), topic
        for s in p.segments:
            fd = files[data_dir / f"{topic}-0" / f"{s.base_offset:020d}.log"]
            recs = [r for b in fd.batches for r in b.records]
            assert s.records == len(recs), (topic, s.base_offset)
            assert s.size_bytes == (data_dir / f"{topic}-0" / f"{s.base_offset:020d}.log").stat().st_size
            assert (s.min_timestamp, s.max_timestamp) == (min(r.timestamp for r in recs), max(r.timestamp for r in recs))
            tix = files.get(data_dir / f"{topic}-0" / f"{s.base_offset:020d}.timeindex")
            assert [tuple(e) for e in s.time_index] == (tix.time_index if tix else []), (topic, s.base_offset)
        produced_end = max(r.offset for r in res.records[topic]) + 1
        markers = 1 if topic == "txn" else 0
        assert p.log_end_offset == produced_end + markers, topic
        assert p.log_start_offset == _log_start(data_dir, topic)
        assert p.last_stable_offset == p.log_end_offset and p.open_transactions == []
        assert p.aborted_transactions == (sum(1 for c, _ in res.txns if not c) if topic == "txn" else 0)
    # and through the command line, as a user would point it at a Kafka log dir
    out = subprocess.run([sys.executable, "-m", "broker", "inspect", "txn", "--data-dir", str(data_dir), "--json"],
                         capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)
    assert view["partitions"][0]["log_end_offset"] == max(r.offset for r in res.records["txn"]) + 2


def test_hourglass_dump_log_verifies_kafkas_indexes(kafka_disk):
    """``hourglass dump-log`` (storage.dump) over Kafka's segments: every batch read with a
    valid CRC, every index entry verified against the log, every aborted range listed."""
    from storage.dump import dump_file
    data_dir, res, _ = kafka_disk
    for topic in USER_TOPICS:
        for path in _partition_files(data_dir, topic, (".log", ".index", ".timeindex", ".txnindex")):
            d = dump_file(path)
            if path.suffix == ".log":
                assert d.error is None and d.trailing_bytes == 0 and all(b.crc_valid for b in d.batches), path
            elif path.suffix == ".txnindex":
                assert all(e.first_offset in res.aborted_offsets for e in d.entries), path
            else:
                assert d.checked and d.ok, (path, d)


def _open_copy(src: Path, dst: Path, topic: str, log_start: int):
    from storage.log import PartitionLog
    from storage.log_config import LogConfig
    shutil.copytree(src, dst)
    return PartitionLog.open(dst, LogConfig.from_props({}, W.TOPICS[topic]), recover=False, log_start_offset=log_start)


def test_offsets_for_times_on_kafkas_files_equal_kafkas_answers(kafka_disk, tmp_path):
    """Hourglass's time index lookup (the one its ListOffsets uses) over copies of Kafka's
    partition dirs answers every timestamp exactly as Kafka's ListOffsets did."""
    data_dir, res, answers = kafka_disk
    differences, asked = [], 0
    for topic in USER_TOPICS:
        log = _open_copy(data_dir / f"{topic}-0", tmp_path / f"{topic}-0", topic, _log_start(data_dir, topic))
        try:
            for (t, ts), (err, k_off, k_ts, k_epoch) in sorted(answers.items()):
                if t != topic:
                    continue
                asked += 1
                assert err == 0, (topic, ts, err)
                hit = log.lookup_timestamp(ts)
                ours = (-1, -1, -1) if hit is None else (hit.offset, hit.timestamp, hit.leader_epoch)
                if ours != (k_off, k_ts, k_epoch):
                    differences.append((topic, ts, "kafka", (k_off, k_ts, k_epoch), "hourglass", ours))
        finally:
            log.close()
    assert asked > 300
    assert differences == []
    # the questions cover answers inside, between and past the records, and "none"
    assert any(a[1] == -1 for a in answers.values()) and sum(a[1] >= 0 for a in answers.values()) > 300


def _consume_all(bootstrap: str, topic: str, isolation: str) -> list[tuple[int, int, str, str | None]]:
    import time
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"copy-{topic}", "enable.auto.commit": False,
                  "isolation.level": isolation})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
        c.assign([TopicPartition(topic, 0, lo)])
        got, deadline = [], time.monotonic() + 60
        while c.position([TopicPartition(topic, 0)])[0].offset < hi and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append((m.offset(), m.timestamp()[1], m.key().decode(),
                            None if m.value() is None else m.value().decode()))
        return got
    finally:
        c.close()


def test_hourglass_serves_a_copy_of_kafkas_data_dir(kafka_disk, kafka_dump, tmp_path):
    """A Hourglass broker started on a copy of Kafka's log dir (its meta.properties, its
    ``__cluster_metadata``, checkpoints and leader-epoch files included) serves Kafka's
    records: the same offsets, timestamps, keys and values, and read_committed leaves out the
    aborted transactions. (Topic configs live in Kafka's metadata log, which Hourglass does
    not read: the topics are adopted with the broker's defaults.)"""
    data_dir, res, _ = kafka_disk
    copy = tmp_path / "data"
    shutil.copytree(data_dir, copy)
    parts = _by_partition(kafka_dump, data_dir)
    b = BrokerProcess(copy)
    b.start()
    try:
        for topic in USER_TOPICS:
            want = [(r.offset, r.timestamp, r.key, r.payload) for bt, r in _disk_records(parts[topic])
                    if bt["isControl"] == "false"]
            assert _consume_all(b.bootstrap, topic, "read_uncommitted") == want, topic
        committed = _consume_all(b.bootstrap, "txn", "read_committed")
        assert [o for o, *_ in committed] == sorted(res.committed_offsets)
    finally:
        rc = b.stop()
    assert rc == 0, b.log_tail()
