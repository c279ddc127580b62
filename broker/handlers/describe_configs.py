"""DescribeConfigs (32) v0-4: topic, broker and broker-logger configs, as Kafka's ConfigHelper.

Topic resource (type 2): every topic config (not only the overrides: librdkafka's tests and
``kafka-configs --describe --all`` expect the full set), each with its resolved value, source,
read-only/sensitive flags, synonyms (v1+, when ``include_synonyms``), type and documentation
(v3+, documentation only when ``include_documentation``). Synonyms follow Kafka's
``configSynonyms``: the topic override first, then the broker synonyms grouped by source
(static ``server.properties``, then Kafka's default of each broker key), *and then everything
before the first entry named after the config's primary broker synonym is dropped*
(``allSynonyms.dropWhile(_.name != name)``). So, exactly as Kafka reports it, ``retention.ms``
has no synonyms (and source DEFAULT_CONFIG) unless ``log.retention.ms`` itself is set, even
when ``log.retention.hours`` is; ``segment.bytes`` shows ``log.segment.bytes``.
The source is the first remaining synonym's source, DEFAULT_CONFIG when none remain; v0's
``is_default`` is ``source == DEFAULT_CONFIG``.

Broker resource (type 4): resource name ``""`` is the cluster-wide dynamic default: what is set
at that level (``broker.dynamic_config``) over what a Kafka 4.1+ cluster writes there itself
(``cluster_level_configs``: ``min.insync.replicas``, KIP-966), DYNAMIC_DEFAULT_BROKER_CONFIG;
this node's id lists every broker key we accept
(``broker.config.BROKER_KEYS`` and ``storage.log_config.BROKER_LOG_DEFAULTS``, plus dynamic
listener keys) with its source: DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
STATIC_BROKER_CONFIG or DEFAULT_CONFIG (``broker.dynamic_config``); read-only unless Kafka
marks the key dynamic. Another id or a non-integer name: INVALID_REQUEST with Kafka's message.

Broker-logger resource (type 8): the Python loggers of this process and their levels
(source DYNAMIC_BROKER_LOGGER_CONFIG), as Kafka lists its log4j loggers.

An empty or null ``configuration_keys`` means all keys. Unknown topics: UNKNOWN_TOPIC_OR_PARTITION
(no message, as Kafka); illegal topic names: INVALID_TOPIC_EXCEPTION.
"""
from __future__ import annotations

import asyncio

import logging

from broker.errors import INVALID_REQUEST_MESSAGE
from broker.cluster import validate_topic_name
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.describe_configs import DescribeConfigsResponse as R
from storage import log_config as lc

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
RESOURCE_TYPE_NAMES = {0: "UNKNOWN", TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER",
                       CLIENT_METRICS: "CLIENT_METRICS", GROUP: "GROUP"}

SRC = lc.CONFIG_SOURCE_IDS
TYPES = lc.CONFIG_TYPE_IDS


class ResourceError(Exception):
    """A per-resource failure: answered with ``code`` and ``message`` for that resource only."""

    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code = code
        self.message = message


# ---- topic configs --------------------------------------------------------------------------

def kafka_topic_synonyms(name: str, synonyms) -> list:
    """Apply Kafka's ``dropWhile(_.name != primaryBrokerSynonym)`` to the broker part of a
    topic config's synonyms (the topic override, if any, stays first)."""
    topic_part = [s for s in synonyms if s.source == lc.SOURCE_TOPIC]
    broker_part = [s for s in synonyms if s.source != lc.SOURCE_TOPIC]
    d = lc.TOPIC_CONFIGS.get(name)
    if d is None:   # a deprecated config shown because the topic sets it: no broker part
        return topic_part
    primary = d.broker_synonym
    i = 0
    while i < len(broker_part) and broker_part[i].name != primary:
        i += 1
    return topic_part + broker_part[i:]


