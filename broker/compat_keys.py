"""Kafka broker keys that mean nothing on one Hourglass node, each with the reason.

A ``server.properties`` written for Kafka (its shipped files, a compose file's ``KAFKA_*``
variables, an old ZooKeeper-era file) carries thread pools, replication, quorum, ZooKeeper and
security settings. Kafka would use them; one node that is its own controller and only replica
has nothing to apply them to. They are accepted, their values checked against Kafka's type
(so ``num.io.threads=eight`` still refuses to start, as in Kafka), listed in one INFO line at
start and in ``docs/config-reference.md`` under "accepted, no effect here".

``NO_EFFECT`` maps key -> (Kafka's type, reason); ``VALIDATORS`` holds Kafka's validator
(range, valid strings, classes) of those that have one, so a value Kafka refuses is refused here
too, with Kafka's message. A key may also be in ``BROKER_KEYS`` (which
then parses it); the reason here is what ``hourglass config check`` and the docs say about it.
Keys Hourglass honours never appear here.
"""
from __future__ import annotations

THREADS = "one event loop: Hourglass has no thread pools or request queues to size"
REPLICATION = "one node is the only replica: nothing is replicated between brokers"
CONTROLLER = "no KRaft quorum to join or reach: this one node is broker and controller at once"
ZOOKEEPER = "no ZooKeeper: Hourglass is a KRaft-era node, and Kafka 4.0 dropped ZooKeeper mode"
VERSIONS = "one protocol and storage version: nothing to negotiate between brokers"
SHARE_GROUPS = ("share groups (KIP-932) follow the finalized share.version, as in Kafka 4.2+: served at 1 or more (2 on "
                "a new data dir), off at 0 (kafka-features downgrade --feature share.version=0)")
NEW_COORDINATOR = ("the group coordinator is always the new one, serving classic and KIP-848 consumer groups "
                   "(Kafka 4.0 removed this key)")
METRICS = "Kafka's metrics reporters are Java plugins: Hourglass exports Prometheus metrics on metrics.port"
QUOTAS = "custom quota callbacks (Java classes) are not loaded: the built-in user/client-id precedence applies"
CONN_RATE = "the broker-wide connection creation rate is not enforced (per-IP connection_creation_rate quotas are)"
PURGATORY = "no request purgatories to purge: waiting requests are woken directly"
OFFSETS_LOG = "the internal offsets log is sized and written by Hourglass itself"
PLUGINS = "Java plugin classes cannot be loaded"
TIERED = "no tiered storage"
SECURITY = "no other broker or controller to talk to: inter-broker and controller security has no connection to apply to"
KERBEROS = "GSSAPI (Kerberos) is not served: enable PLAIN, SCRAM-SHA-256/512 or OAUTHBEARER instead"
JAVA_SECURITY = "a Java security plugin or JCA setting: Hourglass uses OpenSSL through Python's ssl module"
BROKER_JAAS = ("a broker-wide sasl.jaas.config is ignored by Kafka brokers too: set "
               "listener.name.<listener>.<mechanism>.sasl.jaas.config")
DYNAMIC = "dynamic keystore reconfiguration is not served: a new keystore takes a restart"
DELEGATION = "Kafka 4.0 removed this alias: set delegation.token.secret.key"
PER_LISTENER = "a per-listener value of a key with no effect here"

_T = THREADS
_R = REPLICATION
_C = CONTROLLER
_Z = ZOOKEEPER
_S = SECURITY

