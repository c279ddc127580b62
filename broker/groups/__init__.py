"""Consumer groups and committed offsets: Kafka's classic group protocol and, beside it, the
next-generation consumer protocol (KIP-848), with online conversion between the two.

- ``group``: one classic group's state machine and members, and ``GroupOffsets`` (the
  committed offsets every group carries) (pure, no I/O, no event loop);
- ``consumer_group``: one consumer-protocol group and its members, the records that persist
  them and their replay (pure);
- ``assignors``: the server-side ``uniform`` and ``range`` assignors (pure);
- ``reconciliation``: target assignment and incremental reconciliation of a member (pure);
- ``coordinator``: ``GroupCoordinator`` owning every group, its timers and offsets, serving
  the classic protocol; ``consumer_coordinator`` mixes the consumer protocol into it;
- ``streams_coordinator`` (with ``streams_topology``, ``streams_assignment``): Streams groups
  (KIP-1071); ``streams_group``: one Streams group and its members (pure);
  ``streams_records``: a Streams group as its records and back (pure);
- ``errors``, ``validation``, ``timers``: what every group type shares (the error answer and
  the append-error mapping, request checks, keyed timers);
- ``offsets_log``: durable records in the internal compacted topic ``__consumer_offsets``;
- ``schemas``: Kafka's key/value schemas of those records;
- ``cli``: ``hourglass groups``.
"""
