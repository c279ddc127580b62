"""The reads and writes the console pages need, over the broker's own interfaces.

Every function here calls what the Kafka handlers call (``broker.topics``, the partition logs'
``read`` / ``lookup_timestamp``, the group and transaction coordinators, the authorizer): no
second way into storage. They are plain functions of (broker, arguments) returning plain data,
so the page routes stay thin and the functions are testable without HTTP.

UI-side stopgaps: ``console/model.py`` (the REST v3 half of issue 26) offers the same reads
for ``/v3``; once it has one of these, the pages should call it instead (see the report).

Nothing reads a whole log: records are read a page at a time from an offset found through the
offset or time index, and a filtered scan stops after ``SCAN_LIMIT`` records.
"""
from __future__ import annotations

import base64
import json
import struct
import time
from dataclasses import dataclass, field

from broker.security.acl import AclOperation as Op, ResourceType as RT, CLUSTER_NAME
from protocol.records.batch import peek_magic, read_header
from protocol.records.record import build_batch, decode_batch

PAGE_SIZE = 50
SCAN_LIMIT = 20_000  # records examined per filtered page at most (then "continue" from there)
READ_CHUNK = 1 << 20  # bytes read from a log per step


# ---- authorization ----------------------------------------------------------------------------

def allowed(broker, principal: str | None, op: Op, rt: RT, name: str = CLUSTER_NAME,
            host: str = "127.0.0.1") -> bool:
    """The broker's authorizer answer for the request's principal (always True without ACLs)."""
    az = broker.security.authorizer if broker.security is not None else None
    if az is None or principal is None:
        return True
    return az.authorize(principal, host, op, rt, name, log_denied=True)


# ---- topics -----------------------------------------------------------------------------------

@dataclass
class TopicRow:
    name: str
    partitions: int
    size: int
    cleanup_policy: str
    oldest_ts: int | None  # the first record's timestamp at each partition's log start (min)
    newest_ts: int | None  # the largest record timestamp (max over partitions)
    internal: bool


def visible_topics(broker, principal, query: str = "") -> list[str]:
    """Topic names the principal may DESCRIBE, sorted; ``query`` filters by substring."""
    q = query.strip().lower()
    names = sorted(n for n in broker.topics.topics if not q or q in n.lower())
    return [n for n in names if allowed(broker, principal, Op.DESCRIBE, RT.TOPIC, n)]


def first_timestamp(plog) -> int | None:
    """The timestamp of the first batch at or after the log start offset (one small read)."""
    try:
        res = plog.read(plog.log_start_offset, 1, min_one=True)
    except Exception:
        return None
    data = res.data
    if len(data) < 61:
        return None
    try:
        if peek_magic(data, 0) < 2:
            return None
        h = read_header(data, 0)
    except Exception:
        return None
    return h.base_timestamp if h.base_timestamp >= 0 else None


def newest_timestamp(plog) -> int | None:
    best = None
    for s in plog.segments.values():
        ts = s.largest_record_timestamp
        if ts is not None and ts >= 0 and (best is None or ts > best):
            best = ts
    return best


def topic_row(broker, name: str) -> TopicRow:
    t = broker.topics.get(name)
    size, oldest, newest = 0, None, None
    for p in range(t.partitions):
        plog = broker.topics.log(name, p)
        if plog is None:
            continue
        size += plog.size_in_bytes
        if plog.high_watermark > plog.log_start_offset:
            o, n = first_timestamp(plog), newest_timestamp(plog)
            oldest = o if oldest is None or (o is not None and o < oldest) else oldest
            newest = n if newest is None or (n is not None and n > newest) else newest
    policy = ",".join(broker.topics.log_config(t.configs).cleanup_policy)
    return TopicRow(name, t.partitions, size, policy, oldest, newest, t.internal)


@dataclass
class PartitionRow:
    partition: int
    log_start: int
    hwm: int
    lso: int
    leo: int
    size: int
    segments: int


def partitions(broker, topic: str) -> list[PartitionRow]:
    t = broker.topics.get(topic)
    out = []
    for p in range(t.partitions):
        plog = broker.topics.log(topic, p)
        out.append(PartitionRow(p, plog.log_start_offset, plog.high_watermark, plog.last_stable_offset,
                                plog.log_end_offset, plog.size_in_bytes, plog.num_segments))
    return out


