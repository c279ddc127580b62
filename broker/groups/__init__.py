"""Consumer groups and committed offsets (Kafka's classic group protocol).

- ``group``: one group's state machine and members (pure, no I/O, no event loop);
- ``coordinator``: ``GroupCoordinator`` owning every group, its timers and offsets cache;
- ``offsets_log``: durable records in the internal compacted topic ``__consumer_offsets``;
- ``schemas``: Kafka's key/value schemas of those records.
"""
