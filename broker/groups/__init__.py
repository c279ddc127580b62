"""Consumer groups and committed offsets: Kafka's classic group protocol and, beside it, the
next-generation consumer protocol (KIP-848), with online conversion between the two, and
Streams groups (KIP-1071). Share groups (KIP-932) are in ``broker.share``.

The shape follows Kafka's group coordinator (held by tests/everyday/test_group_shape.py):

- the front, ``coordinator``: ``GroupCoordinator``, the one object handlers call; it owns every
  group, dispatches each request by group type, and decides what all types share (offset
  commits and fetches, list/describe/delete, offsets expiry, load); ``offsets_log`` replays
  ``__consumer_offsets`` into every type's groups;
- one set of modules per group type, never importing a sibling type's (KIP-848's conversion
  between classic and consumer groups is the one kept exception):
  - classic: ``group`` (one group's state machine, pure), ``classic_records`` (its record),
    ``classic_coordinator`` (JoinGroup/SyncGroup/Heartbeat/LeaveGroup and their timers);
  - consumer: ``consumer_group`` (one group, its records and replay, pure), ``assignors``
    (``uniform``, ``range``), ``reconciliation`` (target assignment and member reconciliation,
    pure), ``consumer_coordinator``;
  - Streams: ``streams_group`` (one group, pure), ``streams_topology``, ``streams_assignment``,
    ``streams_records`` (a group as its records and back), ``streams_coordinator``;
- shared modules with public names: ``base`` (the committed offsets every group carries,
  ``GroupOverview``, offset request helpers), ``errors`` (``GroupError``, the append-error
  mapping), ``validation`` (request checks, RE2 regexes), ``timers``, ``internal_topics``
  (partitioning and replay loop of the internal topics), ``schemas`` (Kafka's record
  schemas), ``group_configs`` (per-group configs);
- the ``hourglass groups`` command is ``hourglass.cli.groups``.
"""