def segment_timeline(broker, topic: str, partition: int, now_ms: int | None = None) -> dict:
    """The partition's segments on a time axis, and where ``retention.ms`` cuts.

    Each segment: base offset, next offset, size, min timestamp (its first batch's, the one
    ``segment.ms`` rolls by) and max timestamp (largest record timestamp), and whether the
    next retention pass deletes it (``storage.retention.plan_retention``, the broker's own
    decision). ``horizon_ms`` = now - retention.ms (None when retention.ms is -1 or the
    policy is compact only); ``next_cut_ms`` = when the oldest non-active segment falls
    behind it."""
    from storage.retention import plan_retention
    plog = broker.topics.log(topic, partition)
    now = broker.clock.now_ms() if now_ms is None else now_ms
    cfg = plog.config
    segs = plog.segments_info()
    plan = plan_retention(plog._snapshots(), now_ms=now, config=cfg, log_start_offset=plog.log_start_offset,
                          high_watermark=plog.high_watermark)
    doomed = {s.base_offset for s in plan.to_delete}
    out = []
    for s, seg in zip(segs, plog.segments.values()):
        mx = s["largest_record_timestamp"]
        mn = segment_first_timestamp(seg) if s["size"] else None
        out.append({
            "base_offset": s["base_offset"], "next_offset": s["next_offset"], "size": s["size"],
            "min_ts": mn if mn is not None and mn >= 0 else None,
            "max_ts": mx if mx is not None and mx >= 0 else None,
            "active": s["active"], "deleted_next": s["base_offset"] in doomed,
            "file": s["log_path"].rsplit("/", 1)[-1],
        })
    horizon = next_cut = None
    if cfg.delete and cfg.retention_ms >= 0:
        horizon = now - cfg.retention_ms
        for s in out:
            if not s["active"] and s["max_ts"] is not None and not s["deleted_next"]:
                next_cut = s["max_ts"] + cfg.retention_ms
                break
    return {"segments": out, "horizon_ms": horizon, "next_cut_ms": next_cut, "now_ms": now,
            "retention_ms": cfg.retention_ms, "log_start": plog.log_start_offset}


def segment_first_timestamp(seg) -> int | None:
    """The first record's timestamp in a segment, from its first batch header (one small read):
    the base timestamp, or the max timestamp of a LogAppendTime batch."""
    for _pos, h in seg.iter_headers(0):
        ts = h.max_timestamp if h.timestamp_type else h.base_timestamp
        return ts if ts >= 0 else None
    return None


def topic_configs(broker, topic: str) -> list[dict]:
    from broker.handlers.describe_configs import topic_config_entries
    t = broker.topics.get(topic)
    return [{"name": n, "value": None if sensitive else v, "source": src, "read_only": ro, "sensitive": sensitive,
             "doc": doc}
            for (n, v, src, ro, sensitive, _syn, _typ, doc) in
            topic_config_entries(broker.topics.broker_defaults, t.configs)]


def alter_topic_configs(broker, topic: str, changes: dict[str, str | None]) -> None:
    """Set (value) or delete (None) overrides, as IncrementalAlterConfigs SET/DELETE does."""
    from broker.handlers.alter_configs import apply_topic_configs
    t = broker.topics.get(topic)
    new = dict(t.configs)
    for k, v in changes.items():
        if v is None:
            new.pop(k, None)
        else:
            new[k] = v
    apply_topic_configs(broker, topic, new, validate_only=False)


# ---- records ----------------------------------------------------------------------------------

@dataclass
class Rec:
    partition: int
    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: list


def _decode_chunk(data: bytes, partition: int):
    pos, n = 0, len(data)
    while pos + 61 <= n:
        if peek_magic(data, pos) < 2:
            from protocol.records.legacy import decode_message_set
            for m in decode_message_set(data[pos:], verify_crc=False):
                yield Rec(partition, m.offset, m.timestamp, "LogAppendTime" if m.timestamp_type else "CreateTime",
                          m.key, m.value, [])
            return
        h = read_header(data, pos)
        if pos + h.size > n:
            return
        if not h.is_control:
            _, records = decode_batch(data, pos, verify_crc=False)
            tt = "LogAppendTime" if h.timestamp_type else "CreateTime"
            for r in records:
                yield Rec(partition, r.offset, r.timestamp, tt, r.key, r.value, list(r.headers or []))
        pos += h.size


