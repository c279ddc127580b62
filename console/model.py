"""What the console and Kafka REST v3 read and write, as plain dicts and lists.

Invariant: every call goes through the broker's own Kafka API handlers (``Kafka.request``:
the same ``handler.fn(ctx, request)`` a Kafka connection dispatches to, with a
``RequestContext`` whose ``authz`` is the HTTP caller's principal). So the topic manager, the
log manager's reads (Fetch, ListOffsets through the time index), the group coordinator's
describe/offsets and the authorizer's checks are exactly those of the Kafka listener: there
is no second way into storage and no second copy of an ACL rule. The few reads no Kafka API
offers (the segment timeline) authorize with the same ``RequestAuthz`` rows a handler uses
and read the partition log's own introspection.

Errors leave as ``ModelError`` subclasses carrying the Kafka error code (when there is one);
``console.rest_v3`` turns them into Confluent's error JSON. Nothing here knows HTTP.

Functions take a ``Kafka`` (the caller) and return JSON-ready values (ints, strs, lists,
dicts); bytes are returned as ``{"size", "base64", "text"}``.
"""
from __future__ import annotations

import asyncio
import base64
import itertools
import time
from collections import deque
from typing import Any, Iterable

from broker.connection import RequestContext
from broker.security.acl import AclOperation, PatternType, ResourceType, SUPPORTED_OPERATIONS
from broker.security.api_acls import RequestAuthz
from broker.security.principal import ANONYMOUS
from protocol.errors import ErrorCode
from protocol.records.batch import TIMESTAMP_TYPE_MASK, iter_batch_positions
from protocol.records.record import build_batch, decode_batch

# API versions the model speaks (each request below is built for exactly this version)
V_PRODUCE, V_FETCH, V_LIST_OFFSETS, V_METADATA = 11, 12, 9, 12
V_OFFSET_COMMIT, V_OFFSET_FETCH, V_DESCRIBE_GROUPS, V_LIST_GROUPS = 9, 9, 5, 5
V_CREATE_TOPICS, V_DELETE_TOPICS, V_DESCRIBE_ACLS, V_DESCRIBE_CONFIGS = 7, 6, 3, 4
V_INCREMENTAL_ALTER_CONFIGS, V_DESCRIBE_SCRAM, V_DESCRIBE_TXNS, V_LIST_TXNS = 1, 0, 0, 1
V_DESCRIBE_CLUSTER, V_CONSUMER_GROUP_DESCRIBE, V_SHARE_GROUP_DESCRIBE, V_DESCRIBE_SHARE_OFFSETS = 1, 1, 1, 0
V_CREATE_ACLS, V_DELETE_ACLS, V_CREATE_PARTITIONS = 3, 3, 3
V_STREAMS_GROUP_DESCRIBE = 0

TOPIC_RESOURCE = 2  # DescribeConfigs / IncrementalAlterConfigs resource type
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LATEST, EARLIEST = -1, -2
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


# ---- errors ---------------------------------------------------------------------------------

class ModelError(Exception):
    """A refusal; ``code`` is the Kafka error code when one applies (else None)."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.message = message
        self.code = None if code is None else int(code)


class KafkaError(ModelError):
    """A Kafka API answered an error code."""


class NotFound(ModelError):
    """Something the path names does not exist (a group, a config, a consumer, a cluster)."""


class BadRequest(ModelError):
    """The request itself is wrong (malformed values, out-of-range arguments)."""


class Conflict(ModelError):
    """The resource is in a state that forbids the change (a non-empty group's offsets)."""


# Kafka's default messages (org.apache.kafka.common.protocol.Errors) for codes a handler may
# answer without a message of its own
_MESSAGES = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.OFFSET_OUT_OF_RANGE: "The requested offset is not within the range of offsets maintained by the server.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.INVALID_CONFIG: "Configuration is invalid.",
    ErrorCode.TOPIC_ALREADY_EXISTS: "Topic with this name already exists.",
    ErrorCode.MESSAGE_TOO_LARGE: "The request included a message larger than the max message size the server will accept.",
    ErrorCode.SECURITY_DISABLED: "Security features are disabled.",
}

AUTHORIZATION_ERRORS = frozenset({
    ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})


def error_message(code: int, message: str | None = None) -> str:
    if message:
        return message
    try:
        ec = ErrorCode(code)
    except ValueError:
        return f"Kafka error {code}"
    return _MESSAGES.get(ec) or ec.name.replace("_", " ").capitalize() + "."


def check(code: int, message: str | None = None) -> None:
    """Raise KafkaError for a non-zero Kafka error code."""
    if code:
        raise KafkaError(error_message(code, message), code)


# ---- the in-process client ------------------------------------------------------------------

class Kafka:
    """One HTTP caller as a Kafka client of this broker: ``request(api_key, version, body)``
    runs the registered handler exactly as a connection would, with ``principal`` (``User:x``)
    from ``host`` as the request's principal, so every ACL row applies to it.

    ``principal=None`` is the broker itself (no authorization: used by the console's own
    samplers, whose results are filtered per caller when read).
    """

    def __init__(self, broker, principal: str | None = ANONYMOUS, host: str = "127.0.0.1",
                 client_id: str = "hourglass-console"):
        self.broker = broker
        self.principal = principal
        self.host = host or "127.0.0.1"
        self.client_id = client_id

    def authz(self, api_key: int, version: int) -> RequestAuthz:
        sec = self.broker.security
        authorizer = None if self.principal is None or sec is None else sec.authorizer
        return RequestAuthz(authorizer, self.principal or ANONYMOUS, self.host, api_key, version)

    async def request(self, api_key: int, version: int, body):
        handler = self.broker.handlers[api_key]
        ctx = RequestContext(self.broker, None, api_key, version, 0, self.client_id, None)
        ctx.authz = self.authz(api_key, version)
        m = self.broker.metrics
        m.request_started(api_key, version)
        t0 = time.perf_counter()
        try:
            return await handler.fn(ctx, body)
        finally:
            m.request_done(api_key, version, time.perf_counter() - t0)

    def allowed(self, api_key: int, version: int, label: str, name: str | None = None) -> bool:
        """The handler's own check ``label`` of API ``api_key`` for this caller."""
        az = self.authz(api_key, version)
        return az.allowed(label) if name is None else az.allowed(label, name)


def operation_names(bits: int, resource_type: ResourceType) -> list[str]:
    """An ``*_authorized_operations`` bit field as Kafka's operation names."""
    if bits < 0:
        return []
    return [AclOperation(op).name for op in sorted(SUPPORTED_OPERATIONS[resource_type]) if bits & (1 << op)]


def _bytes_view(b: bytes | None, k: "Kafka | None" = None) -> dict | None:
    """{size, base64, text (UTF-8 or None)}, and ``schema`` {schema_id, schema_type, subject,
    data} when the bytes are in the Schema Registry's wire format with an id the registry
    knows and the caller may read."""
    if b is None:
        return None
    b = bytes(b)
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    out = {"size": len(b), "base64": base64.b64encode(b).decode("ascii"), "text": text}
    if k is not None and len(b) >= 5 and b[0] == 0 and getattr(k.broker, "schema_registry", None) is not None:
        from console.serde import decode
        decoded = decode(k.broker, k.principal, k.host, b)
        if decoded is not None:
            out["schema"] = decoded
    return out


# ---- cluster ------------------------------------------------------------------------------

