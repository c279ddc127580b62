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


def setup_logging(level: str = "INFO", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def _serve(args) -> int:
    from broker.config import BrokerConfig, ConfigError
    overrides = list(args.override or [])
    if args.port is not None:
        overrides.append(f"listeners=PLAINTEXT://{args.host}:{args.port}")
    if args.data_dir is not None:
        overrides.append(f"log.dirs={args.data_dir}")
    try:
        cfg = BrokerConfig.load(args.config, overrides)
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
    try:
        asyncio.run(run_broker(cfg, ready_file=args.ready_file))
    except KeyboardInterrupt:
        pass
    return 0


def _client_command(args) -> int:
    from broker import cli_client
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
    from broker.inspect import inspect_topic, render, to_json
    cfg = BrokerConfig.load(args.config, [f"log.dirs={args.data_dir}"] if args.data_dir else [])
    data_dir = cfg.log_dirs[0]
    now = int(time.time() * 1000)
    view = inspect_topic(data_dir, args.topic, cfg.topic_defaults, now, show_progress=sys.stderr.isatty())
    if not view.partitions:
        print(f"hourglass inspect: no partition of {args.topic!r} in {data_dir}", file=sys.stderr)
        return 1
    if args.plot:
        from broker.plot import plot_topic
        plot_topic(view, args.plot, now)
        print(f"wrote {args.plot}", file=sys.stderr)
    print(to_json(view) if args.json else render(view, entries=args.entries))
    return 0


def main(argv: list[str] | None = None) -> int:

    p = argparse.ArgumentParser(prog="hourglass", description="Hourglass: a Kafka-compatible broker with Kafka's time semantics.")
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--log-format", choices=["text", "json"], default="text")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run the broker")
    s.add_argument("--config", help="server.properties file (Kafka key names)")
    s.add_argument("--override", action="append", metavar="KEY=VALUE", help="override one config key (repeatable)")
    s.add_argument("--ready-file", help="write host:port here once the broker answers requests")
    s.add_argument("--port", type=int, help="shortcut for listeners=PLAINTEXT://HOST:PORT")
    s.add_argument("--host", default="127.0.0.1", help="host for --port (default 127.0.0.1)")
    s.add_argument("--data-dir", help="shortcut for log.dirs=DIR")
    d = sub.add_parser("dump-log", help="print segment files (.log, .index, .timeindex) like Kafka's DumpLogSegments")
    d.add_argument("files", nargs="+")
    d.add_argument("--verify-index-only", action="store_true")
    d.add_argument("--print-data", action="store_true", help="print record keys and values")
    from broker import admin_cli, cli_client
    from broker.transactions import cli as txn_cli
    admin_cli.add_parser(sub)
    txn_cli.add_parser(sub)
    cli_client.add_parsers(sub)
    pr = sub.add_parser("probe", help="exit 0 when a broker answers ApiVersions (health checks)")
    pr.add_argument("-b", "--bootstrap-server", default="localhost:9092")
    pr.add_argument("--timeout", type=float, default=3.0)
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
    if args.cmd == "probe":
        from broker.probe import main as probe_main
        return probe_main(args.bootstrap_server, args.timeout)
    if args.cmd == "topics":
        return admin_cli.run(args)
    if args.cmd == "transactions":
        return txn_cli.run(args)
    if args.cmd in ("offsets", "produce", "consume", "inspect"):
        return _client_command(args)
    if args.cmd == "dump-log":
        from storage.dump import main as dump_main
        return dump_main(args.files, verify_index_only=args.verify_index_only, print_data=args.print_data)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
