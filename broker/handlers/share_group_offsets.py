"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets
(92) v0: the share-partition start offsets of share groups, as Kafka's GroupCoordinatorService
answers them (alter/delete only for an empty share group)."""
from broker.registry import handles
from protocol.errors import ErrorCode as E
from protocol.messages.alter_share_group_offsets import AlterShareGroupOffsetsResponse as AR
from protocol.messages.delete_share_group_offsets import DeleteShareGroupOffsetsResponse as DR
from protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsResponse as R

NO_ID = bytes(16)


def _group_error(sc, gid: str, *, must_be_empty: bool):
    if sc.other_group_type(gid):
        return E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group."
    g = sc.groups.get(gid)
    if g is None:
        return E.GROUP_ID_NOT_FOUND, f"Group {gid} not found."
    if must_be_empty and g.members:
        return E.NON_EMPTY_GROUP, "The group is not empty."
    return 0, None


@handles(90)
async def describe(ctx, req):
    b = ctx.broker
    sc = b.share_groups
    groups = []
    RG = R.DescribeShareGroupOffsetsResponseGroup
    RT = RG.DescribeShareGroupOffsetsResponseTopic
    RP = RT.DescribeShareGroupOffsetsResponsePartition
    for g in req.groups:
        err, msg = _group_error(sc, g.group_id, must_be_empty=False)
        if err:
            groups.append(RG(group_id=g.group_id, topics=[], error_code=err, error_message=msg))
            continue
        starts = sc.start_offsets(g.group_id)
        wanted = []
        if g.topics is None:
            by_tid: dict = {}
            for (tid, p) in sorted(starts):
                by_tid.setdefault(tid, []).append(p)
            for tid, ps in by_tid.items():
                t = b.topics.by_id(tid)
                if t is not None:
                    wanted.append((t.name, ps))
        else:
            wanted = [(t.topic_name, list(t.partitions)) for t in g.topics]
        topics = []
        for name, ps in wanted:
            t = b.topics.get(name)
            if t is None:
                topics.append(RT(topic_name=name, topic_id=NO_ID, partitions=[
                    RP(partition_index=p, start_offset=-1, leader_epoch=-1, error_code=E.UNKNOWN_TOPIC_OR_PARTITION)
                    for p in ps]))
                continue
            topics.append(RT(topic_name=name, topic_id=t.topic_id, partitions=[
                RP(partition_index=p, start_offset=starts.get((t.topic_id, p), -1), leader_epoch=0, error_code=0)
                for p in ps]))
        groups.append(RG(group_id=g.group_id, topics=topics, error_code=0))
    return R(throttle_time_ms=0, groups=groups)


@handles(91)
async def alter(ctx, req):
    b = ctx.broker
    sc = b.share_groups
    err, msg = _group_error(sc, req.group_id, must_be_empty=True)
    RT = AR.AlterShareGroupOffsetsResponseTopic
    RP = RT.AlterShareGroupOffsetsResponsePartition
    out = []
    for t in req.topics:
        info = b.topics.get(t.topic_name)
        parts = []
        for p in t.partitions:
            code, text = err, msg
            if not code and (info is None or not 0 <= p.partition_index < info.partitions):
                code, text = E.UNKNOWN_TOPIC_OR_PARTITION, None
            if not code:
                plog = b.topics.log(info.name, p.partition_index)
                if p.start_offset < -1 or (plog is not None and p.start_offset > plog.log_end_offset):
                    code, text = E.INVALID_REQUEST, f"Invalid start offset {p.start_offset}."
                else:
                    # -1: Kafka resets to the latest offset
                    off = plog.log_end_offset if p.start_offset == -1 else max(p.start_offset, plog.log_start_offset)
                    sc.alter_start_offset(req.group_id, info.topic_id, p.partition_index, off)
            parts.append(RP(partition_index=p.partition_index, error_code=code, error_message=text))
        out.append(RT(topic_name=t.topic_name, topic_id=info.topic_id if info else NO_ID, partitions=parts))
    return AR(throttle_time_ms=0, responses=out)


@handles(92)
async def delete(ctx, req):
    b = ctx.broker
    sc = b.share_groups
    err, msg = _group_error(sc, req.group_id, must_be_empty=True)
    if err:
        return DR(throttle_time_ms=0, error_code=err, error_message=msg, responses=[])
    RT = DR.DeleteShareGroupOffsetsResponseTopic
    RP = RT.DeleteShareGroupOffsetsResponsePartition
    out = []
    for t in req.topics:
        info = b.topics.get(t.topic_name)
        if info is None:
            out.append(RT(topic_name=t.topic_name, topic_id=NO_ID, partitions=[
                RP(partition_index=-1, error_code=E.UNKNOWN_TOPIC_OR_PARTITION)]))
            continue
        ps = sc.delete_start_offsets(req.group_id, info.topic_id)
        out.append(RT(topic_name=t.topic_name, topic_id=info.topic_id,
                      partitions=[RP(partition_index=p, error_code=0) for p in ps]))
    return DR(throttle_time_ms=0, error_code=0, responses=out)
