"""CreatePartitions (37) v0-3: grow a topic's partition count, never shrink it (Kafka's
ReplicationControlManager.createPartitions messages).

- a name given twice: INVALID_REQUEST "Duplicate topic name.";
- unknown topic: UNKNOWN_TOPIC_OR_PARTITION;
- count below the current one: INVALID_PARTITIONS "The topic T currently has N partition(s);
  M would not be an increase."; equal: INVALID_PARTITIONS "Topic already has N partition(s).";
- assignments (nullable) must give exactly one replica list per new partition, each naming
  only this node: INVALID_REPLICA_ASSIGNMENT otherwise;
- ``validate_only``: every check, nothing created;
- more than 10,000 partitions added by the whole request (over the existing topics, once
  each, that the caller may alter): every entry POLICY_VIOLATION "Excessively large number
  of additional partitions per request." (Kafka 4.4's controller bound,
  ``broker.controller_limits``), validate_only too. Internal topics may be grown, as in
  Kafka 4.4 (its controller does not refuse it).

New partitions get empty logs (their files made off the event loop, in the default executor,
so thousands of them hold up no listener) and the count is persisted with the topic, so it
survives restarts; producers see them at their next metadata refresh.
"""
from __future__ import annotations

import logging

from broker.controller_limits import TOO_MANY_ADDITIONAL_PARTITIONS, create_partitions_too_many
from broker.handlers import once_per_key
from broker.quotas.manager import ThrottlingQuotaExceeded
from broker.registry import handles
from broker.security.api_acls import active
from broker.topics import TopicError
from protocol.errors import ErrorCode
from protocol.messages.create_partitions import CreatePartitionsResponse as R

log = logging.getLogger(__name__)


async def _grow(b, ct, validate_only: bool, quota=None):
    """Returns (error code, message) for one topic."""
    t = b.topics.get(ct.name)
    if t is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if ct.count < t.partitions:
        return (ErrorCode.INVALID_PARTITIONS,
                f"The topic {ct.name} currently has {t.partitions} partition(s); {ct.count} would not "
                "be an increase.")
    if ct.count == t.partitions:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {t.partitions} partition(s)."
    additional = ct.count - t.partitions
    if ct.assignments is not None:
        if len(ct.assignments) != additional:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Attempted to add {additional} additional partition(s), but only "
                    f"{len(ct.assignments)} assignment(s) were specified.")
        for a in ct.assignments:
            ids = list(a.broker_ids)
            if not ids:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        "The manual partition assignment includes an empty replica list.")
            for bid in ids:
                if bid != b.node_id:
                    return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                            f"The manual partition assignment includes broker {bid}, but no such broker "
                            "is registered.")
            if len(ids) != 1:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"The manual partition assignment includes a partition with {len(ids)} replica(s), "
                        "but this is inconsistent with previous partitions, which have 1 replica(s).")
    try:
        if quota is not None:
            b.topics.add_partitions(ct.name, ct.count, validate_only=True)
            try:
                quota.record(additional)
            except ThrottlingQuotaExceeded as exc:
                return ErrorCode.THROTTLING_QUOTA_EXCEEDED, str(exc)
        if validate_only:
            b.topics.add_partitions(ct.name, ct.count, validate_only=True)
        else:
            await b.topics.add_partitions_off_loop(ct.name, ct.count)
    except TopicError as exc:
        return exc.code, exc.message
    if not validate_only:
        log.info("CreatePartitions: %s grown to %d partition(s)", ct.name, ct.count)
    return 0, None


@handles(37)
async def handle(ctx, req):
    b = ctx.broker
    results = []
    az = active(ctx)
    quota = b.quotas.mutation_quota(ctx, strict=ctx.api_version >= 3) if getattr(b, "quotas", None) is not None else None
    entries = list(once_per_key(req.topics, lambda ct: ct.name))
    allowed = {ct.name for ct, duplicated in entries if not duplicated and (az is None or az.allowed("alter", ct.name))}

    def current(name):
        t = b.topics.get(name)
        return None if t is None else t.partitions
    if create_partitions_too_many(((ct.name, ct.count) for ct, _d in entries if ct.name in allowed), current):
        log.info("CreatePartitions refused: more than 10000 partitions added by one request")
        return R(throttle_time_ms=0, results=[
            R.CreatePartitionsTopicResult(name=ct.name, error_code=ErrorCode.POLICY_VIOLATION,
                                          error_message=TOO_MANY_ADDITIONAL_PARTITIONS) for ct in req.topics])
    for ct, duplicated in entries:
        if duplicated:
            results.append(R.CreatePartitionsTopicResult(name=ct.name, error_code=ErrorCode.INVALID_REQUEST,
                                                         error_message="Duplicate topic name."))
            continue
        if ct.name not in allowed:
            results.append(R.CreatePartitionsTopicResult(name=ct.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                         error_message="Topic authorization failed."))
            continue
        code, message = await _grow(b, ct, req.validate_only, quota)
        results.append(R.CreatePartitionsTopicResult(name=ct.name, error_code=code, error_message=message))
    return R(throttle_time_ms=0 if quota is None else quota.throttle_time_ms(), results=results)