def cluster_level_configs(broker_defaults: dict) -> dict[str, str]:
    """The dynamic cluster-level broker configs a Kafka 4.1+ cluster has without anyone setting
    them: KIP-966 (eligible leader replicas, on in new 4.1 clusters) makes the controller
    write a cluster-level ``min.insync.replicas`` record valued as the static setting (else
    Kafka's default, 1), and refuse per-broker overrides and that record's removal. Every
    topic without an override therefore reports ``min.insync.replicas`` with source
    DYNAMIC_DEFAULT_BROKER_CONFIG, and the cluster-default broker resource (``""``) lists it."""
    return {"min.insync.replicas": str(broker_defaults.get("min.insync.replicas", "1"))}


def default_layer(b) -> dict[str, str]:
    """The cluster-default layer as described: what was set there over the cluster-level configs."""
    dyn = getattr(b, "dynamic_configs", None)
    return {**cluster_level_configs(b.cfg.raw), **(dyn.default if dyn is not None else {})}


def dynamic_log_layers(b) -> dict:
    """The dynamic broker layers of the topic defaults, as ``lc.describe`` keyword arguments."""
    dyn = getattr(b, "dynamic_configs", None)
    pick = lambda layer: {k: v for k, v in layer.items() if k in lc.BROKER_LOG_DEFAULTS}  # noqa: E731
    return {"dynamic_default_broker": pick(default_layer(b)),
            "dynamic_broker": pick(dyn.broker) if dyn is not None else {}}


def _layers(broker_defaults: dict, layers: dict | None) -> dict:
    return layers if layers is not None else {"dynamic_default_broker": cluster_level_configs(broker_defaults)}


def topic_config_entries(broker_defaults: dict, overrides: dict, names=None, layers=None):
    """[(name, value, source_name, read_only, sensitive, synonyms, type, documentation)] for
    DescribeConfigs of a topic, sorted by name, with Kafka's synonym and source rules.
    ``layers``: the dynamic broker layers (``dynamic_log_layers``; default: the cluster-level
    configs only)."""
    out = []
    for d in lc.describe(broker_defaults, overrides, names=names, **_layers(broker_defaults, layers)):
        syns = kafka_topic_synonyms(d.name, d.synonyms)
        source = syns[0].source if syns else lc.SOURCE_DEFAULT
        out.append((d.name, d.value, source, d.read_only, d.sensitive, syns, d.type, d.documentation))
    return out


def created_topic_configs(broker_defaults: dict, overrides: dict, layers=None):
    """Config entries echoed by CreateTopics v5+: Kafka's controller resolves each topic config
    through its synonyms in order (``resolveEffectiveTopicConfigs``), without ConfigHelper's
    drop; so the source is simply the first synonym's (topic, static broker, default)."""
    return [(d.name, d.value, d.source, d.read_only, d.sensitive)
            for d in lc.describe(broker_defaults, overrides, **_layers(broker_defaults, layers))]


# ---- broker configs -------------------------------------------------------------------------

# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: keys that stand for one another.
_BROKER_SYNONYM_GROUPS = [
    ["log.roll.ms", "log.roll.hours"],
    ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
]


def _broker_synonym_names(name: str) -> list[str]:
    if name == "log.flush.interval.ms":
        return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    for group in _BROKER_SYNONYM_GROUPS:
        if name in group:
            return group
    return [name]


_PARSE_TYPES = {"_int": "int", "_long": "long", "_bool": "boolean", "_str": "string", "_list": "list", "_float": "double"}


def _broker_key_table() -> dict[str, tuple[str, str | None, str]]:
    """name -> (type, default string or None, documentation) of every broker key we accept.
    Keys the broker itself owns (BROKER_KEYS) keep the broker's default."""
    from broker.config import BROKER_KEYS
    table: dict[str, tuple[str, str | None, str]] = {}
    for name, d in lc.BROKER_LOG_DEFAULTS.items():
        table[name] = (d.type, lc.value_to_string(d.type, d.default), d.documentation)
    from broker.compat_keys import NO_EFFECT, SENSITIVE_SUFFIXES
    for name, k in BROKER_KEYS.items():
        if name in table:
            typ = table[name][0]
        elif name in NO_EFFECT:
            typ = NO_EFFECT[name][0]  # Kafka's own type (a replication factor is a SHORT)
        elif name.endswith(SENSITIVE_SUFFIXES):
            typ = "password"
        else:
            typ = _PARSE_TYPES.get(getattr(k.parse, "__name__", ""), "string")
        table[name] = (typ, k.default, k.doc)
    return table


