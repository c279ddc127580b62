"""OffsetFetch (9) v0-9: a group's committed offsets.

- v0-1 name partitions; v2+ may pass null topics for "every committed offset of the group"
  and carry a top-level error (v0-1 put a group-level error on every partition instead).
- v8+ ask for several groups at once, each with its own error.
- A partition without a committed offset answers offset -1, metadata "" and no error.
"""
from broker.registry import handles
from protocol.messages.offset_fetch import OffsetFetchResponse as R


def _fetch(b, group_id, topics, require_stable, member_id=None, member_epoch=-1):
    """(error, [(topic, [(partition, offset, leader epoch, metadata, error)])]) in request order,
    or grouped by topic for a null (all) request."""
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    err, found = b.groups.handle_fetch_offsets(group_id, require_stable, wanted, member_id, member_epoch)
    if err:
        if wanted is None:
            return err, []
        found = {tp: (-1, -1, "", err) for tp in wanted}
    by_topic: dict[str, list] = {}
    for tp in (wanted if wanted is not None else sorted(found)):
        offset, epoch, metadata, perr = found.get(tp, (-1, -1, "", 0))
        by_topic.setdefault(tp[0], []).append((tp[1], offset, epoch, metadata, perr))
    return err, list(by_topic.items())


@handles(9)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    if v >= 8:
        groups = []
        for g in req.groups:
            err, topics = _fetch(b, g.group_id, g.topics, req.require_stable,
                                 g.member_id if v >= 9 else None, g.member_epoch if v >= 9 else -1)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=err, topics=[
                R.OffsetFetchResponseTopics(name=name, partitions=[
                    R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o,
                                                    committed_leader_epoch=e, metadata=m, error_code=pe)
                    for p, o, e, m, pe in parts])
                for name, parts in topics]))
        return R(throttle_time_ms=0, groups=groups)
    err, topics = _fetch(b, req.group_id, req.topics if v >= 2 or req.topics is not None else [],
                         req.require_stable if v >= 7 else False)
    return R(throttle_time_ms=0, error_code=err, topics=[
        R.OffsetFetchResponseTopic(name=name, partitions=[
            R.OffsetFetchResponsePartition(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                           metadata=m, error_code=pe)
            for p, o, e, m, pe in parts])
        for name, parts in topics])