def iter_partition(plog, start: int, partition: int, limit: int):
    """Records from offset ``start`` (never earlier) up to the HWM, at most ``limit``, read a
    chunk at a time."""
    off = max(start, plog.log_start_offset)
    seen = 0
    while seen < limit and off < plog.high_watermark:
        res = plog.read(off, READ_CHUNK, min_one=True)
        data = res.data
        if not data:
            return
        last = off
        for r in _decode_chunk(data, partition):
            if r.offset < off:
                continue  # the batch holding ``off`` starts earlier: no earlier record is shown
            yield r
            last = r.offset
            seen += 1
            if seen >= limit:
                return
        # step past the chunk: the last batch's end (compaction may leave gaps)
        nxt = _chunk_end(data)
        off = max(last + 1, nxt if nxt is not None else last + 1)


def _chunk_end(data: bytes) -> int | None:
    pos, end = 0, None
    while pos + 61 <= len(data):
        if peek_magic(data, pos) < 2:
            return None
        h = read_header(data, pos)
        if pos + h.size > len(data):
            break
        end = h.last_offset + 1
        pos += h.size
    return end


def parse_time(text: str | None) -> int | None:
    """Epoch milliseconds from ``1700000000000`` or an ISO-8601 date-time (UTC unless it says
    otherwise; a datetime-local picker's ``2024-05-01T10:03`` is UTC)."""
    if text is None or not str(text).strip():
        return None
    s = str(text).strip()
    if s.lstrip("-").isdigit():
        return int(s)
    from datetime import datetime, timezone
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    dt = datetime.fromisoformat(s)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def start_offsets(broker, topic: str, parts: list[int], *, mode: str, ts: int | None = None,
                  offset: int | None = None, page_size: int = PAGE_SIZE) -> dict[int, int]:
    """Where each partition's page starts: ``beginning`` (log start), ``end`` (the last
    ``page_size`` records before the HWM), ``offset`` (clamped into the log), ``time`` (the
    offsets-for-times answer: first offset whose timestamp >= ts; the HWM when none)."""
    out = {}
    for p in parts:
        plog = broker.topics.log(topic, p)
        lo, hi = plog.log_start_offset, plog.high_watermark
        if mode == "time":
            hit = plog.lookup_timestamp(ts)
            out[p] = hi if hit is None else hit.offset
        elif mode == "offset":
            out[p] = min(max(offset or 0, lo), hi)
        elif mode == "end":
            out[p] = max(lo, hi - page_size)
        else:
            out[p] = lo
    return out


def _matches(r: Rec, needle: str) -> bool:
    n = needle.encode()
    return (r.key is not None and n in r.key) or (r.value is not None and n in r.value)


@dataclass
class RecordPage:
    records: list[Rec]
    next_positions: dict[int, int]  # partition -> offset to continue from
    scanned: int
    exhausted: bool  # every partition reached its HWM
    hwms: dict[int, int] = field(default_factory=dict)


def read_page(broker, topic: str, positions: dict[int, int], *, page_size: int = PAGE_SIZE,
              needle: str = "") -> RecordPage:
    """One page of records from ``positions`` (partition -> first offset), merged across
    partitions by (timestamp, partition, offset); with ``needle``, only records whose key or
    value contains it, scanning at most ``SCAN_LIMIT`` records."""
    per_part: dict[int, list[Rec]] = {}
    scanned = 0
    nxt = dict(positions)
    hwms = {}
    budget = SCAN_LIMIT if needle else page_size
    for p, start in positions.items():
        plog = broker.topics.log(topic, p)
        hwms[p] = plog.high_watermark
        got = []
        for r in iter_partition(plog, start, p, budget):
            scanned += 1
            nxt[p] = r.offset + 1
            if needle and not _matches(r, needle):
                continue
            got.append(r)
            if len(got) >= page_size:
                break
        if needle and len(got) < page_size and nxt[p] < plog.high_watermark and scanned >= budget:
            pass  # budget spent: the page says where the scan stopped
        per_part[p] = got
    merged = sorted((r for rs in per_part.values() for r in rs), key=lambda r: (r.timestamp, r.partition, r.offset))
    page = merged[:page_size]
    # continue each partition right after the last record of it that made the page
    if len(merged) > page_size:
        for p in per_part:
            shown = [r.offset for r in page if r.partition == p]
            if shown:
                nxt[p] = shown[-1] + 1
            else:
                nxt[p] = positions[p]
    exhausted = all(nxt[p] >= hwms[p] for p in positions)
    return RecordPage(page, nxt, scanned, exhausted, hwms)


