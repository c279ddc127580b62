"""CreateTopics (19) v0-7, as Kafka's KRaft controller (ControllerApis + ReplicationControlManager).

Checks per topic, in Kafka's order, each failing only that topic:
1. a name given twice in one request: INVALID_REQUEST "Duplicate topic name." (one answer per
   name, none of them created); ``__cluster_metadata``: INVALID_REQUEST;
2. illegal name (Kafka's ``Topic.validate``: empty, ``.``/``..``, > 249 chars, characters
   other than ASCII alphanumerics ``._-``) or a name colliding with an existing topic once
   ``.`` and ``_`` are unified: INVALID_TOPIC_EXCEPTION;
3. already exists: TOPIC_ALREADY_EXISTS;
4. a null config value, an unknown config key, or a value failing its type/range/one-of check:
   INVALID_CONFIG, the message naming the key;
5. manual assignments: replication factor and partition count must then be -1
   (INVALID_REQUEST); partitions 0..n-1 each on exactly this node, else
   INVALID_REPLICA_ASSIGNMENT;
6. replication factor 0 or < -1: INVALID_REPLICATION_FACTOR; partitions 0 or < -1:
   INVALID_PARTITIONS; a replication factor above 1 cannot be met on one node:
   INVALID_REPLICATION_FACTOR.

Before them all, and after them, the request as a whole (``broker.controller_limits``, Kafka
4.4's controller bounds, validate_only too): more than 10,000 partitions asked for, or more
than 10,000 metadata records (a topic, its configs, its partitions) for the valid topics,
and every entry answers POLICY_VIOLATION. So no request makes more than 9,999 partitions.
The partitions' files are made off the event loop (``TopicManager.create_topic_off_loop``),
so creating thousands of them holds up no listener.

``validate_only`` runs every check and creates nothing. v5+ answers carry the resolved
partition count, replication factor and every topic config (value, source, flags) sorted
by name, as the controller's ``computeEffectiveTopicConfigs``; v7 the topic id.
"""
from __future__ import annotations

import asyncio
import logging

from broker.cluster import validate_topic_name
from broker.controller_limits import (BATCH_TOO_LARGE, TOO_MANY_PARTITIONS, batch_too_large, create_topics_too_many,
                                      topic_records)
from broker.handlers.describe_configs import dynamic_log_layers, created_topic_configs
from broker.handlers import once_per_key
from broker.registry import handles
from broker.security.api_acls import active
from broker.topics import TopicError
from protocol.errors import ErrorCode
from broker.quotas.manager import ThrottlingQuotaExceeded
from protocol.messages.create_topics import CreateTopicsResponse as R
from storage.log_config import CONFIG_SOURCE_IDS

log = logging.getLogger(__name__)

CLUSTER_METADATA_TOPIC = "__cluster_metadata"


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code = code
        self.message = message


def _unify(name: str) -> str:
    return name.replace(".", "_")


def _check_assignments(node_id: int, assignments) -> int:
    """Partition count of a manual assignment; raises _Refused as Kafka's
    validateManualPartitionAssignment would on a one-node cluster."""
    seen: dict[int, list[int]] = {}
    rf = None
    for a in assignments:
        if a.partition_index in seen:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Found multiple manual partition assignments for partition {a.partition_index}")
        ids = list(a.broker_ids)
        if not ids:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "The manual partition assignment includes an empty replica list.")
        for bid in ids:
            if bid != node_id:
                raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               f"The manual partition assignment includes broker {bid}, but no such "
                               "broker is registered.")
        if len(set(ids)) != len(ids):
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes the broker {ids[0]} more than once.")
        if rf is not None and len(ids) != rf:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes a partition with {len(ids)} "
                           f"replica(s), but this is inconsistent with previous partitions, which have "
                           f"{rf} replica(s).")
        rf = len(ids)
        seen[a.partition_index] = ids
    for i in range(len(seen)):
        if i not in seen:
            raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "partitions should be a consecutive 0-based integer sequence")
    return len(seen)


