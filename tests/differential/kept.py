"""The differences between Apache Kafka and Hourglass that we keep, each with its reason.

An entry names the API, the versions (inclusive), the difference path (fnmatch pattern) and,
optionally, the two values; ``tests/differential/framework.py`` accepts a difference only when
an entry here matches it. "not yet fixed: ..." marks differences that are ours to fix.
"""
from __future__ import annotations

from tests.differential.framework import ANY, Kept  # noqa: F401

CONFLUENT = ("Confluent Server's schema ID validation topic configs, which Hourglass serves "
             "(README: schema ID validation)")
ICEBERG = ("Hourglass's lakehouse topic configs (iceberg.mode, iceberg.target.lag.ms: a topic also written as an "
           "Iceberg table, with Redpanda's names; iceberg.history.expire.*, iceberg.retention.ms: the table's own "
           "retention, with Iceberg's names), which Kafka does not have (README: Topics as Iceberg tables)")
OUR_DOCS = "Hourglass writes its own documentation strings for its configs (it does not copy Kafka's text)"
TIMESTAMP_DIFFERENCE = ("message.timestamp.difference.max.ms, which Kafka 4.0 removed (KIP-937) and refuses as an "
                        "unknown topic config, is accepted and honoured as Kafka 3.9 did (both timestamp bounds "
                        "unless before/after.max.ms are set, with a deprecation warning): a bound a user wrote "
                        "down never silently stops protecting them (README: Replacing Kafka)")

GROUP_CONFIG_UNSERVED = ("a group config whose feature Hourglass does not have (assignment intervals, assignor "
                         "offload, warmup tasks, rack-aware standbys, share-group dead-letter queues): Kafka 4.4 "
                         "accepts any valid value, Hourglass only the default and refuses another with "
                         "INVALID_CONFIG naming the key and why, so a setting never silently does nothing "
                         "(README: Not served)")

