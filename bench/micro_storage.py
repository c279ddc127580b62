"""Micro-benchmarks of the storage paths (plain timers; prints ``name value unit`` lines).

    .venv/bin/python bench/micro_storage.py

- ``append_*``: ``PartitionLog.append`` of a client batch (validation: framing, CRC, offsets
  assigned in place; segment write; index upkeep), CreateTime topic with Kafka's default
  (unbounded) timestamp window, so no record is decoded;
- ``read_*``: ``PartitionLog.read`` (offset index bisect, batch-header walk, one ``pread``);
- ``lookup_offset``: the offset index alone; ``lookup_time``: ``offset_for_timestamp``
  on a log of many segments (segment bisect, time index, offset index, header walk, one batch's
  record timestamps).
Files live in a temp dir (page cache); ``flush.messages`` stays at its default (no fsync per
append), as the broker runs by default.
"""
from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench.micro_records import emit, per_call  # noqa: E402
from protocol.records import build_batch  # noqa: E402
from storage.clock import ManualClock  # noqa: E402
from storage.log import PartitionLog  # noqa: E402
from storage.log_config import LogConfig  # noqa: E402

BASE_TS = 1_700_000_000_000


def main():
    tmp = Path(tempfile.mkdtemp(prefix="hourglass-micro-storage-"))
    try:
        cfg = LogConfig.from_props({}, {"segment.bytes": str(256 << 20), "retention.ms": "-1"})
        lg = PartitionLog.open(tmp / "append-0", cfg, ManualClock(BASE_TS), recover=False)
        one = build_batch([(b"k", b"v" * 100, BASE_TS)])
        small = build_batch([(None, os.urandom(100), BASE_TS + i) for i in range(600)])   # ~64 KiB
        big = build_batch([(None, os.urandom(1024), BASE_TS + i) for i in range(1000)])   # ~1 MiB
        t = per_call(lambda: lg.append(one), 0.2)
        emit("append_1_record_batch", t * 1e6, "us")
        t = per_call(lambda: lg.append(small), 0.2)
        emit("append_64KiB_batch", len(small) / t / 1e6, "MB/s")
        t = per_call(lambda: lg.append(big), 0.3)
        emit("append_1MiB_batch", len(big) / t / 1e6, "MB/s")
        emit("append_1MiB_batch_per_call", t * 1e6, "us")
        lg.close()

        # reads over a ~64 MiB log of 64 KiB batches
        lg = PartitionLog.open(tmp / "read-0", cfg, ManualClock(BASE_TS), recover=False)
        for _ in range(1000):
            lg.append(small)
        end = lg.log_end_offset
        rnd = random.Random(1)
        offs = [rnd.randrange(end) for _ in range(256)]
        it = iter(offs * 100000)
        t = per_call(lambda: lg.read(next(it), 1 << 20), 0.3)
        emit("read_1MiB_random_offset", t * 1e6, "us")
        it = iter(offs * 100000)
        t = per_call(lambda: lg.read(next(it), 32 << 20), 0.3)
        emit("read_32MiB_random_offset", t * 1e6, "us")
        seg = lg.active_segment
        it = iter(offs * 100000)
        t = per_call(lambda: seg.offset_index.lookup(next(it)), 0.2)
        emit("lookup_offset_index", t * 1e9, "ns")
        lg.close()

        # time lookups over 1000 segments of 100-record batches
        cfg2 = LogConfig.from_props({}, {"segment.bytes": str(20_000), "index.interval.bytes": "4096",
                                         "retention.ms": "-1"})
        lg = PartitionLog.open(tmp / "time-0", cfg2, ManualClock(BASE_TS), recover=False)
        n = 0
        while lg.num_segments < 1000:
            lg.append(build_batch([(None, b"v" * 10, BASE_TS + 10 * (n + j)) for j in range(100)]))
            n += 100
        targets = [BASE_TS + 10 * rnd.randrange(n) + rnd.randrange(10) for _ in range(512)]
        it = iter(targets * 100000)
        t = per_call(lambda: lg.offset_for_timestamp(next(it)), 0.3)
        emit(f"lookup_time_{n}_records_{lg.num_segments}_segments", t * 1e6, "us")
        lg.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
