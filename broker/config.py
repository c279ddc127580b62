"""Broker configuration: Kafka's ``server.properties`` key names, types and defaults.

Resolution: built-in default < config file (``serve FILE`` or ``--config FILE``) <
``--override key=value`` (repeatable, in order); ``sources`` remembers where each key came
from (``file:line`` or ``--override``).

Every key is classified (:func:`key_status`): a broker key Hourglass honours (``BROKER_KEYS``),
a broker default of a topic config (declared by ``storage.log_config``, their single home), a
Kafka key with no meaning on one node (``broker.compat_keys.NO_EFFECT``, accepted and listed
at start with its reason), a per-listener ``listener.name.<name>.<key>`` setting, a key Kafka
4.0 removed (``storage.log_config.REMOVED_BROKER_LOG_KEYS``: ignored with a warning naming why,
as Kafka 4 brokers ignore it, so an old ``server.properties`` still starts), or unknown.
As in Kafka, an unknown key is a warning ("supplied but isn't a known config", here with the
closest known key) and the broker starts; ``strict=True`` (``--strict-config``, ``hourglass
config check``) makes it an error. An invalid value of a known key always refuses to start,
with Kafka's wording: ``Invalid value X for configuration Y: <reason>``. Listener keys are
resolved by ``broker.listeners``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, NamedTuple

from protocol.deferred import dataclass


class ConfigError(ValueError):
    """A configuration key is unknown (strict mode) or its value is invalid; the message
    names the key and the value."""


_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


def _integer(v: str, bounds: tuple[int, int], kind: str) -> int:
    s = v.strip()
    if not re.fullmatch(r"[+-]?\d+", s) or not bounds[0] <= int(s) <= bounds[1]:
        raise ValueError(f"Not a number of type {kind}")
    return int(s)


def _int(v: str) -> int:
    return _integer(v, _INT_RANGE, "INT")


def _long(v: str) -> int:
    return _integer(v, _LONG_RANGE, "LONG")


def _bool(v: str) -> bool:
    s = v.strip().lower()
    if s in ("true", "false"):
        return s == "true"
    raise ValueError("Expected value to be either true or false")


def _str(v: str) -> str:
    return v.strip()


def _list(v: str) -> list[str]:
    return [p.strip() for p in v.split(",") if p.strip()]


def _float(v: str) -> float:
    try:
        return float(v.strip().rstrip("dDfF"))
    except ValueError:
        raise ValueError("Not a number of type DOUBLE") from None


# S3's bucket naming rules (3-63 characters; lowercase letters, digits, dots and hyphens; a
# letter or digit at each end)
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def _warehouse_uri(v: str) -> str:
    """``iceberg.warehouse``: empty (the data dir) or ``s3://BUCKET[/PREFIX]``, without a trailing /."""
    s = v.strip()
    if not s:
        return ""
    m = re.fullmatch(r"s3://([^/?#]*)(/[^?#]*)?", s)
    if m is None:
        raise ValueError("Expected s3://BUCKET[/PREFIX] (an S3-compatible store) or empty (the first log dir)")
    bucket, prefix = m.group(1), (m.group(2) or "/")[1:].rstrip("/")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise ValueError(f"'{bucket}' is not a valid S3 bucket name (3-63 lowercase letters, digits, dots "
                         "and hyphens, beginning and ending with a letter or digit)")
    if prefix and "" in prefix.split("/"):
        raise ValueError("the prefix has an empty path segment")
    return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"


def _http_url(v: str) -> str:
    """An endpoint: empty, or ``http(s)://HOST[:PORT]`` (no path, query or credentials)."""
    from urllib.parse import urlsplit
    s = v.strip().rstrip("/")
    if not s:
        return ""
    try:
        u = urlsplit(s)
        port = u.port
    except ValueError as exc:
        raise ValueError(f"Expected http://HOST:PORT or https://HOST[:PORT]: {exc}") from None
    if u.scheme not in ("http", "https") or not u.hostname or u.path or u.query or u.fragment \
            or u.username is not None:
        raise ValueError("Expected http://HOST:PORT or https://HOST[:PORT] (no path, query or user)")
    del port
    return s


def _s3_region(v: str) -> str:
    s = v.strip()
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", s):
        raise ValueError("Expected a region name such as us-east-1")
    return s


def _http_listeners(v: str) -> list[str]:
    from broker.http_listeners import parse_http_listeners
    parse_http_listeners(v)  # raises ValueError with the bad entry
    return _list(v)


class BrokerKey(NamedTuple):
    name: str
    parse: Callable[[str], Any]
    default: str | None
    doc: str
    check: Callable[[Any], bool] | None = None
    check_doc: str = ""


def _k(name, parse, default, doc, check=None, check_doc=""):
    return BrokerKey(name, parse, default, doc, check, check_doc)


# (check, Kafka's ConfigDef.Range wording)
_pos = (lambda x: x > 0, "Value must be at least 1")
_nonneg = (lambda x: x >= 0, "Value must be at least 0")

