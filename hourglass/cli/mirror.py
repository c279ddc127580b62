"""``hourglass mirror-config``: a ready MirrorMaker 2 configuration for moving off Hourglass.

    hourglass mirror-config --target-bootstrap kafka1:9092,kafka2:9092 \\
        [-b localhost:9092] [--command-config hourglass-client.properties] \\
        [--target-command-config kafka-client.properties] [--topics 'orders|payments.*'] \\
        [--groups '.*'] [--replication-factor 3] [-o mm2.properties]

writes an ``mm2.properties`` for MirrorMaker 2's dedicated mode
(``connect-mirror-maker.sh mm2.properties``) with one flow, ``hourglass->kafka``:

- topic names are kept (``IdentityReplicationPolicy``): clients moved to the target find the
  topics under the names they know, and consumer group offsets are translated onto them;
- consumer group offsets are checkpointed and written into the target's groups
  (``sync.group.offsets.enabled``) every few seconds, and every record gets an offset sync
  (``offset.lag.max=0``) so a translated offset is exact, not rounded down to the last sync;
- topic configs are copied (``sync.topic.configs.enabled``), and record timestamps travel with
  the records (MirrorMaker 2 produces each record with its source timestamp);
- MirrorMaker's own bookkeeping (offset syncs, checkpoints, heartbeats, its Connect internal
  topics) lives on the target, so Hourglass is only read from;
- each cluster's client security settings (a Java client's ``client.properties``, as
  ``--command-config`` takes them for Kafka's tools) are copied under the cluster's alias:
  ``security.protocol=SASL_SSL`` becomes ``hourglass.security.protocol=SASL_SSL``.

The decisions are in ``mm2_properties`` (pure); the command only reads the client files and
writes the result.
"""
from __future__ import annotations

import sys
from pathlib import Path

IDENTITY_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"

# the keys of a client.properties that belong to a cluster's connection, not to one client
_CLIENT_PREFIXES = ("security.", "sasl.", "ssl.")
_CLIENT_KEYS = {"client.dns.lookup", "request.timeout.ms", "socket.connection.setup.timeout.ms",
                "socket.connection.setup.timeout.max.ms", "metadata.max.age.ms", "connections.max.idle.ms"}


class MirrorConfigError(ValueError):
    pass


def cluster_settings(props: dict[str, str]) -> dict[str, str]:
    """The connection settings of a ``client.properties``: security, SASL, TLS and timeouts.
    ``bootstrap.servers`` is left out (it comes from the command line)."""
    return {k: v for k, v in props.items() if k.startswith(_CLIENT_PREFIXES) or k in _CLIENT_KEYS}


def mm2_properties(*, source_bootstrap: str, target_bootstrap: str, source_alias: str = "hourglass",
                   target_alias: str = "kafka", source_client: dict[str, str] | None = None,
                   target_client: dict[str, str] | None = None, topics: str = ".*", groups: str = ".*",
                   replication_factor: int = 3, sync_interval_s: int = 5, keep_topic_names: bool = True,
                   exactly_once: bool = False) -> dict[str, str]:
    """MirrorMaker 2's dedicated-mode properties for one flow ``source_alias->target_alias``.

    Invariant: only the one flow is enabled and nothing is written to the source cluster
    (offset syncs on the target, no heartbeats from the reverse flow)."""
    if not source_alias.isidentifier() or not target_alias.isidentifier() or source_alias == target_alias:
        raise MirrorConfigError(f"cluster aliases must be two different names: {source_alias!r}, {target_alias!r}")
    if replication_factor < 1:
        raise MirrorConfigError(f"replication factor must be at least 1, not {replication_factor}")
    s, t = source_alias, target_alias
    flow, back = f"{s}->{t}", f"{t}->{s}"
    rf = str(replication_factor)
    props: dict[str, str] = {
        "clusters": f"{s}, {t}",
        f"{s}.bootstrap.servers": source_bootstrap,
        f"{t}.bootstrap.servers": target_bootstrap,
    }
    for alias, client in ((s, source_client), (t, target_client)):
        for k, v in sorted(cluster_settings(client or {}).items()):
            props[f"{alias}.{k}"] = v
    props.update({
        f"{flow}.enabled": "true",
        f"{flow}.topics": topics,
        f"{flow}.groups": groups,
        f"{back}.enabled": "false",
        f"{back}.emit.heartbeats.enabled": "false",
    })
    if keep_topic_names:
        props["replication.policy.class"] = IDENTITY_POLICY
    props.update({
        # topic configs follow the topics; partitions added on the source are added on the target
        "sync.topic.configs.enabled": "true",
        "refresh.topics.interval.seconds": "10",
        "refresh.groups.interval.seconds": "10",
        # consumer group positions: checkpointed and written into the target's (inactive) groups
        "emit.checkpoints.enabled": "true",
        "emit.checkpoints.interval.seconds": str(sync_interval_s),
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": str(sync_interval_s),
        # an offset sync for every record: a group's offset translates exactly, not to an
        # earlier synced offset (which would make the moved group read records again)
        "offset.lag.max": "0",
        # MirrorMaker's bookkeeping on the target: Hourglass is only read from
        "offset-syncs.topic.location": "target",
        # the target's replication for the mirrored topics and MirrorMaker's own
        "replication.factor": rf,
        "offset-syncs.topic.replication.factor": rf,
        "checkpoints.topic.replication.factor": rf,
        "heartbeats.topic.replication.factor": rf,
        "config.storage.replication.factor": rf,
        "offset.storage.replication.factor": rf,
        "status.storage.replication.factor": rf,
        # one worker: its tasks
        "tasks.max": "4",
    })
    # the copy's offset syncs leave when the worker commits its source offsets (MirrorSourceTask
    # sends them on commit), every 60 s by default: a group's position would reach the target a
    # minute late whatever the sync interval. A worker setting: dedicated mode takes it under the
    # target's alias (MirrorMakerConfig.workerConfig), not at the top level.
    props[f"{t}.offset.flush.interval.ms"] = str(sync_interval_s * 1000)
    if exactly_once:
        props[f"{t}.exactly.once.source.support"] = "enabled"
    return props


