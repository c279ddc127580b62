"""``hourglass topics create|list|describe|delete|alter``: topic administration of a running
broker, over the wire, through confluent-kafka's AdminClient (librdkafka).

Usage (``--bootstrap-server`` defaults to ``$HOURGLASS_BOOTSTRAP`` or ``localhost:9092``)::

    hourglass topics create orders --partitions 3 --config retention.ms=86400000
    hourglass topics list
    hourglass topics describe orders [--all-configs]
    hourglass topics alter orders --partitions 6 --config message.timestamp.type=LogAppendTime \
                                  --delete-config retention.ms
    hourglass topics delete orders

Output: ``list`` prints one topic name per line (for scripts); ``describe`` prints Kafka's
``kafka-topics.sh --describe`` layout (one topic line, then one line per partition);
``--all-configs`` lists every config with its source. Errors go to stderr as
``hourglass topics: error: <broker's message>``.

Exit codes: 0 success; 1 the broker refused (unknown topic, invalid config, ...) or could not
be reached within ``--timeout``; 2 usage error (argparse).

Library use: ``add_parser(subparsers)`` adds the ``topics`` command to the ``hourglass`` parser
and ``run(args) -> int`` executes it; ``main(argv)`` runs it standalone
(``python -m hourglass.cli.topics ...``).
"""
from __future__ import annotations

import argparse
import os
import sys

from hourglass.cli import client_properties

DEFAULT_BOOTSTRAP = "localhost:9092"


class CliError(Exception):
    """A failure to report on stderr with exit code 1."""


# ---- parser -----------------------------------------------------------------------------------