async def cluster(k: Kafka) -> dict:
    """{cluster_id, controller_id, brokers: [{broker_id, host, port, rack}]}"""
    from protocol.messages.describe_cluster import DescribeClusterRequest
    r = await k.request(60, V_DESCRIBE_CLUSTER, DescribeClusterRequest(include_cluster_authorized_operations=True))
    check(r.error_code, r.error_message)
    return {"cluster_id": r.cluster_id, "controller_id": r.controller_id,
            "brokers": [{"broker_id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
                        for b in r.brokers],
            "authorized_operations": operation_names(r.cluster_authorized_operations, ResourceType.CLUSTER)}


# ---- topics ---------------------------------------------------------------------------------

def _topic_dict(t) -> dict:
    return {"topic_name": t.name, "topic_id": t.topic_id.hex() if isinstance(t.topic_id, bytes) else str(t.topic_id),
            "is_internal": bool(t.is_internal), "partitions_count": len(t.partitions),
            "replication_factor": max((len(p.replica_nodes) for p in t.partitions), default=0),
            "partitions": [{"partition_id": p.partition_index, "leader": p.leader_id,
                            "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes)}
                           for p in sorted(t.partitions, key=lambda p: p.partition_index)],
            "authorized_operations": operation_names(t.topic_authorized_operations, ResourceType.TOPIC)}


async def _metadata(k: Kafka, names: list[str] | None):
    from protocol.messages.metadata import MetadataRequest as M
    topics = None if names is None else [M.MetadataRequestTopic(name=n) for n in names]
    return await k.request(3, V_METADATA, M(topics=topics, allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=True))


async def list_topics(k: Kafka) -> list[dict]:
    """Every topic the caller may describe (Metadata for all topics), by name."""
    r = await _metadata(k, None)
    return sorted((_topic_dict(t) for t in r.topics if t.error_code == 0), key=lambda d: d["topic_name"])


async def get_topic(k: Kafka, name: str) -> dict:
    r = await _metadata(k, [name])
    t = r.topics[0]
    check(t.error_code)
    return _topic_dict(t)


def first_timestamp(seg) -> int | None:
    """The first record timestamp of a segment, from its first batch header (one small read):
    the batch's base timestamp, or its max timestamp for LogAppendTime batches."""
    for _pos, h in seg.iter_headers(0):
        ts = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else h.base_timestamp
        return ts if ts >= 0 else None
    return None


def _span(plog) -> tuple[int | None, int | None]:
    """(oldest, newest) record timestamp of a partition from segment metadata (no scan): the
    first record timestamp of the first non-empty segment and the largest of any segment."""
    oldest = newest = None
    for s in plog.segments.values():
        if s.size == 0:
            continue
        if oldest is None:
            oldest = first_timestamp(s)
        lt = s.largest_record_timestamp
        if lt is not None and lt >= 0 and (newest is None or lt > newest):
            newest = lt
    return oldest, newest


async def topic_summaries(k: Kafka) -> list[dict]:
    """``list_topics`` plus size, cleanup policy, retention and the time span of the data
    (oldest..newest record timestamp), for the topics page. O(partitions + segments)."""
    out = []
    for d in await list_topics(k):
        info = k.broker.topics.get(d["topic_name"])
        size = 0
        oldest = newest = None
        records = 0
        for p in range(d["partitions_count"]):
            plog = k.broker.topics.log(d["topic_name"], p)
            if plog is None:
                continue
            size += plog.size_in_bytes
            records += max(plog.high_watermark - plog.log_start_offset, 0)
            o, n = _span(plog)
            if o is not None and (oldest is None or o < oldest):
                oldest = o
            if n is not None and (newest is None or n > newest):
                newest = n
        cfg = k.broker.topics.log_config(info.configs if info is not None else {})
        d.update(size_bytes=size, offsets=records, oldest_timestamp=oldest, newest_timestamp=newest,
                 cleanup_policy=",".join(cfg.cleanup_policy), retention_ms=cfg.retention_ms,
                 retention_bytes=cfg.retention_bytes)
        out.append(d)
    return out


async def create_topic(k: Kafka, name: str, partitions: int = -1, replication_factor: int = -1,
                       configs: dict[str, str | None] | None = None, validate_only: bool = False) -> dict:
    from protocol.messages.create_topics import CreateTopicsRequest as C
    ct = C.CreatableTopic(name=name, num_partitions=partitions, replication_factor=replication_factor, assignments=[],
                          configs=[C.CreatableTopic.CreatableTopicConfig(name=n, value=v)
                                   for n, v in (configs or {}).items()])
    r = await k.request(19, V_CREATE_TOPICS, C(topics=[ct], timeout_ms=30000, validate_only=validate_only))
    t = r.topics[0]
    check(t.error_code, t.error_message)
    if validate_only:
        return {"topic_name": name, "topic_id": "", "is_internal": False, "partitions_count": t.num_partitions,
                "replication_factor": t.replication_factor, "partitions": [], "authorized_operations": []}
    return await get_topic(k, name)


async def create_partitions(k: Kafka, name: str, count: int, validate_only: bool = False) -> None:
    """CreatePartitions: the topic grows to ``count`` partitions (ALTER on the topic)."""
    from protocol.messages.create_partitions import CreatePartitionsRequest as C
    r = await k.request(37, V_CREATE_PARTITIONS, C(topics=[C.CreatePartitionsTopic(name=name, count=count,
                                                                                    assignments=None)],
                                                   timeout_ms=30000, validate_only=validate_only))
    res = r.results[0]
    check(res.error_code, res.error_message)


async def delete_topic(k: Kafka, name: str) -> None:
    from protocol.messages.delete_topics import DeleteTopicsRequest as D
    from protocol.schema import ZERO_UUID
    r = await k.request(20, V_DELETE_TOPICS, D(topics=[D.DeleteTopicState(name=name, topic_id=ZERO_UUID)],
                                               timeout_ms=30000))
    res = r.responses[0]
    check(res.error_code, res.error_message)


# ---- partitions and offsets -----------------------------------------------------------------

async def list_offsets(k: Kafka, wanted: dict[tuple[str, int], int], isolation: int = READ_UNCOMMITTED
                       ) -> dict[tuple[str, int], tuple[int, int] | KafkaError]:
    """ListOffsets for {(topic, partition): timestamp} -> {(topic, partition): (offset, timestamp)}
    (offset -1 when no record qualifies) or a KafkaError for that partition."""
    from protocol.messages.list_offsets import ListOffsetsRequest as L
    by_topic: dict[str, list] = {}
    for (t, p), ts in wanted.items():
        by_topic.setdefault(t, []).append(L.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=ts))
    if not by_topic:
        return {}
    r = await k.request(2, V_LIST_OFFSETS, L(replica_id=-1, isolation_level=isolation, topics=[
        L.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()]))
    out: dict = {}
    for t in r.topics:
        for p in t.partitions:
            out[(t.name, p.partition_index)] = (KafkaError(error_message(p.error_code), p.error_code)
                                                if p.error_code else (p.offset, p.timestamp))
    return out


async def partitions(k: Kafka, topic: str, partition: int | None = None) -> list[dict]:
    """Each partition (or the one named) with leader, replicas and offsets: ``earliest_offset``
    (log start), ``latest_offset`` (high watermark) and ``last_stable_offset`` (LSO), each as
    ListOffsets answers it."""
    t = await get_topic(k, topic)
    parts = t["partitions"]
    if partition is not None:
        parts = [p for p in parts if p["partition_id"] == partition]
        if not parts:
            raise KafkaError(error_message(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    keys = [(topic, p["partition_id"]) for p in parts]
    earliest = await list_offsets(k, {tp: EARLIEST for tp in keys})
    latest = await list_offsets(k, {tp: LATEST for tp in keys})
    stable = await list_offsets(k, {tp: LATEST for tp in keys}, READ_COMMITTED)
    out = []
    for p in parts:
        tp = (topic, p["partition_id"])
        row = dict(p, topic_name=topic)
        for key, res in (("earliest_offset", earliest), ("latest_offset", latest), ("last_stable_offset", stable)):
            v = res.get(tp)
            if isinstance(v, KafkaError):
                raise v
            row[key] = v[0] if v is not None else -1
        plog = k.broker.topics.log(topic, p["partition_id"])
        row["size_bytes"] = plog.size_in_bytes if plog is not None else 0
        out.append(row)
    return out


async def offset_for_time(k: Kafka, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
    """ListOffsets for one partition: (offset, timestamp), (-1, -1) when no record qualifies."""
    v = (await list_offsets(k, {(topic, partition): timestamp}))[(topic, partition)]
    if isinstance(v, KafkaError):
        raise v
    return v


# ---- topic configs --------------------------------------------------------------------------

_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
            4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
            7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
_TYPES = {0: "UNKNOWN", 1: "BOOLEAN", 2: "STRING", 3: "INT", 4: "SHORT", 5: "LONG", 6: "DOUBLE", 7: "LIST",
          8: "CLASS", 9: "PASSWORD"}


async def topic_configs(k: Kafka, topic: str, names: list[str] | None = None) -> list[dict]:
    """Every config of a topic (DescribeConfigs with synonyms and documentation), by name:
    {name, value, source, is_default, is_read_only, is_sensitive, synonyms, type, documentation}."""
    from protocol.messages.describe_configs import DescribeConfigsRequest as D
    r = await k.request(32, V_DESCRIBE_CONFIGS, D(resources=[D.DescribeConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=topic, configuration_keys=names)],
        include_synonyms=True, include_documentation=True))
    res = r.results[0]
    check(res.error_code, res.error_message)
    out = []
    for c in res.configs:
        source = _SOURCES.get(c.config_source, "UNKNOWN")
        out.append({"name": c.name, "value": c.value, "source": source, "is_default": source == "DEFAULT_CONFIG",
                    "is_read_only": c.read_only, "is_sensitive": c.is_sensitive,
                    "synonyms": [{"name": s.name, "value": s.value, "source": _SOURCES.get(s.source, "UNKNOWN")}
                                 for s in c.synonyms],
                    "type": _TYPES.get(c.config_type, "UNKNOWN"), "documentation": c.documentation})
    return sorted(out, key=lambda c: c["name"])


BROKER_RESOURCE = 4


async def broker_configs(k: Kafka, broker_id: int | str, names: list[str] | None = None) -> list[dict]:
    """A broker's configs (DescribeConfigs on the BROKER resource: CLUSTER DESCRIBE_CONFIGS;
    ``""`` is the cluster-wide dynamic defaults, none here), same fields as topic_configs.
    Sensitive values are None (DescribeConfigs never returns them)."""
    from protocol.messages.describe_configs import DescribeConfigsRequest as D
    r = await k.request(32, V_DESCRIBE_CONFIGS, D(resources=[D.DescribeConfigsResource(
        resource_type=BROKER_RESOURCE, resource_name=str(broker_id), configuration_keys=names)],
        include_synonyms=True, include_documentation=True))
    res = r.results[0]
    check(res.error_code, res.error_message)
    return sorted((_config_row(c) for c in res.configs), key=lambda c: c["name"])


def _config_row(c) -> dict:
    """One DescribeConfigs entry as the console's config row (sensitive values None)."""
    return {"name": c.name, "value": None if c.is_sensitive else c.value,
            "source": _SOURCES.get(c.config_source, "UNKNOWN"),
            "is_default": c.config_source == 5, "is_read_only": c.read_only, "is_sensitive": c.is_sensitive,
            "synonyms": [{"name": x.name, "value": None if c.is_sensitive else x.value,
                          "source": _SOURCES.get(x.source, "UNKNOWN")} for x in c.synonyms],
            "type": _TYPES.get(c.config_type, "UNKNOWN"), "documentation": c.documentation}


async def all_topic_configs(k: Kafka) -> list[tuple[str, dict]]:
    """(topic, config) for every config of every topic the caller may describe (Metadata
    lists them; one DescribeConfigs for all; a topic whose configs are refused is left out)."""
    from protocol.messages.describe_configs import DescribeConfigsRequest as D
    names = [t["topic_name"] for t in await list_topics(k)]
    if not names:
        return []
    r = await k.request(32, V_DESCRIBE_CONFIGS, D(resources=[D.DescribeConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=n, configuration_keys=None) for n in names],
        include_synonyms=True, include_documentation=True))
    return [(res.resource_name, _config_row(c)) for res in sorted(r.results, key=lambda x: x.resource_name)
            if res.error_code == 0 for c in sorted(res.configs, key=lambda c: c.name)]


async def alter_broker_configs(k: Kafka, broker_id: int | str, ops: Iterable[tuple[str, str, str | None]],
                               validate_only: bool = False) -> None:
    """IncrementalAlterConfigs on a BROKER resource: ``broker_id`` one node, ``""`` the
    cluster-wide dynamic default (ALTER_CONFIGS on the cluster); ops as ``alter_topic_configs``."""
    await _alter_configs(k, BROKER_RESOURCE, str(broker_id), ops, validate_only)


async def topic_config(k: Kafka, topic: str, name: str) -> dict:
    found = await topic_configs(k, topic, [name])
    if not found:
        raise NotFound(f"Config {name} could not be found for topic {topic}.")
    return found[0]


OPERATIONS = {"SET": SET, "DELETE": DELETE, "APPEND": APPEND, "SUBTRACT": SUBTRACT}


async def alter_topic_configs(k: Kafka, topic: str, ops: Iterable[tuple[str, str, str | None]],
                              validate_only: bool = False) -> None:
    """IncrementalAlterConfigs on one topic: ops are (name, "SET"|"DELETE"|"APPEND"|"SUBTRACT", value)."""
    await _alter_configs(k, TOPIC_RESOURCE, topic, ops, validate_only)


async def _alter_configs(k: Kafka, resource_type: int, name: str, ops, validate_only: bool) -> None:
    from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as I
    configs = []
    for cname, op, value in ops:
        if op not in OPERATIONS:
            raise BadRequest(f"Unknown config operation {op!r}: expected SET, DELETE, APPEND or SUBTRACT")
        configs.append(I.AlterConfigsResource.AlterableConfig(name=cname, config_operation=OPERATIONS[op], value=value))
    r = await k.request(44, V_INCREMENTAL_ALTER_CONFIGS, I(resources=[I.AlterConfigsResource(
        resource_type=resource_type, resource_name=name, configs=configs)], validate_only=validate_only))
    res = r.responses[0]
    check(res.error_code, res.error_message)


# ---- produce --------------------------------------------------------------------------------

def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the Java producer's key hash), as a signed 32-bit int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    i = 0
    while length - i >= 4:
        kk = int.from_bytes(data[i:i + 4], "little")
        kk = (kk * m) & 0xFFFFFFFF
        kk ^= kk >> r
        kk = (kk * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= kk
        i += 4
    rest = length - i
    if rest == 3:
        h ^= data[i + 2] << 16
    if rest >= 2:
        h ^= data[i + 1] << 8
    if rest >= 1:
        h ^= data[i]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The Java producer's default partition of a keyed record: ``toPositive(murmur2) % n``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


_round_robin = itertools.count()


def _choose_partition(k: Kafka, topic: str, key: bytes | None, partition: int | None) -> int:
    if partition is not None:
        return partition
    t = k.broker.topics.get(topic)
    if t is None or not k.allowed(0, V_PRODUCE, "topic", topic):
        return 0  # the handler answers the right error for the topic
    if key is not None:
        return partition_for_key(key, t.partitions)
    return next(_round_robin) % t.partitions


async def produce_many(k: Kafka, topic: str, records: list[dict]) -> list[dict | KafkaError]:
    """Append records with one Produce request (acks=all), as a Kafka producer batches them:
    consecutive records of a partition go in one batch, so each partition's records keep their
    order and get consecutive offsets. A record is {key, value, headers, timestamp, partition};
    the partition is the given one, else murmur2 of the key (the Java producer's default),
    else round robin. Each answer is {topic_name, partition_id, offset, timestamp}
    (LogAppendTime when the topic uses it, else the record's) or the partition's KafkaError."""
    from protocol.messages.produce import ProduceRequest as P
    now = int(time.time() * 1000)
    by_partition: dict[int, list[int]] = {}
    rows = []
    for i, r in enumerate(records):
        p = _choose_partition(k, topic, r.get("key"), r.get("partition"))
        ts = now if r.get("timestamp") is None else r["timestamp"]
        rows.append((p, ts))
        by_partition.setdefault(p, []).append(i)
    data = [P.TopicProduceData.PartitionProduceData(index=p, records=build_batch(
        [(records[i].get("key"), records[i].get("value"), rows[i][1], list(records[i].get("headers") or []))
         for i in idx])) for p, idx in by_partition.items()]
    r = await k.request(0, V_PRODUCE, P(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=data)]))
    answers = {pr.index: pr for pr in r.responses[0].partition_responses}
    out: list[dict | KafkaError] = [None] * len(records)  # type: ignore[list-item]
    for p, idx in by_partition.items():
        pr = answers[p]
        for n, i in enumerate(idx):
            if pr.error_code:
                out[i] = KafkaError(error_message(pr.error_code, pr.error_message), pr.error_code)
            else:
                out[i] = {"topic_name": topic, "partition_id": p, "offset": pr.base_offset + n,
                          "timestamp": pr.log_append_time_ms if pr.log_append_time_ms >= 0 else rows[i][1]}
    return out


async def produce(k: Kafka, topic: str, key: bytes | None, value: bytes | None, *, partition: int | None = None,
                  headers: list[tuple[str, bytes | None]] | None = None, timestamp: int | None = None) -> dict:
    """Append one record (``produce_many`` of one); raises KafkaError."""
    res = (await produce_many(k, topic, [{"key": key, "value": value, "headers": headers, "timestamp": timestamp,
                                          "partition": partition}]))[0]
    if isinstance(res, KafkaError):
        raise res
    return res


# ---- records --------------------------------------------------------------------------------

MAX_PAGE_RECORDS = 1000
MAX_PAGE_BYTES = 4 * 1024 * 1024
FETCH_CHUNK_BYTES = 1024 * 1024
SCAN_BUDGET_BYTES = 32 * 1024 * 1024  # what one filtered request may read before it answers


async def _fetch_chunk(k: Kafka, topic: str, partition: int, offset: int, max_bytes: int, isolation: int,
                       wait_ms: int = 0):
    from protocol.messages.fetch import FetchRequest as F
    r = await k.request(1, V_FETCH, F(replica_id=-1, max_wait_ms=wait_ms, min_bytes=1 if wait_ms else 0,
                                      max_bytes=max_bytes, isolation_level=isolation, session_id=0,
                                      session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[
        F.FetchTopic(topic=topic, partitions=[F.FetchTopic.FetchPartition(
            partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes)])]))
    return r.responses[0].partitions[0]


def _varint(data, pos: int) -> tuple[int, int]:
    """A zigzag varint at ``pos``: (value, next position)."""
    shift = result = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def decode_from(data: bytes, pos: int, h, start_offset: int, limit: int) -> list:
    """The records of the batch at ``pos`` (header ``h``) from ``start_offset`` on, at most
    ``limit`` of them: records before the start are skipped by their length prefix (never
    decoded), so a page in the middle of a large batch costs what it shows."""
    from protocol.records.record import _decode_records, _records_section
    lat = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else None
    if h.attributes & 0x07:  # compressed: the whole batch is decompressed anyway
        _, recs = decode_batch(data, pos, verify_crc=False)
        return [r for r in recs if r.offset >= start_offset][:limit]
    body = _records_section(data, pos, h) if h.base_offset + h.last_offset_delta >= start_offset else b""
    p, i, first = 0, 0, None
    while i < h.records_count and p < len(body):
        length, q = _varint(body, p)
        if first is None:
            _ts, r = _varint(body, q + 1)
            off, _ = _varint(body, r)
            if h.base_offset + off >= start_offset:
                first = (p, i)
        if first is not None and i - first[1] >= limit:
            break
        p = q + length
        i += 1
    if first is None:
        return []
    return _decode_records(body[first[0]:p], i - first[1], h.base_offset, h.base_timestamp, lat)


def _matches(needle: bytes, r) -> bool:
    return (r.key is not None and needle in r.key) or (r.value is not None and needle in r.value)


async def read_records(k: Kafka, topic: str, partition: int, *, offset: int | None = None,
                       timestamp: int | None = None, position: str | None = None,
                       max_records: int = 100, max_bytes: int = 1024 * 1024, contains: str | None = None,
                       isolation: int = READ_UNCOMMITTED, wait_ms: int = 0) -> dict:
    """One page of a partition's records, read with Fetch (never a whole log).

    Start: ``timestamp`` -> the first offset whose timestamp is >= it, exactly as ListOffsets
    answers (no earlier record is shown; none -> an empty page at the high watermark);
    ``offset``; ``position`` "beginning" (log start) or "end" (the last ``max_records``).
    At most ``max_records`` records and about ``max_bytes`` of batches (the first batch is
    always read, as Fetch does); with ``contains`` only records whose key or value holds that
    text, scanning at most ``SCAN_BUDGET_BYTES`` (then ``next_offset`` says where to go on).
    Control records (transaction markers) are skipped; under READ_COMMITTED records of aborted
    transactions too. ``wait_ms`` > 0 long-polls for new records when the page would be empty
    (Fetch's ``max_wait_ms``; the console's "follow live")."""
    if max_records <= 0 or max_records > MAX_PAGE_RECORDS:
        raise BadRequest(f"max_records must be between 1 and {MAX_PAGE_RECORDS}")
    if max_bytes <= 0 or max_bytes > MAX_PAGE_BYTES:
        raise BadRequest(f"max_bytes must be between 1 and {MAX_PAGE_BYTES}")
    if wait_ms < 0 or wait_ms > 30000:
        raise BadRequest("wait_ms must be between 0 and 30000")
    tp = (topic, partition)
    bounds = await list_offsets(k, {tp: EARLIEST})
    b = bounds.get(tp)
    if isinstance(b, KafkaError):
        raise b
    start_info: dict[str, Any] = {}
    if timestamp is not None:
        found, found_ts = await offset_for_time(k, topic, partition, timestamp)
        start_info = {"timestamp": timestamp, "offset": found if found >= 0 else None,
                      "record_timestamp": found_ts if found >= 0 else None}
        if found < 0:  # nothing at or after T (yet): an empty page at the end, to follow from
            latest = (await list_offsets(k, {tp: LATEST}, isolation))[tp]
            if isinstance(latest, KafkaError):
                raise latest
            offset = latest[0]
            start_info["offset"] = None
        else:
            offset = found
    elif position in ("beginning", "end"):
        earliest = b[0]
        if position == "beginning":
            offset = earliest
        else:
            latest = (await list_offsets(k, {tp: LATEST}, isolation))[tp]
            if isinstance(latest, KafkaError):
                raise latest
            offset = max(earliest, latest[0] - max_records)
        start_info = {"position": position, "offset": offset}
    elif offset is not None:
        start_info = {"offset": offset}
    elif position is not None:
        raise BadRequest(f"Unknown position {position!r}: expected beginning or end")
    else:
        raise BadRequest("Give one of offset, timestamp or position")
    needle = contains.encode("utf-8") if contains else None
    records: list[dict] = []
    next_offset = offset
    scanned_bytes = 0
    hwm = lso = log_start = -1
    first = True
    # max_bytes bounds the batches read for the records shown; SCAN_BUDGET_BYTES bounds what a
    # request may read past (filtered out, or batches that hold no record to show: transaction
    # markers, aborted data), so an empty page means the end, not a skipped stretch
    budget = SCAN_BUDGET_BYTES
    while len(records) < max_records and scanned_bytes < budget:
        chunk_bytes = min(FETCH_CHUNK_BYTES, max(budget - scanned_bytes, 1)) if needle is not None \
            else max(max_bytes - scanned_bytes, 1) if records else max_bytes
        pd = await _fetch_chunk(k, topic, partition, next_offset, chunk_bytes, isolation,
                                wait_ms if first and not records else 0)
        first = False
        if pd.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
            raise KafkaError(f"Offset {next_offset} is out of range for {topic}-{partition}: the partition holds "
                             f"offsets {pd.log_start_offset} to {pd.high_watermark}", pd.error_code)
        check(pd.error_code)
        hwm, lso, log_start = pd.high_watermark, pd.last_stable_offset, pd.log_start_offset
        data = b"".join(bytes(c) for c in pd.records) if isinstance(pd.records, list) else bytes(pd.records or b"")
        if not data:
            break
        scanned_bytes += len(data)
        # READ_COMMITTED: the aborted transactions overlapping the data, by first offset; a
        # producer is "aborting" from its transaction's first offset to its next marker (the
        # consumer's algorithm: Kafka's CompletedFetch.abortedProducerIds)
        pending = sorted((a.first_offset, a.producer_id) for a in (pd.aborted_transactions or []))
        aborting: set[int] = set()
        progressed = False
        for pos, h in iter_batch_positions(data):
            if pos + h.size > len(data):
                break
            while pending and pending[0][0] <= h.base_offset:
                aborting.add(pending.pop(0)[1])
            if h.is_control:
                aborting.discard(h.producer_id)
                if h.next_offset > next_offset:
                    next_offset, progressed = h.next_offset, True
                continue
            if h.is_transactional and h.producer_id in aborting:
                if h.next_offset > next_offset:
                    next_offset, progressed = h.next_offset, True
                continue
            recs = decode_from(data, pos, h, next_offset, max_records - len(records) if needle is None else 1 << 30)
            ts_type = "LogAppendTime" if h.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"
            for r in recs:
                if r.offset < next_offset:
                    continue
                if len(records) >= max_records:
                    break
                next_offset, progressed = r.offset + 1, True
                if needle is not None and not _matches(needle, r):
                    continue
                records.append({"topic_name": topic, "partition_id": partition, "offset": r.offset,
                                "timestamp": r.timestamp, "timestamp_type": ts_type,
                                "key": _bytes_view(r.key, k), "value": _bytes_view(r.value, k),
                                "headers": [{"name": hk, "value": _bytes_view(hv)} for hk, hv in r.headers]})
            if len(records) >= max_records:
                break
            if h.next_offset > next_offset:  # records compacted away at the batch's end
                next_offset, progressed = h.next_offset, True
        if not progressed or needle is None and records and scanned_bytes >= max_bytes:
            break
        await asyncio.sleep(0)  # a long filtered scan lets the broker's other work run
    end = lso if isolation == READ_COMMITTED else hwm
    return {"topic_name": topic, "partition_id": partition, "start": start_info, "records": records,
            "next_offset": next_offset, "high_watermark": hwm, "last_stable_offset": lso,
            "log_start_offset": log_start, "end_reached": end >= 0 and next_offset >= end,
            "scanned_bytes": scanned_bytes}


# ---- segment timeline -----------------------------------------------------------------------

def retention_outlook(segments: list[dict], *, now_ms: int, retention_ms: int, retention_bytes: int,
                      deletes: bool, high_watermark: int) -> dict:
    """Where retention cuts next, from segment facts (pure; Kafka's deleteOldSegments rules:
    oldest first, never the active segment, a segment goes once ``now - largest_timestamp >
    retention.ms``, or while the log is over ``retention.bytes`` by at least its size).

    ``time``: the next segment retention.ms deletes, when (``at_ms``) and the log start offset
    after it; ``size``: the segments retention.bytes deletes at the next check and the byte
    total beyond which the next one goes. None when that retention is off (-1) or the topic
    is compact-only."""
    closed = [s for s in segments if not s["active"] and s["next_offset"] <= high_watermark]
    out: dict[str, Any] = {"now_ms": now_ms, "retention_ms": retention_ms, "retention_bytes": retention_bytes,
                           "horizon_ms": now_ms - retention_ms if deletes and retention_ms >= 0 else None,
                           "time": None, "size": None}
    if not deletes:
        return out
    if retention_ms >= 0 and closed:
        s = closed[0]
        at = s["largest_timestamp"] + retention_ms + 1
        out["time"] = {"segment_base_offset": s["base_offset"], "at_ms": at, "overdue": at <= now_ms,
                       "new_log_start_offset": s["next_offset"]}
    if retention_bytes >= 0:
        total = sum(s["size"] for s in segments)
        doomed = []
        diff = total - retention_bytes
        for s in closed:
            if diff - s["size"] < 0:
                break
            diff -= s["size"]
            doomed.append(s["base_offset"])
        nxt = closed[len(doomed)] if len(doomed) < len(closed) else None
        out["size"] = {"total_bytes": total, "segments_to_delete": doomed,
                       "next_segment_base_offset": nxt["base_offset"] if nxt else None,
                       "next_when_total_exceeds": (retention_bytes + sum(s["size"] for s in closed
                                                                         if s["base_offset"] in doomed)
                                                   + nxt["size"]) if nxt else None}
    return out


async def segments(k: Kafka, topic: str, partition: int) -> dict:
    """The segment timeline of a partition: per segment base offset, next offset, min/max
    record timestamp (first batch / time index), size, file names, active flag; and where
    retention cuts next. Authorized as ListOffsets (DESCRIBE on the topic): the same time
    index facts that offsets-for-times exposes."""
    if not k.allowed(2, V_LIST_OFFSETS, "topic", topic):
        raise KafkaError(error_message(ErrorCode.TOPIC_AUTHORIZATION_FAILED), ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    info = k.broker.topics.get(topic)
    plog = k.broker.topics.log(topic, partition) if info is not None and 0 <= partition < info.partitions else None
    if plog is None:
        raise KafkaError(error_message(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    segs = []
    for s, seg in zip(plog.segments_info(), plog.segments.values()):
        first_ts = first_timestamp(seg) if seg.size else None
        base = s["log_path"].rsplit("/", 1)[-1][:-len(".log")]
        files = [base + ".log", base + ".index", base + ".timeindex"]
        if (plog.dir / (base + ".txnindex")).exists():
            files.append(base + ".txnindex")
        largest = s["largest_record_timestamp"]
        segs.append({"base_offset": s["base_offset"], "next_offset": s["next_offset"], "size": s["size"],
                     "min_timestamp": first_ts,
                     "max_timestamp": largest if largest is not None and largest >= 0 else None,
                     "largest_timestamp": s["largest_timestamp"], "created_ms": s["created_ms"],
                     "time_index_entries": s["time_index_entries"], "offset_index_entries": s["offset_index_entries"],
                     "files": files, "active": s["active"]})
    cfg = plog.config
    deletes = "delete" in (p.lower() for p in cfg.cleanup_policy)
    outlook = retention_outlook(segs, now_ms=k.broker.clock.now_ms(), retention_ms=cfg.retention_ms,
                                retention_bytes=cfg.retention_bytes, deletes=deletes,
                                high_watermark=plog.high_watermark)
    return {"topic_name": topic, "partition_id": partition, "directory": plog.dir.name,
            "log_start_offset": plog.log_start_offset, "high_watermark": plog.high_watermark,
            "last_stable_offset": plog.last_stable_offset, "size_bytes": plog.size_in_bytes,
            "segments": segs, "retention": outlook}


# ---- groups ---------------------------------------------------------------------------------

async def list_groups(k: Kafka) -> list[dict]:
    """Every group the caller may describe: {group_id, type (classic/consumer/share/streams), protocol_type, state}."""
    from protocol.messages.list_groups import ListGroupsRequest
    r = await k.request(16, V_LIST_GROUPS, ListGroupsRequest(states_filter=[], types_filter=[]))
    check(r.error_code)
    return sorted(({"group_id": g.group_id, "type": g.group_type, "protocol_type": g.protocol_type,
                    "state": g.group_state} for g in r.groups), key=lambda g: g["group_id"])


def _group_not_found(gid: str) -> NotFound:
    return NotFound(f"Consumer group {gid} could not be found.", ErrorCode.GROUP_ID_NOT_FOUND)


async def describe_group(k: Kafka, gid: str) -> dict:
    """One group, whatever its protocol: {group_id, type, state, protocol_type, assignor,
    is_simple, group_epoch, members: [{consumer_id, instance_id, client_id, client_host,
    assignments: [{topic_name, partition_id}], target_assignments, member_epoch}]}.
    Raises NotFound for a group that does not exist (Dead), KafkaError when denied."""
    from protocol.messages import consumer_protocol as cp
    from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
    from protocol.messages.describe_groups import DescribeGroupsRequest
    from protocol.messages.share_group_describe import ShareGroupDescribeRequest

    def tps(assignment) -> list[dict]:
        return sorted(({"topic_name": t.topic_name, "partition_id": p} for t in assignment.topic_partitions
                       for p in t.partitions), key=lambda d: (d["topic_name"], d["partition_id"]))

    d = (await k.request(69, V_CONSUMER_GROUP_DESCRIBE, ConsumerGroupDescribeRequest(group_ids=[gid]))).groups[0]
    if d.error_code == 0:
        return {"group_id": gid, "type": "consumer", "state": d.group_state, "protocol_type": "consumer",
                "assignor": d.assignor_name, "is_simple": False, "group_epoch": d.group_epoch,
                "members": [{"consumer_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                             "client_host": m.client_host, "member_epoch": m.member_epoch,
                             "subscribed_topics": list(m.subscribed_topic_names),
                             "assignments": tps(m.assignment), "target_assignments": tps(m.target_assignment)}
                            for m in sorted(d.members, key=lambda m: m.member_id)]}
    if d.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
        check(d.error_code, d.error_message)
    streams = await describe_streams_group(k, gid)
    if streams is not None:
        return streams
    s = (await k.request(77, V_SHARE_GROUP_DESCRIBE, ShareGroupDescribeRequest(group_ids=[gid]))).groups[0]
    if s.error_code == 0:
        return {"group_id": gid, "type": "share", "state": s.group_state, "protocol_type": "share",
                "assignor": s.assignor_name, "is_simple": False, "group_epoch": s.group_epoch,
                "members": [{"consumer_id": m.member_id, "instance_id": None, "client_id": m.client_id,
                             "client_host": m.client_host, "member_epoch": m.member_epoch,
                             "subscribed_topics": list(m.subscribed_topic_names),
                             "assignments": tps(m.assignment), "target_assignments": []}
                            for m in sorted(s.members, key=lambda m: m.member_id)]}
    if s.error_code not in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.INVALID_GROUP_ID):
        check(s.error_code, s.error_message)
    g = (await k.request(15, V_DESCRIBE_GROUPS, DescribeGroupsRequest(groups=[gid]))).groups[0]
    check(g.error_code)
    if g.group_state == "Dead":
        raise _group_not_found(gid)
    members = []
    for m in sorted(g.members, key=lambda m: m.member_id):
        try:
            assigned = cp.assignment_partitions(m.member_assignment) if g.protocol_type == "consumer" else {}
        except Exception:  # not the consumer embedded protocol
            assigned = {}
        members.append({"consumer_id": m.member_id, "instance_id": m.group_instance_id, "client_id": m.client_id,
                        "client_host": m.client_host, "member_epoch": None, "subscribed_topics": [],
                        "assignments": sorted(({"topic_name": t, "partition_id": p} for t, ps in assigned.items()
                                               for p in ps), key=lambda d: (d["topic_name"], d["partition_id"])),
                        "target_assignments": []})
    return {"group_id": gid, "type": "classic", "state": g.group_state, "protocol_type": g.protocol_type,
            # Kafka's isSimpleConsumerGroup: no protocol type (offsets committed by an admin or
            # by consumers that assign partitions themselves)
            "assignor": g.protocol_data, "is_simple": g.protocol_type == "",
            "group_epoch": None, "members": members}


def _task_list(task_ids) -> list[dict]:
    return sorted(({"subtopology_id": t.subtopology_id, "partitions": sorted(t.partitions)} for t in task_ids),
                  key=lambda t: t["subtopology_id"])


def _task_inputs(subtopologies: list[dict], tasks: list[dict]) -> list[dict]:
    """The partitions a member's tasks read: task (subtopology s, partition p) reads partition p
    of each of s's source and repartition source topics (Kafka Streams' task-to-partition
    mapping), so a Streams group's lag rows name the member that owns each input partition."""
    inputs = {s["subtopology_id"]: s["source_topics"] + [t["name"] for t in s["repartition_source_topics"]]
              for s in subtopologies}
    return sorted(({"topic_name": topic, "partition_id": p} for t in tasks for p in t["partitions"]
                   for topic in inputs.get(t["subtopology_id"], ())),
                  key=lambda d: (d["topic_name"], d["partition_id"]))


async def describe_streams_group(k: Kafka, gid: str) -> dict | None:
    """A Streams (KIP-1071) group through StreamsGroupDescribe, as ``describe_group`` answers
    (``type`` "streams"), plus ``assignment_epoch``, ``topology`` {epoch, subtopologies:
    [{subtopology_id, source_topics, repartition_sink_topics, repartition_source_topics,
    state_changelog_topics: [{name, partitions}]}]} and per member ``process_id``,
    ``user_endpoint`` ("host:port" or None), ``active_tasks``/``standby_tasks``/
    ``warmup_tasks`` [{subtopology_id, partitions}] and ``assignments`` (the input partitions
    of its active tasks). None when ``gid`` is no Streams group (or the broker does not
    serve the Streams protocol); KafkaError when denied."""
    from protocol.messages.streams_group_describe import StreamsGroupDescribeRequest as SD
    g = (await k.request(89, V_STREAMS_GROUP_DESCRIBE, SD(group_ids=[gid], include_authorized_operations=False))).groups[0]
    if g.error_code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.INVALID_GROUP_ID, ErrorCode.UNSUPPORTED_VERSION):
        return None
    check(g.error_code, g.error_message)
    subs = [{"subtopology_id": s.subtopology_id, "source_topics": sorted(s.source_topics),
             "repartition_sink_topics": sorted(s.repartition_sink_topics),
             "repartition_source_topics": sorted(({"name": t.name, "partitions": t.partitions}
                                                  for t in s.repartition_source_topics), key=lambda t: t["name"]),
             "state_changelog_topics": sorted(({"name": t.name, "partitions": t.partitions}
                                               for t in s.state_changelog_topics), key=lambda t: t["name"])}
            for s in sorted((g.topology.subtopologies or []) if g.topology else [], key=lambda s: s.subtopology_id)]
    members = []
    for m in sorted(g.members, key=lambda m: m.member_id):
        active = _task_list(m.assignment.active_tasks)
        ep = m.user_endpoint
        members.append({"consumer_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                        "client_host": m.client_host, "member_epoch": m.member_epoch, "subscribed_topics": [],
                        "process_id": m.process_id, "user_endpoint": f"{ep.host}:{ep.port}" if ep else None,
                        "active_tasks": active, "standby_tasks": _task_list(m.assignment.standby_tasks),
                        "warmup_tasks": _task_list(m.assignment.warmup_tasks),
                        "assignments": _task_inputs(subs, active), "target_assignments": []})
    return {"group_id": gid, "type": "streams", "state": g.group_state, "protocol_type": "streams",
            "assignor": None, "is_simple": False, "group_epoch": g.group_epoch,
            "assignment_epoch": g.assignment_epoch,
            "topology": {"epoch": g.topology.epoch if g.topology else -1, "subtopologies": subs},
            "members": members}


async def committed_offsets(k: Kafka, gid: str) -> dict[tuple[str, int], int]:
    """{(topic, partition): committed offset} of a group (OffsetFetch for all topics)."""
    from protocol.messages.offset_fetch import OffsetFetchRequest as O
    r = await k.request(9, V_OFFSET_FETCH, O(groups=[O.OffsetFetchRequestGroup(group_id=gid, topics=None)],
                                             require_stable=False))
    g = r.groups[0]
    check(g.error_code)
    return {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions
            if p.error_code == 0 and p.committed_offset >= 0}


async def share_start_offsets(k: Kafka, gid: str) -> dict[tuple[str, int], int]:
    from protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsRequest as D
    r = await k.request(90, V_DESCRIBE_SHARE_OFFSETS, D(groups=[D.DescribeShareGroupOffsetsRequestGroup(
        group_id=gid, topics=None)]))
    g = r.groups[0]
    check(g.error_code, g.error_message)
    return {(t.topic_name, p.partition_index): p.start_offset for t in g.topics for p in t.partitions
            if p.error_code == 0 and p.start_offset >= 0}


async def group_lags(k: Kafka, gid: str, group: dict | None = None) -> list[dict]:
    """Per partition with a committed offset (share groups: a start offset) or an owner:
    {topic_name, partition_id, current_offset, log_end_offset, lag, consumer_id, instance_id,
    client_id} (and ``process_id`` for a Streams group). ``log_end_offset`` is ListOffsets latest; lag = max(end - committed, 0)."""
    group = group or await describe_group(k, gid)
    committed = await (share_start_offsets(k, gid) if group["type"] == "share" else committed_offsets(k, gid))
    owners = {}
    for m in group["members"]:
        for a in m["assignments"]:
            owners[(a["topic_name"], a["partition_id"])] = m
    tps = sorted(set(committed) | set(owners))
    ends = await list_offsets(k, {tp: LATEST for tp in tps})
    out = []
    for tp in tps:
        end = ends.get(tp)
        end = end[0] if isinstance(end, tuple) else -1
        cur = committed.get(tp)
        m = owners.get(tp) or {}
        out.append({"topic_name": tp[0], "partition_id": tp[1], "current_offset": -1 if cur is None else cur,
                    "log_end_offset": end, "lag": 0 if cur is None or end < 0 else max(end - cur, 0),
                    "consumer_id": m.get("consumer_id", ""), "instance_id": m.get("instance_id"),
                    "client_id": m.get("client_id", ""),
                    # a Streams member is known by its process (its instances share one client id)
                    **({"process_id": m.get("process_id", "")} if group["type"] == "streams" else {})})
    return out


async def reset_offsets(k: Kafka, gid: str, *, timestamp: int | None = None, position: str | None = None,
                        topics: list[str] | None = None, execute: bool = False) -> list[dict]:
    """Kafka's ``kafka-consumer-groups --reset-offsets --to-datetime|--to-earliest|--to-latest``:
    the new offset of each partition of ``topics`` (default: the topics the group committed),
    the first offset at or after ``timestamp`` (the log end when none), and with ``execute``
    commits them (OffsetCommit as an admin client: generation -1, no member). Only an empty
    (or unknown) group, as Kafka; otherwise Conflict."""
    groups = {g["group_id"]: g for g in await list_groups(k)}
    listed = groups.get(gid)
    if listed is not None and listed["type"] == "share":
        raise BadRequest(f"Group {gid} is a share group: its start offsets are reset with AlterShareGroupOffsets")
    state = listed["state"] if listed is not None else None
    if execute and state not in (None, "Empty", "Dead"):
        raise Conflict(f"Assignments can only be reset if the group '{gid}' is inactive, but the current state is "
                       f"{state}.", ErrorCode.NON_EMPTY_GROUP)
    current = await committed_offsets(k, gid)
    names = topics or sorted({t for t, _ in current})
    if not names:
        raise BadRequest(f"Group {gid} has no committed offsets: name the topics to reset")
    tps = []
    for n in names:
        t = await get_topic(k, n)
        tps += [(n, p["partition_id"]) for p in t["partitions"]]
    if timestamp is not None:
        found = await list_offsets(k, {tp: timestamp for tp in tps})
        latest = await list_offsets(k, {tp: LATEST for tp in tps})
    elif position in ("earliest", "latest"):
        found = latest = await list_offsets(k, {tp: EARLIEST if position == "earliest" else LATEST for tp in tps})
    else:
        raise BadRequest("Give a timestamp or a position (earliest, latest)")
    new = {}
    for tp in tps:
        v = found[tp]
        if isinstance(v, KafkaError):
            raise v
        if v[0] < 0:
            v = latest[tp]
            if isinstance(v, KafkaError):
                raise v
        new[tp] = v[0]
    if execute:
        from protocol.messages.offset_commit import OffsetCommitRequest as OC
        by_topic: dict[str, list] = {}
        for (t, p), o in sorted(new.items()):
            by_topic.setdefault(t, []).append(OC.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                partition_index=p, committed_offset=o, committed_metadata=""))
        r = await k.request(8, V_OFFSET_COMMIT, OC(group_id=gid, generation_id_or_member_epoch=-1, member_id="",
                                                   group_instance_id=None, topics=[
            OC.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()]))
        for t in r.topics:
            for p in t.partitions:
                check(p.error_code)
    return [{"topic_name": t, "partition_id": p, "current_offset": current.get((t, p), -1), "new_offset": o}
            for (t, p), o in sorted(new.items())]


# ---- transactions ---------------------------------------------------------------------------

async def transactions(k: Kafka) -> list[dict]:
    """Open (and recently finished) transactions the caller may describe: {transactional_id,
    producer_id, producer_epoch, state, timeout_ms, start_time_ms, partitions: [{topic_name,
    partition_id, first_offset, last_stable_offset, high_watermark}]}; ``first_offset`` is the
    transaction's first offset in that partition, the LSO it holds back (None when it has
    written nothing there yet)."""
    from protocol.messages.describe_transactions import DescribeTransactionsRequest
    from protocol.messages.list_transactions import ListTransactionsRequest
    r = await k.request(66, V_LIST_TXNS, ListTransactionsRequest(state_filters=[], producer_id_filters=[],
                                                                 duration_filter=-1))
    check(r.error_code)
    ids = sorted(t.transactional_id for t in r.transaction_states)
    if not ids:
        return []
    d = await k.request(65, V_DESCRIBE_TXNS, DescribeTransactionsRequest(transactional_ids=ids))
    out = []
    for s in d.transaction_states:
        if s.error_code:
            continue
        parts = []
        for t in s.topics:
            for p in sorted(t.partitions):
                plog = k.broker.topics.log(t.topic, p)
                first = None
                if plog is not None:
                    first = next((f for pid, f, _last in plog.ongoing_transactions() if pid == s.producer_id), None)
                parts.append({"topic_name": t.topic, "partition_id": p, "first_offset": first,
                              "last_stable_offset": plog.last_stable_offset if plog is not None else None,
                              "high_watermark": plog.high_watermark if plog is not None else None})
        out.append({"transactional_id": s.transactional_id, "producer_id": s.producer_id,
                    "producer_epoch": s.producer_epoch, "state": s.transaction_state,
                    "timeout_ms": s.transaction_timeout_ms, "start_time_ms": s.transaction_start_time_ms,
                    "partitions": parts})
    return out


# ---- security -------------------------------------------------------------------------------

async def acls(k: Kafka, *, resource_type: str = "ANY", resource_name: str | None = None,
               pattern_type: str = "ANY", principal: str | None = None, host: str | None = None,
               operation: str = "ANY", permission: str = "ANY") -> list[dict]:
    """DescribeAcls with Kafka's filter semantics: [{resource_type, resource_name, pattern_type,
    principal, host, operation, permission}]."""
    from broker.security.acl import AclPermissionType
    from protocol.messages.describe_acls import DescribeAclsRequest
    try:
        rt, pt = ResourceType[resource_type.upper()], PatternType[pattern_type.upper()]
        op, perm = AclOperation[operation.upper()], AclPermissionType[permission.upper()]
    except KeyError as e:
        raise BadRequest(f"Unknown ACL filter value {e.args[0]}") from None
    r = await k.request(29, V_DESCRIBE_ACLS, DescribeAclsRequest(
        resource_type_filter=int(rt), resource_name_filter=resource_name, pattern_type_filter=int(pt),
        principal_filter=principal, host_filter=host, operation=int(op), permission_type=int(perm)))
    check(r.error_code, r.error_message)
    return [{"resource_type": ResourceType.of(res.resource_type).name, "resource_name": res.resource_name,
             "pattern_type": PatternType.of(res.pattern_type).name, "principal": a.principal, "host": a.host,
             "operation": AclOperation.of(a.operation).name, "permission": AclPermissionType.of(a.permission_type).name}
            for res in r.resources for a in res.acls]


def _acl_enums(resource_type: str, pattern_type: str, operation: str, permission: str) -> tuple:
    from broker.security.acl import AclPermissionType
    try:
        return (ResourceType[resource_type.upper()], PatternType[pattern_type.upper()],
                AclOperation[operation.upper()], AclPermissionType[permission.upper()])
    except (KeyError, AttributeError) as e:
        raise BadRequest(f"Unknown ACL value {e.args[0] if e.args else ''}") from None


async def create_acls(k: Kafka, bindings: list[dict]) -> None:
    """CreateAcls of bindings {resource_type, resource_name, pattern_type, principal, host,
    operation, permission}; the first refused one raises its KafkaError (Kafka's code and
    message: SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED, ...)."""
    from protocol.messages.create_acls import CreateAclsRequest as C
    creations = []
    for b in bindings:
        rt, pt, op, perm = _acl_enums(b["resource_type"], b["pattern_type"], b["operation"], b["permission"])
        creations.append(C.AclCreation(resource_type=int(rt), resource_name=b["resource_name"],
                                       resource_pattern_type=int(pt), principal=b["principal"], host=b["host"],
                                       operation=int(op), permission_type=int(perm)))
    r = await k.request(30, V_CREATE_ACLS, C(creations=creations))
    for res in r.results:
        check(res.error_code, res.error_message)


async def delete_acls(k: Kafka, *, resource_type: str, resource_name: str | None, pattern_type: str,
                      principal: str | None, host: str | None, operation: str, permission: str) -> list[dict]:
    """DeleteAcls with one filter (Kafka's filter semantics); the deleted bindings, as ``acls``."""
    from broker.security.acl import AclPermissionType
    from protocol.messages.delete_acls import DeleteAclsRequest as D
    rt, pt, op, perm = _acl_enums(resource_type, pattern_type, operation, permission)
    r = await k.request(31, V_DELETE_ACLS, D(filters=[D.DeleteAclsFilter(
        resource_type_filter=int(rt), resource_name_filter=resource_name, pattern_type_filter=int(pt),
        principal_filter=principal, host_filter=host, operation=int(op), permission_type=int(perm))]))
    fr = r.filter_results[0]
    check(fr.error_code, fr.error_message)
    for m in fr.matching_acls:
        check(m.error_code, m.error_message)
    return [{"resource_type": ResourceType.of(m.resource_type).name, "resource_name": m.resource_name,
             "pattern_type": PatternType.of(m.pattern_type).name, "principal": m.principal, "host": m.host,
             "operation": AclOperation.of(m.operation).name, "permission": AclPermissionType.of(m.permission_type).name}
            for m in fr.matching_acls]


async def scram_users(k: Kafka) -> list[dict]:
    """SCRAM users (DescribeUserScramCredentials): names, mechanisms and iterations only -
    the API itself never returns a salt or key."""
    from protocol.messages.describe_user_scram_credentials import DescribeUserScramCredentialsRequest
    r = await k.request(50, V_DESCRIBE_SCRAM, DescribeUserScramCredentialsRequest(users=None))
    check(r.error_code, r.error_message)
    names = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
    return sorted(({"user": u.user, "mechanisms": [{"mechanism": names.get(c.mechanism, "UNKNOWN"),
                                                   "iterations": c.iterations} for c in u.credential_infos]}
                   for u in r.results if u.error_code == 0), key=lambda u: u["user"])


# ---- time series (sampled in memory) --------------------------------------------------------

class RateHistory:
    """Produce/fetch counters of ``broker.metrics`` sampled every ``interval`` seconds for
    ``keep`` seconds; rates are read per caller over the topics it may describe."""

    def __init__(self, broker, interval: float = 5.0, keep: float = 900.0):
        self.broker, self.interval = broker, interval
        self.samples: deque = deque(maxlen=max(int(keep / interval), 2))  # (t_ms, {topic: (bi, bo, ri, ro)})
        self._last: dict[str, tuple[int, int, int, int]] = {}

    def sample(self, now_ms: int | None = None) -> None:
        m = self.broker.metrics
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        cur = {}
        for t in set(m.bytes_in) | set(m.bytes_out):
            cur[t] = (m.bytes_in[t], m.bytes_out[t], m.records_in[t], m.records_out[t])
        delta = {}
        for t, v in cur.items():
            prev = self._last.get(t, (0, 0, 0, 0))
            d = tuple(a - b for a, b in zip(v, prev))
            if any(d):
                delta[t] = d
        self._last = cur
        self.samples.append((now_ms, delta))

    def rates(self, visible, seconds: float = 600.0) -> list[dict]:
        """[{time_ms, bytes_in_per_sec, bytes_out_per_sec, records_in_per_sec, records_out_per_sec}]
        over the topics for which ``visible(topic)`` holds."""
        out = []
        samples = list(self.samples)
        cutoff = (samples[-1][0] if samples else 0) - seconds * 1000
        prev_t = None
        for t_ms, delta in samples:
            if prev_t is not None and t_ms >= cutoff:
                dt = max((t_ms - prev_t) / 1000.0, 1e-3)
                sums = [0, 0, 0, 0]
                for topic, d in delta.items():
                    if visible(topic):
                        for i in range(4):
                            sums[i] += d[i]
                out.append({"time_ms": t_ms, "bytes_in_per_sec": sums[0] / dt, "bytes_out_per_sec": sums[1] / dt,
                            "records_in_per_sec": sums[2] / dt, "records_out_per_sec": sums[3] / dt})
            prev_t = t_ms
        return out


class LagHistory:
    """Each group's per-partition lag sampled every ``interval`` seconds for ``keep`` seconds
    (by the broker itself through the same handlers; read per caller, who must be allowed to
    describe the group and the topics)."""

    def __init__(self, broker, interval: float = 10.0, keep: float = 3600.0):
        self.broker, self.interval = broker, interval
        self.samples: deque = deque(maxlen=max(int(keep / interval), 2))  # (t_ms, {gid: {(t, p): lag}})

    async def sample(self, now_ms: int | None = None) -> None:
        k = Kafka(self.broker, principal=None, client_id="hourglass-console-sampler")
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        snap: dict[str, dict[tuple[str, int], int]] = {}
        for g in await list_groups(k):
            gid = g["group_id"]
            try:  # committed (share: start) offsets and log ends only: no member is described
                committed = await (share_start_offsets(k, gid) if g["type"] == "share" else committed_offsets(k, gid))
                ends = await list_offsets(k, {tp: LATEST for tp in committed})
            except ModelError:
                continue
            snap[gid] = {tp: max(ends[tp][0] - off, 0) for tp, off in committed.items()
                         if isinstance(ends.get(tp), tuple) and ends[tp][0] >= 0}
            await asyncio.sleep(0)
        self.samples.append((now_ms, snap))

    def history(self, gid: str, visible_topic, seconds: float = 3600.0) -> list[dict]:
        """[{time_ms, total_lag, partitions: {"topic:partition": lag}}] oldest first."""
        samples = list(self.samples)
        cutoff = (samples[-1][0] if samples else 0) - seconds * 1000
        out = []
        for t_ms, snap in samples:
            if t_ms < cutoff or gid not in snap:
                continue
            parts = {f"{t}:{p}": lag for (t, p), lag in sorted(snap[gid].items()) if visible_topic(t)}
            out.append({"time_ms": t_ms, "total_lag": sum(parts.values()), "partitions": parts})
        return out


async def run_samplers(rates: RateHistory, lags: LagHistory) -> None:
    """Sample both histories until cancelled (the console app's background task)."""
    import logging
    log = logging.getLogger(__name__)
    next_rate = next_lag = 0.0
    while True:
        now = time.monotonic()
        try:
            if now >= next_rate:
                rates.sample()
                next_rate = now + rates.interval
            if now >= next_lag:
                await lags.sample()
                next_lag = now + lags.interval
        except asyncio.CancelledError:
            raise
        except Exception:  # a failed sample leaves a gap, never stops the console
            log.exception("console sampler failed")
            next_rate, next_lag = now + rates.interval, now + lags.interval
        await asyncio.sleep(max(min(next_rate, next_lag) - time.monotonic(), 0.05))