NO_EFFECT: dict[str, tuple[str, str]] = {
    # threads and queues
    "num.network.threads": ("int", _T),
    "num.io.threads": ("int", _T),
    "background.threads": ("int", _T),
    "num.recovery.threads.per.data.dir": ("int", _T),
    "num.replica.alter.log.dirs.threads": ("int", _T),
    "queued.max.requests": ("int", _T),
    "queued.max.request.bytes": ("long", _T),
    "group.coordinator.threads": ("int", _T),
    # replication and leadership
    "offsets.topic.replication.factor": ("short", _R),
    "transaction.state.log.replication.factor": ("short", _R),
    "transaction.state.log.min.isr": ("int", _R),
    "inter.broker.listener.name": ("string", _R),
    "num.replica.fetchers": ("int", _R),
    "replica.fetch.max.bytes": ("int", _R),
    "replica.fetch.min.bytes": ("int", _R),
    "replica.fetch.wait.max.ms": ("int", _R),
    "replica.fetch.backoff.ms": ("int", _R),
    "replica.fetch.response.max.bytes": ("int", _R),
    "replica.lag.time.max.ms": ("long", _R),
    "replica.socket.timeout.ms": ("int", _R),
    "replica.socket.receive.buffer.bytes": ("int", _R),
    "replica.high.watermark.checkpoint.interval.ms": ("long", _R),
    "replication.quota.window.num": ("int", _R),
    "replication.quota.window.size.seconds": ("int", _R),
    "auto.leader.rebalance.enable": ("boolean", _R),
    "leader.imbalance.check.interval.seconds": ("long", _R),
    "leader.imbalance.per.broker.percentage": ("int", _R),
    "broker.rack": ("string", _R),
    # KIP-392: which replica a rack-aware consumer fetches from; one node is every partition's
    # only replica, so the leader is always the one selected (as Kafka's default, no selector)
    "replica.selector.class": ("class", "one node is every partition's only replica: consumers always fetch "
                                        "from it, as with Kafka's default (no replica selector)"),
    "controlled.shutdown.enable": ("boolean", _R),
    "controlled.shutdown.max.retries": ("int", _R),
    "controlled.shutdown.retry.backoff.ms": ("long", _R),
    # KRaft quorum and metadata log
    "controller.quorum.voters": ("list", _C),
    "controller.quorum.bootstrap.servers": ("list", _C),
    "controller.quorum.election.timeout.ms": ("int", _C),
    "controller.quorum.fetch.timeout.ms": ("int", _C),
    "controller.quorum.election.backoff.max.ms": ("int", _C),
    "controller.quorum.append.linger.ms": ("int", _C),
    "controller.quorum.request.timeout.ms": ("int", _C),
    "controller.quorum.retry.backoff.ms": ("int", _C),
    "controller.quorum.auto.join.enable": ("boolean", _C),
    "controller.socket.timeout.ms": ("int", _C),
    "broker.heartbeat.interval.ms": ("int", _C),
    "broker.session.timeout.ms": ("int", _C),
    "initial.broker.registration.timeout.ms": ("int", _C),
    "metadata.log.dir": ("string", _C),
    "metadata.log.segment.bytes": ("int", _C),
    "metadata.log.segment.ms": ("long", _C),
    "metadata.log.max.record.bytes.between.snapshots": ("long", _C),
    "metadata.log.max.snapshot.interval.ms": ("long", _C),
    "metadata.max.retention.bytes": ("long", _C),
    "metadata.max.retention.ms": ("long", _C),
    "metadata.max.idle.interval.ms": ("int", _C),
    "early.start.listeners": ("string", _C),
    # ZooKeeper-era keys
    "zookeeper.connect": ("string", _Z),
    "zookeeper.connection.timeout.ms": ("int", _Z),
    "zookeeper.session.timeout.ms": ("int", _Z),
    "zookeeper.max.in.flight.requests": ("int", _Z),
    "zookeeper.set.acl": ("boolean", _Z),
    "zookeeper.metadata.migration.enable": ("boolean", _Z),
    "zookeeper.ssl.client.enable": ("boolean", _Z),
    "broker.id.generation.enable": ("boolean", _Z),
    "reserved.broker.max.id": ("int", _Z),
    # versions
    "inter.broker.protocol.version": ("string", VERSIONS),
    "unstable.api.versions.enable": ("boolean", VERSIONS),
    "unstable.feature.versions.enable": ("boolean", VERSIONS),
    # groups
    "share.coordinator.state.topic.replication.factor": ("short", REPLICATION),
    "share.coordinator.state.topic.min.isr": ("short", REPLICATION),
    "group.share.enable": ("boolean", SHARE_GROUPS),
    "group.coordinator.new.enable": ("boolean", NEW_COORDINATOR),
    # internal offsets log tunables
    "offsets.load.buffer.size": ("int", OFFSETS_LOG),
    "offsets.topic.segment.bytes": ("int", OFFSETS_LOG),
    "offsets.topic.compression.codec": ("int", OFFSETS_LOG),
    "offsets.commit.timeout.ms": ("int", OFFSETS_LOG),
    "offsets.commit.required.acks": ("short", OFFSETS_LOG),
    # metrics, quotas, purgatories, plugins, tiered storage
    "metric.reporters": ("list", METRICS),
    "metrics.num.samples": ("int", METRICS),
    "metrics.sample.window.ms": ("long", METRICS),
    "metrics.recording.level": ("string", METRICS),
    "auto.include.jmx.reporter": ("boolean", METRICS),
    "kafka.metrics.reporters": ("list", METRICS),
    "kafka.metrics.polling.interval.secs": ("int", METRICS),
    "client.quota.callback.class": ("class", QUOTAS),
    "max.connection.creation.rate": ("int", CONN_RATE),
    "fetch.purgatory.purge.interval.requests": ("int", PURGATORY),
    "producer.purgatory.purge.interval.requests": ("int", PURGATORY),
    "delete.records.purgatory.purge.interval.requests": ("int", PURGATORY),
    "create.topic.policy.class.name": ("class", PLUGINS),
    "alter.config.policy.class.name": ("class", PLUGINS),
    "remote.log.storage.system.enable": ("boolean", TIERED),
    "remote.log.storage.manager.class.name": ("class", TIERED),
    "remote.log.metadata.manager.class.name": ("class", TIERED),
    # security Hourglass does not apply (the served keys are in broker.config.BROKER_KEYS)
    "security.inter.broker.protocol": ("string", _S),
    "sasl.mechanism.inter.broker.protocol": ("string", _S),
    "sasl.mechanism.controller.protocol": ("string", _S),
    "sasl.jaas.config": ("password", BROKER_JAAS),
    "sasl.kerberos.service.name": ("string", KERBEROS),
    "sasl.kerberos.kinit.cmd": ("string", KERBEROS),
    "sasl.kerberos.principal.to.local.rules": ("list", KERBEROS),
    "sasl.kerberos.min.time.before.relogin": ("long", KERBEROS),
    "sasl.kerberos.ticket.renew.jitter": ("double", KERBEROS),
    "sasl.kerberos.ticket.renew.window.factor": ("double", KERBEROS),
    "sasl.login.class": ("class", _S),
    "sasl.login.callback.handler.class": ("class", _S),
    "ssl.protocol": ("string", "TLS versions come from ssl.enabled.protocols"),
    "ssl.provider": ("string", JAVA_SECURITY),
    "ssl.keymanager.algorithm": ("string", JAVA_SECURITY),
    "ssl.trustmanager.algorithm": ("string", JAVA_SECURITY),
    "ssl.endpoint.identification.algorithm": ("string", _S),
    "ssl.secure.random.implementation": ("string", JAVA_SECURITY),
    "ssl.engine.factory.class": ("class", JAVA_SECURITY),
    "ssl.allow.dn.changes": ("boolean", DYNAMIC),
    "ssl.allow.san.changes": ("boolean", DYNAMIC),
    "principal.builder.class": ("class", PLUGINS),
    "security.providers": ("string", JAVA_SECURITY),
    "delegation.token.master.key": ("password", DELEGATION),
    # Kafka 4.4's other dynamic broker keys (DescribeConfigs marks them not read-only)
    "remote.fetch.max.wait.ms": ("int", TIERED),
    "remote.list.offsets.request.timeout.ms": ("long", TIERED),
    "remote.log.index.file.cache.total.size.bytes": ("long", TIERED),
    "remote.log.manager.copier.thread.pool.size": ("int", TIERED),
    "remote.log.manager.copy.max.bytes.per.second": ("long", TIERED),
    "remote.log.manager.expiration.thread.pool.size": ("int", TIERED),
    "remote.log.manager.fetch.max.bytes.per.second": ("long", TIERED),
    "remote.log.manager.follower.thread.pool.size": ("int", TIERED),
    "remote.log.reader.threads": ("int", TIERED),
    "follower.fetch.last.tiered.offset.enable": ("boolean", TIERED),
    "leader.replication.throttled.rate": ("long", _R),
    "follower.replication.throttled.rate": ("long", _R),
    "cordoned.log.dirs": ("list", "one node's log dirs all take new partitions: no log dir is cordoned (KIP-1066)"),
    "group.consumer.assignment.interval.ms": ("int", "assignments are computed at once on every heartbeat that needs one"),
    "group.share.assignment.interval.ms": ("int", "assignments are computed at once on every heartbeat that needs one"),
    "group.streams.assignment.interval.ms": ("int", "assignments are computed at once on every heartbeat that needs one"),
    "group.coordinator.cached.buffer.max.bytes": ("int", OFFSETS_LOG),
    "share.coordinator.cached.buffer.max.bytes": ("int", OFFSETS_LOG),
    "log.cleaner.io.buffer.load.factor": ("double", "the cleaner's offset map is a Python dict, not a sized hash table"),
    "sasl.login.refresh.window.factor": ("double", _S),
    "sasl.login.refresh.window.jitter": ("double", _S),
    "sasl.login.refresh.min.period.seconds": ("short", _S),
    "sasl.login.refresh.buffer.seconds": ("short", _S),
    "config.providers": ("list", PLUGINS),
    "errors.deadletterqueue.auto.create.topics.enable": ("boolean", "the group coordinator creates no dead letter "
                                                                    "queue topics (KIP-1034)"),
    "errors.deadletterqueue.topic.name.prefix": ("string", "the group coordinator creates no dead letter queue "
                                                          "topics (KIP-1034)"),
}


