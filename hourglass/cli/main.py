"""The ``hourglass`` command line.

Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        d = {"ts": round(record.created, 3), "level": record.levelname, "logger": record.name,
             "msg": record.getMessage()}
        if record.exc_info:
            d["exc"] = self.formatException(record.exc_info)
        return json.dumps(d)


class StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at each record, not the one at set-up: ``main`` also
    runs in-process (tests, embedding), where stderr is replaced and later closed while a
    broker thread still logs (records then went to a closed file: "Logging error")."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


def setup_logging(level: str = "INFO", fmt: str = "text") -> None:
    """``level`` is the root level, optionally followed by per-logger levels, as log4j's
    ``log4j.logger.NAME=LEVEL``: ``INFO,broker.groups=DEBUG`` (the consumer group
    coordinator's reconciliation steps at DEBUG, everything else at INFO)."""
    root_level, *per_logger = [p.strip() for p in level.split(",") if p.strip()] or ["INFO"]
    handler = StderrHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(root_level.upper())
    for item in per_logger:
        name, _, lvl = item.partition("=")
        logging.getLogger(name.strip()).setLevel(lvl.strip().upper() or root_level.upper())


def _usage_error(msg: str) -> int:
    print(f"hourglass: {msg}", file=sys.stderr)
    return 2


def _serve(args) -> int:
    from broker.config import BrokerConfig, ConfigError
    overrides = list(args.override or [])
    if args.port is not None:
        overrides.append(f"listeners=PLAINTEXT://{args.host}:{args.port}")
    if args.data_dir is not None:
        overrides.append(f"log.dirs={args.data_dir}")
    if args.config_file and args.config and args.config_file != args.config:
        return _usage_error(f"two config files given: {args.config_file} and --config {args.config}")
    try:
        cfg = BrokerConfig.load(args.config_file or args.config, overrides, strict=args.strict_config)
    except ConfigError as exc:
        logging.getLogger("hourglass").error("configuration error: %s", exc)
        print(f"hourglass: configuration error: {exc}", file=sys.stderr)
        return 2
    from broker.server import run_broker
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency
        uvloop = None
    if uvloop is not None:
        uvloop.install()
    from broker.security.sasl import SecurityConfigError
    try:
        from hourglass.app import extensions
        asyncio.run(run_broker(cfg, ready_file=args.ready_file, extensions=extensions()))
    except KeyboardInterrupt:
        pass
    except SecurityConfigError as exc:  # a keystore, JAAS or mechanism setting, found at start
        logging.getLogger("hourglass").error("configuration error: %s", exc)
        print(f"hourglass: configuration error: {exc}", file=sys.stderr)
        return 2
    return 0


def _config_check(args) -> int:
    """``hourglass config check FILE``: every key given, its value, where it came from and
    what it does here; exit 2 when a key is unknown or a value (or the whole) is invalid."""
    from broker import config as c
    try:
        raw, sources = c.read_sources(args.file, args.override)
    except c.ConfigError as exc:
        return _usage_error(str(exc))
    rows, problems = [], 0
    for key, value in raw.items():
        status = c.key_status(key)
        effect = c.describe_effect(key)
        if status == c.UNKNOWN:
            problems += 1
        else:
            try:
                c.check_value(key, value)
            except c.ConfigError as exc:
                status, effect, problems = "invalid", str(exc), problems + 1
        rows.append((key, c.display_value(key, value), sources.get(key, ""), status, effect))
    wk = max([len(r[0]) for r in rows] + [3])
    wv = min(max([len(r[1]) for r in rows] + [5]), 40)
    ws = max([len(r[2]) for r in rows] + [6])
    print(f"{'KEY':<{wk}}  {'VALUE':<{wv}}  {'SOURCE':<{ws}}  WHAT IT DOES HERE")
    for key, value, source, status, effect in rows:
        shown = value if len(value) <= wv else value[:wv - 3] + "..."
        print(f"{key:<{wk}}  {shown:<{wv}}  {source:<{ws}}  {'' if status == c.HONOURED else f'[{status}] '}{effect}")
    whole = None
    if not problems:
        try:
            cfg = c.BrokerConfig(raw, sources=sources, strict=True)
            _check_security(cfg)
        except c.ConfigError as exc:
            whole, problems = str(exc), 1
    counts = {}
    for r in rows:
        counts[r[3]] = counts.get(r[3], 0) + 1
    print(f"\n{len(rows)} key(s): " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    if whole:
        print(f"configuration error: {whole}")
    return 2 if problems else 0


def _check_security(cfg) -> None:
    """What the broker checks at start beyond the keys: keystores and truststores open, JAAS
    configs parse, mechanisms are served, the authorizer is known (no data dir is touched)."""
    from broker.config import ConfigError
    from broker.security.listener import ListenerSecurity
    from broker.security.sasl import SecurityConfigError
    from broker.security.state import BrokerSecurity
    try:
        sec = BrokerSecurity.from_config(cfg.raw.get, None)
        for lst in cfg.listeners:
            ListenerSecurity.build(lst.name, lst.security_protocol, lst.overrides, cfg.raw, sec.scram)
    except SecurityConfigError as exc:
        raise ConfigError(str(exc)) from None


def _client_command(args) -> int:
    from hourglass.cli import client as cli_client
    try:
        if args.cmd == "offsets":
            return cli_client.run_offsets(args)
        if args.cmd == "produce":
            return cli_client.run_produce(args)
        if args.cmd == "consume":
            return cli_client.run_consume(args)
        return _inspect(args)
    except cli_client.UsageError as exc:
        print(f"hourglass {args.cmd}: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # broker unreachable, unknown topic, ...: one clear line
        print(f"hourglass {args.cmd}: {exc}", file=sys.stderr)
        return 1


def _inspect(args) -> int:
    from broker.config import BrokerConfig
    from hourglass.cli.inspect import inspect_topic, render, to_json
    cfg = BrokerConfig.load(args.config, [f"log.dirs={args.data_dir}"] if args.data_dir else [])
    data_dir = cfg.log_dirs[0]
    now = int(time.time() * 1000)
    view = inspect_topic(data_dir, args.topic, cfg.topic_defaults, now, show_progress=sys.stderr.isatty())
    if not view.partitions:
        print(f"hourglass inspect: no partition of {args.topic!r} in {data_dir}", file=sys.stderr)
        return 1
    if args.plot:
        from hourglass.cli.plot import plot_topic
        plot_topic(view, args.plot, now)
        print(f"wrote {args.plot}", file=sys.stderr)
    print(to_json(view) if args.json else render(view, entries=args.entries))
    return 0


def main(argv: list[str] | None = None) -> int:

    p = argparse.ArgumentParser(prog="hourglass", description="Hourglass: a Kafka-compatible broker with Kafka's time semantics.")
    p.add_argument("--log-level", default="INFO",
                   help="root level, then optional per-logger levels: INFO,broker.groups=DEBUG")
    p.add_argument("--log-format", choices=["text", "json"], default="text")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run the broker")
    s.add_argument("config_file", nargs="?", metavar="FILE",
                   help="server.properties file (Kafka key names), as kafka-server-start.sh takes it")
    s.add_argument("--config", help="the same, as an option")
    s.add_argument("--strict-config", action="store_true",
                   help="refuse to start on an unknown key (default: warn, as Kafka does)")
    s.add_argument("--override", action="append", metavar="KEY=VALUE", help="override one config key (repeatable)")
    s.add_argument("--ready-file", help="write host:port here once the broker answers requests")
    s.add_argument("--port", type=int, help="shortcut for listeners=PLAINTEXT://HOST:PORT")
    s.add_argument("--host", default="127.0.0.1", help="host for --port (default 127.0.0.1)")
    s.add_argument("--data-dir", help="shortcut for log.dirs=DIR")
    d = sub.add_parser("dump-log", help="print segment files (.log, .index, .timeindex, .txnindex, .snapshot) "
                                        "like Kafka's DumpLogSegments")
    d.add_argument("files", nargs="+")
    d.add_argument("--verify-index-only", action="store_true")
    d.add_argument("--print-data", "--print-data-log", dest="print_data", action="store_true",
                   help="print record keys and values (and markers as endTxnMarker: COMMIT/ABORT)")
    from hourglass.cli import acls, certs, client as cli_client, quotas, topics as admin_cli, users
    from hourglass.cli import groups as groups_cli
    from hourglass.cli import transactions as txn_cli
    from hourglass.cli import schemas as schemas_cli
    from hourglass.cli import mirror as mirror_cli
    from hourglass.cli import storage as storage_cli
    admin_cli.add_parser(sub)
    storage_cli.add_parser(sub)
    mirror_cli.add_parser(sub)
    mirror_cli.add_copy_parser(sub)
    schemas_cli.add_parser(sub)
    groups_cli.add_parser(sub)
    acls.add_parser(sub)
    users.add_parser(sub)
    quotas.add_parser(sub)
    certs.add_parser(sub)
    txn_cli.add_parser(sub)
    cli_client.add_parsers(sub)
    cf = sub.add_parser("config", help="check a server.properties file against what Hourglass does with each key")
    cfs = cf.add_subparsers(dest="config_cmd", required=True)
    cc = cfs.add_parser("check", help="print every key: value, source, what it does here; exit 2 on unknown or invalid keys")
    cc.add_argument("file", metavar="FILE")
    cc.add_argument("--override", action="append", metavar="KEY=VALUE", help="as for serve (repeatable)")
    pr = sub.add_parser("probe", help="exit 0 when a broker answers ApiVersions (health checks)")
    pr.add_argument("-b", "--bootstrap-server", default="localhost:9092")
    pr.add_argument("--timeout", type=float, default=3.0)
    pr.add_argument("--ready-file", help="probe the listeners the broker bound, as its serve --ready-file lists them "
                                         "(instead of --bootstrap-server)")
    pr.add_argument("--config", dest="probe_config", metavar="FILE",
                    help="with --ready-file: the broker's server.properties (listener.security.protocol.map)")
    from hourglass.cli import client_properties
    client_properties.add_option(pr)
    i = sub.add_parser("inspect", help="a topic's partitions and segments in time, read from a data dir")
    i.add_argument("topic")
    i.add_argument("--data-dir", help="the broker's log dir (default: log.dirs of --config)")
    i.add_argument("--config", default=None, help="server.properties (for log.dirs and the log.* defaults)")
    i.add_argument("--entries", action="store_true", help="list every time index entry")
    i.add_argument("--json", action="store_true")
    i.add_argument("--plot", metavar="FILE", help="draw it: .png, .svg or .html (needs hourglass[plot])")
    args = p.parse_args(argv)
    setup_logging(args.log_level, args.log_format)
    if args.cmd == "serve":
        return _serve(args)
    if args.cmd == "config":
        return _config_check(args)
    if args.cmd == "probe":
        from hourglass.cli.probe import main as probe_main
        try:
            props = client_properties.of(args)
        except client_properties.ClientPropertiesError as exc:
            return _usage_error(str(exc))
        return probe_main(args.bootstrap_server, args.timeout, props, args.ready_file, args.probe_config)
    rooms = {"topics": admin_cli, "transactions": txn_cli, "groups": groups_cli, "acls": acls, "users": users,
             "certs": certs, "schemas": schemas_cli, "quotas": quotas, "configs": quotas,
             "mirror-config": mirror_cli, "storage": storage_cli}
    if args.cmd in rooms:
        return rooms[args.cmd].run(args)
    if args.cmd in ("offsets", "produce", "consume", "inspect"):
        return _client_command(args)
    if args.cmd == "copy-window":
        return mirror_cli.run_copy(args)
    if args.cmd == "dump-log":
        from storage.dump import main as dump_main
        return dump_main(args.files, verify_index_only=args.verify_index_only, print_data=args.print_data)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