def render_bytes(data: bytes | None, fmt: str = "auto") -> tuple[str, str]:
    """(shown text, the format used): UTF-8, JSON pretty-printed, or hex."""
    if data is None:
        return "null", "null"
    if fmt == "hex":
        return data.hex(" "), "hex"
    if fmt == "base64":
        return base64.b64encode(data).decode(), "base64"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data.hex(" "), "hex"
    if fmt in ("auto", "json"):
        s = text.strip()
        if s[:1] in ("{", "[") or fmt == "json":
            try:
                return json.dumps(json.loads(s), indent=2, ensure_ascii=False), "json"
            except ValueError:
                pass
    return text, "utf8"


def encode_positions(pos: dict[int, int]) -> str:
    return ",".join(f"{p}:{o}" for p, o in sorted(pos.items()))


def decode_positions(text: str) -> dict[int, int]:
    out = {}
    for part in text.split(","):
        if ":" in part:
            p, o = part.split(":", 1)
            out[int(p)] = int(o)
    return out


# ---- produce ----------------------------------------------------------------------------------

def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the default partitioner's hash for keyed records)."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = struct.unpack_from("<I", data, i)[0]
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    tail = length - rest
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def partition_for_key(key: bytes | None, partitions: int) -> int:
    if key is None:
        return 0
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def produce(broker, topic: str, partition: int | None, key: bytes | None, value: bytes | None,
            headers: list[tuple[str, bytes]], timestamp: int | None) -> tuple[int, int]:
    """Append one record as a Produce request would (the log's validation, timestamp type and
    the per-topic metrics); returns (partition, offset). Raises the storage error on refusal."""
    t = broker.topics.get(topic)
    if partition is None:
        partition = partition_for_key(key, t.partitions)
    plog = broker.topics.log(topic, partition)
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    batch = build_batch([(key, value, ts, headers)])
    info = plog.append(batch, from_client=True, partition_leader_epoch=0)
    broker.metrics.bytes_in[topic] += len(batch)
    broker.metrics.records_in[topic] += info.record_count
    return partition, info.base_offset


# ---- groups -----------------------------------------------------------------------------------

@dataclass
class GroupRow:
    group_id: str
    type: str  # classic | consumer | share
    state: str
    protocol_type: str
    members: int


def list_groups(broker, principal) -> list[GroupRow]:
    out = []
    g = broker.groups
    if g is not None:
        _, overviews = g.handle_list_groups()
        for ov in overviews:
            grp = g.groups.get(ov.group_id)
            n = len(grp.members) if grp is not None and hasattr(grp, "members") else 0
            out.append(GroupRow(ov.group_id, ov.group_type, ov.state, ov.protocol_type, n))
    sg = getattr(broker, "share_groups", None)
    if sg is not None:
        for gid, grp in sg.groups.items():
            out.append(GroupRow(gid, "share", grp.state, "share", len(grp.members)))
    return sorted((r for r in out if allowed(broker, principal, Op.DESCRIBE, RT.GROUP, r.group_id)),
                  key=lambda r: r.group_id)


def _consumer_assignment(data: bytes) -> list[tuple[str, list[int]]]:
    """ConsumerProtocolAssignment: version int16, [topic string, [partition int32]], user data."""
    try:
        pos = 2
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out = []
        for _ in range(max(n, 0)):
            (ln,) = struct.unpack_from(">h", data, pos)
            pos += 2
            name = data[pos:pos + ln].decode()
            pos += ln
            (k,) = struct.unpack_from(">i", data, pos)
            pos += 4
            parts = list(struct.unpack_from(f">{k}i", data, pos)) if k > 0 else []
            pos += 4 * max(k, 0)
            out.append((name, parts))
        return out
    except (struct.error, UnicodeDecodeError):
        return []