def broker_config_entries(raw: dict[str, str], names=None, default: dict | None = None,
                          broker: dict | None = None):
    """[(name, value, source_name, read_only, sensitive, synonyms, type, documentation)] for
    this node's broker resource: per key the dynamic per-broker value, else the dynamic
    cluster default, else the static setting, else the default; read-only unless Kafka marks
    the key dynamic. Dynamic keys outside the table (listener-prefixed) are listed too."""
    from broker.dynamic_config import SECURITY_KEYS, is_dynamic, is_sensitive
    default, broker = default or {}, broker or {}
    table = _broker_key_table()
    extra = sorted((set(default) | set(broker)) - set(table))
    every = sorted(set(table) | set(extra))
    wanted = every if names is None else [n for n in names if n in table or n in extra]
    out = []
    for name in wanted:
        typ, dflt, doc = table.get(name, ("password" if is_sensitive(name) else "string", None, None))
        syns = []
        group = _broker_synonym_names(name)
        for source, layer in ((lc.SOURCE_DYNAMIC_BROKER, broker), (lc.SOURCE_DYNAMIC_DEFAULT_BROKER, default),
                              (lc.SOURCE_STATIC_BROKER, raw)):
            for s in group:
                if s in layer:
                    syns.append(lc.ConfigSynonymEntry(s, layer[s], source))
        for s in group:
            if s in table and table[s][1] is not None:
                syns.append(lc.ConfigSynonymEntry(s, table[s][1], lc.SOURCE_DEFAULT))
        while syns and syns[0].name != name:  # Kafka's dropWhile(_.name != name)
            syns.pop(0)
        value = syns[0].value if syns else dflt
        source = syns[0].source if syns else lc.SOURCE_DEFAULT
        sensitive = typ == "password" or is_sensitive(name)
        # Kafka's AllDynamicConfigs counts the security keys too (updatable per listener only)
        read_only = not (is_dynamic(name) or name in SECURITY_KEYS)
        out.append((name, value, source, read_only, sensitive, syns, typ, doc))
    return out


def default_broker_config_entries(default: dict, names=None):
    """The cluster-default resource ``""``: only what is set at that level (Kafka's
    ``currentDynamicDefaultConfigs``)."""
    from broker.dynamic_config import is_sensitive
    table = _broker_key_table()
    wanted = sorted(default) if names is None else [n for n in names if n in default]
    out = []
    for n in wanted:
        typ, _dflt, doc = table.get(n, ("password" if is_sensitive(n) else "string", None, None))
        out.append((n, default[n], lc.SOURCE_DYNAMIC_DEFAULT_BROKER, False, is_sensitive(n),
                    [lc.ConfigSynonymEntry(n, default[n], lc.SOURCE_DYNAMIC_DEFAULT_BROKER)], typ, doc))
    return out


def check_broker_resource(node_id: int, resource_name: str | None, *, allow_default: bool,
                          word: str = "Broker") -> bool:
    """True for this node's id, False for the cluster-default resource ``""``; raises
    ResourceError (INVALID_REQUEST, Kafka's messages) otherwise. ``word``: Kafka's DescribeConfigs
    says "Broker id", its (Incremental)AlterConfigs "Node id"."""
    if not resource_name:
        if allow_default:
            return False
        raise ResourceError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    try:
        bid = int(resource_name)
    except ValueError:
        raise ResourceError(ErrorCode.INVALID_REQUEST,
                            f"{word} id must be an integer, but it is: {resource_name}") from None
    if bid != node_id:
        expected = f"{node_id} or empty string" if allow_default else f"{node_id}"
        raise ResourceError(ErrorCode.INVALID_REQUEST,
                            f"Unexpected broker id, expected {expected}, but received {resource_name}")
    return True


