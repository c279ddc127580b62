"""WriteTxnMarkers (27) v1-2: append COMMIT/ABORT markers for a producer (Kafka 4 removed v0).

The coordinator of this node writes its markers in-process (broker.transactions); the API is
served for completeness and for ``hourglass transactions abort`` / ``kafka-transactions.sh
abort``, which end a hanging transaction with an ABORT marker. Per partition:
UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH (older than the producer's epoch there),
TRANSACTION_COORDINATOR_FENCED (older coordinator epoch than the producer's last marker); v2
(KIP-1228) names each marker's transaction version, and a version 2 marker must carry a newer
epoch than the producer's (else INVALID_PRODUCER_EPOCH). A
marker in a ``__consumer_offsets`` partition also completes the producer's pending
transactional offsets there.
"""
from broker.registry import handles
from broker.security.api_acls import active
from broker.transactions.coordinator import write_marker
from protocol.errors import ErrorCode as E
from protocol.messages.write_txn_markers import WriteTxnMarkersResponse as R

TopicResult = R.WritableTxnMarkerResult.WritableTxnMarkerTopicResult
PartitionResult = TopicResult.WritableTxnMarkerPartitionResult


@handles(27, min_version=1)  # Kafka 4.0 removed v0
async def handle(ctx, req):
    b = ctx.broker
    az = active(ctx)
    refused = az is not None and not az.allowed("cluster_action")  # markers come from brokers
    markers = []
    for m in req.markers:
        topics = []
        for t in m.topics:
            parts = [PartitionResult(partition_index=p, error_code=E.CLUSTER_AUTHORIZATION_FAILED if refused
                                     else write_marker(b.topics, b.groups, t.name, p, m.producer_id,
                                                       m.producer_epoch, m.coordinator_epoch, m.transaction_result,
                                                       m.transaction_version if ctx.api_version >= 2 else 0))
                     for p in t.partition_indexes]
            topics.append(TopicResult(name=t.name, partitions=parts))
        markers.append(R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=topics))
    return R(markers=markers)