def describe_group(broker, group_id: str) -> dict | None:
    """Type, state, members with their assignments, and per-partition committed offsets and lag."""
    g = broker.groups
    grp = g.groups.get(group_id) if g is not None else None
    members = []
    if grp is not None:
        from broker.groups.consumer_group import ConsumerGroup
        if isinstance(grp, ConsumerGroup):
            gtype, state = "consumer", str(grp.state)
            for d in g.handle_consumer_group_describe([group_id])[0].members or []:
                members.append({"member_id": d.member_id, "client_id": d.client_id, "host": d.client_host,
                                "assignment": [(name, ps) for _tid, name, ps in d.assignment]})
        else:
            gtype, state = "classic", str(grp.state)
            _, summary = g.handle_describe_group(group_id)
            for m in summary.members:
                members.append({"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                                "assignment": _consumer_assignment(m.assignment)})
        offsets = committed_offsets(broker, group_id)
    else:
        sg = getattr(broker, "share_groups", None)
        sgrp = sg.groups.get(group_id) if sg is not None else None
        if sgrp is None:
            return None
        gtype, state = "share", sgrp.state
        for m in sgrp.members.values():
            members.append({"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                            "assignment": [(broker.topics.by_id(tid).name, sorted(ps))
                                           for tid, ps in m.assignment.items() if broker.topics.by_id(tid)]})
        offsets = {}
        for (tid, p), start in sg.start_offsets(group_id).items():
            t = broker.topics.by_id(tid)
            if t is not None:
                offsets[(t.name, p)] = start
    lags = []
    for (topic, p), off in sorted(offsets.items()):
        plog = broker.topics.log(topic, p)
        if plog is None:
            continue
        hwm = plog.high_watermark
        lags.append({"topic": topic, "partition": p, "committed": off, "end": hwm,
                     "lag": max(hwm - off, 0) if off >= 0 else hwm - plog.log_start_offset})
    return {"group_id": group_id, "type": gtype, "state": state, "members": members, "lags": lags}


def committed_offsets(broker, group_id: str) -> dict[tuple[str, int], int]:
    err, offs = broker.groups.handle_fetch_offsets(group_id)
    if err:
        return {}
    return {tp: o[0] for tp, o in offs.items() if o[0] >= 0}


def plan_reset_to_time(broker, group_id: str, ts: int) -> list[dict]:
    """The offsets a reset to ``ts`` sets, per partition the group has committed (as
    kafka-consumer-groups --reset-offsets --to-datetime: the offsets-for-times answer, the
    log end offset when no record is that late)."""
    out = []
    for (topic, p), cur in sorted(committed_offsets(broker, group_id).items()):
        plog = broker.topics.log(topic, p)
        if plog is None:
            continue
        hit = plog.lookup_timestamp(ts)
        new = plog.log_end_offset if hit is None else hit.offset
        out.append({"topic": topic, "partition": p, "current": cur, "new": new})
    return out


def execute_reset(broker, group_id: str, plan: list[dict]) -> dict:
    """Commit the planned offsets as an admin client would (no member, generation -1); Kafka
    refuses while the group has members."""
    from broker.groups.group import OffsetAndMetadata
    now = broker.clock.now_ms()
    offsets = {(r["topic"], r["partition"]): OffsetAndMetadata(r["new"], -1, "", now, None) for r in plan}
    return broker.groups.handle_commit_offsets(group_id, "", None, -1, offsets)


# ---- transactions -----------------------------------------------------------------------------

def open_transactions(broker) -> list[dict]:
    """Ongoing transactions with, per partition, the LSO they hold back below the HWM."""
    txn = broker.txn
    if txn is None:
        return []
    err, _unknown, listed = txn.handle_list()
    out = []
    for tid, pid, state in listed:
        d = txn.handle_describe(tid)
        if d.error or d.state not in ("Ongoing", "PrepareCommit", "PrepareAbort"):
            continue
        parts = []
        for topic, p in d.partitions:
            plog = broker.topics.log(topic, p)
            if plog is None:
                continue
            first = next((f for q, f, _l in plog.ongoing_transactions() if q == d.producer_id), None)
            parts.append({"topic": topic, "partition": p, "first_offset": first, "lso": plog.last_stable_offset,
                          "hwm": plog.high_watermark, "held": plog.high_watermark - plog.last_stable_offset})
        out.append({"transactional_id": tid, "producer_id": d.producer_id, "epoch": d.producer_epoch,
                    "state": d.state, "start_ms": d.start_time_ms, "timeout_ms": d.timeout_ms, "partitions": parts})
    return out


# ---- security ---------------------------------------------------------------------------------

def acls(broker) -> list[dict] | None:
    az = broker.security.authorizer if broker.security is not None else None
    if az is None:
        return None
    from broker.security.acl import ANY_FILTER
    return [{"resource_type": b.pattern.resource_type.name, "name": b.pattern.name,
             "pattern": b.pattern.pattern_type.name, "principal": b.entry.principal, "host": b.entry.host,
             "operation": b.entry.operation.name, "permission": b.entry.permission.name}
            for b in az.acls(ANY_FILTER)]


def scram_users(broker) -> list[dict]:
    """User names, mechanisms and iteration counts; never salts or keys."""
    store = broker.security.scram if broker.security is not None else None
    if store is None:
        return []
    return [{"user": u, "mechanisms": [(m.mechanism_name, c.iterations) for m, c in sorted(creds.items())]}
            for u, creds in sorted(store.users.items())]
