"""AddPartitionsToTxn (24) v0-5: partitions join a producer's transaction.

v0-3 come from producers: one transaction, answered per partition. Any partition the request
cannot have fails the whole request (Kafka's KafkaApis): an unknown partition gets
UNKNOWN_TOPIC_OR_PARTITION, an internal topic (``__consumer_offsets`` goes through
AddOffsetsToTxn) TOPIC_AUTHORIZATION_FAILED, and every other partition OPERATION_NOT_ATTEMPTED.
Otherwise the coordinator answers one error for all: INVALID_PRODUCER_ID_MAPPING (unknown id
or another producer id), PRODUCER_FENCED (another epoch; INVALID_PRODUCER_EPOCH before v2),
CONCURRENT_TRANSACTIONS (the previous transaction is still completing), INVALID_REQUEST for an
empty transactional id.

v4+ is the batched broker-to-broker form (KIP-890): one result per transaction; ``verify_only``
asks whether the partitions are already in the transaction (TRANSACTION_ABORTABLE for those
that are not) without adding them; without it they are added as a transaction-version-2 add.
"""
from broker.cluster import INTERNAL_TOPICS
from broker.registry import handles
from broker.security.api_acls import active
from broker.transactions.metadata import TV_0, TV_2
from protocol.errors import ErrorCode as E
from protocol.messages.add_partitions_to_txn import AddPartitionsToTxnResponse as R

TopicResult = R.AddPartitionsToTxnTopicResult
PartitionResult = TopicResult.AddPartitionsToTxnPartitionResult


def _results(errors: dict) -> list:
    by_topic: dict[str, list] = {}
    for (topic, p), err in errors.items():
        by_topic.setdefault(topic, []).append(PartitionResult(partition_index=p, partition_error_code=err))
    return [TopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


def _one_transaction(b, v, transactional_id, producer_id, producer_epoch, verify_only, topics, az=None) -> dict:
    partitions = [(t.name, p) for t in topics for p in t.partitions]
    failed: dict = {}
    denied = set()
    if az is not None and v < 4:  # ACLs on: WRITE on the transactional id, then on each topic
        if not az.allowed("transactional_id", transactional_id):
            return {tp: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in partitions}
        denied = az.split("topic", [t.name for t in topics])[1]
    for topic, p in partitions:
        info = b.topics.get(topic)
        if v < 4 and (topic in INTERNAL_TOPICS or topic in denied):  # Kafka never authorizes clients to write internal topics
            failed[(topic, p)] = E.TOPIC_AUTHORIZATION_FAILED
        elif info is None or not 0 <= p < info.partitions:
            failed[(topic, p)] = E.UNKNOWN_TOPIC_OR_PARTITION
    if failed:
        return {tp: failed.get(tp, E.OPERATION_NOT_ATTEMPTED) for tp in partitions}
    if b.txn is None:
        return {tp: E.COORDINATOR_NOT_AVAILABLE for tp in partitions}
    if verify_only:
        return b.txn.handle_verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
    err = b.txn.handle_add_partitions(transactional_id, producer_id, producer_epoch, partitions,
                                      TV_2 if v >= 4 else TV_0)
    if err == E.PRODUCER_FENCED and v < 2:
        err = E.INVALID_PRODUCER_EPOCH  # older clients do not know PRODUCER_FENCED
    return {tp: err for tp in partitions}


@handles(24)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    az = active(ctx)
    if v < 4:
        errors = _one_transaction(b, v, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                  req.v3_and_below_producer_epoch, False, req.v3_and_below_topics, az)
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=_results(errors))
    if az is not None and not az.allowed("verify"):  # v4+ batches come from brokers: CLUSTER_ACTION
        return R(throttle_time_ms=0, error_code=E.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=[])
    results = []
    for txn in req.transactions:
        errors = _one_transaction(b, v, txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.verify_only,
                                  txn.topics)
        results.append(R.AddPartitionsToTxnResult(transactional_id=txn.transactional_id,
                                                  topic_results=_results(errors)))
    return R(throttle_time_ms=0, error_code=0, results_by_transaction=results)
