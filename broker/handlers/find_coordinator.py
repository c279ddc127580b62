"""FindCoordinator (10) v0-6: this node coordinates every group and every transactional id.

v0 has no key type (groups only); v4+ batch several keys (``coordinator_keys``) and answer one
``Coordinator`` each. Key type 0 (group) answers this node and creates ``__consumer_offsets``
on first use (its partitions' files made off the event loop, so other connections are served
meanwhile), key type 1 (transaction) likewise with ``__transaction_state``, as Kafka does.
Other key types (2 = share group) are INVALID_REQUEST. ACLs on: DESCRIBE on the group
(GROUP_AUTHORIZATION_FAILED) or on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""
import logging

from broker.errors import INVALID_REQUEST_MESSAGE
from broker.registry import handles
from broker.security.api_acls import active
from protocol.errors import ErrorCode
from protocol.messages.find_coordinator import FindCoordinatorResponse as R

log = logging.getLogger(__name__)
GROUP, TRANSACTION = 0, 1


async def _lookup(b, key: str, key_type: int, az=None) -> tuple[int, str | None]:
    """(error code, error message) for one coordinator key."""
    if az is not None and key_type == GROUP and not az.allowed("group", key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."
    if az is not None and key_type == TRANSACTION and not az.allowed("transactional_id", key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id authorization failed."
    if key_type == GROUP:
        # the 50 partitions are created off the event loop: other connections go on meanwhile
        coordinator, ensure = b.groups, "ensure_offsets_topic_off_loop"
    elif key_type == TRANSACTION:
        coordinator, ensure = b.txn, "ensure_topic"
    else:
        return ErrorCode.INVALID_REQUEST, INVALID_REQUEST_MESSAGE  # Kafka: the error's own description
    if coordinator is None or not coordinator.active:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available."
    try:
        res = getattr(coordinator, ensure)()
        if res is not None:
            await res
    except Exception as exc:  # e.g. a failing disk: the client retries later
        log.warning("cannot create the internal topic of %s coordinators: %r",
                    "transaction" if key_type == TRANSACTION else "group", exc)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available."
    return 0, None


@handles(10)
async def handle(ctx, req):
    b = ctx.broker
    v = ctx.api_version
    host, port = b.advertised(ctx.listener)
    key_type = req.key_type if v >= 1 else GROUP
    if v >= 4:
        coordinators = []
        for key in req.coordinator_keys:
            err, msg = await _lookup(b, key, key_type, active(ctx))
            coordinators.append(R.Coordinator(
                key=key, node_id=b.node_id if not err else -1, host=host if not err else "",
                port=port if not err else -1, error_code=err, error_message=msg if err else ""))  # Kafka: ""
        return R(throttle_time_ms=0, coordinators=coordinators)
    err, msg = await _lookup(b, req.key, key_type, active(ctx))
    if err:
        return R(throttle_time_ms=0, error_code=err, error_message=msg, node_id=-1, host="", port=-1)
    # v1-3: Kafka's success message is the error name, "NONE"
    return R(throttle_time_ms=0, error_code=0, error_message="NONE" if v >= 1 else None, node_id=b.node_id,
             host=host, port=port)
