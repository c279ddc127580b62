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


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
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
    args = p.parse_args(argv)
    setup_logging(args.log_level, args.log_format)
    if args.cmd == "serve":
        return _serve(args)
    if args.cmd == "dump-log":
        from storage.dump import main as dump_main
        return dump_main(args.files, verify_index_only=args.verify_index_only, print_data=args.print_data)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
