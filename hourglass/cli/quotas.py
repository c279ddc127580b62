"""``hourglass quotas add|list|remove`` and ``hourglass configs``: client quotas and configs of a
running broker, in the spirit of ``kafka-configs.sh``, over the wire (AlterClientQuotas,
DescribeClientQuotas; DescribeConfigs, IncrementalAlterConfigs).

    hourglass quotas add --user alice --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    hourglass quotas add --user-default --client-id app --add-config request_percentage=25
    hourglass quotas add --ip 10.0.0.7 --add-config connection_creation_rate=10 [--validate-only]
    hourglass quotas list [--user alice] [--client-default] ...     (no entity: every quota)
    hourglass quotas remove --client-id app [--delete-config producer_byte_rate,...]  (default: all keys)

    hourglass configs --describe --entity-type brokers [--entity-name 1 | --entity-default]
    hourglass configs --alter --entity-type brokers --entity-default --add-config log.retention.ms=3600000
    hourglass configs --alter --entity-type users --entity-name alice --entity-type clients --entity-name app \\
        --add-config producer_byte_rate=1024
    hourglass configs --describe --entity-type topics --entity-name orders

Entities: ``--user NAME`` / ``--user-default``, ``--client-id NAME`` / ``--client-default`` (a
user and a client id together name the pair), ``--ip ADDR`` / ``--ip-default``; ``configs``
takes kafka-configs.sh's ``--entity-type users|clients|ips|brokers|topics`` with
``--entity-name`` or ``--entity-default``. Output lines are kafka-configs.sh's: ``Quota configs
for user-principal 'alice' are producer_byte_rate=1048576.0`` and ``Dynamic configs for broker 1
are:``. A value that is not a number, or a refusal by the broker, is one error line and exit 1.
"""
from __future__ import annotations

from hourglass.cli.wire import CliError, add_cli_options, cli_client, error_name

QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate",
              "connection_creation_rate")
_TYPE_WORDS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}


def _entity_options(p) -> None:
    p.add_argument("--user", help="a user principal's name (<default>: the default user)")
    p.add_argument("--user-default", action="store_true")
    p.add_argument("--client-id")
    p.add_argument("--client-default", action="store_true")
    p.add_argument("--ip")
    p.add_argument("--ip-default", action="store_true")


def add_parser(subparsers):
    p = subparsers.add_parser("quotas", help="add, list or remove client quotas (kafka-configs.sh "
                                             "--entity-type users|clients|ips)")
    add_cli_options(p)
    sub = p.add_subparsers(dest="quotas_cmd", required=True, metavar="{add,list,remove}")
    a = sub.add_parser("add", help="set quota values of one entity")
    _entity_options(a)
    a.add_argument("--add-config", required=True, help="key=value,...: " + ", ".join(QUOTA_KEYS))
    a.add_argument("--validate-only", action="store_true")
    ls = sub.add_parser("list", help="quotas of the entities matching the options (all without any)")
    _entity_options(ls)
    r = sub.add_parser("remove", help="remove quota values of one entity")
    _entity_options(r)
    r.add_argument("--delete-config", help="key,...: default every key the entity has")
    for s in (a, ls, r):
        add_cli_options(s, suppress=True)
    c = subparsers.add_parser("configs", help="describe or alter broker, topic and client configs (kafka-configs.sh)")
    add_cli_options(c)
    mode = c.add_mutually_exclusive_group(required=True)
    mode.add_argument("--describe", action="store_true")
    mode.add_argument("--alter", action="store_true")
    c.add_argument("--entity-type", action="append", required=True,
                   choices=["brokers", "broker-defaults", "topics", "users", "clients", "ips"])
    c.add_argument("--entity-name", action="append", default=[])
    c.add_argument("--entity-default", action="append_const", const=None, dest="entity_name")
    c.add_argument("--add-config", default="")
    c.add_argument("--delete-config", default="")
    return p


def _entity(args) -> list[tuple[str, str | None]]:
    pairs = []
    for etype, name, default in (("user", args.user, args.user_default), ("client-id", args.client_id, args.client_default),
                                 ("ip", args.ip, args.ip_default)):
        if name is not None and default:
            raise CliError(f"give --{etype} or its default, not both")
        if name is not None:
            pairs.append((etype, None if name == "<default>" else name))
        elif default:
            pairs.append((etype, None))
    return pairs


def _parse_values(text: str) -> list[tuple[str, float]]:
    out = []
    for item in (text or "").split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise CliError(f"expected key=value, got {item!r}")
        k, v = (x.strip() for x in item.split("=", 1))
        try:
            out.append((k, float(v)))
        except ValueError:
            raise CliError(f"Cannot parse quota configuration value for {k}: {v}") from None
    return out


def describe_entity(ent) -> str:
    parts = []
    for t, n in sorted(ent, key=lambda p: ["user", "client-id", "ip"].index(p[0]) if p[0] in _TYPE_WORDS else 9):
        word = _TYPE_WORDS.get(t, t)
        parts.append(f"the default {word}" if n is None else f"{word} '{n}'")
    return ", ".join(parts)


def _alter(client, ent, ops, validate_only=False) -> None:
    from protocol.messages.alter_client_quotas import AlterClientQuotasRequest as AQ
    r = client.request(49, 1, AQ(entries=[AQ.EntryData(
        entity=[AQ.EntityData(entity_type=t, entity_name=n) for t, n in ent],
        ops=[AQ.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])],
        validate_only=validate_only))
    for e in r.entries:
        if e.error_code:
            raise CliError(f"{error_name(e.error_code)}: {e.error_message}")