# The broker keys we honour (server-level). Topic defaults live in storage.log_config.
BROKER_KEYS: dict[str, BrokerKey] = {k.name: k for k in [
    _k("listeners", _list, "PLAINTEXT://:9092", "Listener URIs NAME://host:port, any number (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL by listener.security.protocol.map). Broker listeners are bound; controller listeners (controller.listener.names) are understood and not bound. Port 0 binds a free port."),
    _k("advertised.listeners", _list, None, "Listener URIs given to clients in Metadata, per listener a client came in on (default: listeners, with the bound host/port); controller listeners are left out."),
    _k("listener.security.protocol.map", _str, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", "Listener name -> security protocol, as in Kafka (unset: controller listener names map to PLAINTEXT)."),
    _k("inter.broker.listener.name", _str, None, "Accepted for compatibility (single node)."),
    _k("controller.listener.names", _list, None, "Names of the controller listeners: understood and not bound (Hourglass is its own controller; Kafka clients never connect there, and a connection to that port is refused)."),
    _k("process.roles", _list, "broker,controller", "broker,controller or broker: this node is the broker and its own controller either way; controller alone refuses to start (it would serve no client)."),
    _k("controller.quorum.voters", _str, None, "Accepted for compatibility (single node)."),
    _k("log.dirs", _list, None, "Directories holding partition logs (first one also holds broker metadata)."),
    _k("log.dir", _list, "/tmp/hourglass-logs", "Used when log.dirs is not set."),
    _k("node.id", _int, "1", "This node's id.", *_nonneg),
    _k("broker.id", _int, None, "Synonym of node.id.", *_nonneg),
    _k("cluster.id", _str, None, "Cluster id used when meta.properties does not exist yet (default: random)."),
    _k("num.partitions", _int, "1", "Partitions of an auto-created topic.", *_pos),
    _k("default.replication.factor", _int, "1", "Replication factor of auto-created topics (only 1 on one node).", *_pos),
    _k("auto.create.topics.enable", _bool, "true", "Create a topic when a client asks for an unknown one in Metadata or Produce."),
    _k("delete.topic.enable", _bool, "true", "Allow DeleteTopics."),
    _k("socket.request.max.bytes", _int, "104857600", "Largest request frame accepted; larger frames close the connection before any read of the body.", *_pos),
    _k("socket.send.buffer.bytes", _int, "102400", "SO_SNDBUF for client sockets (-1: OS default)."),
    _k("socket.receive.buffer.bytes", _int, "102400", "SO_RCVBUF for client sockets (-1: OS default)."),
    _k("connections.max.idle.ms", _long, "600000", "Close connections idle for this long.", *_pos),
    _k("max.connections", _int, "2147483647", "Most connections accepted at once (per listener too: listener.name.<l>.max.connections); past it a new connection is closed at once.", *_nonneg),
    _k("max.connections.per.ip", _int, "2147483647", "Most connections from one IP address.", *_nonneg),
    _k("max.connections.per.ip.overrides", _str, "", "Per-IP or host name exceptions to max.connections.per.ip: host:count,... (a host name is resolved at start)."),
    _k("request.read.timeout.ms", _int, "30000", "Hourglass: a started request frame must arrive whole within this time.", *_pos),
    _k("log.retention.check.interval.ms", _long, "300000", "How often retention runs.", *_pos),
    _k("log.flush.scheduler.interval.ms", _long, "9223372036854775807", "How often logs are checked for flush.ms.", *_pos),
    _k("log.flush.offset.checkpoint.interval.ms", _int, "60000", "How often the recovery-point checkpoint is written.", *_pos),
    _k("log.flush.start.offset.checkpoint.interval.ms", _int, "60000", "How often the log-start-offset checkpoint is written.", *_pos),
    _k("num.recovery.threads.per.data.dir", _int, "1", "Accepted for compatibility.", *_pos),
    _k("replica.alter.log.dirs.io.max.bytes.per.second", _long, str(2**63 - 1),
       "Bytes per second a log-dir move (AlterReplicaLogDirs) copies at most, over all moves.", *_pos),
    _k("num.network.threads", _int, "3", "Accepted for compatibility (one event loop)."),
    _k("num.io.threads", _int, "8", "Accepted for compatibility (one event loop)."),
    _k("offsets.topic.replication.factor", _int, "1", "Accepted for compatibility."),
    _k("offsets.topic.num.partitions", _int, "50", "Partitions of the internal __consumer_offsets log.", *_pos),
    _k("offsets.retention.minutes", _int, "10080", "Committed offsets of empty groups expire after this.", *_pos),
    _k("offsets.retention.check.interval.ms", _long, "600000", "How often expired offsets are removed.", *_pos),
    _k("offset.metadata.max.bytes", _int, "4096", "Largest commit metadata string.", *_nonneg),
    _k("transaction.state.log.replication.factor", _int, "1", "Accepted for compatibility."),
    _k("transaction.state.log.min.isr", _int, "1", "Accepted for compatibility (stored as the transaction topic's min.insync.replicas)."),
    _k("transaction.state.log.num.partitions", _int, "50", "Partitions of the internal __transaction_state log (an existing topic keeps its count).", *_pos),
    _k("transaction.state.log.segment.bytes", _int, "104857600", "segment.bytes of __transaction_state (small segments compact and replay faster).", *_pos),
    _k("transaction.state.log.load.buffer.size", _int, "5242880", "Accepted for compatibility.", *_pos),
    _k("transaction.max.timeout.ms", _int, "900000", "Largest transaction.timeout.ms a producer may ask for (InitProducerId answers INVALID_TRANSACTION_TIMEOUT above it).", *_pos),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int, "10000", "How often open transactions past their timeout are aborted (with a producer epoch bump).", *_pos),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", _int, "3600000", "How often transactional ids past transactional.id.expiration.ms are removed.", *_pos),
    _k("transaction.partition.verification.enable", _bool, "true", "Refuse a transactional batch to a partition not added to the producer's transaction (KIP-890)."),
    _k("group.initial.rebalance.delay.ms", _int, "3000", "Delay of the first rebalance of an empty group.", *_nonneg),
    _k("group.min.session.timeout.ms", _int, "6000", "Smallest session timeout a member may ask for.", *_pos),
    _k("group.max.session.timeout.ms", _int, "1800000", "Largest session timeout a member may ask for.", *_pos),
    _k("group.max.size", _int, "2147483647", "Most members in one group.", *_pos),
    _k("group.coordinator.rebalance.protocols", _list, "classic,consumer,streams", "Group protocols served: classic (JoinGroup/SyncGroup), consumer (KIP-848 ConsumerGroupHeartbeat) and streams (KIP-1071 StreamsGroupHeartbeat), the last two advertised only when listed; classic is required.", lambda v: "classic" in v, "The list must contain 'classic'"),
    _k("group.streams.session.timeout.ms", _int, "45000", "Session timeout of Streams-protocol (KIP-1071) members: a member silent this long is removed.", *_pos),
    _k("group.streams.heartbeat.interval.ms", _int, "5000", "Heartbeat interval given to Streams-protocol members.", *_pos),
    _k("group.streams.initial.rebalance.delay.ms", _int, "3000", "How long a new Streams group waits for more members before its first task assignment.", *_nonneg),
    _k("group.streams.num.standby.replicas", _int, "0", "Standby replicas of each task the Streams group coordinator assigns.", *_nonneg),
    _k("group.consumer.session.timeout.ms", _int, "45000", "Session timeout of consumer-protocol (KIP-848) members: a member silent this long is removed.", *_pos),
    _k("group.consumer.min.session.timeout.ms", _int, "45000", "Lower bound of group.consumer.session.timeout.ms.", *_pos),
    _k("group.consumer.max.session.timeout.ms", _int, "60000", "Upper bound of group.consumer.session.timeout.ms.", *_pos),
    _k("group.consumer.heartbeat.interval.ms", _int, "5000", "Heartbeat interval given to consumer-protocol members.", *_pos),
    _k("group.consumer.min.heartbeat.interval.ms", _int, "5000", "Lower bound of group.consumer.heartbeat.interval.ms.", *_pos),
    _k("group.consumer.max.heartbeat.interval.ms", _int, "15000", "Upper bound of group.consumer.heartbeat.interval.ms.", *_pos),
    _k("group.consumer.max.size", _int, "2147483647", "Most members in one consumer-protocol group (GROUP_MAX_SIZE_REACHED past it).", *_pos),
    _k("group.consumer.assignors", _list, "uniform,range", "Server-side assignors a member may pick (server_assignor); the first is the default. Names or Kafka's class names (org.apache.kafka.coordinator.group.assignor.UniformAssignor, ...RangeAssignor).", lambda v: bool(v) and all(_assignor_name(a) for a in v), "Only the uniform and range assignors are available"),
    _k("group.consumer.migration.policy", _str, "bidirectional", "Online conversion between classic and consumer-protocol groups: bidirectional, upgrade, downgrade or disabled.", lambda v: v.lower() in ("bidirectional", "upgrade", "downgrade", "disabled"), "String must be one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL"),
    _k("group.consumer.regex.refresh.interval.ms", _int, "600000", "Longest time before a group's subscribed regular expressions are resolved again.", lambda v: v >= 10000, "Value must be at least 10000"),
    # share groups (KIP-932; Kafka 4.2's GroupCoordinatorConfig / ShareGroupConfig names and defaults)
    _k("group.share.session.timeout.ms", _int, "45000", "Session timeout of share-group members: a member silent this long is removed and its records released.", *_pos),
    _k("group.share.min.session.timeout.ms", _int, "45000", "Lower bound of share.session.timeout.ms (group config).", *_pos),
    _k("group.share.max.session.timeout.ms", _int, "60000", "Upper bound of share.session.timeout.ms (group config).", *_pos),
    _k("group.share.heartbeat.interval.ms", _int, "5000", "Heartbeat interval given to share-group members.", *_pos),
    _k("group.share.min.heartbeat.interval.ms", _int, "5000", "Lower bound of share.heartbeat.interval.ms (group config).", *_pos),
    _k("group.share.max.heartbeat.interval.ms", _int, "15000", "Upper bound of share.heartbeat.interval.ms (group config).", *_pos),
    _k("group.share.assignment.interval.ms", _int, "1000", "Least time between two target assignments of a share group (Kafka 4.4): a change within it is assigned by a later heartbeat.", *_nonneg),
    _k("group.share.min.assignment.interval.ms", _int, "0", "Lower bound of share.assignment.interval.ms (group config).", *_nonneg),
    _k("group.share.max.assignment.interval.ms", _int, "15000", "Upper bound of share.assignment.interval.ms (group config).", *_nonneg),
    _k("group.share.max.size", _int, "200", "Most members in one share group (GROUP_MAX_SIZE_REACHED past it).", *_pos),
    _k("group.share.record.lock.duration.ms", _int, "30000", "How long a share-group member holds the records it acquired before they are released to others.", *_pos),
    _k("group.share.min.record.lock.duration.ms", _int, "15000", "Lower bound of share.record.lock.duration.ms (group config).", *_pos),
    _k("group.share.max.record.lock.duration.ms", _int, "60000", "Upper bound of share.record.lock.duration.ms (group config).", *_pos),
    _k("group.share.delivery.count.limit", _int, "5", "Deliveries of a record to share-group members before it is archived (given up).", lambda v: 2 <= v <= 10, "Value must be between 2 and 10"),
    _k("group.share.partition.max.record.locks", _int, "2000", "Most in-flight records of one share-partition (between its start and end offsets).", lambda v: 100 <= v <= 10000, "Value must be between 100 and 10000"),
    _k("group.share.max.share.sessions", _int, "2000", "Most share sessions open at once (ShareFetch answers SHARE_SESSION_LIMIT_REACHED past it).", *_pos),
    _k("share.coordinator.state.topic.num.partitions", _int, "50", "Partitions of the internal __share_group_state log (an existing topic keeps its count).", *_pos),
    _k("share.coordinator.snapshot.update.records.per.snapshot", _int, "500", "ShareUpdate records written for a share-partition before a new ShareSnapshot.", lambda v: 0 <= v <= 500, "Value must be between 0 and 500"),
    _k("producer.id.expiration.ms", _int, "86400000", "A producer id idle this long (by its last batch's timestamp) and without an open transaction is forgotten.", *_pos),
    _k("producer.id.expiration.check.interval.ms", _int, "600000", "How often idle producer ids are looked for (producer.id.expiration.ms).", *_pos),
    _k("transactional.id.expiration.ms", _int, "604800000", "A transactional id without a transaction for this long is removed (its producer must InitProducerId again).", *_pos),
    _k("log.cleaner.enable", _bool, "true", "Run the log cleaner for compacted topics."),
    _k("log.cleaner.threads", _int, "1", "Cleaner concurrency.", *_pos),
    _k("log.cleaner.backoff.ms", _long, "15000", "Cleaner sleep when there is nothing to clean.", *_pos),
    _k("log.cleaner.dedupe.buffer.size", _long, "134217728", "Memory for the cleaner's offset map.", *_pos),
    _k("log.cleaner.io.buffer.size", _int, "524288", "Cleaner read/write buffer size.", *_pos),
    _k("log.cleaner.io.max.bytes.per.second", _float, "1.7976931348623157E308", "Cleaner I/O throttle."),
    # client quotas (Kafka's QuotaConfig): rates are measured over quota.window.num samples
    _k("quota.window.num", _int, "11", "Samples kept of each client quota rate (produce/fetch byte rates, request time).", *_pos),
    _k("quota.window.size.seconds", _int, "1", "Time span of each client quota sample.", *_pos),
    _k("controller.quota.window.num", _int, "11", "Samples of the controller_mutation_rate quota: its token bucket holds this many windows of tokens.", *_pos),
    _k("controller.quota.window.size.seconds", _int, "1", "Time span of each controller mutation quota sample.", *_pos),
    _k("metrics.port", _int, "-1", "Prometheus metrics HTTP port (-1: off; 0: a free port)."),
    _k("metrics.host", _str, "127.0.0.1", "Prometheus metrics HTTP host."),
    # HTTP services (web/): each is off while its listeners are empty
    _k("schema.registry.listeners", _http_listeners, "", "Hourglass: the Schema Registry (Confluent's API) on http://HOST:PORT or https://HOST:PORT (TLS from the broker's ssl.* keys), comma separated; empty: off. Basic auth checks the broker's PLAIN/SCRAM users when a Kafka listener has them."),
    _k("authentication.method", _str, "", "Schema Registry: NONE (an open registry) or BASIC (HTTP basic auth against the broker's users: SASL/PLAIN users of the listeners' JAAS configs and the SCRAM credentials), as Confluent's key; unset: BASIC when a Kafka listener authenticates with PLAIN or SCRAM, else NONE.", lambda v: v.upper() in ("", "NONE", "BASIC"), "NONE or BASIC"),
    _k("kafkastore.topic", _str, "_schemas", "Schema Registry: the compacted topic holding schemas, configs, modes and deletes, in Confluent's record format (created on first start, 1 partition)."),
    _k("schema.compatibility.level", _str, "backward", "Schema Registry: the compatibility level of subjects without their own (none, backward, backward_transitive, forward, forward_transitive, full, full_transitive), until PUT /config sets one.", lambda v: v.upper() in ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"), "one of none, backward, forward, full and their _transitive forms"),
    _k("associations.enable", _bool, "true", "Schema Registry: serve Confluent's associations API (/associations: topics tied to their key and value subjects, which confluent-kafka's serializers look up first), as Confluent 8.3's key; false: those routes answer 404."),
    _k("console.listeners", _http_listeners, "", "Hourglass: the web console and Kafka REST v3 (/v3) on http://HOST:PORT or https://HOST:PORT, comma separated; empty: off."),
    _k("iceberg.catalog.listeners", _http_listeners, "", "Hourglass: the Iceberg REST catalog (read-only) of the topics' Iceberg tables (topic config iceberg.mode) on http://HOST:PORT or https://HOST:PORT, comma separated; empty: off. The tables are written whether or not it is served."),
    # the Iceberg tables' warehouse (lakehouse.warehouse maps these to pyiceberg's FileIO s3.* properties)
    _k("iceberg.warehouse", _warehouse_uri, "", "Hourglass: where the topics' Iceberg tables keep their data and metadata files: empty: <first log dir>/.hourglass/iceberg; s3://BUCKET[/PREFIX]: an S3-compatible object store (iceberg.s3.*). The catalog's pointers stay in the first log dir either way."),
    _k("iceberg.s3.endpoint", _http_url, "", "Hourglass: the S3-compatible store's endpoint (http://HOST:PORT or https://HOST[:PORT]; pyiceberg's s3.endpoint); empty: AWS S3 of iceberg.s3.region."),
    _k("iceberg.s3.region", _s3_region, "us-east-1", "Hourglass: the store's region (pyiceberg's s3.region, Iceberg's client.region)."),
    _k("iceberg.s3.access.key.id", _str, "", "Hourglass: the access key id the broker writes with (pyiceberg's s3.access-key-id); empty, with an empty secret: the AWS default credential chain (AWS_ACCESS_KEY_ID, ~/.aws, instance role)."),
    _k("iceberg.s3.secret.access.key", _str, "", "Hourglass: the secret of iceberg.s3.access.key.id (pyiceberg's s3.secret-access-key); a password: never logged or shown."),
    _k("iceberg.s3.path.style.access", _bool, "false", "Hourglass: address buckets as ENDPOINT/BUCKET (true: most self-hosted stores) rather than BUCKET.ENDPOINT (Iceberg's s3.path-style-access; pyiceberg's s3.force-virtual-addressing is its negation)."),
    _k("iceberg.catalog.vended.credentials", _bool, "false", "Hourglass: the REST catalog hands readers that ask for it (X-Iceberg-Access-Delegation: vended-credentials) the broker's own S3 key pair in LoadTable's storage-credentials; false: readers bring their own keys (the endpoint, region and addressing are always handed)."),
    # security (broker.security): per listener, listener.name.<name>.<key> overrides any of these
    _k("ssl.keystore.type", _str, "JKS", "PEM or PKCS12 (JKS: a PKCS12 file is read as the JVM reads it; a real JKS file is refused with the keytool line that converts it)."),
    _k("ssl.keystore.location", _str, None, "The broker's key and certificate chain (PKCS12, or PEM with the key then the chain)."),
    _k("ssl.keystore.password", _str, None, "Password of a PKCS12 keystore."),
    _k("ssl.key.password", _str, None, "Password of the private key (an encrypted PEM key)."),
    _k("ssl.keystore.key", _str, None, "The private key as inline PEM (with ssl.keystore.type=PEM)."),
    _k("ssl.keystore.certificate.chain", _str, None, "The certificate chain as inline PEM (with ssl.keystore.type=PEM)."),
    _k("ssl.truststore.type", _str, "JKS", "PEM or PKCS12 (JKS as for the keystore)."),
    _k("ssl.truststore.location", _str, None, "CA certificates a client certificate must chain to (default: the system CAs)."),
    _k("ssl.truststore.password", _str, None, "Password of a PKCS12 truststore."),
    _k("ssl.truststore.certificates", _str, None, "Trusted CA certificates as inline PEM."),
    _k("ssl.client.auth", _str, "none", "none, requested or required: ask TLS clients for a certificate (on SASL_SSL listeners only the listener.name.<l>.ssl.client.auth value applies, as in Kafka)."),
    _k("ssl.enabled.protocols", _list, "TLSv1.2,TLSv1.3", "TLS versions served."),
    _k("ssl.cipher.suites", _list, None, "TLS 1.2 cipher suites (Java/IANA or OpenSSL names; default: OpenSSL's)."),
    _k("ssl.principal.mapping.rules", _str, "DEFAULT", "Client certificate DN -> principal name: DEFAULT and RULE:pattern/replacement/[L|U], as in Kafka."),
    _k("sasl.enabled.mechanisms", _list, "GSSAPI", "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (Kafka's default, GSSAPI, is refused by name)."),
    _k("sasl.server.callback.handler.class", _str, None, "Per listener and mechanism: org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler validates OAUTHBEARER tokens as signed JWTs (default: Kafka's unsecured JWS validation)."),
    _k("sasl.oauthbearer.jwks.endpoint.url", _str, None, "JWKS with the keys that sign OAUTHBEARER tokens (a file: URL or path; re-read when it changes)."),
    _k("sasl.oauthbearer.expected.audience", _list, None, "An OAUTHBEARER JWT's aud must contain one of these."),
    _k("sasl.oauthbearer.expected.issuer", _str, None, "An OAUTHBEARER JWT's iss must be this."),
    _k("sasl.oauthbearer.sub.claim.name", _str, "sub", "The JWT claim naming the principal."),
    _k("sasl.oauthbearer.scope.claim.name", _str, "scope", "The JWT claim holding the scope."),
    _k("sasl.oauthbearer.clock.skew.seconds", _int, "30", "Clock skew allowed on JWT times.", *_nonneg),
    _k("sasl.server.max.receive.size", _int, "524288", "Largest frame accepted before a SASL client is authenticated.", *_pos),
    _k("connections.max.reauth.ms", _long, "0", "Longest SASL session before the client must re-authenticate (KIP-368; 0: none); the connection closes on a request after it.", *_nonneg),
    _k("connection.failed.authentication.delay.ms", _int, "100", "Delay before a failed authentication is answered and the connection closed.", *_nonneg),
    _k("hourglass.authentication.timeout.ms", _int, "10000", "Hourglass: a TLS handshake, and a SASL exchange until authenticated, must finish within this time.", *_pos),
    _k("authorizer.class.name", _str, "", "org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer) turns ACL authorization on; empty: off."),
    _k("super.users", _str, None, "Principals allowed everything, separated by ';' (User:admin;User:CN=ops,O=acme)."),
    _k("allow.everyone.if.no.acl.found", _bool, "false", "With ACLs on: allow a resource that has no ACL at all."),
    _k("delegation.token.secret.key", _str, None, "Secret key that signs delegation tokens (HMAC-SHA512 of the token id); unset or empty: delegation tokens are off (their APIs answer DELEGATION_TOKEN_AUTH_DISABLED)."),
    _k("delegation.token.max.lifetime.ms", _long, "604800000", "A delegation token's maximum lifetime, beyond which it cannot be renewed (a create request may ask for less).", *_pos),
    _k("delegation.token.expiry.time.ms", _long, "86400000", "How long a delegation token is valid before it needs a renewal (a renewal may ask for less).", *_pos),
    _k("delegation.token.expiry.check.interval.ms", _long, "3600000", "How often expired delegation tokens are removed.", *_pos),
    _k("telemetry.max.bytes", _int, "1048576", "Largest metrics payload a client may push with PushTelemetry (KIP-714; larger: TELEMETRY_TOO_LARGE); GetTelemetrySubscriptions tells clients this bound.", *_pos),
    _k("hourglass.clean.shutdown.skip.recovery", _bool, "true", "Skip the log scan after a clean shutdown (Kafka's behaviour)."),
    _k("hourglass.log.max.open.files", _int, "0", "Hourglass: most segment and index files held open at once (a cache: idle ones are closed and reopened on use, so partitions are not bounded by the file-descriptor limit). 0: three quarters of the descriptor limit, which the broker raises to its hard limit at start; the rest is left for connections.", *_nonneg),
]}


def _assignor_name(a: str) -> str | None:
    """``uniform``/``range``, or Kafka's class name of either assignor."""
    short = a.rsplit(".", 1)[-1]
    return {"uniform": "uniform", "range": "range", "UniformAssignor": "uniform",
            "RangeAssignor": "range"}.get(short)


def consumer_assignor_names(values: list[str]) -> list[str]:
    """``group.consumer.assignors`` as assignor names, first (the default) first."""
    out: list[str] = []
    for a in values:
        n = _assignor_name(a)
        if n and n not in out:
            out.append(n)
    return out


# Kafka's GroupCoordinatorConfig checks between the consumer group keys
_CONSUMER_BOUNDS = [
    ("group.consumer.max.heartbeat.interval.ms", ">=", "group.consumer.min.heartbeat.interval.ms"),
    ("group.consumer.heartbeat.interval.ms", ">=", "group.consumer.min.heartbeat.interval.ms"),
    ("group.consumer.heartbeat.interval.ms", "<=", "group.consumer.max.heartbeat.interval.ms"),
    ("group.consumer.max.session.timeout.ms", ">=", "group.consumer.min.session.timeout.ms"),
    ("group.consumer.session.timeout.ms", ">=", "group.consumer.min.session.timeout.ms"),
    ("group.consumer.session.timeout.ms", "<=", "group.consumer.max.session.timeout.ms"),
    ("group.consumer.heartbeat.interval.ms", "<", "group.consumer.session.timeout.ms"),
    ("group.share.session.timeout.ms", ">=", "group.share.min.session.timeout.ms"),
    ("group.share.session.timeout.ms", "<=", "group.share.max.session.timeout.ms"),
    ("group.share.heartbeat.interval.ms", ">=", "group.share.min.heartbeat.interval.ms"),
    ("group.share.heartbeat.interval.ms", "<=", "group.share.max.heartbeat.interval.ms"),
    ("group.share.heartbeat.interval.ms", "<", "group.share.session.timeout.ms"),
    ("group.share.assignment.interval.ms", ">=", "group.share.min.assignment.interval.ms"),
    ("group.share.assignment.interval.ms", "<=", "group.share.max.assignment.interval.ms"),
    ("group.share.record.lock.duration.ms", ">=", "group.share.min.record.lock.duration.ms"),
    ("group.share.record.lock.duration.ms", "<=", "group.share.max.record.lock.duration.ms"),
]
_BOUND_WORDS = {">=": "greater than or equal to", "<=": "less than or equal to", "<": "less than"}


def _iceberg_store_problems(values: dict[str, Any], raw: dict[str, str]) -> list[str]:
    """The iceberg.s3.* keys agree with iceberg.warehouse: a key written for a store that is not
    configured would silently do nothing, so it refuses to start instead."""
    out = []
    s3 = values["iceberg.warehouse"].startswith("s3://")
    if not s3:
        set_here = [k for k in raw if k.startswith("iceberg.s3.") or k == "iceberg.catalog.vended.credentials"]
        if set_here:
            out.append(f"{', '.join(sorted(set_here))} set, but iceberg.warehouse is not an s3:// location "
                       "(the tables are in the first log dir): set iceberg.warehouse=s3://BUCKET[/PREFIX] or remove them")
    if bool(values["iceberg.s3.access.key.id"]) != bool(values["iceberg.s3.secret.access.key"]):
        out.append("iceberg.s3.access.key.id and iceberg.s3.secret.access.key go together: set both, or neither "
                   "(the AWS default credential chain)")
    if values["iceberg.catalog.vended.credentials"] and not values["iceberg.s3.access.key.id"]:
        out.append("iceberg.catalog.vended.credentials=true needs iceberg.s3.access.key.id and "
                   "iceberg.s3.secret.access.key: the catalog vends the broker's own key pair")
    return out


def _topic_default_keys() -> dict[str, Any]:
    """Broker-level topic defaults, declared once in storage.log_config."""
    from storage import log_config
    return log_config.BROKER_LOG_DEFAULTS


def read_properties(text: str) -> list[tuple[str, str, int]]:
    """Java ``.properties`` syntax: ``k=v``, ``k: v`` or ``k v``; ``#``/``!`` comments;
    trailing backslash continues a line. Returns (key, value, line number) in file order."""
    out: list[tuple[str, str, int]] = []
    buf, first = "", 0
    logical: list[tuple[str, int]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip()
        if not buf and (not line or line[0] in "#!"):
            continue
        if not buf:
            first = n
        if line.endswith("\\") and not line.endswith("\\\\"):
            buf += line[:-1]
            continue
        logical.append((buf + line, first))
        buf = ""
    if buf:
        logical.append((buf, first))
    for line, n in logical:
        m = re.match(r"^((?:\\.|[^=:\s])+)\s*[=:\s]\s*(.*)$", line)
        if m:
            key, value = m.group(1), m.group(2)
        else:
            key, value = line.strip(), ""
        out.append((key.replace("\\", ""), value.rstrip(), n))
    return out


def parse_properties(text: str) -> dict[str, str]:
    """The keys and values of a ``.properties`` text (a later duplicate wins, as in Java)."""
    return {k: v for k, v, _ in read_properties(text)}


# ---- key classification --------------------------------------------------------------------

HONOURED, TOPIC_DEFAULT, NO_EFFECT_HERE, PER_LISTENER, REMOVED, UNKNOWN = (
    "honoured", "topic default", "no effect here", "per listener", "removed in Kafka 4", "unknown")

# Keys Kafka knows that Hourglass refuses when set, rather than silently run without them.
REFUSED_WHEN_SET: dict[str, str] = {}


def _no_effect() -> dict[str, tuple[str, str]]:
    from broker.compat_keys import NO_EFFECT
    return NO_EFFECT


def known_keys() -> list[str]:
    """Every key name Hourglass knows (for suggestions)."""
    return sorted({*BROKER_KEYS, *_topic_default_keys(), *_no_effect(), *REFUSED_WHEN_SET})


def key_status(key: str) -> str:
    """Which kind of key this is (see the module docstring)."""
    from storage.log_config import REMOVED_BROKER_LOG_KEYS
    if key in REMOVED_BROKER_LOG_KEYS:
        return REMOVED
    if key in _no_effect():
        return NO_EFFECT_HERE
    if key in BROKER_KEYS or key in REFUSED_WHEN_SET:
        return HONOURED
    if key in _topic_default_keys():
        return TOPIC_DEFAULT
    from broker.listeners import per_listener_key
    pl = per_listener_key(key)
    if pl is not None:
        rest = pl[1]
        from broker.compat_keys import SASL_PER_MECHANISM
        mech_key = rest.partition(".")[2]  # <mechanism>.sasl.jaas.config
        if key_status(rest) != UNKNOWN or mech_key in SASL_PER_MECHANISM:
            return PER_LISTENER
    return UNKNOWN


def suggest(key: str) -> str | None:
    """The closest known key to a misspelled one (``log.retention.hourz`` -> ``log.retention.hours``)."""
    import difflib  # only when a key is unknown
    match = difflib.get_close_matches(key, known_keys(), n=1, cutoff=0.75)
    return match[0] if match else None


def is_sensitive(key: str) -> bool:
    """Values never shown in output or logs (Kafka's PASSWORD type)."""
    from broker.compat_keys import SENSITIVE_SUFFIXES
    typ = _no_effect().get(key, ("",))[0]
    return typ == "password" or key.endswith(SENSITIVE_SUFFIXES)


def display_value(key: str, value: str) -> str:
    return "[hidden]" if is_sensitive(key) else value


def _invalid(key: str, value: str, reason: str) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {key}: {reason}")


def check_value(key: str, value: str) -> Any:
    """Parse one key's value by its Kafka type and checks; raises :class:`ConfigError` with
    Kafka's wording. Unknown and per-listener keys are not checked (returns the text)."""
    from broker.compat_keys import VALIDATORS
    from storage.errors import InvalidConfigError
    from storage import log_config
    spec = BROKER_KEYS.get(key)
    if spec is not None:
        try:
            val = spec.parse(value)
        except (ValueError, TypeError) as exc:
            raise _invalid(key, value, str(exc)) from None
        if spec.check is not None and not spec.check(val):
            raise _invalid(key, value, spec.check_doc)
        if key in VALIDATORS and val is not None:  # Kafka's bound on a key kept for compatibility
            try:
                VALIDATORS[key].check(key, val, value)
            except InvalidConfigError as exc:
                raise ConfigError(str(exc)) from None
        return val
    try:
        if key in log_config.BROKER_LOG_DEFAULTS:
            return log_config.parse_broker_value(key, value)
        typ = _no_effect().get(key, (None,))[0]
        if typ is not None:  # Kafka still parses keys it would use
            val = log_config._parse_typed(key, typ, value)
            if key in VALIDATORS and val is not None:
                VALIDATORS[key].check(key, val, value)
            return val
    except InvalidConfigError as exc:  # the message is Kafka's and names the key
        raise ConfigError(str(exc)) from None
    return value


def describe_effect(key: str) -> str:
    """What a key does on this node, in one line (``hourglass config check``): its doc, the
    reason it has no effect here, or the suggestion for an unknown key."""
    status = key_status(key)
    if status == REMOVED:
        from storage.log_config import REMOVED_BROKER_LOG_KEYS
        return f"ignored, as Kafka 4 ignores it: {REMOVED_BROKER_LOG_KEYS[key]}"
    if status == NO_EFFECT_HERE:
        return _no_effect()[key][1]
    if key in REFUSED_WHEN_SET:
        return f"refused when set: {REFUSED_WHEN_SET[key]}"
    if status == HONOURED:
        return BROKER_KEYS[key].doc
    if status == TOPIC_DEFAULT:
        from storage.log_config import TOPIC_CONFIGS
        d = _topic_default_keys()[key]
        if d.topic_config:
            return f"broker default of topic config `{d.topic_config}`: {TOPIC_CONFIGS[d.topic_config].documentation}"
        return "broker log manager setting (Kafka's meaning)"
    if status == PER_LISTENER:
        from broker.compat_keys import PER_LISTENER as reason
        from broker.listeners import per_listener_key
        name, rest = per_listener_key(key)
        if rest in _no_effect():
            return f"`{rest}` for listener {name}: {reason}"
        if rest in BROKER_KEYS:
            return f"`{rest}` for listener {name}: {BROKER_KEYS[rest].doc}"
        mech, _, what = rest.partition(".")
        return f"`{what}` of SASL mechanism {mech.upper()} on listener {name}"
    hint = suggest(key)
    return "ignored" + (f" (did you mean `{hint}`?)" if hint else "")


# ---- the validated configuration ------------------------------------------------------------

class BrokerConfig:
    """Validated broker settings: ``cfg["key"]`` gives the typed value of a broker key;
    ``topic_defaults`` holds the raw strings of every topic-level broker default that was set;
    ``listener_setup`` the resolved listeners (``listeners`` are the broker listeners, bound).

    ``unknown`` lists (key, suggestion) of keys nobody knows; ``strict`` makes them an error.
    """

    def __init__(self, raw: dict[str, str] | None = None, *, sources: dict[str, str] | None = None,
                 strict: bool = False):
        raw = dict(raw or {})
        self.raw = raw
        self.sources = dict(sources or {})
        self.values: dict[str, Any] = {}
        self.topic_defaults: dict[str, str] = {}
        self.no_effect: list[str] = []          # keys set that mean nothing on one node
        self.unknown: list[tuple[str, str | None]] = []
        self.removed: list[str] = []              # keys Kafka 4.0 removed: ignored
        per_listener: dict[str, dict[str, str]] = {}
        from broker.listeners import per_listener_key
        for key, value in raw.items():
            status = key_status(key)
            if status == UNKNOWN:
                self.unknown.append((key, suggest(key)))
                continue
            if status == REMOVED:  # not even type-checked: Kafka 4 no longer reads it
                self.removed.append(key)
                continue
            check_value(key, value)
            if status == TOPIC_DEFAULT:
                self.topic_defaults[key] = value
            elif status == NO_EFFECT_HERE:
                self.no_effect.append(key)
            elif status == PER_LISTENER:
                name, rest = per_listener_key(key)
                per_listener.setdefault(name, {})[rest] = value
                if rest in _no_effect():
                    self.no_effect.append(key)
        if strict and self.unknown:
            raise ConfigError("unknown configuration key(s), refused by --strict-config: " + "; ".join(
                f"'{k}'" + (f" (did you mean `{s}`?)" if s else "") for k, s in self.unknown))
        for name, spec in BROKER_KEYS.items():
            text = raw.get(name, spec.default)
            self.values[name] = None if text is None else check_value(name, text)
        for key, reason in REFUSED_WHEN_SET.items():
            if raw.get(key, "").strip():
                raise ConfigError(f"{key}={raw[key].strip()}: {reason}; Hourglass refuses to start "
                                  "rather than ignore it (remove the key to run without ACLs)")
        for a, op, b in _CONSUMER_BOUNDS:
            x, y = self.values[a], self.values[b]
            if not (x >= y if op == ">=" else x <= y if op == "<=" else x < y):
                raise ConfigError(f"{a} must be {_BOUND_WORDS[op]} {b}")
        for problem in _iceberg_store_problems(self.values, raw):
            raise ConfigError(problem)
        if raw.get("broker.id") is not None:
            if raw.get("node.id") is None:
                self.values["node.id"] = self.values["broker.id"]
            elif self.values["node.id"] != self.values["broker.id"]:
                raise ConfigError("You must set `node.id` to the same value as `broker.id`.")
        roles = self.values["process.roles"]
        bad = [r for r in roles if r not in ("broker", "controller")]
        if bad:
            raise _invalid("process.roles", raw["process.roles"],
                           f"Unknown process role '{bad[0]}' (only 'broker' and 'controller' are allowed roles)")
        if roles and "broker" not in roles:
            raise ConfigError(
                f"process.roles={raw['process.roles']}: this configures a KRaft controller-only node. "
                "Hourglass is one node that is the broker and its own controller, and a controller "
                "alone would serve no client: use a broker or combined (broker,controller) configuration")
        from broker.listeners import ListenerError, resolve
        try:
            self.listener_setup = resolve(self.values["listeners"], self.values["advertised.listeners"],
                                          raw.get("listener.security.protocol.map"),
                                          self.values["controller.listener.names"] or [], per_listener)
        except ListenerError as exc:
            raise ConfigError(str(exc)) from None
        self.listeners = self.listener_setup.broker

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self.values["log.dirs"] or self.values["log.dir"]
        return [Path(d) for d in dirs]

    @property
    def node_id(self) -> int:
        return self.values["node.id"]

    def startup_notes(self) -> list[tuple[str, str]]:
        """(level, message) lines the broker logs at start: one WARN per removed or unknown key, one INFO
        line for the keys with no effect here (grouped by reason), one INFO line on the
        controller role when the configuration mentions one, and a WARN per bound listener
        that ``advertised.listeners`` leaves out."""
        notes: list[tuple[str, str]] = []
        from storage.log_config import REMOVED_BROKER_LOG_KEYS
        for key in self.removed:
            notes.append(("WARNING", f"The configuration '{key}' was removed in Kafka 4.0 "
                                     f"({REMOVED_BROKER_LOG_KEYS[key]}). It is ignored."))
        from storage.log_config import DEPRECATED_BROKER_LOG_KEYS, deprecation_warning
        for key in DEPRECATED_BROKER_LOG_KEYS:
            if key in self.topic_defaults:
                notes.append(("WARNING", deprecation_warning(key)))
        for key, hint in self.unknown:
            notes.append(("WARNING", f"The configuration '{key}' was supplied but isn't a known config"
                                     + (f"; did you mean `{hint}`?" if hint else ".") + " It is ignored."))
        if self.no_effect:
            from broker.compat_keys import PER_LISTENER as per_listener_reason
            by_reason: dict[str, list[str]] = {}
            for key in self.no_effect:
                reason = _no_effect()[key][1] if key in _no_effect() else per_listener_reason
                by_reason.setdefault(reason, []).append(key)
            notes.append(("INFO", "accepted, no effect on this one node: " + "; ".join(
                f"{', '.join(keys)} ({reason})" for reason, keys in by_reason.items())))
        setup = self.listener_setup
        if setup.controller:
            notes.append(("INFO", "Hourglass is its own controller: controller listener "
                          + ", ".join(l.uri for l in setup.controller)
                          + " (controller.listener.names) is not bound; Kafka clients never connect to it, "
                          "and a connection to that port is refused"))
        elif any(k in self.raw for k in ("controller.quorum.voters", "controller.quorum.bootstrap.servers",
                                         "controller.listener.names")):
            quorum = self.raw.get("controller.quorum.voters") or self.raw.get("controller.quorum.bootstrap.servers")
            notes.append(("INFO", "Hourglass is its own controller: the controller quorum"
                          + (f" ({quorum})" if quorum else "") + " is not contacted"))
        for name in setup.unadvertised:
            notes.append(("WARNING", f"listener {name} is bound but not in advertised.listeners: clients "
                                     "that connect to it are told its own bound address"))
        return notes

    @classmethod
    def load(cls, config_file: str | None = None, overrides: list[str] | None = None, *,
             strict: bool = False) -> "BrokerConfig":
        raw, sources = read_sources(config_file, overrides)
        return cls(raw, sources=sources, strict=strict)


def read_sources(config_file: str | None, overrides: list[str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """The raw keys from a config file then ``key=value`` overrides, and where each came from."""
    raw: dict[str, str] = {}
    sources: dict[str, str] = {}
    if config_file:
        path = Path(config_file)
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc}") from None
        for k, v, line in read_properties(text):
            raw[k] = v
            sources[k] = f"{path.name}:{line}"
    for item in overrides or []:
        if "=" not in item:
            raise ConfigError(f"override {item!r}: expected key=value")
        k, v = item.split("=", 1)
        raw[k.strip()] = v.strip()
        sources[k.strip()] = "--override"
    return raw, sources