def logger_entries(names=None):
    """This process's loggers (root and our packages) with their effective levels."""
    mgr = logging.root.manager
    loggers = {"root": logging.getLogger()}
    for n, lg in list(mgr.loggerDict.items()):
        if isinstance(lg, logging.Logger) and n.split(".")[0] in ("broker", "storage", "protocol", "hourglass"):
            loggers[n] = lg
    wanted = sorted(loggers) if names is None else [n for n in names if n in loggers]
    out = []
    for n in wanted:
        level = logging.getLevelName(loggers[n].getEffectiveLevel())
        level = {"WARNING": "WARN", "CRITICAL": "FATAL"}.get(level, level)
        out.append((n, level, "DYNAMIC_BROKER_LOGGER_CONFIG", False, False, [], "string", None))
    return out


# ---- handler ----------------------------------------------------------------------------------

def _entries_for(b, rtype: int, rname: str, names, layers=None):
    if rtype == TOPIC:
        return topic_config_entries(b.cfg.topic_defaults, _topic(b, rname).configs, names,
                                    layers if layers is not None else dynamic_log_layers(b))
    if rtype == BROKER:
        dyn = getattr(b, "dynamic_configs", None)
        if not check_broker_resource(b.node_id, rname, allow_default=True):
            return default_broker_config_entries(default_layer(b), names)
        return broker_config_entries(b.cfg.raw, names, default_layer(b), dyn.broker if dyn is not None else None)
    if rtype == BROKER_LOGGER:
        check_broker_resource(b.node_id, rname, allow_default=False)
        return logger_entries(names)
    if rtype == GROUP:
        return group_config_entries(b, rname, names)
    if rtype == CLIENT_METRICS:
        return client_metrics_entries(b, rname, names)
    # Kafka answers with INVALID_REQUEST's own description (Errors.INVALID_REQUEST.message())
    raise ResourceError(ErrorCode.INVALID_REQUEST, INVALID_REQUEST_MESSAGE)