def _validators() -> dict:
    """Kafka's ``ConfigDef`` validator of each ``NO_EFFECT`` key that has one (range, valid
    strings, known classes): a value Kafka refuses is refused here with its message, at start
    and through every dynamic path, even where the key has no effect."""
    from storage.log_config import DistinctList, KnownClass, Range
    at_least_1 = Range(1)
    at_least_0 = Range(0)
    out = {k: at_least_1 for k in (
        "num.network.threads", "num.io.threads", "background.threads", "num.recovery.threads.per.data.dir",
        "num.replica.fetchers", "remote.fetch.max.wait.ms", "remote.list.offsets.request.timeout.ms",
        "remote.log.index.file.cache.total.size.bytes", "remote.log.manager.copier.thread.pool.size",
        "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.expiration.thread.pool.size",
        "remote.log.manager.fetch.max.bytes.per.second", "remote.log.manager.follower.thread.pool.size",
        "remote.log.reader.threads")}
    out.update({k: at_least_0 for k in (
        "group.consumer.assignment.interval.ms", "group.share.assignment.interval.ms",
        "group.streams.assignment.interval.ms", "max.connection.creation.rate", "leader.replication.throttled.rate",
        "follower.replication.throttled.rate")})
    out["group.coordinator.cached.buffer.max.bytes"] = Range(524288)
    out["share.coordinator.cached.buffer.max.bytes"] = Range(524288)
    out["principal.builder.class"] = KnownClass(
        ("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",))
    out["ssl.engine.factory.class"] = KnownClass(
        ("org.apache.kafka.common.security.ssl.DefaultSslEngineFactory",))
    # Kafka 4.x's list configs without empty or repeated items (ValidList)
    out["listeners"] = DistinctList(allow_empty=False)
    for k in ("sasl.enabled.mechanisms", "sasl.kerberos.principal.to.local.rules", "cordoned.log.dirs"):
        out[k] = DistinctList()
    return out


VALIDATORS = _validators()

# Per-mechanism SASL keys under a listener prefix: listener.name.<l>.<mechanism>.sasl.jaas.config
SASL_PER_MECHANISM = ("sasl.jaas.config", "sasl.server.callback.handler.class",
                      "sasl.login.class", "sasl.login.callback.handler.class", "connections.max.reauth.ms")

# Keys whose value never appears in output (Kafka's PASSWORD type).
SENSITIVE_SUFFIXES = ("password", "sasl.jaas.config", "ssl.keystore.key", ".secret", "secret.key", "secret.access.key",
                      "master.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates")