KEPT: list[Kept] = [
    # DescribeConfigs (32) and CreateTopics (19): the topic config model
    Kept(32, ANY, "*.documentation", OUR_DOCS),
    *[Kept(api, ANY, f"*configs[{name}]", reason)
      for api in (19, 32)
      for name, reason in (("confluent.*", CONFLUENT), ("iceberg.*", ICEBERG))],
    Kept(32, ANY, "*configs[offsets.topic.replication.factor].synonyms[*].value",
         "Hourglass's default is 1 (one node, the only replica); Kafka's is 3", kafka="3", hourglass="1"),
    Kept(32, ANY, "*configs[sasl.jaas.config]",
         "Hourglass reads JAAS settings per listener and mechanism (listener.name.<l>.<mechanism>.sasl.jaas.config); "
         "the broker-wide key, which Kafka brokers ignore too, is not listed", kafka="present", hourglass="absent"),
    # DeleteTopics (20): the internal topics (tests/differential/test_admin_limits.py)
    *[Kept(20, ANY, f"responses[{name}].error_{field}",
           "deleting __consumer_offsets or __transaction_state: Kafka 4.4's controller deletes it (no rule "
           "against it; its coordinators unload and the topic comes back on the next lookup); Hourglass's "
           "group and transaction coordinators keep their state in these logs while they run, so it refuses "
           "with INVALID_REQUEST naming the topic", kafka=kafka)
      for name in ("__consumer_offsets", "__transaction_state") for field, kafka in (("code", 0), ("message", None))],
    # CreateTopics (19): the seeds' timestamp-difference check (README: Replacing Kafka)
    *[Kept(19, ANY, path, TIMESTAMP_DIFFERENCE, kafka=k, hourglass=h,
           scenario="*removed config message.timestamp.difference.max.ms, honoured")
      for path, k, h in (("topics[*].error_code", 40, 0),
                         ("topics[*].error_message", "Unknown topic config name: message.timestamp.difference.max.ms",
                          None),
                         ("topics[*].num_partitions", -1, 1), ("topics[*].replication_factor", -1, 1),
                         ("topics[*].configs[*]", "absent", "present"))],
    # IncrementalAlterConfigs (44): group configs Hourglass does not serve (tests/differential/test_group_configs.py)
    Kept(44, ANY, "responses[*].error_code", GROUP_CONFIG_UNSERVED, kafka=0, hourglass=40, scenario="unserved: *"),
    Kept(44, ANY, "responses[*].error_message", GROUP_CONFIG_UNSERVED,
         hourglass=lambda m: isinstance(m, str) and "is not served by Hourglass" in m, scenario="unserved: *"),
    # Metadata (3): auto-creation
    Kept(3, ANY, "topics[*].error_code",
         "auto-creation: Hourglass, its own controller, creates the topic before it answers, so the first "
         "Metadata lists it; Kafka's broker forwards the creation to its controller and answers "
         "UNKNOWN_TOPIC_OR_PARTITION until its metadata image has the topic", kafka=3, hourglass=0),
    Kept(3, ANY, "topics[*].partitions.length", "the auto-created topic's partition (see above)",
         kafka=0, hourglass=1),
    # ConsumerGroupHeartbeat (68)
    Kept(68, ANY, "error_message",
         "an invalid regular expression: the rest of the message is the regex engine's own description "
         "(Java's, Python's)", kafka="SubscribedTopicRegex `(unclosed` is not a valid regular expression: "
         "missing closing ).", hourglass="SubscribedTopicRegex `(unclosed` is not a valid regular expression: "
         "missing ): (unclosed."),
    # ACLs (29, 30, 31)
    Kept(30, ANY, "results[*].error_code",
         "a binding with ANY or MATCH where a concrete value is needed: Kafka 4.4 answers "
         "UNKNOWN_SERVER_ERROR without a message (an exception escapes its controller's ACL "
         "validation); Hourglass answers INVALID_REQUEST naming the field", kafka=-1, hourglass=42),
    Kept(30, ANY, "results[*].error_message", "the message of the INVALID_REQUEST above", kafka=None),
    *[Kept(api, ANY, "<answer>",
           "a request carrying UNKNOWN (0) as a resource or pattern type: Kafka 4.4 cannot parse it and "
           "closes the connection; Hourglass answers it with INVALID_REQUEST for that entry and keeps "
           "the connection", kafka="connection closed", hourglass="answered") for api in (29, 30, 31)],
    # ShareFetch (78)
    Kept(78, ANY, "responses.length",
         "Kafka's own race: for a member the group does not know, Kafka 4.4 sometimes answers the partition "
         "with UNKNOWN_SERVER_ERROR instead of leaving it out, when its read of the share partition's state "
         "comes before the share coordinator initialized it ('Read on uninitialized share partition' in "
         "its log); Hourglass leaves it out (Kafka's answer without the race)", kafka=1, hourglass=0),
    Kept(78, ANY, "responses[*].partitions[*].records.trailing_partial_bytes",
         "a ShareFetch partition read within its share of max_bytes: Kafka returns the log bytes as read, "
         "ending inside the batch that did not fit (clients drop the partial batch), as its Fetch does; "
         "Hourglass returns whole batches only (see Fetch's entry). The acquired records are the same",
         hourglass=0),
    Kept(78, ANY, "draws.partition_order",
         "which partition leads each ShareFetch answer of a backlogged session: both rotate the session's "
         "partitions by the share session epoch (Kafka's PartitionRotateStrategy.ROUND_ROBIN), but Kafka 4.4's "
         "DelayedShareFetch then acquires first from the partitions whose cached log position it did not have "
         "to re-read in tryComplete (combineLogReadResponse appends the ones it re-read), an artefact of its "
         "fetch-offset-metadata cache; Hourglass acquires in the rotated order. Compared alike: the partitions "
         "each answer draws from (how many), the records it carries, each partition's total and the answers "
         "needed to drain the session"),
    # IncrementalAlterConfigs (44)
    Kept(44, ANY, "responses[*].error_*",
         "an unknown config operation: Kafka 4.4 answers UNKNOWN_SERVER_ERROR (an exception escapes its "
         "handler); Hourglass answers INVALID_REQUEST naming the operation", kafka=-1, hourglass=42),
    Kept(44, ANY, "responses[*].error_message",
         "the message of the unknown-operation refusal above", kafka=None, hourglass="Unknown operations type 7"),
    # Fetch (1)
    Kept(1, ANY, "session_id",
         "fetch sessions (KIP-227) are declined: session id 0 makes clients send full fetches, which is "
         "always correct (README, broker/handlers/fetch.py)", kafka="<generated>", hourglass=0),
    Kept(1, ANY, "error_code", "an unknown fetch session: Hourglass keeps none, so it answers the full fetch "
         "(see the session id above)", kafka=70, hourglass=0),
    Kept(1, ANY, "responses.length", "an unknown fetch session (see above)", kafka=0, hourglass=1),
    Kept(1, ANY, "*.records.trailing_partial_bytes",
         "Kafka's fetch is a slice of the segment file cut at the byte limit, so it may end in a "
         "partial batch the client drops; Hourglass stops at the last whole batch within the limit "
         "(the same records reach the client, fewer bytes are sent)", hourglass=0),
    # DescribeQuorum (55)
    Kept(55, (2, 2), "nodes[*].listeners[*].name",
         "the voter's endpoints: Kafka's controller listens on its own CONTROLLER listener; Hourglass, its own "
         "controller, answers controller requests on its broker listeners and lists those",
         kafka="CONTROLLER", hourglass="PLAINTEXT"),
]

