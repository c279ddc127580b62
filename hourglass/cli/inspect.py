"""``hourglass inspect TOPIC``: a read-only look at a topic's partitions in time, from the files.

Reads a data dir directly (never writes, safe while the broker runs): per partition the
segments with base offset, record count, size, min and max timestamp, time index entries,
log start and end offsets, records whose CreateTime is below an earlier record's (out of
order), and where retention will cut next under the topic's effective configs (topic
overrides stored by the broker over the broker's ``log.*`` defaults), computed by the same
pure functions the broker uses (``storage.retention``).
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, field
from pathlib import Path

from protocol.deferred import dataclass
from protocol.records import iter_record_timestamps
from storage.checkpoints import read_checkpoint
from storage.producer_state import ProducerStateManager, read_end_txn_marker, replay_batch
from storage.dump import dump_index, dump_log
from storage.log_config import LogConfig
from storage.manager import LOG_START_OFFSET_CHECKPOINT
from storage.retention import SegmentSnapshot, plan_retention
from storage.segment import LOG_SUFFIX, TIME_INDEX_SUFFIX, offset_from_filename


@dataclass
class SegmentView:
    base_offset: int
    next_offset: int
    records: int
    size_bytes: int
    min_timestamp: int | None
    max_timestamp: int | None
    time_index: list[tuple[int, int]]  # (timestamp, offset)
    out_of_order: list[tuple[int, int]] = field(default_factory=list)  # (offset, timestamp)


@dataclass
class PartitionView:
    partition: int
    log_start_offset: int
    log_end_offset: int
    segments: list[SegmentView]
    retention: dict
    last_stable_offset: int = 0
    open_transactions: list[tuple[int, int]] = field(default_factory=list)  # (producer id, first offset)
    aborted_transactions: int = 0


@dataclass
class TopicView:
    topic: str
    configs: dict
    partitions: list[PartitionView]


def _topic_overrides(data_dir: Path, topic: str) -> dict:
    for p in (data_dir / ".hourglass" / "topics").glob("*.json"):
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if d.get("name") == topic:
            return dict(d.get("configs", {}))
    return {}


def _segment(log_path: Path, running_max: list[int], txns: ProducerStateManager, aborted: list[int],
             progress=None) -> SegmentView:
    dump = dump_log(log_path)
    data = log_path.read_bytes()[:dump.valid_bytes]
    for b in dump.batches:
        h = b.header
        if h.producer_id >= 0:
            completed = replay_batch(txns, h, read_end_txn_marker(data, b.position) if h.is_control else None)
            if completed is not None:
                aborted[0] += completed.is_aborted
                txns.complete_txn(completed)
    base = offset_from_filename(log_path.name)
    records = 0
    min_ts = max_ts = None
    ooo = []
    for b in dump.batches:
        for off, ts in iter_record_timestamps(data, b.position):
            records += 1
            min_ts = ts if min_ts is None else min(min_ts, ts)
            max_ts = ts if max_ts is None else max(max_ts, ts)
            if ts < running_max[0]:
                ooo.append((off, ts))
            running_max[0] = max(running_max[0], ts)
    next_offset = dump.batches[-1].last_offset + 1 if dump.batches else base
    tix = log_path.with_name(log_path.name[:-len(LOG_SUFFIX)] + TIME_INDEX_SUFFIX)
    entries = dump_index(tix).entries if tix.exists() else []
    if progress:
        progress()
    return SegmentView(base, next_offset, records, dump.valid_bytes, min_ts, max_ts, list(entries), ooo)


def inspect_topic(data_dir, topic: str, broker_defaults: dict | None = None, now_ms: int | None = None,
                  show_progress: bool = False) -> TopicView:
    import time
    data_dir = Path(data_dir)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    overrides = _topic_overrides(data_dir, topic)
    cfg = LogConfig.from_props(broker_defaults or {}, overrides)
    try:
        starts = read_checkpoint(data_dir / LOG_START_OFFSET_CHECKPOINT)
    except Exception:
        starts = {}
    dirs = sorted((d for d in data_dir.iterdir()
                   if d.is_dir() and re.fullmatch(re.escape(topic) + r"-(\d+)", d.name)),
                  key=lambda d: int(d.name.rsplit("-", 1)[1]))
    total = sum(len(list(d.glob("*" + LOG_SUFFIX))) for d in dirs)
    done = [0]

    def progress():
        done[0] += 1
        if show_progress:
            print(f"\rinspecting segments {done[0]}/{total}", end="", file=sys.stderr, flush=True)

    parts = []
    for d in dirs:
        p = int(d.name.rsplit("-", 1)[1])
        running_max = [-1 << 63]
        txns, aborted = ProducerStateManager(), [0]
        segs = [_segment(f, running_max, txns, aborted, progress) for f in sorted(d.glob("*" + LOG_SUFFIX))]
        leo = segs[-1].next_offset if segs else 0
        start = max(starts.get((topic, p), 0), segs[0].base_offset if segs else 0)
        unstable = txns.first_unstable_offset
        stable = leo if unstable is None else max(start, min(unstable, leo))  # as the broker's LSO
        parts.append(PartitionView(p, start, leo, segs, _retention(segs, cfg, now_ms, start, leo),
                                   stable, txns.ongoing_transactions(),
                                   aborted[0]))
    if show_progress and total:
        print(file=sys.stderr)
    shown = {k: v for k, v in overrides.items()}
    shown.update({"retention.ms": cfg.retention_ms, "retention.bytes": cfg.retention_bytes,
                  "segment.ms": cfg.segment_ms, "cleanup.policy": ",".join(cfg.cleanup_policy)})
    return TopicView(topic, shown, parts)


def _retention(segs: list[SegmentView], cfg, now_ms: int, lso: int, leo: int) -> dict:
    snaps = [SegmentSnapshot(s.base_offset, s.next_offset, s.size_bytes,
                             s.max_timestamp if s.max_timestamp is not None else now_ms) for s in segs]
    plan = plan_retention(snaps, now_ms=now_ms, config=cfg, log_start_offset=lso, high_watermark=leo)
    out = {"deletable_now": [s.base_offset for s in plan.to_delete], "reason": plan.reason or None,
           "next_time_cut": None}
    remaining = [s for s in snaps if s not in plan.to_delete]
    if cfg.delete and cfg.retention_ms >= 0 and len(remaining) > 1:
        oldest = remaining[0]  # retention never deletes past the first unexpired segment
        out["next_time_cut"] = {"segment": oldest.base_offset, "up_to_offset": remaining[1].base_offset,
                                "at_ms": oldest.largest_timestamp + cfg.retention_ms + 1}
    return out


def render(view: TopicView, entries: bool = False) -> str:
    from datetime import datetime, timezone

    def t(ms):
        if ms is None:
            return "-"
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    lines = [f"topic {view.topic}  " + "  ".join(f"{k}={v}" for k, v in sorted(view.configs.items()))]
    for p in view.partitions:
        lines.append(f"partition {p.partition}: log start offset {p.log_start_offset}, "
                     f"last stable offset {p.last_stable_offset}, "
                     f"log end offset {p.log_end_offset}, {len(p.segments)} segment(s)")
        if p.open_transactions or p.aborted_transactions:
            opened = ", ".join(f"producer {pid} from offset {first}" for pid, first in p.open_transactions)
            lines.append(f"  transactions: {len(p.open_transactions)} open{' (' + opened + ')' if opened else ''}, "
                         f"{p.aborted_transactions} aborted on disk")
        lines.append(f"  {'base offset':>12} {'records':>8} {'bytes':>10} {'min timestamp':>25} "
                     f"{'max timestamp':>25} {'time idx':>8} {'out of order':>12}")
        for s in p.segments:
            lines.append(f"  {s.base_offset:>12} {s.records:>8} {s.size_bytes:>10} {t(s.min_timestamp):>25} "
                         f"{t(s.max_timestamp):>25} {len(s.time_index):>8} {len(s.out_of_order):>12}")
            if entries:
                for ts, off in s.time_index:
                    lines.append(f"      timeindex {t(ts)} ({ts}) -> offset {off}")
        r = p.retention
        if r["deletable_now"]:
            lines.append(f"  retention: segments {r['deletable_now']} are deletable now ({r['reason']})")
        if r["next_time_cut"]:
            c = r["next_time_cut"]
            lines.append(f"  retention: next time cut removes segment {c['segment']} (offsets below "
                         f"{c['up_to_offset']}) at {t(c['at_ms'])}")
        elif not r["deletable_now"]:
            lines.append("  retention: nothing to cut (active segment only, or time retention off)")
    return "\n".join(lines)


def to_json(view: TopicView) -> str:
    return json.dumps(asdict(view), indent=1)
