"""``hourglass acls add|list|remove``: ACLs of a running broker, with ``kafka-acls.sh``'s options
and output, over the wire through confluent-kafka's AdminClient (CreateAcls, DescribeAcls,
DeleteAcls).

    hourglass acls add --allow-principal User:alice --operation Read --operation Describe --topic orders
    hourglass acls add --allow-principal User:alice --producer --topic pay- --resource-pattern-type prefixed
    hourglass acls add --allow-principal User:bob --consumer --topic orders --group billing
    hourglass acls add --deny-principal User:mallory --deny-host 10.0.0.9 --operation All --cluster
    hourglass acls list [--topic orders] [--resource-pattern-type match] [--principal User:alice]
    hourglass acls remove --allow-principal User:alice --operation Read --topic orders

Resources: ``--topic``, ``--group``, ``--transactional-id`` (repeatable), ``--cluster``;
``--resource-pattern-type`` literal (default for add/remove) or prefixed; for list and remove
also any and match (kafka-acls.sh's defaults: any for list). Principals without hosts get host
``*``. ``--producer``: WRITE, DESCRIBE and CREATE on the topics (and WRITE, DESCRIBE on
``--transactional-id``s; IDEMPOTENT_WRITE on the cluster with ``--idempotent``). ``--consumer``:
READ and DESCRIBE on the topics, READ on the ``--group``s. ``remove`` without a principal or
operation removes every ACL of the resources (kafka-acls.sh asks first; here ``--force`` is
required for that).

Output (kafka-acls.sh's): ``Current ACLs for resource `ResourcePattern(resourceType=TOPIC,
name=orders, patternType=LITERAL)`:`` then one ``(principal=..., host=..., operation=...,
permissionType=...)`` line per ACL. Exit codes: 0 done; 1 the broker refused (no authorizer:
SECURITY_DISABLED, not allowed: CLUSTER_AUTHORIZATION_FAILED) or could not be reached; 2 usage.
"""
from __future__ import annotations

import argparse
import sys

from hourglass.cli import client_properties, topics
from hourglass.cli.topics import CliError

_OPS = {"all": "ALL", "read": "READ", "write": "WRITE", "create": "CREATE", "delete": "DELETE", "alter": "ALTER",
        "describe": "DESCRIBE", "clusteraction": "CLUSTER_ACTION", "describeconfigs": "DESCRIBE_CONFIGS",
        "alterconfigs": "ALTER_CONFIGS", "idempotentwrite": "IDEMPOTENT_WRITE", "createtokens": "CREATE_TOKENS",
        "describetokens": "DESCRIBE_TOKENS", "any": "ANY"}


def _op(text: str) -> str:
    key = text.replace("_", "").replace("-", "").lower()
    if key not in _OPS:
        raise argparse.ArgumentTypeError(f"unknown operation {text!r} (one of: {', '.join(sorted(_OPS))})")
    return _OPS[key]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("acls", help="add, list or remove ACLs of a running broker (kafka-acls.sh)",
                              description="ACLs of a running broker (Kafka protocol), as kafka-acls.sh manages them.")
    topics._add_common(p)
    sub = p.add_subparsers(dest="acls_cmd", required=True, metavar="{add,list,remove}")
    for name, hlp in (("add", "add ACLs"), ("list", "list ACLs (all when no resource is named)"),
                      ("remove", "remove ACLs")):
        s = sub.add_parser(name, help=hlp)
        s.add_argument("--topic", action="append", default=[])
        s.add_argument("--group", action="append", default=[])
        s.add_argument("--transactional-id", action="append", default=[])
        s.add_argument("--cluster", action="store_true")
        s.add_argument("--resource-pattern-type", type=str.lower,
                       choices=["literal", "prefixed"] + (["any", "match"] if name != "add" else []))
        if name == "list":
            s.add_argument("--principal", action="append", default=[], help="only ACLs of these principals")
        else:
            s.add_argument("--allow-principal", action="append", default=[])
            s.add_argument("--deny-principal", action="append", default=[])
            s.add_argument("--allow-host", action="append", default=[])
            s.add_argument("--deny-host", action="append", default=[])
            s.add_argument("--operation", type=_op, action="append", default=[])
            s.add_argument("--producer", action="store_true", help="the ACLs a producer needs")
            s.add_argument("--consumer", action="store_true", help="the ACLs a consumer needs")
            s.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
            s.add_argument("--force", action="store_true", help="remove: allow removing every ACL of a resource")
        topics._add_common(s, suppress=True)
    return p


def _resources(args, pattern: str):
    """[(resource type name, resource name, pattern type name)]"""
    out = [("TOPIC", t, pattern) for t in args.topic] + [("GROUP", g, pattern) for g in args.group]
    out += [("TRANSACTIONAL_ID", x, pattern) for x in args.transactional_id]
    if args.cluster:
        out.append(("BROKER", "kafka-cluster", "LITERAL"))  # librdkafka's name of the CLUSTER type
    return out


def _entries(args):
    """[(principal, host, permission)] from --allow/--deny-principal and hosts."""
    out = []
    for perm, principals, hosts in (("ALLOW", args.allow_principal, args.allow_host),
                                    ("DENY", args.deny_principal, args.deny_host)):
        for pr in principals:
            for h in hosts or ["*"]:
                out.append((pr, h, perm))
    return out


