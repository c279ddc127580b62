"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets
(92): the share-partition start offsets of share groups, as Kafka's GroupCoordinatorService
answers them (alter/delete only for an empty share group: NON_EMPTY_GROUP at the top level; a
share group that does not exist is an empty one;
Kafka 4.4's response shapes, a top-level error in AlterShareGroupOffsets and one error per topic
in DeleteShareGroupOffsets). DescribeShareGroupOffsets v1 (KIP-1226) adds each partition's lag:
the high watermark less the start offset less the records past it already acknowledged or
archived; -1 for a share-partition never initialized. At ``share.version`` 0 (share groups off)
all three answer UNSUPPORTED_VERSION, as Kafka 4.4."""
from broker.features import SHARE_VERSION, enabled
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode as E
from protocol.messages.alter_share_group_offsets import AlterShareGroupOffsetsResponse as AR
from protocol.messages.delete_share_group_offsets import DeleteShareGroupOffsetsResponse as DR
from protocol.messages.describe_share_group_offsets import DescribeShareGroupOffsetsResponse as R

OFF_MESSAGE = "The version of API is not supported."  # share.version 0: Kafka 4.4's UNSUPPORTED_VERSION text

NO_ID = bytes(16)
# Kafka names an unknown topic with the error's own description
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."


def _group_error(sc, gid: str, *, must_be_empty: bool):
    """The group-level refusal, or (0, None). A share group that does not exist is answered as
    an empty one, as Kafka 4.4 does (its share-group offsets APIs read the share-partition state,
    which an unknown group simply has none of): describe lists the asked partitions without a
    start offset, alter and delete succeed. A group id of another type is refused."""
    if sc.other_group_type(gid):
        return E.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group."
    g = sc.groups.get(gid)
    if must_be_empty and g is not None and g.members:
        return E.NON_EMPTY_GROUP, "The group is not empty."
    return 0, None


def _lag(b, t, p: int, starts: dict, done: dict) -> int:
    start = starts.get((t.topic_id, p))
    plog = b.topics.log(t.name, p) if 0 <= p < t.partitions else None
    if start is None or start < 0 or plog is None:
        return -1
    return max(plog.high_watermark - start - done.get((t.topic_id, p), 0), 0)


@handles(90)
async def describe(ctx, req):
    b = ctx.broker
    if not enabled(b, SHARE_VERSION):  # share.version 0: every group answers UNSUPPORTED_VERSION, as Kafka 4.4
        return R(throttle_time_ms=0, groups=[R.DescribeShareGroupOffsetsResponseGroup(
            group_id=g.group_id, topics=[], error_code=E.UNSUPPORTED_VERSION, error_message=None) for g in req.groups])
    sc = b.share_groups
    groups = []
    RG = R.DescribeShareGroupOffsetsResponseGroup
    RT = RG.DescribeShareGroupOffsetsResponseTopic
    RP = RT.DescribeShareGroupOffsetsResponsePartition
    az = active(ctx)
    for g in req.groups:
        if az is not None and not az.allowed("group", g.group_id):
            groups.append(RG(group_id=g.group_id, topics=[], error_code=E.GROUP_AUTHORIZATION_FAILED))
            continue
        err, msg = _group_error(sc, g.group_id, must_be_empty=False)
        if err:
            groups.append(RG(group_id=g.group_id, topics=[], error_code=err, error_message=msg))
            continue
        starts = sc.start_offsets(g.group_id)
        done = sc.delivery_complete_counts(g.group_id) if ctx.api_version >= 1 else {}
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
        denied = az.split("topic", [n for n, _ in wanted])[1] if az is not None else ()
        if g.topics is None:  # every share-partition: the ones the caller may not describe are left out
            wanted = [(n, ps) for n, ps in wanted if n not in denied]
        topics = []
        for name, ps in wanted:
            if name in denied:
                topics.append(RT(topic_name=name, topic_id=NO_ID, partitions=[
                    RP(partition_index=p, start_offset=-1, leader_epoch=-1, error_code=E.TOPIC_AUTHORIZATION_FAILED)
                    for p in ps]))
                continue
            t = b.topics.get(name)
            if t is None:
                topics.append(RT(topic_name=name, topic_id=NO_ID, partitions=[
                    RP(partition_index=p, start_offset=-1, leader_epoch=-1, error_code=E.UNKNOWN_TOPIC_OR_PARTITION)
                    for p in ps]))
                continue
            topics.append(RT(topic_name=name, topic_id=t.topic_id, partitions=[
                RP(partition_index=p, start_offset=starts.get((t.topic_id, p), -1), leader_epoch=0, error_code=0,
                   lag=_lag(b, t, p, starts, done) if ctx.api_version >= 1 else -1)
                for p in ps]))
        groups.append(RG(group_id=g.group_id, topics=topics, error_code=0))
    return R(throttle_time_ms=0, groups=groups)


@handles(91)
async def alter(ctx, req):
    b = ctx.broker
    if not enabled(b, SHARE_VERSION):
        return AR(throttle_time_ms=0, error_code=E.UNSUPPORTED_VERSION, error_message=OFF_MESSAGE, responses=[])
    sc = b.share_groups
    az = active(ctx)
    if az is not None and not az.allowed("group", req.group_id):  # on every partition (no top-level error)
        err, msg = E.GROUP_AUTHORIZATION_FAILED, None
    else:
        err, msg = _group_error(sc, req.group_id, must_be_empty=True)
    if err == E.NON_EMPTY_GROUP:  # Kafka 4.4: a top-level error, no topics
        return AR(throttle_time_ms=0, error_code=err, error_message=msg, responses=[])
    denied = az.split("topic", [t.topic_name for t in req.topics])[1] if az is not None and not err else ()
    RT = AR.AlterShareGroupOffsetsResponseTopic
    RP = RT.AlterShareGroupOffsetsResponsePartition
    out = []
    for t in req.topics:
        info = b.topics.get(t.topic_name)
        parts = []
        for p in t.partitions:
            code, text = err, msg
            if not code and t.topic_name in denied:
                code, text = E.TOPIC_AUTHORIZATION_FAILED, None
            if not code and (info is None or not 0 <= p.partition_index < info.partitions):
                code, text = E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE
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
    return AR(throttle_time_ms=0, error_code=0, error_message=None, responses=out)


@handles(92)
async def delete(ctx, req):
    b = ctx.broker
    if not enabled(b, SHARE_VERSION):
        return DR(throttle_time_ms=0, error_code=E.UNSUPPORTED_VERSION, error_message=OFF_MESSAGE, responses=[])
    sc = b.share_groups
    az = active(ctx)
    if az is not None and not az.allowed("group", req.group_id):
        return DR(throttle_time_ms=0, error_code=E.GROUP_AUTHORIZATION_FAILED, responses=[])
    err, msg = _group_error(sc, req.group_id, must_be_empty=True)
    if err:
        return DR(throttle_time_ms=0, error_code=err, error_message=msg, responses=[])
    RT = DR.DeleteShareGroupOffsetsResponseTopic
    denied = az.split("topic", [t.topic_name for t in req.topics])[1] if az is not None else ()
    out = []
    for t in req.topics:  # Kafka 4.4 answers per topic (its response has no partitions)
        if t.topic_name in denied:
            out.append(RT(topic_name=t.topic_name, topic_id=NO_ID, error_code=E.TOPIC_AUTHORIZATION_FAILED))
            continue
        info = b.topics.get(t.topic_name)
        if info is None:
            out.append(RT(topic_name=t.topic_name, topic_id=NO_ID, error_code=E.UNKNOWN_TOPIC_OR_PARTITION,
                          error_message=UNKNOWN_TOPIC_MESSAGE))
            continue
        sc.delete_start_offsets(req.group_id, info.topic_id)
        out.append(RT(topic_name=t.topic_name, topic_id=info.topic_id, error_code=0))
    return DR(throttle_time_ms=0, error_code=0, responses=out)
