"""``hourglass schemas list|get|register|delete|config``: the Schema Registry from the shell.

    hourglass schemas list [--prefix orders] [--deleted]
    hourglass schemas get orders-value [--version 3 | --at 2026-11-25T10:00:00Z] | get --id 7
    hourglass schemas register orders-value --file order.avsc [--type AVRO|JSON|PROTOBUF] [--normalize]
    hourglass schemas delete orders-value [--version 2] [--permanent]
    hourglass schemas config [orders-value] [--set FULL_TRANSITIVE]

Speaks Confluent's REST API to ``--url`` (default ``$SCHEMA_REGISTRY_URL`` or
http://localhost:8081), so it works against Hourglass's registry and Confluent's alike, except
``get --at`` (Hourglass's ``asOf``: the version that was latest at that time, an ISO-8601 time
or epoch milliseconds). ``--user alice:secret`` sends basic auth. Answers print as JSON (a
schema's text as itself); an error prints Confluent's message and code. Exit codes: 0 done,
1 refused or unreachable, 2 usage.
"""
from __future__ import annotations

import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

CT = "application/vnd.schemaregistry.v1+json"


def add_parser(subparsers):
    p = subparsers.add_parser("schemas", help="list, get, register and delete Schema Registry subjects; compatibility config")
    p.add_argument("--url", default=os.environ.get("SCHEMA_REGISTRY_URL", "http://localhost:8081"),
                   help="the registry (default $SCHEMA_REGISTRY_URL or http://localhost:8081)")
    p.add_argument("--user", help="basic auth as USER:PASSWORD")
    sub = p.add_subparsers(dest="schemas_cmd", required=True, metavar="{list,get,register,delete,config}")
    ls = sub.add_parser("list", help="subjects and their versions")
    ls.add_argument("--prefix", default="")
    ls.add_argument("--deleted", action="store_true", help="include soft-deleted subjects")
    g = sub.add_parser("get", help="a subject's version (latest by default) or a schema by id")
    g.add_argument("subject", nargs="?")
    g.add_argument("--version", default="latest")
    g.add_argument("--at", help="the version that was latest at this time (ISO-8601 or epoch ms)")
    g.add_argument("--id", type=int, help="a schema by its global id")
    g.add_argument("--schema-only", action="store_true", help="print only the schema text")
    r = sub.add_parser("register", help="register a schema under a subject; prints its id")
    r.add_argument("subject")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--file", help="the schema file (.avsc, .json, .proto)")
    src.add_argument("--schema", help="the schema text")
    r.add_argument("--type", default=None, choices=("AVRO", "JSON", "PROTOBUF"),
                   help="default: from the file name (.proto, .json), else AVRO")
    r.add_argument("--normalize", action="store_true")
    d = sub.add_parser("delete", help="soft-delete a subject or one version (--permanent: for good)")
    d.add_argument("subject")
    d.add_argument("--version")
    d.add_argument("--permanent", action="store_true")
    c = sub.add_parser("config", help="show or --set the compatibility level (global when no subject)")
    c.add_argument("subject", nargs="?")
    c.add_argument("--set", dest="level", help="NONE, BACKWARD, FORWARD, FULL or a _TRANSITIVE form")
    return p


class RegistryCallError(Exception):
    def __init__(self, status: int, body):
        self.status, self.body = status, body
        msg = body.get("message") if isinstance(body, dict) else body
        code = body.get("error_code") if isinstance(body, dict) else status
        super().__init__(f"{msg} (HTTP {status}, error code {code})")


def call(args, method: str, path: str, body=None, *, raw: bool = False):
    url = args.url.rstrip("/") + path
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, method=method, data=data, headers={"Accept": CT})
    if data is not None:
        req.add_header("Content-Type", CT)
    if args.user:
        req.add_header("Authorization", "Basic " + base64.b64encode(args.user.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read().decode()
            return text if raw else json.loads(text)
    except urllib.error.HTTPError as e:
        text = e.read().decode(errors="replace")
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        raise RegistryCallError(e.code, parsed) from None


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _print(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def run(args) -> int:
    try:
        return _run(args)
    except RegistryCallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"error: cannot reach {args.url}: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1


def _run(args) -> int:
    cmd = args.schemas_cmd
    if cmd == "list":
        q = urllib.parse.urlencode({"subjectPrefix": args.prefix, "deleted": str(args.deleted).lower()})
        for s in call(args, "GET", f"/subjects?{q}"):
            versions = call(args, "GET", f"/subjects/{_q(s)}/versions?deleted={str(args.deleted).lower()}")
            print(f"{s}\tversions {','.join(map(str, versions))}")
        return 0
    if cmd == "get":
        if args.id is not None:
            got = call(args, "GET", f"/schemas/ids/{args.id}")
        elif not args.subject:
            print("error: get needs a subject or --id", file=sys.stderr)
            return 2
        elif args.at:
            got = call(args, "GET", f"/subjects/{_q(args.subject)}/versions/latest?asOf={_q(args.at)}")
        else:
            got = call(args, "GET", f"/subjects/{_q(args.subject)}/versions/{_q(str(args.version))}")
        if args.schema_only:
            print(got["schema"])
        else:
            _print(got)
        return 0
    if cmd == "register":
        if args.file:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        else:
            text = args.schema
        stype = args.type or ("PROTOBUF" if (args.file or "").endswith(".proto")
                              else "JSON" if (args.file or "").endswith(".json") else "AVRO")
        body = {"schema": text}
        if stype != "AVRO":
            body["schemaType"] = stype
        got = call(args, "POST", f"/subjects/{_q(args.subject)}/versions?normalize={str(args.normalize).lower()}", body)
        print(got["id"])
        return 0
    if cmd == "delete":
        perm = "?permanent=true" if args.permanent else ""
        path = f"/subjects/{_q(args.subject)}" + (f"/versions/{_q(args.version)}" if args.version else "")
        if args.permanent:  # Confluent wants a soft delete first: both steps for the user
            try:
                call(args, "DELETE", path)
            except RegistryCallError as exc:
                code = exc.body.get("error_code") if isinstance(exc.body, dict) else None
                if code not in (40404, 40406):  # already soft-deleted
                    raise
        _print(call(args, "DELETE", path + perm))
        return 0
    if cmd == "config":
        path = "/config" + (f"/{_q(args.subject)}" if args.subject else "")
        if args.level:
            _print(call(args, "PUT", path, {"compatibility": args.level.upper()}))
        else:
            _print(call(args, "GET", path + ("?defaultToGlobal=true" if args.subject else "")))
        return 0
    return 2