def render(props: dict[str, str]) -> str:
    head = ("# MirrorMaker 2 (dedicated mode): connect-mirror-maker.sh mm2.properties\n"
            "# written by `hourglass mirror-config`; see README \"Outgrowing one machine\"\n")
    # Java properties: backslashes escaped
    return head + "".join(f"{k} = {v.replace(chr(92), chr(92) * 2)}\n" for k, v in props.items())


def add_parser(subparsers):
    p = subparsers.add_parser("mirror-config", help="write a MirrorMaker 2 configuration that copies this broker's "
                                                   "topics, configs and consumer group offsets to a Kafka cluster")
    p.add_argument("-b", "--bootstrap-server", default="localhost:9092", help="the Hourglass broker (source)")
    p.add_argument("--command-config", metavar="FILE", help="the Hourglass broker's client properties "
                                                            "(security.protocol, sasl.*, ssl.*)")
    p.add_argument("--target-bootstrap", required=True, help="the Kafka cluster to move to")
    p.add_argument("--target-command-config", metavar="FILE", help="the target cluster's client properties")
    p.add_argument("--source-alias", default="hourglass")
    p.add_argument("--target-alias", default="kafka")
    p.add_argument("--topics", default=".*", help="topics to copy (a regex list, MirrorMaker's syntax)")
    p.add_argument("--groups", default=".*", help="consumer groups whose offsets move (regex list)")
    p.add_argument("--replication-factor", type=int, default=3, help="on the target (default 3)")
    p.add_argument("--sync-interval", type=int, default=5, metavar="SECONDS",
                   help="how often group offsets are checkpointed and synced (default 5)")
    p.add_argument("--prefix-topics", action="store_true",
                   help="name copies <source-alias>.<topic> (MirrorMaker's default) instead of keeping names")
    p.add_argument("--exactly-once", action="store_true",
                   help="copy with exactly-once source support (KIP-618) on the target's Connect workers")
    p.add_argument("-o", "--output", help="write here (default: stdout)")
    return p


def run(args, out=None) -> int:
    from hourglass.cli import client_properties
    out = out or sys.stdout
    try:
        source_client = client_properties.read(args.command_config) if args.command_config else {}
        target_client = client_properties.read(args.target_command_config) if args.target_command_config else {}
        props = mm2_properties(source_bootstrap=args.bootstrap_server, target_bootstrap=args.target_bootstrap,
                               source_alias=args.source_alias, target_alias=args.target_alias,
                               source_client=source_client, target_client=target_client, topics=args.topics,
                               groups=args.groups, replication_factor=args.replication_factor,
                               sync_interval_s=args.sync_interval, keep_topic_names=not args.prefix_topics,
                               exactly_once=args.exactly_once)
    except (client_properties.ClientPropertiesError, MirrorConfigError) as exc:
        print(f"hourglass: {exc}", file=sys.stderr)
        return 2
    text = render(props)
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}: {args.source_alias}->{args.target_alias} "
              f"({args.bootstrap_server} -> {args.target_bootstrap})", file=sys.stderr)
    else:
        out.write(text)
    return 0


# ---------------------------------------------------------------------- the way in: a time window