def _kv(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    if not k.strip():
        raise argparse.ArgumentTypeError(f"empty config key in {text!r}")
    return k.strip(), v


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``topics`` (with its sub-commands) to an argparse subparsers object."""
    p = subparsers.add_parser("topics", help="create, list, describe, alter or delete topics of a running broker",
                              description="Topic administration of a running broker (Kafka protocol).")
    _add_common(p)
    sub = p.add_subparsers(dest="topics_cmd", required=True, metavar="{create,list,describe,alter,delete}")

    c = sub.add_parser("create", help="create a topic")
    c.add_argument("topic")
    c.add_argument("--partitions", type=int, default=-1, help="partition count (default: the broker's num.partitions)")
    c.add_argument("--replication-factor", type=int, default=-1, help="only 1 on a single node (default: 1)")
    c.add_argument("--config", type=_kv, action="append", default=[], metavar="KEY=VALUE",
                   help="topic config override (repeatable)")
    c.add_argument("--if-not-exists", action="store_true", help="succeed when the topic already exists")
    c.add_argument("--validate-only", action="store_true", help="check the request, create nothing")

    ls = sub.add_parser("list", help="list topic names, one per line")
    ls.add_argument("--exclude-internal", action="store_true", help="leave out __consumer_offsets etc.")

    d = sub.add_parser("describe", help="partitions and configs of topics (all topics when none named)")
    d.add_argument("topics", nargs="*")
    d.add_argument("--all-configs", action="store_true", help="every config with its source, not only overrides")

    a = sub.add_parser("alter", help="grow partitions and/or change configs of a topic")
    a.add_argument("topic")
    a.add_argument("--partitions", type=int, help="new (larger) partition count")
    a.add_argument("--config", type=_kv, action="append", default=[], metavar="KEY=VALUE",
                   help="set a config override (repeatable)")
    a.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                   help="remove a config override, back to the broker default (repeatable)")
    a.add_argument("--validate-only", action="store_true", help="check the request, change nothing")

    x = sub.add_parser("delete", help="delete topics")
    x.add_argument("topics", nargs="+")
    x.add_argument("--if-exists", action="store_true", help="succeed when a topic does not exist")

    for sp in (c, ls, d, a, x):
        _add_common(sp, suppress=True)
    return p


def _add_common(p, suppress: bool = False) -> None:
    # accepted before or after the sub-command; SUPPRESS keeps the outer value when not repeated
    dflt = argparse.SUPPRESS if suppress else None
    p.add_argument("--bootstrap-server", "-b", default=dflt,
                   help=f"host:port of the broker (default: $HOURGLASS_BOOTSTRAP or {DEFAULT_BOOTSTRAP})")
    p.add_argument("--timeout", type=float, default=argparse.SUPPRESS if suppress else 30.0,
                   help="seconds to wait for the broker (default 30)")
    client_properties.add_option(p, suppress)


# ---- client -----------------------------------------------------------------------------------

def _admin(args):
    from confluent_kafka.admin import AdminClient
    bootstrap = args.bootstrap_server or os.environ.get("HOURGLASS_BOOTSTRAP") or DEFAULT_BOOTSTRAP
    try:
        secured = client_properties.librdkafka(args)
    except (client_properties.ClientPropertiesError, OSError) as exc:
        raise CliError(str(exc)) from None
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0,
                         "socket.connection.setup.timeout.ms": max(1000, int(args.timeout * 1000)), **secured})
    try:
        md = admin.list_topics(timeout=args.timeout)
    except Exception as exc:
        raise CliError(f"cannot reach a broker at {bootstrap} within {args.timeout:g} s ({_msg(exc)})") from None
    return admin, md


def _msg(exc: BaseException) -> str:
    """The broker's error message (or librdkafka's) of a KafkaException."""
    err = exc.args[0] if exc.args else None
    if hasattr(err, "str") and hasattr(err, "name"):
        text = err.str()
        return f"{text} ({err.name()})" if err.name() and err.name() not in text else text
    return str(exc)


def _wait(futures: dict, timeout: float, ok_codes=()) -> list[str]:
    """Resolve {key: future}; returns error lines (empty = all fine). ``ok_codes`` are error
    names treated as success (``--if-exists`` / ``--if-not-exists``)."""
    errors = []
    for key, fut in futures.items():
        try:
            fut.result(timeout=timeout)
        except Exception as exc:  # KafkaException or a timeout
            err = exc.args[0] if exc.args else None
            if hasattr(err, "name") and err.name() in ok_codes:
                continue
            errors.append(f"{_name(key)}: {_msg(exc)}")
    return errors


def _name(key) -> str:
    return getattr(key, "name", None) or str(key)


# ---- commands ---------------------------------------------------------------------------------

def _create(args, out) -> int:
    from confluent_kafka.admin import NewTopic
    admin, _md = _admin(args)
    nt = NewTopic(args.topic, num_partitions=args.partitions, replication_factor=args.replication_factor,
                  config=dict(args.config))
    errs = _wait(admin.create_topics([nt], operation_timeout=args.timeout, request_timeout=args.timeout,
                                     validate_only=args.validate_only),
                 args.timeout, ok_codes=("TOPIC_ALREADY_EXISTS",) if args.if_not_exists else ())
    if errs:
        raise CliError("; ".join(errs))
    print(("Validated" if args.validate_only else "Created") + f" topic {args.topic}.", file=out)
    return 0


def _list(args, out) -> int:
    _admin_client, md = _admin(args)
    for name in sorted(md.topics):
        if args.exclude_internal and name.startswith("__"):
            continue
        print(name, file=out)
    return 0


def _describe(args, out) -> int:
    from confluent_kafka.admin import ConfigResource
    admin, md = _admin(args)
    names = args.topics or sorted(n for n in md.topics)
    missing = [n for n in names if n not in md.topics or md.topics[n].error is not None]
    if missing:
        raise CliError("unknown topic(s): " + ", ".join(missing))
    resources = [ConfigResource("topic", n) for n in names]
    configs = {}
    if resources:
        futs = admin.describe_configs(resources, request_timeout=args.timeout)
        for res, fut in futs.items():
            try:
                configs[res.name] = fut.result(timeout=args.timeout)
            except Exception as exc:
                raise CliError(f"{res.name}: {_msg(exc)}") from None
    ids = _topic_ids(admin, names, args.timeout)
    for n in names:
        t = md.topics[n]
        parts = sorted(t.partitions.values(), key=lambda p: p.id)
        entries = sorted(configs.get(n, {}).values(), key=lambda e: e.name)
        overrides = [e for e in entries if _source(e) in ("TOPIC_CONFIG", "DYNAMIC_TOPIC_CONFIG")]
        rf = len(parts[0].replicas) if parts else 0
        print(f"Topic: {n}\tTopicId: {ids.get(n, '-')}\tPartitionCount: {len(parts)}\t"
              f"ReplicationFactor: {rf}\tConfigs: " + ",".join(f"{e.name}={e.value}" for e in overrides),
              file=out)
        for p in parts:
            print(f"\tTopic: {n}\tPartition: {p.id}\tLeader: {p.leader}\t"
                  f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isrs))}", file=out)
        if args.all_configs:
            for e in entries:
                print(f"\t{e.name}={e.value}\t({_source(e)}{', read-only' if e.is_read_only else ''})", file=out)
    return 0


def _source(entry) -> str:
    from confluent_kafka.admin import ConfigSource
    src = entry.source
    try:
        return ConfigSource(src).name if isinstance(src, int) else getattr(src, "name", str(src))
    except ValueError:
        return str(src)


def _topic_ids(admin, names, timeout) -> dict:
    """Topic ids through DescribeTopics when the client has it (confluent-kafka >= 2.3)."""
    try:
        from confluent_kafka import TopicCollection
        futs = admin.describe_topics(TopicCollection(list(names)), request_timeout=timeout)
        # librdkafka prints standard base64; Kafka's tools print the URL-safe form
        return {n: str(f.result(timeout=timeout).topic_id).replace("+", "-").replace("/", "_")
                for n, f in futs.items()}
    except Exception:
        return {}


def _alter(args, out) -> int:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions
    if args.partitions is None and not args.config and not args.delete_config:
        raise CliError("nothing to alter: give --partitions, --config or --delete-config")
    admin, md = _admin(args)
    if args.topic not in md.topics or md.topics[args.topic].error is not None:
        raise CliError(f"unknown topic: {args.topic}")
    done = []
    if args.config or args.delete_config:
        ops = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in args.config]
        ops += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in args.delete_config]
        res = ConfigResource("topic", args.topic, incremental_configs=ops)
        errs = _wait(admin.incremental_alter_configs([res], validate_only=args.validate_only,
                                                     request_timeout=args.timeout), args.timeout)
        if errs:
            raise CliError("; ".join(errs))
        done.append("configs")
    if args.partitions is not None:
        errs = _wait(admin.create_partitions([NewPartitions(args.topic, args.partitions)],
                                             validate_only=args.validate_only, request_timeout=args.timeout,
                                             operation_timeout=args.timeout), args.timeout)
        if errs:
            raise CliError("; ".join(errs) + (" (configs were changed)" if done else ""))
        done.append(f"partitions (now {args.partitions})")
    verb = "Validated" if args.validate_only else "Altered"
    print(f"{verb} {' and '.join(done)} of topic {args.topic}.", file=out)
    return 0


def _delete(args, out) -> int:
    admin, _md = _admin(args)
    futs = admin.delete_topics(list(args.topics), operation_timeout=args.timeout, request_timeout=args.timeout)
    errs = _wait(futs, args.timeout, ok_codes=("UNKNOWN_TOPIC_OR_PART",) if args.if_exists else ())
    for t in args.topics:
        if not any(e.startswith(f"{t}: ") for e in errs):
            print(f"Deleted topic {t}.", file=out)
    if errs:
        raise CliError("; ".join(errs))
    return 0


_COMMANDS = {"create": _create, "list": _list, "describe": _describe, "alter": _alter, "delete": _delete}


def run(args, out=None, err=None) -> int:
    """Execute a parsed ``topics`` command; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        return _COMMANDS[args.topics_cmd](args, out)
    except CliError as exc:
        print(f"hourglass topics: error: {exc}", file=err)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hourglass")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_parser(sub)
    args = parser.parse_args(argv)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
