"""Transactions (KIP-98): Kafka's transaction coordinator.

- ``metadata``: one transactional id's state machine (pure, no I/O);
- ``log``: durable records in the internal compacted topic ``__transaction_state``;
- ``coordinator``: ``TransactionCoordinator`` owning every transactional id, its markers,
  timeouts and expiration;
- ``cli``: ``hourglass transactions list|describe|abort``.
"""