def window_bounds(start_offsets: dict[int, int], stop_offsets: dict[int, int], ends: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Per partition the offsets ``[first, stop)`` of a time window, from offsets-for-times.

    ``start_offsets[p]``: the first offset with timestamp >= since (-1: none, the window is empty);
    ``stop_offsets[p]``: the first offset with timestamp >= until (-1: none, up to the end as it
    is now, ``ends[p]``). Kafka's own time semantics: a record belongs to the window when its
    offset lies between those two lookups, so out-of-order CreateTime records are taken as
    offsets-for-times places them."""
    out = {}
    for p, end in ends.items():
        first = start_offsets.get(p, -1)
        stop = stop_offsets.get(p, -1)
        if first < 0:
            out[p] = (end, end)
            continue
        stop = end if stop < 0 else stop
        out[p] = (first, max(first, stop))
    return out


def add_copy_parser(subparsers):
    p = subparsers.add_parser("copy-window", help="copy a time window of a topic from another cluster (e.g. "
                                                 "production Kafka) into this broker, for debugging")
    p.add_argument("topic")
    p.add_argument("--from-bootstrap", required=True, help="the cluster to copy from")
    p.add_argument("--from-command-config", metavar="FILE", help="its client properties (security.protocol, ...)")
    p.add_argument("--since", required=True, metavar="TIME", help="window start: ISO-8601 or epoch ms (inclusive)")
    p.add_argument("--until", default="latest", metavar="TIME", help="window end (exclusive; default: now's end)")
    p.add_argument("--to-topic", help="name here (default: the same name)")
    p.add_argument("-b", "--bootstrap-server", default="localhost:9092", help="this broker (the copy's target)")
    p.add_argument("--command-config", metavar="FILE", help="this broker's client properties")
    return p


def run_copy(args, out=None) -> int:
    """Copy offsets ``[oft(since), oft(until))`` of every partition into the same partition
    here, records unchanged: key, value, headers and CreateTime timestamp. The local topic is
    created with the source's partition count when missing. Offsets are not kept (the copy
    starts at the local log's end); timestamps are, so offsets-for-times answers within the
    window as on the source."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from hourglass.cli import client_properties
    from hourglass.cli.client import LATEST, UsageError, parse_time
    out = out or sys.stdout
    try:
        since = parse_time(args.since)
        until = parse_time(args.until)
        src_conf = client_properties.to_librdkafka(client_properties.read(args.from_command_config)) \
            if args.from_command_config else {}
        dst_conf = client_properties.to_librdkafka(client_properties.read(args.command_config)) \
            if args.command_config else {}
    except (UsageError, client_properties.ClientPropertiesError) as exc:
        print(f"hourglass: {exc}", file=sys.stderr)
        return 2
    if since < 0:
        since = 0
    to_topic = args.to_topic or args.topic
    src = Consumer({"bootstrap.servers": args.from_bootstrap, "group.id": "hourglass-copy-window",
                    "enable.auto.commit": False, "enable.partition.eof": False, **src_conf})
    try:
        md = src.list_topics(args.topic, timeout=30).topics[args.topic]
        if md.error is not None:
            print(f"hourglass: {args.topic} on {args.from_bootstrap}: {md.error.str()}", file=sys.stderr)
            return 1
        parts = sorted(md.partitions)
        ends = {p: src.get_watermark_offsets(TopicPartition(args.topic, p), timeout=30)[1] for p in parts}
        start = {tp.partition: tp.offset for tp in
                 src.offsets_for_times([TopicPartition(args.topic, p, since) for p in parts], timeout=30)}
        stop = {p: -1 for p in parts} if until == LATEST else {
            tp.partition: tp.offset for tp in
            src.offsets_for_times([TopicPartition(args.topic, p, until) for p in parts], timeout=30)}
        bounds = window_bounds(start, stop, ends)

        admin = AdminClient({"bootstrap.servers": args.bootstrap_server, **dst_conf})
        existing = admin.list_topics(timeout=30).topics
        if to_topic not in existing:
            admin.create_topics([NewTopic(to_topic, len(parts))])[to_topic].result(30)
        elif len(existing[to_topic].partitions) < len(parts):
            print(f"hourglass: {to_topic} here has {len(existing[to_topic].partitions)} partitions, "
                  f"the source {len(parts)}", file=sys.stderr)
            return 1
        producer = Producer({"bootstrap.servers": args.bootstrap_server, "linger.ms": 20,
                             "enable.idempotence": True, **dst_conf})
        todo = {p: b for p, b in bounds.items() if b[1] > b[0]}
        src.assign([TopicPartition(args.topic, p, b[0]) for p, b in todo.items()])
        copied = 0
        while todo:
            m = src.poll(1.0)
            if m is None:
                continue
            if m.error():
                raise KafkaException(m.error())
            p = m.partition()
            if p not in todo or m.offset() >= todo[p][1]:
                continue
            producer.produce(to_topic, m.value(), m.key(), partition=p, timestamp=m.timestamp()[1],
                             headers=m.headers())
            producer.poll(0)
            copied += 1
            if m.offset() + 1 >= todo[p][1]:
                del todo[p]
                src.pause([TopicPartition(args.topic, p)])
        if producer.flush(60) != 0:
            print("hourglass: records still unsent after 60 s", file=sys.stderr)
            return 1
    except KafkaException as exc:
        print(f"hourglass: {exc}", file=sys.stderr)
        return 1
    finally:
        src.close()
    print(f"copied {copied} records of {args.topic} ({', '.join(f'{p}:{a}-{b}' for p, (a, b) in bounds.items())}) "
          f"to {to_topic} on {args.bootstrap_server}", file=out)
    return 0