def _describe(client, ent, strict=False) -> list:
    from protocol.messages.describe_client_quotas import DescribeClientQuotasRequest as DQ
    comps = [DQ.ComponentData(entity_type=t, match_type=1 if n is None else 0, match=n) for t, n in ent]
    r = client.request(48, 1, DQ(components=comps, strict=strict))
    if r.error_code:
        raise CliError(f"{error_name(r.error_code)}: {r.error_message}")
    return [(tuple((x.entity_type, x.entity_name) for x in e.entity), {v.key: v.value for v in e.values})
            for e in r.entries]


def _print_quotas(found, out) -> None:
    for ent, values in found:
        vals = ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
        print(f"Quota configs for {describe_entity(ent)} are {vals}", file=out)


def _quotas(args, out) -> int:
    ent = _entity(args)
    with cli_client(args, "hourglass-quotas") as c:
        if args.quotas_cmd == "list":
            _print_quotas(_describe(c, ent), out)
            return 0
        if not ent:
            raise CliError("name an entity: --user, --client-id, --ip or their --*-default")
        if args.quotas_cmd == "add":
            ops = _parse_values(args.add_config)
            if not ops:
                raise CliError("--add-config names no key")
            _alter(c, ent, ops, args.validate_only)
            print(f"{'Validated' if args.validate_only else 'Completed'} updating quota configs for "
                  f"{describe_entity(ent)}.", file=out)
            return 0
        keys = [k.strip() for k in (args.delete_config or "").split(",") if k.strip()]
        if not keys:
            have = [v for e, v in _describe(c, ent, strict=True) if dict(e) == dict(ent)]
            keys = sorted(have[0]) if have else []
        if not keys:
            raise CliError(f"no quota configs for {describe_entity(ent)}")
        _alter(c, ent, [(k, None) for k in keys])
        print(f"Completed removing quota configs {','.join(keys)} for {describe_entity(ent)}.", file=out)
        return 0


# ---- configs ------------------------------------------------------------------------------

_SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
            4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
            8: "DYNAMIC_GROUP_CONFIG"}


def _configs(args, out) -> int:
    types = args.entity_type
    names = list(args.entity_name)
    while len(names) < len(types):
        names.append(None)  # --entity-type without a name: describe all / the default
    quota_types = {"users": "user", "clients": "client-id", "ips": "ip"}
    with cli_client(args, "hourglass-configs") as c:
        if all(t in quota_types for t in types):
            ent = [(quota_types[t], n) for t, n in zip(types, names)]
            if args.describe:
                _print_quotas(_describe(c, [(t, n) for t, n in ent if n is not None] if any(
                    n is not None for _t, n in ent) else [], strict=False), out)
                return 0
            ops = _parse_values(args.add_config) + [(k.strip(), None) for k in args.delete_config.split(",") if k.strip()]
            _alter(c, ent, ops)
            print(f"Completed updating quota configs for {describe_entity(ent)}.", file=out)
            return 0
        if len(types) != 1:
            raise CliError("only users and clients may be combined")
        t, name = types[0], names[0]
        rtype = 2 if t == "topics" else 4
        if t == "broker-defaults":
            name = ""
        if name is None:
            if t == "topics":
                raise CliError("--entity-name is required for topics")
            name = ""  # --entity-default: the cluster-wide default
        if args.describe:
            return _describe_configs(c, rtype, name, t, out)
        return _alter_configs(c, rtype, name, args, out)


def _describe_configs(c, rtype, name, t, out) -> int:
    from protocol.messages.describe_configs import DescribeConfigsRequest as DC
    r = c.request(32, 4, DC(resources=[DC.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                                  configuration_keys=None)],
                            include_synonyms=True, include_documentation=False))
    res = r.results[0]
    if res.error_code:
        raise CliError(f"{error_name(res.error_code)}: {res.error_message}")
    # kafka-configs.sh lists what was set dynamically: for the cluster default only its own layer
    dynamic = {1} if rtype == 2 else ({3} if name == "" else {2, 3})
    if rtype == 2:
        print(f"Dynamic configs for topic {name} are:", file=out)
    elif name == "":
        print("Default configs for brokers in the cluster are:", file=out)
    else:
        print(f"Dynamic configs for broker {name} are:", file=out)
    for e in res.configs:
        if e.config_source in dynamic:
            syn = ", ".join(f"{_SOURCES.get(s.source, s.source)}:{s.name}={s.value}" for s in e.synonyms)
            value = "null" if e.is_sensitive else e.value
            print(f"  {e.name}={value} sensitive={str(e.is_sensitive).lower()} synonyms={{{syn}}}", file=out)
    return 0


def _alter_configs(c, rtype, name, args, out) -> int:
    from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as IA
    ops = []
    for item in args.add_config.split(","):
        if item.strip():
            if "=" not in item:
                raise CliError(f"expected key=value, got {item!r}")
            k, v = item.split("=", 1)
            ops.append(IA.AlterableConfig(name=k.strip(), config_operation=0, value=v.strip()))
    for k in args.delete_config.split(","):
        if k.strip():
            ops.append(IA.AlterableConfig(name=k.strip(), config_operation=1, value=None))
    if not ops:
        raise CliError("give --add-config or --delete-config")
    r = c.request(44, 1, IA(resources=[IA.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=ops)],
                            validate_only=False))
    res = r.responses[0]
    if res.error_code:
        raise CliError(f"{error_name(res.error_code)}: {res.error_message}")
    what = "topic " + name if rtype == 2 else ("default broker" if name == "" else "broker " + name)
    print(f"Completed updating config for {what}.", file=out)
    return 0


def run(args, out=None, err=None) -> int:
    from hourglass.cli.wire import run_cli
    if args.cmd == "quotas":
        return run_cli("quotas", _quotas, args, out, err)
    return run_cli("configs", _configs, args, out, err)
