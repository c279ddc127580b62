"""Micro-benchmarks of protocol.records (plain timers; prints ``name value unit`` lines).

    .venv/bin/python bench/micro_records.py

peek_header_* shows read_header is O(1): a 1-record and a 10,000-record batch cost the same.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from protocol.records import (  # noqa: E402
    build_batch, check_crc, decode_batch, iter_batch_positions, iter_record_timestamps, read_header,
)
from protocol.records import compression as codecs  # noqa: E402


def per_call(fn, min_time=0.3):
    """Seconds per call of fn(), best of 3 runs of at least min_time each."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / 10:
            break
        n *= 4
    n = max(1, int(n * (min_time / 10) / dt * 10))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def emit(name, value, unit):
    print(f"{name} {value:.4g} {unit}", flush=True)


def main():
    one = build_batch([(b"key", b"v" * 100, 1_700_000_000_000)])
    many = build_batch([(b"key-%d" % i, b"v" * 100, 1_700_000_000_000 + i) for i in range(10_000)])
    emit("peek_header_1_record", per_call(lambda: read_header(one)) * 1e9, "ns")
    emit("peek_header_10000_records", per_call(lambda: read_header(many)) * 1e9, "ns")

    log = b"".join(build_batch([(b"k", b"v" * 100, i)] * 10, base_offset=i * 10) for i in range(1000))
    t = per_call(lambda: sum(1 for _ in iter_batch_positions(log)))
    emit("iter_batch_positions", 1000 / t, "batches/s")

    value = os.urandom(1024)
    mib = build_batch([(None, value, 1)] * 1000)
    h = read_header(mib)
    t = per_call(lambda: check_crc(mib, 0, h))
    emit("check_crc_1MiB", len(mib) / t / 1e6, "MB/s")

    recs = [(b"key-%d" % i, b"v" * 100, 1_700_000_000_000 + i, [("h", b"x")] if i % 10 == 0 else None)
            for i in range(1000)]
    for codec in (codecs.NONE, codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD):
        b = build_batch(recs, compression=codec)
        name = codecs.CODEC_NAMES[codec]
        emit(f"decode_batch_{name}", 1000 / per_call(lambda: decode_batch(b)), "records/s")
        emit(f"iter_record_timestamps_{name}", 1000 / per_call(lambda: list(iter_record_timestamps(b))),
             "records/s")
    emit("build_batch_none", 1000 / per_call(lambda: build_batch(recs)), "records/s")
    emit("build_batch_lz4", 1000 / per_call(lambda: build_batch(recs, compression=codecs.LZ4)), "records/s")


if __name__ == "__main__":
    main()
