"""TxnOffsetCommit (28) v0-6: consumer offsets committed inside a producer's transaction.

Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION; the rest go to the group
coordinator (broker.groups), which checks the group and member as for OffsetCommit (KIP-447:
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID from v3, when a generation or member
is given), writes them as one transactional batch of the producer into the group's
``__consumer_offsets`` partition, and keeps them pending until the transaction's marker (a
``require_stable`` OffsetFetch answers UNSTABLE_OFFSET_COMMIT meanwhile).

Before that, KIP-890 part 1 (``transaction.partition.verification.enable``): the group's
partition must be in the producer's transaction (AddOffsetsToTxn), unless the producer already
wrote there in this transaction. Errors as Kafka's AddPartitionsToTxnManager hands them back:
INVALID_PRODUCER_EPOCH for a fenced producer, INVALID_PRODUCER_ID_MAPPING, and for a partition
not in the transaction INVALID_TXN_STATE (v0-3) or TRANSACTION_ABORTABLE (v4); v5 (transaction
version 2) adds the partition itself instead, as does v6, which names topics by id (resolved to
their names first; UNKNOWN_TOPIC_ID for an id no topic has, the answer keyed by the ids).
"""
from broker.groups.base import OffsetAndMetadata, commit_partitions, resolve_topic_ids
from broker.groups.offsets_log import GROUP_METADATA_TOPIC_NAME
from broker.registry import handles
from broker.security.api_acls import active
from broker.transactions.coordinator import ADD_PARTITION, DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED
from protocol.errors import ErrorCode as E
from protocol.messages.txn_offset_commit import TxnOffsetCommitResponse as R


@handles(28)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    now = b.clock.now_ms()
    az = active(ctx)
    if v >= 6:
        resolve_topic_ids(b.topics, req.topics)
    known = [t for t in req.topics if t.name is not None]
    denied = ()
    if az is not None:
        whole = (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if not az.allowed("transactional_id", req.transactional_id)
                 else E.GROUP_AUTHORIZATION_FAILED if not az.allowed("group", req.group_id) else None)
        if whole is not None:
            return R(throttle_time_ms=0, topics=[R.TxnOffsetCommitResponseTopic(
                name=t.name, topic_id=t.topic_id, partitions=[
                R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=whole)
                for p in t.partitions]) for t in req.topics])
        denied = az.split("topic", [t.name for t in known])[1]
    offsets, errors = commit_partitions(b.topics, known, denied, lambda p: OffsetAndMetadata(
        offset=p.committed_offset, leader_epoch=p.committed_leader_epoch if v >= 2 else -1,
        metadata=p.committed_metadata or "", commit_timestamp=now))
    if offsets:
        operation = ADD_PARTITION if v >= 5 else GENERIC_ERROR_SUPPORTED if v == 4 else DEFAULT_ERROR

        def verify() -> int:
            if b.txn is None:
                return E.COORDINATOR_NOT_AVAILABLE
            tp = (GROUP_METADATA_TOPIC_NAME, b.groups.partition_for(req.group_id))
            return b.txn.verify_partition(req.transactional_id, req.producer_id, req.producer_epoch, tp,
                                          b.topics.log(*tp), operation)

        errors.update(b.groups.handle_txn_commit_offsets(
            req.group_id, req.producer_id, req.producer_epoch, req.member_id if v >= 3 else "",
            req.group_instance_id if v >= 3 else None, req.generation_id if v >= 3 else -1, offsets, verify))
    return R(throttle_time_ms=0, topics=[
        R.TxnOffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                               error_code=errors[(t.name, p.partition_index)] if t.name is not None
                                               else E.UNKNOWN_TOPIC_ID)
            for p in t.partitions])
        for t in req.topics])
