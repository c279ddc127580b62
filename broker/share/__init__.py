"""Share groups (KIP-932, queues for Kafka).

- ``partition``: one share-partition's delivery state: in-flight records, acquisition locks,
  delivery counts, acknowledgements (pure);
- ``group``: share groups, their members and the simple assignor (pure);
- ``coordinator``: ``ShareCoordinator`` owning share groups, share-partitions, share sessions,
  timers and the durable state in ``__share_group_state``;
- ``state_log``: Kafka's ShareSnapshot/ShareUpdate records and their replay.
"""