# ApiVersions: API key -> why Hourglass advertises another range than Kafka 4.4.
OLD = "older versions Kafka 4 removed (KIP-896) stay served for older clients"
KRAFT = "no KRaft quorum: Hourglass is its own controller without a metadata log"
TELEMETRY = ("Kafka serves client telemetry (KIP-714) only with an exporter plugin in metric.reporters and drops "
             "what clients push otherwise; Hourglass always keeps pushed metrics (its /metrics and console show "
             "them), so it always serves them (test_client_telemetry compares both against a Kafka with a plugin)")
KEPT_RANGES: dict[int, str] = {
    1: OLD,
    2: OLD,
    8: OLD,
    9: OLD,
    19: OLD,
    20: OLD,
    23: OLD,
    29: OLD, 30: OLD, 31: OLD, 32: OLD,
    64: KRAFT + " (UnregisterBroker)",
    71: TELEMETRY + " (GetTelemetrySubscriptions)",
    72: TELEMETRY + " (PushTelemetry)",
    80: KRAFT + " (AddRaftVoter)",
    81: KRAFT + " (RemoveRaftVoter)",
    83: "share-group state RPCs are Kafka's inter-broker path; Hourglass's share coordinator keeps "
        "its state in-process",
    84: "share-group state RPCs are inter-broker (see 83)",
    85: "share-group state RPCs are inter-broker (see 83)",
    86: "share-group state RPCs are inter-broker (see 83)",
    87: "share-group state RPCs are inter-broker (see 83)",
    94: KRAFT + " (UnregisterController)",
}

# Config values (tests/differential/test_config_values.py, a generated set of bad values for every
# dynamic broker config and every topic config): config name -> (what may differ, reason).
# "message": the same error code, other words; "code": some bad values get another answer.
_LISTENERS_NAMED = ("the message names each node's own listeners: the oracle is a combined broker and KRaft "
                    "controller with a CONTROLLER listener, which Hourglass (its own controller) never binds")
_TLS_PER_LISTENER = ("Hourglass applies TLS settings per listener (listener.name.<l>.ssl.*); a broker-wide "
                     "value would be stored and never applied, so it is refused without the listener prefix, "
                     "as Kafka refuses the keystore keys (Kafka 4.4 stores these and validates them)")
_CLEANER = ("Hourglass's cleaner needs at least one thread, a backoff and a buffer: it refuses 0 with "
            "'Value must be at least 1' where Kafka's bound is 0 (or its 'at least 1MB per cleaner thread' rule, "
            "or, for 0 threads, a division by zero)")
_SEGMENT = ("not yet fixed: Kafka 4.0 raised the smallest segment.bytes / log.segment.bytes to 1 MiB; Hourglass "
            "still accepts 14 bytes up (the test suites roll tiny segments)")
_EMPTY_ITEMS = ("a list with empty items (',', 'a,,b'): Kafka 4.4 checks emptiness and duplicates in another "
                "order for the topic key than for its broker synonym; Hourglass names the first item not allowed")
KEPT_CONFIG_VALUES: dict[str, tuple[str, str]] = {
    "listeners": ("message", _LISTENERS_NAMED),
    "listener.security.protocol.map": ("message", _LISTENERS_NAMED),
    **{k: ("code", _TLS_PER_LISTENER) for k in (
        "ssl.cipher.suites", "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm",
        "ssl.keymanager.algorithm", "ssl.protocol", "ssl.provider", "ssl.secure.random.implementation",
        "ssl.trustmanager.algorithm", "ssl.client.auth", "ssl.engine.factory.class")},
    "metric.reporters": ("code", "Kafka loads the named Java classes and refuses one it cannot load; Hourglass "
                                 "loads no Java metrics reporters (it exports Prometheus metrics on metrics.port), "
                                 "so it keeps and shows the list (broker.compat_keys)"),
    **{k: ("code", _CLEANER) for k in ("log.cleaner.threads", "log.cleaner.backoff.ms", "log.cleaner.io.buffer.size",
                                       "log.cleaner.dedupe.buffer.size")},
    "log.segment.bytes": ("code", _SEGMENT),
    "segment.bytes": ("code", _SEGMENT),
    "cleanup.policy": ("message", _EMPTY_ITEMS),
    "log.cleanup.policy": ("message", _EMPTY_ITEMS),
}
