"""``hourglass offsets|produce|consume``: everyday client conveniences over the wire (through
confluent-kafka, so they work against any Kafka-compatible broker).

Times are ISO-8601 (``2026-11-22T10:00:00Z``; no zone = UTC) or epoch milliseconds; offsets
for a time follow KIP-33: the first offset whose timestamp is >= the time, -1 when none.
Consume formats follow kcat's ``-f``: %t topic, %p partition, %o offset, %k key, %v (or %s)
value, %T timestamp ms, %h headers (k=v,k=v), %S value size, \\n \\t escapes.
"""
from __future__ import annotations

import re
import sys

DEFAULT_BOOTSTRAP = "localhost:9092"
EARLIEST, LATEST = -2, -1


class UsageError(ValueError):
    pass


def parse_time(text: str) -> int:
    """Epoch ms from ``earliest``/``latest`` (as -2/-1), digits, or ISO-8601."""
    t = text.strip()
    if t in ("earliest", "beginning"):
        return EARLIEST
    if t in ("latest", "end"):
        return LATEST
    if re.fullmatch(r"\d+", t):
        return int(t)
    from datetime import datetime, timezone  # here: this module is imported by every `hourglass` start
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"cannot read time {text!r}: use ISO-8601 (2026-11-22T10:00:00Z) or epoch ms") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def add_parsers(sub) -> None:
    o = sub.add_parser("offsets", help="offset per partition for a time (ListOffsets), or earliest/latest")
    o.add_argument("topic")
    o.add_argument("--at", required=True, metavar="TIME", help="ISO-8601, epoch ms, earliest or latest")
    o.add_argument("--json", action="store_true")
    _common(o)
    p = sub.add_parser("produce", help="produce lines from stdin (one record per line)")
    p.add_argument("topic")
    p.add_argument("-p", "--partition", type=int, default=-1)
    p.add_argument("-K", dest="key_delim", metavar="DELIM", help="split each line into key DELIM value")
    p.add_argument("-T", dest="ts_delim", metavar="DELIM", help="each line starts with a timestamp (ms) and DELIM")
    p.add_argument("--timestamp", type=int, help="CreateTime (ms) for every record")
    p.add_argument("-H", dest="headers", action="append", default=[], metavar="KEY=VALUE", help="header (repeatable)")
    p.add_argument("-z", "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    _common(p)
    c = sub.add_parser("consume", help="print records (manual assignment, no consumer group)")
    c.add_argument("topic")
    c.add_argument("-p", "--partition", type=int, action="append", help="partition (repeatable; default all)")
    start = c.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true")
    start.add_argument("--offset", type=int)
    start.add_argument("--at", metavar="TIME", help="start at the first record with timestamp >= TIME")
    c.add_argument("-f", "--format", default="%v\\n", help="kcat-like format (default '%%v\\n')")
    c.add_argument("-e", "--exit-at-end", action="store_true", help="exit at the end of every partition")
    c.add_argument("-c", "--count", type=int, help="exit after N records")
    _common(c)


def _common(p) -> None:
    p.add_argument("-b", "--bootstrap-server", default=DEFAULT_BOOTSTRAP, help=f"default {DEFAULT_BOOTSTRAP}")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the broker")
    from hourglass.cli import client_properties
    client_properties.add_option(p)


def _partitions(client, topic: str, timeout: float) -> list[int]:
    md = client.list_topics(topic, timeout=timeout)
    t = md.topics.get(topic)
    if t is None or t.error is not None or not t.partitions:
        raise RuntimeError(f"topic {topic!r} not found" + (f": {t.error}" if t is not None and t.error else ""))
    return sorted(t.partitions)


def _consumer(args, **extra):
    from confluent_kafka import Consumer
    from hourglass.cli import client_properties
    extra = {**client_properties.librdkafka(args, consumer=True), **extra}
    return Consumer({"bootstrap.servers": args.bootstrap_server, "group.id": "hourglass-cli",
                     "enable.auto.commit": False, "socket.timeout.ms": int(args.timeout * 1000), **extra})


def offsets_for(consumer, topic: str, parts: list[int], at: int, timeout: float) -> dict[int, int]:
    from confluent_kafka import TopicPartition
    if at in (EARLIEST, LATEST):
        out = {}
        for p in parts:
            lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            out[p] = lo if at == EARLIEST else hi
        return out
    res = consumer.offsets_for_times([TopicPartition(topic, p, at) for p in parts], timeout=timeout)
    for r in res:
        if r.error is not None:
            raise RuntimeError(f"partition {r.partition}: {r.error}")
    return {r.partition: r.offset for r in res}


def run_offsets(args, out=sys.stdout) -> int:
    import json
    at = parse_time(args.at)
    c = _consumer(args)
    try:
        parts = _partitions(c, args.topic, args.timeout)
        offs = offsets_for(c, args.topic, parts, at, args.timeout)
    finally:
        c.close()
    if args.json:
        print(json.dumps({"topic": args.topic, "at": at, "offsets": {str(p): o for p, o in offs.items()}}), file=out)
    else:
        print(f"{'partition':>9}  offset", file=out)
        for p, o in offs.items():
            print(f"{p:>9}  {o}" + ("  (no record at or after this time)" if o < 0 and at >= 0 else ""), file=out)
    return 0


def run_produce(args, inp=None, out=sys.stdout) -> int:
    from confluent_kafka import Producer
    inp = inp or sys.stdin.buffer
    headers = []
    for h in args.headers:
        if "=" not in h:
            raise UsageError(f"header {h!r} is not KEY=VALUE")
        k, v = h.split("=", 1)
        headers.append((k, v.encode()))
    errors, n = [], 0
    from hourglass.cli import client_properties
    p = Producer({**client_properties.librdkafka(args), "bootstrap.servers": args.bootstrap_server,
                  "compression.type": args.compression,
                  "message.timeout.ms": int(args.timeout * 1000)})
    kd = args.key_delim.encode() if args.key_delim else None
    td = args.ts_delim.encode() if args.ts_delim else None
    for raw in inp:
        line = raw.rstrip(b"\n")
        ts = args.timestamp
        if td is not None:
            head, sep, line = line.partition(td)
            if not sep or not head.strip().isdigit():
                raise UsageError(f"line {n + 1}: no timestamp before {args.ts_delim!r}")
            ts = int(head)
        key = None
        if kd is not None:
            key, sep, line = line.partition(kd)
            if not sep:
                key, line = None, key
        kw = {"timestamp": ts} if ts is not None else {}
        if args.partition >= 0:
            kw["partition"] = args.partition
        p.produce(args.topic, value=line, key=key, headers=headers or None,
                  on_delivery=lambda err, msg: err is not None and errors.append(err), **kw)
        p.poll(0)
        n += 1
    left = p.flush(args.timeout)
    if errors or left:
        print(f"hourglass produce: {len(errors) + left} of {n} record(s) failed: "
              f"{errors[0] if errors else 'timed out'}", file=sys.stderr)
        return 1
    print(f"produced {n} record(s) to {args.topic}", file=sys.stderr)
    return 0


_TOKEN = re.compile(r"%[tpokvsThS%]")


def format_record(fmt: str, m) -> bytes:
    fmt = fmt.replace("\\n", "\n").replace("\\t", "\t")

    def tok(t: str) -> bytes:
        if t == "%t":
            return m.topic().encode()
        if t == "%p":
            return str(m.partition()).encode()
        if t == "%o":
            return str(m.offset()).encode()
        if t == "%k":
            return m.key() or b""
        if t in ("%v", "%s"):
            return m.value() or b""
        if t == "%S":
            return str(len(m.value() or b"")).encode()
        if t == "%T":
            return str(m.timestamp()[1]).encode()
        if t == "%h":
            return b",".join(k.encode() + b"=" + (v or b"") for k, v in (m.headers() or []))
        return b"%"
    out, pos = [], 0
    for mt in _TOKEN.finditer(fmt):
        out.append(fmt[pos:mt.start()].encode())
        out.append(tok(mt.group()))
        pos = mt.end()
    out.append(fmt[pos:].encode())
    return b"".join(out)


def run_consume(args, out=None) -> int:
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaError, TopicPartition
    out = out or sys.stdout.buffer
    c = _consumer(args, **{"enable.partition.eof": True})
    try:
        parts = args.partition or _partitions(c, args.topic, args.timeout)
        if args.at is not None:
            starts = offsets_for(c, args.topic, parts, parse_time(args.at), args.timeout)
            starts = {p: (o if o >= 0 else OFFSET_END) for p, o in starts.items()}
        elif args.offset is not None:
            starts = {p: args.offset for p in parts}
        else:
            starts = {p: OFFSET_BEGINNING if args.from_beginning else OFFSET_END for p in parts}
        c.assign([TopicPartition(args.topic, p, o) for p, o in starts.items()])
        at_end: set[int] = set()
        n = 0
        while True:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                    if args.exit_at_end and at_end >= set(parts):
                        return 0
                    continue
                print(f"hourglass consume: {m.error()}", file=sys.stderr)
                return 1
            at_end.discard(m.partition())
            out.write(format_record(args.format, m))
            out.flush()
            n += 1
            if args.count is not None and n >= args.count:
                return 0
    except KeyboardInterrupt:
        return 0
    finally:
        c.close()