def _topic(b, rname: str):
    err = validate_topic_name(rname or "")
    if err:
        raise ResourceError(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
    t = b.topics.get(rname)
    if t is None:
        raise ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")  # Kafka's message: ""
    return t


def _frozen(d: dict) -> tuple:
    return tuple(sorted(d.items()))


def client_metrics_entries(b, name: str, names=None):
    """A client metrics subscription's configs as Kafka 4.4 lists them: every key, those set
    with source CLIENT_METRICS_CONFIG (and themselves as synonym), the others with their
    default (DEFAULT_CONFIG); an unknown subscription lists the defaults."""
    if not name:
        raise ResourceError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
    from broker.client_metrics import CONFIG_TYPES, DEFAULTS, DOCS
    props = b.client_metrics.get(name)
    out = []
    for n in sorted(CONFIG_TYPES) if names is None else [n for n in names if n in CONFIG_TYPES]:
        if n in props:
            out.append((n, props[n], "CLIENT_METRICS_CONFIG", False, False,
                        [lc.ConfigSynonymEntry(n, props[n], "CLIENT_METRICS_CONFIG")], CONFIG_TYPES[n], DOCS[n]))
        else:
            out.append((n, DEFAULTS[n], lc.SOURCE_DEFAULT, False, False, [], CONFIG_TYPES[n], DOCS[n]))
    return out


def group_config_entries(b, group_id: str, names=None):
    """A group's configs as Kafka 4.4 lists them (``createGroupConfigEntry``): each key's
    synonyms are the group's override (GROUP_CONFIG) then its broker synonym's own synonyms
    (dynamic, static, default), or, for a key with no broker synonym, its definition's default
    under its own name; the source is the first synonym's."""
    if not group_id:
        raise ResourceError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    from broker.groups.group_configs import java_str
    gc = b.group_configs
    dyn = getattr(b, "dynamic_configs", None)
    out = []
    for name, value, override, typ, synonym, doc in gc.entries(group_id, names):
        syns = [lc.ConfigSynonymEntry(name, value, "GROUP_CONFIG")] if override else []
        if synonym is not None:
            broker = broker_config_entries(b.cfg.raw, [synonym], default_layer(b), dyn.broker if dyn else None)
            if broker:
                syns += broker[0][5]
            else:  # a broker key Hourglass does not accept: Kafka 4.4's default
                syns.append(lc.ConfigSynonymEntry(synonym, java_str(gc.broker_value(synonym)), lc.SOURCE_DEFAULT))
        else:  # no broker key: the definition's default, under the group key's own name
            syns.append(lc.ConfigSynonymEntry(name, java_str(gc.default(name)), lc.SOURCE_DEFAULT))
        out.append((name, value, syns[0].source if syns else lc.SOURCE_DEFAULT, False, False, syns, typ, doc))
    return out


_SLICE = 32  # resources described per turn of the event loop (~1 ms each with synonyms and docs)


@handles(32)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    syn_on = v >= 1 and req.include_synonyms
    doc_on = v >= 3 and req.include_documentation
    results = []
    az = active(ctx)
    # Topics with the same overrides (under the same broker layers) have the same entries:
    # built once per request, the one list shared by their results (1,000 topics made ~200,000 objects, enough to
    # set off a full collection of the heap, a stall of its own; the answer's bytes are the same)
    shared: dict = {}
    layers = dynamic_log_layers(b)
    for i, res in enumerate(req.resources):
        if i and i % _SLICE == 0:  # thousands of resources: other connections are served between slices
            await asyncio.sleep(0)
            layers = dynamic_log_layers(b)  # a change made meanwhile shows from here on
        names = res.configuration_keys or None  # null or empty: all
        denied = None
        if az is not None and res.resource_type == TOPIC and not az.allowed("topic", res.resource_name):
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif (az is not None and res.resource_type in (BROKER, BROKER_LOGGER, CLIENT_METRICS)
              and not az.allowed("broker")):
            denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        elif az is not None and res.resource_type == GROUP and not az.allowed("group", res.resource_name):
            denied = ErrorCode.GROUP_AUTHORIZATION_FAILED
        if denied is not None:
            results.append(R.DescribeConfigsResult(error_code=denied, error_message=None,
                                                   resource_type=res.resource_type,
                                                   resource_name=res.resource_name, configs=[]))
            continue
        try:
            key = None
            if res.resource_type == TOPIC:
                key = (_frozen(_topic(b, res.resource_name).configs), tuple(names) if names else None,
                       _frozen(layers["dynamic_default_broker"]), _frozen(layers["dynamic_broker"]))
            configs = shared.get(key) if key is not None else None
            if configs is None:
                configs = _configs(_entries_for(b, res.resource_type, res.resource_name, names, layers),
                                   v, syn_on, doc_on)
                if key is not None:
                    shared[key] = configs
        except ResourceError as exc:
            results.append(R.DescribeConfigsResult(error_code=exc.code, error_message=exc.message,
                                                   resource_type=res.resource_type,
                                                   resource_name=res.resource_name, configs=[]))
            continue
        results.append(R.DescribeConfigsResult(error_code=0, error_message="",  # Kafka's: "", not null
                                               resource_type=res.resource_type,
                                               resource_name=res.resource_name, configs=configs))
    return R(throttle_time_ms=0, results=results)


def _configs(entries, v: int, syn_on: bool, doc_on: bool) -> list:
    configs = []
    for name, value, source, read_only, sensitive, syns, typ, doc in entries:
        configs.append(R.DescribeConfigsResourceResult(
            name=name, value=None if sensitive else value, read_only=read_only,
            config_source=SRC[source],
            is_default=v == 0 and source == lc.SOURCE_DEFAULT,  # a v0-only field
            is_sensitive=sensitive,
            synonyms=[R.DescribeConfigsSynonym(name=s.name, value=None if sensitive else s.value,
                                               source=SRC[s.source]) for s in syns] if syn_on else [],
            config_type=TYPES.get(typ, 0), documentation=doc if doc_on else None))
    return configs
