"""Shared helpers for the log cleaner tests (holds no tests; imported by test_cleaner*.py)."""
from __future__ import annotations

import random

from protocol.records.batch import iter_batch_positions
from protocol.records.record import build_batch, decode_batch
from storage.cleaner import Cleaner, OffsetMap, log_facts
from storage.cleaner.decisions import log_to_clean
from storage.clock import ManualClock
from storage.log import PartitionLog
from storage.log_config import LogConfig

NOW = 1_700_000_000_000


def compact_cfg(**kw) -> LogConfig:
    props = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}
    props.update({k.replace("_", "."): str(v) for k, v in kw.items()})
    return LogConfig.from_props({}, props)


def open_log(tmp_path, clock=None, name="compacted-0", **kw) -> PartitionLog:
    return PartitionLog.open(tmp_path / name, compact_cfg(**kw), clock or ManualClock(NOW), recover=False,
                             rng=random.Random(0))


def put(log, key, value, ts=None, **batch_kw):
    """Append one single-record batch; ``key``/``value`` str or bytes or None."""
    k = key.encode() if isinstance(key, str) else key
    v = value.encode() if isinstance(value, str) else value
    t = log.clock.now_ms() if ts is None else ts
    from_client = batch_kw.pop("from_client", True)
    return log.append(build_batch([(k, v, t)], **batch_kw), from_client=from_client)


def batches(log):
    """Every batch of every segment: (segment base, header, records)."""
    out = []
    for seg in log.segments.values():
        data = seg.read_bytes(0, seg.size)
        for pos, h in iter_batch_positions(data):
            out.append((seg.base_offset, h, decode_batch(data, pos)[1]))
    return out


def records(log):
    """(offset, key, value) of every record in the log, in offset order."""
    return [(r.offset, r.key, r.value) for _b, _h, recs in batches(log) for r in recs]


def key_values(log):
    """key -> latest value read from the log (tombstones map to None)."""
    out = {}
    for _o, k, v in records(log):
        out[k] = v
    return out


def clean(log, *, first_dirty=None, now=None, map_memory=1 << 20, cleaner=None):
    """Clean ``log`` directly (as LogCleanerTest calls ``cleaner.clean(LogToClean(...))``):
    the dirty range from ``first_dirty`` (default: log start) to the first uncleanable offset.
    Returns (end offset, stats)."""
    now = log.clock.now_ms() if now is None else now
    ltc = log_to_clean(("t", 0), log_facts(log), first_dirty, now)
    c = cleaner or Cleaner(OffsetMap(map_memory))
    return c.clean(log, ltc, now)
