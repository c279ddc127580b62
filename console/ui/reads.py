"""Small pure helpers of the pages, and the one read ``console.model`` does not offer yet.

Everything that touches topics, records, groups, transactions or ACLs goes through
``console.model`` (the broker's Kafka API handlers). What is left here:

- ``allowed``: the broker's authorizer, asked directly, for a page's entry check (so the
  denial page can say which operation on which resource is missing);
- ``topic_row``: the topics page's summary (size, cleanup policy, time span) for just the
  topics one page shows (``model.topic_summaries`` computes it for every topic; with 1000
  topics the page only needs 50): UI-side until the model takes a list of names;
- parsing and rendering: times, record bytes, positions in links.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from broker.security.acl import AclOperation as Op, ResourceType as RT, CLUSTER_NAME
from protocol.records.batch import peek_magic, read_header


def allowed(broker, principal: str | None, op: Op, rt: RT, name: str = CLUSTER_NAME,
            host: str = "127.0.0.1") -> bool:
    """The broker's authorizer answer for the request's principal (always True without ACLs)."""
    az = broker.security.authorizer if broker.security is not None else None
    if az is None or principal is None:
        return True
    return az.authorize(principal, host, op, rt, name, log_denied=True)


# ---- the topics page's rows -------------------------------------------------------------------

@dataclass
class TopicRow:
    name: str
    partitions: int
    size: int
    cleanup_policy: str
    oldest_ts: int | None  # the first record's timestamp at each partition's log start (min)
    newest_ts: int | None  # the largest record timestamp (max over partitions)
    internal: bool


def first_timestamp(plog) -> int | None:
    """The timestamp of the first batch at or after the log start offset (one small read of
    the partition, as a Fetch of the log start would)."""
    try:
        data = plog.read(plog.log_start_offset, 1, min_one=True).data
        if len(data) < 61 or peek_magic(data, 0) < 2:
            return None
        h = read_header(data, 0)
    except Exception:  # a partition deleted or truncated under us: no span
        return None
    ts = h.max_timestamp if h.timestamp_type else h.base_timestamp
    return ts if ts >= 0 else None


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


# ---- parsing and rendering --------------------------------------------------------------------

def parse_time(text: str | None) -> int | None:
    """Epoch milliseconds from ``1700000000000`` or an ISO-8601 date-time (UTC unless it says
    otherwise; a datetime-local picker's ``2024-05-01T10:03`` is taken as UTC)."""
    if text is None or not str(text).strip():
        return None
    s = str(text).strip()
    if s.lstrip("-").isdigit():
        return int(s)
    from datetime import datetime, timedelta, timezone
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    dt = datetime.fromisoformat(s)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    # integer arithmetic: a float timestamp would lose the last millisecond
    return (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)


def render_bytes(data: bytes | None, fmt: str = "auto") -> tuple[str, str]:
    """(shown text, the format used): UTF-8, JSON pretty-printed, or hex (bytes that are not
    UTF-8 always show as hex)."""
    if data is None:
        return "null", "null"
    if fmt == "hex":
        return data.hex(" "), "hex"
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
    """``{0: 12, 1: 40}`` -> ``0:12,1:40`` (where each partition's next page starts)."""
    return ",".join(f"{p}:{o}" for p, o in sorted(pos.items()))


def decode_positions(text: str) -> dict[int, int]:
    out = {}
    for part in text.split(","):
        if not part:
            continue
        p, sep, o = part.partition(":")
        try:
            if not sep or int(p) < 0 or int(o) < 0:
                raise ValueError
            out[int(p)] = int(o)
        except ValueError:
            raise ValueError(f"bad position {part!r}: expected partition:offset") from None
    return out
