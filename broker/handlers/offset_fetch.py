"""OffsetFetch (9) v0-10: a group's committed offsets.

- v0-1 name partitions; v2+ may pass null topics for "every committed offset of the group"
  and carry a top-level error (v0-1 put a group-level error on every partition instead).
- v8+ ask for several groups at once, each with its own error.
- A partition without a committed offset answers offset -1, metadata "" and no error.
- v10 names topics by id (request and answer): an id no topic has answers UNKNOWN_TOPIC_ID on
  its partitions; every committed offset (null topics) is answered with its topic's id.
- ACLs on: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED: on every partition in v0-1, the
  top-level error with no topics in v2-7, the group's error in v8+) and on each topic
  (TOPIC_AUTHORIZATION_FAILED on its partitions; left out when all offsets are asked for).
"""
from protocol.errors import ErrorCode
from broker.groups.base import resolve_topic_ids
from broker.registry import handles
from broker.security.api_acls import active
from protocol.messages.offset_fetch import OffsetFetchResponse as R


# errors Kafka answers for the group alone, with no topics: a refused member (v9+)
GROUP_LEVEL = frozenset({ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.STALE_MEMBER_EPOCH,
                         ErrorCode.UNKNOWN_MEMBER_ID})


def _fetch(b, group_id, topics, require_stable, member_id=None, member_epoch=-1, az=None):
    """(error, [(topic, [(partition, offset, leader epoch, metadata, error)])]) in request order,
    or grouped by topic for a null (all) request; (GROUP_AUTHORIZATION_FAILED, None) when the
    caller may not describe the group."""
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    denied = set()
    if az is not None:
        if not az.allowed("group", group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
        if wanted is not None:
            denied = az.split("topic", [t.name for t in topics])[1]
            wanted = [tp for tp in wanted if tp[0] not in denied]
    err, found = b.groups.handle_fetch_offsets(group_id, require_stable, wanted, member_id, member_epoch)
    if az is not None and wanted is None and not err:
        found = {tp: x for tp, x in found.items() if az.allowed("all_topics", tp[0])}
    if denied:
        wanted = [(t.name, p) for t in topics for p in t.partition_indexes]
        found = {**found, **{tp: (-1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED) for tp in wanted
                             if tp[0] in denied}}
    if err:
        if wanted is None or err in GROUP_LEVEL:
            # a refused member (v9+) gets the group's error alone, as Kafka's group-level
            # exception answer, for consumer and Streams groups alike
            return err, []
        found = {tp: (-1, -1, "", err) for tp in wanted}
    by_topic: dict[str, list] = {}
    for tp in (wanted if wanted is not None else sorted(found)):
        offset, epoch, metadata, perr = found.get(tp, (-1, -1, "", 0))
        by_topic.setdefault(tp[0], []).append((tp[1], offset, epoch, metadata, perr))
    return err, list(by_topic.items())


def _topic_id(b, name) -> bytes:
    """A topic's id for a v10 answer (``name`` is already the id for an unknown one asked for
    by id; a topic deleted since its offsets were committed has none: the zero id)."""
    if isinstance(name, bytes):
        return name
    t = b.topics.get(name)
    return t.topic_id if t is not None else bytes(16)


@handles(9)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    az = active(ctx)
    if v >= 8:
        groups = []
        for g in req.groups:
            unknown = []
            if v >= 10 and g.topics is not None:
                resolve_topic_ids(b.topics, g.topics)
                unknown = [t for t in g.topics if t.name is None]
            asked = g.topics if not unknown else [t for t in g.topics if t.name is not None]
            err, topics = _fetch(b, g.group_id, asked, req.require_stable,
                                 g.member_id if v >= 9 else None, g.member_epoch if v >= 9 else -1, az)
            topics = topics or []
            if unknown and err not in GROUP_LEVEL:  # after the known ones, as Kafka
                topics = topics + [(t.topic_id, [(p, -1, -1, "", ErrorCode.UNKNOWN_TOPIC_ID) for p in t.partition_indexes])
                                   for t in unknown]
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=err, topics=[
                R.OffsetFetchResponseTopics(name=name if isinstance(name, str) else "",
                                            topic_id=_topic_id(b, name) if v >= 10 else bytes(16), partitions=[
                    R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o,
                                                    committed_leader_epoch=e, metadata=m, error_code=pe)
                    for p, o, e, m, pe in parts])
                for name, parts in topics]))
        return R(throttle_time_ms=0, groups=groups)
    err, topics = _fetch(b, req.group_id, req.topics if v >= 2 or req.topics is not None else [],
                         req.require_stable if v >= 7 else False, az=az)
    if topics is None:  # the group was denied
        if v >= 2:
            return R(throttle_time_ms=0, error_code=err, topics=[])
        topics = [(t.name, [(p, -1, -1, "", err) for p in t.partition_indexes]) for t in req.topics or []]
    return R(throttle_time_ms=0, error_code=err, topics=[
        R.OffsetFetchResponseTopic(name=name, partitions=[
            R.OffsetFetchResponsePartition(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                           metadata=m, error_code=pe)
            for p, o, e, m, pe in parts])
        for name, parts in topics])
