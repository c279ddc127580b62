"""OffsetCommit (8) v0-10: committed offsets, written to ``__consumer_offsets`` before the answer.

- v0 has no generation or member (a simple commit); v1 carries a per-partition commit
  timestamp; v2-4 an explicit retention time (then the offset expires at commit time +
  retention, Kafka's old expiry semantics); v5+ neither (``offsets.retention.minutes`` after
  the group empties).
- Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION; metadata over
  ``offset.metadata.max.bytes`` gets OFFSET_METADATA_TOO_LARGE; the rest are stored together.
- v10 names topics by id: each is resolved to its name first (offsets are stored by name, as
  Kafka stores them); an id no topic has gets UNKNOWN_TOPIC_ID on its partitions, and the
  answer names topics by the ids asked for.
"""
from broker.groups.base import OffsetAndMetadata, commit_partitions, resolve_topic_ids
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.offset_commit import OffsetCommitResponse as R


def _all(req, code):
    return R(throttle_time_ms=0, topics=[R.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
        R.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code) for p in t.partitions])
        for t in req.topics])


@handles(8)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    now = b.clock.now_ms()
    retention = req.retention_time_ms if 2 <= v <= 4 else -1
    az = active(ctx)
    if v >= 10:
        resolve_topic_ids(b.topics, req.topics)
    known = [t for t in req.topics if t.name is not None]
    denied = ()
    if az is not None:
        if not az.allowed("group", req.group_id):
            return _all(req, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        denied = az.split("topic", [t.name for t in known])[1]

    def offset_of(p) -> OffsetAndMetadata:
        commit_ts = p.commit_timestamp if v == 1 and p.commit_timestamp >= 0 else now
        return OffsetAndMetadata(
            offset=p.committed_offset,
            leader_epoch=p.committed_leader_epoch if v >= 6 else -1,
            metadata=p.committed_metadata or "",
            commit_timestamp=commit_ts,
            expire_timestamp=commit_ts + retention if retention >= 0 else None)
    offsets, errors = commit_partitions(b.topics, known, denied, offset_of)
    if offsets:
        errors.update(b.groups.handle_commit_offsets(
            req.group_id, req.member_id if v >= 1 else "",
            req.group_instance_id if v >= 7 else None,
            req.generation_id_or_member_epoch if v >= 1 else -1, offsets, api_version=v))
    return R(throttle_time_ms=0, topics=[
        R.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            R.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                            error_code=errors[(t.name, p.partition_index)] if t.name is not None
                                            else ErrorCode.UNKNOWN_TOPIC_ID)
            for p in t.partitions])
        for t in req.topics])
