"""ShareFetch (78) v1-2: records for a share-group member, with its acknowledgements
(KIP-932; ``broker.share.coordinator``).

Order as Kafka's KafkaApis.handleShareFetchRequest: the share session is checked (top-level
SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH), then the acknowledgements are applied
(per partition ``acknowledge_error_code``), then records are acquired from the session's
partitions, up to ``max_bytes`` and ``max_records``, waiting up to ``max_wait_ms`` while none
can be acquired. The partitions are walked as Kafka 4.4 does (``broker.share.fetch_order``):
in the session's order rotated by the request's epoch, each read within an even share of
``max_bytes``, so a backlogged partition does not starve the others. A final request (epoch -1) only acknowledges: it closes the session and
releases what the member still holds.

``max_records`` as Kafka 4.2's share acquire modes (KIP-1206): v1 knows only batch-optimized
(a soft limit: the log batch holding the last record allowed is acquired whole); v2 carries
``share_acquire_mode``: 1 record-limit (never more than ``max_records``), anything else
batch-optimized (Kafka's default, ``share.acquire.mode=batch_optimized``).

Client quotas, as Kafka's handleShareFetchRequest: ShareFetch counts against the same fetch
(``consumer_byte_rate``) and request (``request_percentage``) quotas as Fetch. ``max_bytes``
is capped at what the fetch quota window holds; after the acquisition the request time and
the records' bytes are recorded, and over either quota the answer carries
``throttle_time_ms``, the acknowledgement results and no records, the bytes are taken back and
the connection is muted for that time (``broker.connection``). Kafka leaves the records of
such an answer acquired until their locks expire (a delivery counted for nothing); here they
are given back at once, with their delivery count as before (``SharePartition.give_back``).

A partition whose share-partition the group has not initialized (no state, in no member's
assignment: a member the group does not know asking, or a topic the group does not subscribe
to) is left out of the answer, as Kafka leaves it out until its share coordinator has
initialized it (it initializes one when the partition enters the group's assignment).

A partition is in the answer only with acquired records, an error or an acknowledgement result
(Kafka 4.4 leaves the others out). Every partition in the answer carries a record set, empty
where nothing was acquired, never null: Kafka answers MemoryRecords.EMPTY there, and librdkafka drops a whole ShareFetch
response on a null one ("invalid MessageSetSize -1"), records of other partitions included.
At ``share.version`` 0 (share groups off) the answer is UNSUPPORTED_VERSION, as Kafka 4.4's.
"""
import logging
import time

from broker.features import SHARE_VERSION, enabled
from broker.quotas.fetch_quota import FetchQuota
from broker.registry import handles
from broker.security.api_acls import active
from broker.share.coordinator import FINAL_EPOCH, INITIAL_EPOCH, ShareError
from broker.share.fetch_order import rotate_round_robin, uniform_max_bytes
from protocol.errors import ErrorCode
from protocol.messages.share_fetch import ShareFetchResponse as R

log = logging.getLogger(__name__)
PD = R.ShareFetchableTopicResponse.PartitionData
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1  # ShareAcquireMode (v2, KIP-1206)