def _operations(args, rtype: str) -> list[str]:
    ops = list(args.operation)
    if args.producer:
        ops += {"TOPIC": ["WRITE", "DESCRIBE", "CREATE"], "TRANSACTIONAL_ID": ["WRITE", "DESCRIBE"],
                "BROKER": ["IDEMPOTENT_WRITE"] if args.idempotent else []}.get(rtype, [])
    if args.consumer:
        ops += {"TOPIC": ["READ", "DESCRIBE"], "GROUP": ["READ"]}.get(rtype, [])
    return list(dict.fromkeys(ops))


def _bindings(args):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType)
    resources = _resources(args, (args.resource_pattern_type or "literal").upper())
    if args.producer and args.idempotent and not args.cluster:
        resources.append(("BROKER", "kafka-cluster", "LITERAL"))
    out = []
    for rtype, name, pattern in resources:
        for op in _operations(args, rtype):
            for pr, host, perm in _entries(args):
                out.append(AclBinding(getattr(ResourceType, rtype), name, getattr(ResourcePatternType, pattern),
                                      pr, host, getattr(AclOperation, op), getattr(AclPermissionType, perm)))
    return out


def _filters(args, default_pattern: str):
    from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType)
    pattern = (args.resource_pattern_type or default_pattern).upper()
    resources = _resources(args, pattern) or [("ANY", None, pattern)]
    principals = getattr(args, "principal", None) or None
    entries = [(pr, h, perm) for pr, h, perm in _entries(args)] if hasattr(args, "allow_principal") else []
    out = []
    for rtype, name, pt in resources:
        ops = _operations(args, rtype) if hasattr(args, "operation") else []
        for op in ops or ["ANY"]:
            for pr, host, perm in entries or [(p, None, "ANY") for p in (principals or [None])]:
                out.append(AclBindingFilter(getattr(ResourceType, rtype), name, getattr(ResourcePatternType, pt),
                                            pr, host, getattr(AclOperation, op), getattr(AclPermissionType, perm)))
    return out


def _describe(args) -> list:
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, ResourcePatternType,
                                       ResourceType)
    from hourglass.cli.wire import CliError as WireCliError, WireError, cli_client
    from protocol.api_keys import APIS
    from protocol.errors import ErrorCode
    found = []
    try:
        with cli_client(args, "hourglass-acls") as c:
            for f in _filters(args, "ANY"):
                req = APIS[29].request.cls(
                    resource_type_filter=f.restype.value, resource_name_filter=f.name,
                    pattern_type_filter=f.resource_pattern_type.value, principal_filter=f.principal,
                    host_filter=f.host, operation=f.operation.value, permission_type=f.permission_type.value)
                r = c.request(29, 3, req)
                if r.error_code:
                    raise CliError(f"{r.error_message or ''} ({ErrorCode(r.error_code).name})".strip())
                for res in r.resources:
                    for a in res.acls:
                        found.append(AclBinding(ResourceType(res.resource_type), res.resource_name,
                                                ResourcePatternType(res.pattern_type), a.principal, a.host,
                                                AclOperation(a.operation), AclPermissionType(a.permission_type)))
    except (WireError, WireCliError) as exc:
        raise CliError(str(exc)) from None
    return found


def _print(bindings, out) -> None:
    by_pattern: dict = {}
    for b in bindings:
        key = (b.restype.name.replace("BROKER", "CLUSTER"), b.name, b.resource_pattern_type.name)
        by_pattern.setdefault(key, []).append(b)
    for (rt, name, pt), acls in by_pattern.items():
        print(f"Current ACLs for resource `ResourcePattern(resourceType={rt}, name={name}, patternType={pt})`: ",
              file=out)
        for b in acls:
            print(f" \t(principal={b.principal}, host={b.host}, operation={b.operation.name}, "
                  f"permissionType={b.permission_type.name})", file=out)
        print(file=out)


def run(args, out=None, err=None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        admin, _md = topics._admin(args)
        if args.acls_cmd == "add":
            bindings = _bindings(args)
            if not bindings:
                raise CliError("nothing to add: give a resource, a principal and --operation (or --producer/--consumer)")
            errors = topics._wait(admin.create_acls(bindings, request_timeout=args.timeout), args.timeout)
            if errors:
                raise CliError("; ".join(errors))
            print("Adding ACLs for resource(s):", file=out)
            _print(bindings, out)
            return 0
        if args.acls_cmd == "list":
            # over our own wire client: librdkafka drops DescribeAcls's top-level error (an
            # unauthorized caller would see an empty list instead of CLUSTER_AUTHORIZATION_FAILED)
            _print(list(dict.fromkeys(_describe(args))), out)
            return 0
        narrowed = _entries(args) or args.operation or args.producer or args.consumer
        if not narrowed and not args.force:
            raise CliError("this removes every ACL of the resource(s): add --force to confirm")
        removed = []
        for f, fut in admin.delete_acls(_filters(args, "LITERAL"), request_timeout=args.timeout).items():
            try:
                removed += fut.result(timeout=args.timeout)
            except Exception as exc:
                raise CliError(topics._msg(exc)) from None
        print(f"Removed {len(removed)} ACL(s):", file=out)
        _print(removed, out)
        return 0
    except CliError as exc:
        print(f"hourglass acls: error: {exc}", file=err)
        return 1
    except client_properties.ClientPropertiesError as exc:
        print(f"hourglass acls: error: {exc}", file=err)
        return 2
