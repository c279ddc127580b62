"""DeleteTopics (20) v0-6: by name (v0-5 ``topic_names``, v6 ``topics[].name``) or by topic id
(v6 ``topics[].topic_id``), as Kafka's ControllerApis.deleteTopics.

- a name or id given twice: INVALID_REQUEST "Duplicate topic name." / "Duplicate topic id.";
  v6 entries with both or neither name and id: INVALID_REQUEST;
- unknown name: UNKNOWN_TOPIC_OR_PARTITION; unknown id: UNKNOWN_TOPIC_ID;
- ``delete.topic.enable=false``: TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3, as Kafka);
- internal topics (``__consumer_offsets``, ``__transaction_state``) are refused with
  INVALID_REQUEST: the group/transaction coordinators live on them.

A deleted topic disappears from the metadata at once; its partition directories are renamed
``<topic>-<p>.<uuidhex>-delete`` and removed after ``file.delete.delay.ms`` (LogManager), so
later Produce/Fetch/ListOffsets see UNKNOWN_TOPIC_OR_PARTITION (or recreate it through
auto-creation, as Kafka). Fetches parked on its partitions are woken so they answer now, and
every group's committed offsets for the topic are dropped (Kafka's onPartitionsDeleted).
v6 answers carry both the name and the id of each deleted topic.
"""
from __future__ import annotations

import logging

from broker.handlers import once_per_key
from broker.quotas.manager import ThrottlingQuotaExceeded
from broker.registry import handles
from broker.security.api_acls import active
from broker.topics import TopicError
from protocol.errors import ErrorCode
from protocol.messages.delete_topics import DeleteTopicsResponse as R
from protocol.schema import ZERO_UUID

log = logging.getLogger(__name__)


async def delete_topic(b, name: str):
    """Delete one topic (its file work off the event loop) and wake anything parked on its
    partitions; returns its TopicInfo."""
    t = b.topics.get(name)
    if t is not None and t.internal:
        raise TopicError(ErrorCode.INVALID_REQUEST,
                         f"Topic {name} is an internal topic and cannot be deleted.")

    def detached(t):
        for p in range(t.partitions):
            b.waiters.notify((name, p))
        hook = getattr(b.groups, "handle_deleted_partitions", None) if b.groups is not None else None
        if hook is not None:  # Kafka's onPartitionsDeleted: committed offsets of the topic go too
            try:
                hook([(name, p) for p in range(t.partitions)])
            except Exception:  # the topic is gone either way; stale offsets are harmless
                log.exception("dropping committed offsets of deleted topic %s failed", name)
    return await b.topics.delete_topic_off_loop(name, on_detached=detached)


@handles(20)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    out: list = []
    az = active(ctx)
    quota = b.quotas.mutation_quota(ctx, strict=v >= 5) if getattr(b, "quotas", None) is not None else None

    def answer(name, tid, code=0, message=None):
        out.append(R.DeletableTopicResult(name=name, topic_id=tid, error_code=code, error_message=message))

    # (name or None, id or None) in request order
    if v >= 6:
        wanted = []
        for st in req.topics:
            has_id = st.topic_id != ZERO_UUID
            if st.name is not None and has_id:
                answer(st.name, st.topic_id, ErrorCode.INVALID_REQUEST,
                       "You may not specify both topic name and topic id.")
            elif st.name is None and not has_id:
                answer(None, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
            else:
                wanted.append((st.name, st.topic_id if has_id else None))
    else:
        wanted = [(n, None) for n in req.topic_names]
    for (n, i), duplicated in once_per_key(wanted, lambda w: ("n", w[0]) if w[1] is None else ("i", w[1])):
        if duplicated:
            if i is None:
                answer(n, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            else:
                answer(None, i, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
            continue
        if i is not None:
            t = b.topics.by_id(i)
            if t is None:
                answer(None, i, ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
                continue
            if az is not None and not az.allowed("describe", t.name):  # the name stays hidden
                answer(None, i, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
                continue
            n = t.name
        if az is not None and not az.allowed("delete", n):  # before existence: names are not probed
            answer(n if i is None else n, i or ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                   "Topic authorization failed.")
            continue
        if not b.cfg["delete.topic.enable"]:
            code = ErrorCode.TOPIC_DELETION_DISABLED if v >= 3 else ErrorCode.INVALID_REQUEST
            answer(n, i or ZERO_UUID, code, "Topic deletion is disabled.")
            continue
        if quota is not None and b.topics.get(n) is not None:
            try:
                quota.record(b.topics.get(n).partitions)
            except ThrottlingQuotaExceeded as exc:
                answer(n, i or ZERO_UUID, ErrorCode.THROTTLING_QUOTA_EXCEEDED, str(exc))
                continue
        try:
            t = await delete_topic(b, n)
        except TopicError as exc:
            answer(n, i or ZERO_UUID, exc.code, exc.message if exc.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                   else "This server does not host this topic-partition.")
            continue
        log.info("DeleteTopics: deleted %s (%d partition(s)) for client %r", n, t.partitions, ctx.client_id)
        answer(t.name, t.topic_id)
    return R(throttle_time_ms=0 if quota is None else quota.throttle_time_ms(), responses=out)