def open_share_request(ctx, req, R, *, fetch: bool):
    """What ShareFetch and ShareAcknowledge check first: READ on the group (with ACLs on), group
    and member ids, then the share session (``ShareCoordinator.session_for``). Returns (session or None, lock duration,
    None) or (None, lock duration, an error response)."""
    sc = ctx.broker.share_groups
    gid, mid, epoch = req.group_id, req.member_id, req.share_session_epoch
    lock_ms = sc.group_config(gid, "share.record.lock.duration.ms") if gid else 0

    def top(code, msg=None):
        # Kafka 4.4's top-level refusal: the code alone (no message, a lock timeout of 0); the
        # reason goes to our log
        if msg:
            log.info("share %s from %r refused: %s: %s", "fetch" if fetch else "acknowledge",
                     ctx.client_id, ErrorCode(code).name, msg)
        return None, lock_ms, R(throttle_time_ms=0, error_code=code, error_message=None,
                                acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])

    az = active(ctx)
    if az is not None and not az.allowed("group", gid):
        return top(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not gid or not mid:
        return top(ErrorCode.INVALID_REQUEST, "Group id and member id must be set.")
    if fetch and epoch == FINAL_EPOCH and any(p for t in req.topics for p in t.partitions
                                              if not p.acknowledgement_batches):
        return top(ErrorCode.INVALID_REQUEST, "The final share fetch request must not fetch records.")
    try:
        session = sc.session_for(gid, mid, epoch, fetch=fetch, conn=ctx.conn)
    except ShareError as exc:
        return top(exc.code, exc.message)
    return session, lock_ms, None


def denied_topic_ids(ctx, topic_ids) -> set:
    """The ids among ``topic_ids`` whose topic the caller may not READ (ACLs on; unknown ids
    are left to the handler)."""
    az = active(ctx)
    if az is None:
        return set()
    names = {}
    for tid in set(topic_ids):
        t = ctx.broker.topics.by_id(tid)
        if t is not None:
            names[tid] = t.name
    _, denied = az.split("topic", names.values())
    return {tid for tid, n in names.items() if n in denied}


@handles(78)
async def handle(ctx, req):
    b = ctx.broker
    if not enabled(b, SHARE_VERSION):  # share.version 0: share groups off (Kafka 4.4's answer)
        return R(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, acquisition_lock_timeout_ms=0,
                 responses=[], node_endpoints=[])
    sc = b.share_groups
    v = ctx.api_version
    gid, mid, epoch = req.group_id, req.member_id, req.share_session_epoch
    session, lock_ms, refused = open_share_request(ctx, req, R, fetch=True)
    if refused is not None:
        return refused
    results: dict[tuple, dict] = {}
    denied = denied_topic_ids(ctx, [t.topic_id for t in req.topics]
                              + [tid for tid, _ in (session.partitions if session is not None else ())])
    for t in req.topics:
        for p in t.partitions:
            r = results.setdefault((t.topic_id, p.partition_index), {})
            if p.acknowledgement_batches:
                if t.topic_id in denied:
                    r["ack"] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
                elif epoch == INITIAL_EPOCH:
                    r["ack"] = (ErrorCode.INVALID_REQUEST, "Acknowledgements are not allowed in the initial request.")
                else:
                    r["ack"] = sc.acknowledge(gid, mid, t.topic_id, p.partition_index, p.acknowledgement_batches,
                                              renew=v >= 2)
            if epoch != FINAL_EPOCH:
                session.partitions.setdefault((t.topic_id, p.partition_index))  # joins at the end
    for f in req.forgotten_topics_data:
        for p in f.partitions:
            session.partitions.pop((f.topic_id, p), None)
    quota = FetchQuota(ctx)
    max_bytes = quota.cap(req.max_bytes)
    if epoch == FINAL_EPOCH:
        if session is not None:
            sc.close_session(session)
    else:
        max_records = req.max_records if v >= 1 and req.max_records > 0 else 500
        batch_optimized = not (v >= 2 and req.share_acquire_mode == RECORD_LIMIT)
        deadline = time.monotonic() + max(req.max_wait_ms, 0) / 1000.0
        while True:
            # the session's partitions in the order they joined it, those the request may read
            # rotated by its epoch (broker.share.fetch_order), then the acquirable ones
            valid, keys, acquirable = [], [], []
            for tid, p in session.partitions:
                if tid in denied:
                    results.setdefault((tid, p), {})["error"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    continue
                t = b.topics.by_id(tid)
                if t is None:
                    results.setdefault((tid, p), {})["error"] = ErrorCode.UNKNOWN_TOPIC_ID
                    continue
                keys.append((t.name, p))
                valid.append((tid, p, t.partitions))
            for tid, p, count in rotate_round_robin(valid, epoch):
                if not 0 <= p < count:
                    results.setdefault((tid, p), {})["error"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif not sc.share_partition_initialized(gid, tid, p):
                    # not in the group's assignment, no state: Kafka answers without it (and
                    # creates no group): a member the group does not know gets nothing
                    if "ack" not in results.get((tid, p), {}):
                        results.pop((tid, p), None)
                elif sc.can_acquire(gid, tid, p):
                    acquirable.append((tid, p))
            # Kafka's ReplicaManager.readFromLog over them: each within its share of max_bytes
            # and what the read so far left of it; the first partition with data may return
            # one whole batch past that
            remaining_records, remaining_bytes, min_one = max_records, max_bytes, True
            got_any = False
            for (tid, p), share in zip(acquirable, uniform_max_bytes(max_bytes, len(acquirable))):
                if remaining_records <= 0:
                    break  # Kafka reads the rest, and acquires nothing from them
                r = results.setdefault((tid, p), {})
                out = sc.acquire(gid, mid, tid, p, remaining_records, min(share, remaining_bytes),
                                 batch_optimized=batch_optimized, min_one=min_one)
                if isinstance(out, int):
                    r["error"] = out
                    continue
                data, ranges, read = out
                if read:
                    min_one = False
                    remaining_bytes = max(remaining_bytes - read, 0)
                if ranges:
                    got_any = True
                    r["records"], r["acquired"] = data, ranges
                    remaining_records -= sum(last - first + 1 for first, last, _ in ranges)
            left = deadline - time.monotonic()
            if got_any or left <= 0 or not keys or b._stopping or (gid, mid) not in sc.sessions:
                break
            t_wait = time.monotonic()
            await b.waiters.wait(keys, left)
            ctx.waited_s += time.monotonic() - t_wait
    throttle = _throttle(ctx, quota, gid, mid, results)
    by_topic: dict[bytes, list] = {}
    for (tid, p), r in sorted(results.items()):
        if "ack" not in r and (throttle or not (r.get("acquired") or r.get("error"))):
            continue  # Kafka 4.4 answers only the partitions with records, an error or an acknowledgement
        ack_err, ack_msg = r.get("ack", (0, None))
        acquired = [PD.AcquiredRecords(first_offset=a, last_offset=z, delivery_count=c)
                    for a, z, c in r.get("acquired", [])]
        by_topic.setdefault(tid, []).append(PD(
            partition_index=p, error_code=r.get("error", 0), acknowledge_error_code=ack_err,
            acknowledge_error_message=ack_msg,
            current_leader=PD.LeaderIdAndEpoch(leader_id=b.node_id, leader_epoch=0),
            records=r.get("records") or b"", acquired_records=acquired))
    return R(throttle_time_ms=throttle, error_code=0, acquisition_lock_timeout_ms=lock_ms,
             responses=[R.ShareFetchableTopicResponse(topic_id=tid, partitions=ps) for tid, ps in by_topic.items()],
             node_endpoints=[])


def _throttle(ctx, quota: FetchQuota, gid: str, mid: str, results: dict) -> int:
    """The quotas' verdict on this answer (``FetchQuota.throttle``); when throttled, also give
    the acquired records back and strip them from ``results``. Returns the throttle time in ms
    (0: within both quotas)."""
    if not quota.applies:
        return 0
    throttle = quota.throttle(ctx, sum(len(r.get("records") or b"") for r in results.values()))
    if throttle <= 0:
        return 0
    sc = ctx.broker.share_groups
    for (tid, p), r in results.items():
        ranges = r.pop("acquired", None)
        r.pop("records", None)
        r.pop("error", None)
        if ranges:
            sc.give_back(gid, mid, tid, p, ranges)
    return throttle
