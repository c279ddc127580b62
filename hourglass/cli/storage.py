"""``hourglass storage random-uuid|format|info``: Kafka's ``kafka-storage`` tool for a data dir.

Container images put it on PATH as ``kafka-storage`` (docker/compat/kafka-storage), because the
start scripts of Testcontainers' Kafka modules call it (``kafka-storage format --ignore-formatted
-t "$(kafka-storage random-uuid)" -c /etc/kafka/kafka.properties``).

- ``random-uuid`` prints a new cluster id, Kafka's URL-safe base64 of a random UUID.
- ``format -t ID -c FILE [--ignore-formatted]`` writes ``meta.properties`` into every log dir of
  FILE (``log.dirs`` or ``log.dir``, with FILE's ``node.id``), as the broker itself does on its
  first start; a dir that already has one is an error (exit 1, Kafka's message) unless
  ``--ignore-formatted``. ``--standalone``, ``--initial-controllers`` and
  ``--no-initial-controllers`` describe a KRaft quorum: one Hourglass node is its own, so they
  are accepted and change nothing. ``--release-version`` and ``--feature`` are refused: feature
  levels are set on the running broker (``kafka-features``, UpdateFeatures).
- ``info -c FILE`` prints each log dir and what its ``meta.properties`` holds.

Exit codes as Kafka's tool: 0 done, 1 refused (message on stderr), 2 usage.
"""
from __future__ import annotations

import argparse
import sys

from broker.cluster import base64_to_uuid, new_uuid, read_meta_properties, uuid_to_base64, write_meta_properties
from broker.config import BrokerConfig, ConfigError


class StorageError(Exception):
    """A refusal, printed on stderr with exit 1."""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("storage", help="kafka-storage: random-uuid, format or inspect a data dir")
    sub = p.add_subparsers(dest="storage_cmd", required=True, metavar="{random-uuid,format,info}")
    sub.add_parser("random-uuid", help="print a new cluster id")
    f = sub.add_parser("format", help="write meta.properties into every log dir of the configuration")
    f.add_argument("-c", "--config", required=True, help="the broker's server.properties")
    f.add_argument("-t", "--cluster-id", required=True)
    f.add_argument("-g", "--ignore-formatted", action="store_true",
                   help="skip log dirs that are formatted already instead of failing")
    f.add_argument("-s", "--standalone", action="store_true", help="accepted: one node is its own quorum")
    f.add_argument("-I", "--initial-controllers", help="accepted: one node is its own quorum")
    f.add_argument("-N", "--no-initial-controllers", action="store_true", help="accepted: one node is its own quorum")
    f.add_argument("-r", "--release-version", help="refused: feature levels are set on the running broker")
    f.add_argument("-f", "--feature", action="append", help="refused: feature levels are set on the running broker")
    f.add_argument("-S", "--add-scram", action="append", help="refused: add users with `hourglass users add`")
    i = sub.add_parser("info", help="print each log dir's meta.properties")
    i.add_argument("-c", "--config", required=True)


def _config(path: str) -> BrokerConfig:
    try:
        return BrokerConfig.load(path)
    except ConfigError as exc:
        raise StorageError(str(exc)) from None


def _check_cluster_id(cluster_id: str) -> None:
    try:
        ok = len(base64_to_uuid(cluster_id)) == 16
    except ValueError:
        ok = False
    if not ok:
        raise StorageError(f"Cluster ID string {cluster_id} does not appear to be a valid UUID: "
                           "it is not the URL-safe base64 of 16 bytes")


def format_dirs(args) -> list[str]:
    """The lines to print; raises StorageError where Kafka's tool refuses."""
    for flag, value, why in (("--release-version", args.release_version, "set feature levels with kafka-features"),
                             ("--feature", args.feature, "set feature levels with kafka-features"),
                             ("--add-scram", args.add_scram, "add SCRAM users with `hourglass users add`")):
        if value:
            raise StorageError(f"{flag} is not supported by Hourglass's storage format: {why} on the running broker")
    _check_cluster_id(args.cluster_id)
    cfg = _config(args.config)
    out, todo = [], []
    for d in cfg.log_dirs:
        if read_meta_properties(d) is None:
            todo.append(d)
        elif not args.ignore_formatted:
            raise StorageError(f"Log directory {d} is already formatted. Use --ignore-formatted to ignore this "
                               "directory and format the others.")
    if not todo:
        return ["All of the log directories are already formatted."]
    for d in todo:
        write_meta_properties(d, cfg.node_id, args.cluster_id)
        out.append(f"Formatting data directory {d} with cluster.id {args.cluster_id} and node.id {cfg.node_id}.")
    return out


def info(args) -> list[str]:
    cfg = _config(args.config)
    out = []
    for d in cfg.log_dirs:
        props = read_meta_properties(d)
        out.append(f"{d}: " + ("not formatted" if props is None else
                               ", ".join(f"{k}={v}" for k, v in sorted(props.items()))))
    return out


def run(args) -> int:
    try:
        if args.storage_cmd == "random-uuid":
            lines = [uuid_to_base64(new_uuid())]
        elif args.storage_cmd == "format":
            lines = format_dirs(args)
        else:
            lines = info(args)
    except StorageError as exc:
        print(exc, file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-storage")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_parser(sub)
    return run(parser.parse_args(["storage", *(sys.argv[1:] if argv is None else argv)]))


if __name__ == "__main__":
    raise SystemExit(main())