def create_one(b, ct, validate_only: bool, quota=None):
    """Create (or just validate) one topic; returns its TopicInfo or raises _Refused."""
    topics = b.topics
    name = ct.name
    if name == CLUSTER_METADATA_TOPIC:
        raise _Refused(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
    err = validate_topic_name(name)
    if err:
        raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
    if topics.get(name) is not None:
        raise _Refused(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if "." in name or "_" in name:
        for other in topics.topics:
            if _unify(other) == _unify(name):
                raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION,
                               f"Topic '{name}' collides with existing topic: {other}")
    nulls = [c.name for c in ct.configs if c.value is None]
    if nulls:
        raise _Refused(ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs: " + ",".join(nulls))
    configs = {c.name: c.value for c in ct.configs}
    try:
        topics.validate_configs(configs)
    except TopicError as exc:
        raise _Refused(exc.code, exc.message) from None
    if ct.assignments:
        if ct.replication_factor != -1:
            raise _Refused(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                      "replication factor was not set to -1.")
        if ct.num_partitions != -1:
            raise _Refused(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                      "numPartitions was not set to -1.")
        partitions, replication = _check_assignments(b.node_id, ct.assignments), 1
    else:
        if ct.replication_factor < -1 or ct.replication_factor == 0:
            raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR,
                           "Replication factor must be larger than 0, or -1 to use the default value.")
        if ct.num_partitions < -1 or ct.num_partitions == 0:
            raise _Refused(ErrorCode.INVALID_PARTITIONS,
                           "Number of partitions was set to an invalid non-positive value.")
        partitions = ct.num_partitions if ct.num_partitions != -1 else b.cfg["num.partitions"]
        replication = ct.replication_factor
        if replication == -1:
            replication = b.cfg["default.replication.factor"]
    try:
        if quota is not None:
            # valid first, then the controller mutation quota (Kafka takes it for validate_only too)
            t = topics.create_topic(name, partitions, replication, configs, validate_only=True)
            try:
                quota.record(partitions)
            except ThrottlingQuotaExceeded as exc:
                raise _Refused(ErrorCode.THROTTLING_QUOTA_EXCEEDED, str(exc)) from None
            if validate_only:
                return t
        return topics.create_topic(name, partitions, replication, configs, validate_only=validate_only)
    except TopicError as exc:
        raise _Refused(exc.code, exc.message) from None


def _refuse_all(req, message: str):
    """The whole request refused by the controller: every entry POLICY_VIOLATION (Kafka's
    CreateTopicsRequest.getErrorResponse, duplicates included)."""
    return R(throttle_time_ms=0, topics=[R.CreatableTopicResult(name=ct.name, error_code=ErrorCode.POLICY_VIOLATION,
                                                                error_message=message) for ct in req.topics])


@handles(19)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    validate_only = v >= 1 and req.validate_only
    az = active(ctx)
    # ACLs on: CREATE on the cluster allows every topic, else CREATE on each topic decides
    may_create_all = az is None or az.allowed("create_cluster")
    quota = b.quotas.mutation_quota(ctx, strict=v >= 6) if getattr(b, "quotas", None) is not None else None
    entries = list(once_per_key(req.topics, lambda ct: ct.name))
    allowed = {ct.name for ct, duplicated in entries
               if not duplicated and (may_create_all or az.allowed("create", ct.name))}
    if create_topics_too_many(((ct.num_partitions, len(ct.assignments or ())) for ct, _d in entries
                               if ct.name in allowed and ct.name != CLUSTER_METADATA_TOPIC), b.cfg["num.partitions"]):
        log.info("CreateTopics refused: more than 10000 partitions asked for in one request")
        return _refuse_all(req, TOO_MANY_PARTITIONS)
    # every check first (Kafka's controller validates the whole request, then writes its records)
    checked: list = []  # per entry: a CreatableTopicResult (refused) or (TopicInfo, number of configs)
    records = 0
    for i, (ct, duplicated) in enumerate(entries):
        if i and i % 64 == 0:  # thousands of topics checked: other connections are served between slices
            await asyncio.sleep(0)
        if duplicated:
            checked.append(R.CreatableTopicResult(name=ct.name, error_code=ErrorCode.INVALID_REQUEST,
                                                  error_message="Duplicate topic name."))
            continue
        if ct.name not in allowed:
            checked.append(R.CreatableTopicResult(name=ct.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                  error_message="Authorization failed."))
            continue
        try:
            t = create_one(b, ct, True, quota)
        except _Refused as exc:
            log.info("CreateTopics %s refused: %s (%s)", ct.name, exc.code.name, exc.message)
            checked.append(R.CreatableTopicResult(name=ct.name, error_code=exc.code, error_message=exc.message))
            continue
        checked.append((t, ct))
        records += topic_records(t.partitions, len(ct.configs))
    if batch_too_large(records):
        log.info("CreateTopics refused: %d metadata records would exceed 10000", records)
        return _refuse_all(req, BATCH_TOO_LARGE)
    results = []
    for c in checked:
        if not isinstance(c, tuple):
            results.append(c)
            continue
        t, ct = c
        if not validate_only:
            try:
                t = await b.topics.create_topic_off_loop(t.name, t.partitions, ct.replication_factor, t.configs,
                                                         join=False)
            except TopicError as exc:  # created (or refused) by another request meanwhile
                log.info("CreateTopics %s refused: %s (%s)", ct.name, exc.code.name, exc.message)
                results.append(R.CreatableTopicResult(name=ct.name, error_code=exc.code, error_message=exc.message))
                continue
        res = R.CreatableTopicResult(name=t.name, topic_id=t.topic_id,
                                     error_code=0, error_message=None)
        if v >= 5:
            res.num_partitions = t.partitions
            res.replication_factor = 1
            res.topic_config_error_code = 0
            if az is not None and not az.allowed("describe_configs", t.name):
                res.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # no configs then
                results.append(res)
                continue
            res.configs = [R.CreatableTopicConfigs(name=n, value=None if sens else val, read_only=ro,
                                                   config_source=CONFIG_SOURCE_IDS[src], is_sensitive=sens)
                           for n, val, src, ro, sens in created_topic_configs(b.cfg.topic_defaults, t.configs, dynamic_log_layers(b))]
        results.append(res)
    return R(throttle_time_ms=0 if quota is None else quota.throttle_time_ms(), topics=results)
