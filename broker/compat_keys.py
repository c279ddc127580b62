"""Kafka broker keys that mean nothing on one Hourglass node, each with the reason.

A ``server.properties`` written for Kafka (its shipped files, a compose file's ``KAFKA_*``
variables, an old ZooKeeper-era file) carries thread pools, replication, quorum, ZooKeeper and
security settings. Kafka would use them; one node that is its own controller and only replica
has nothing to apply them to. They are accepted, their values checked against Kafka's type
(so ``num.io.threads=eight`` still refuses to start, as in Kafka), listed in one INFO line at
start and in ``docs/config-reference.md`` under "accepted, no effect here".

``NO_EFFECT`` maps key -> (Kafka's type, reason). A key may also be in ``BROKER_KEYS`` (which
then parses it); the reason here is what ``hourglass config check`` and the docs say about it.
Keys Hourglass honours never appear here.
"""
from __future__ import annotations

THREADS = "one event loop: Hourglass has no thread pools or request queues to size"
REPLICATION = "one node is the only replica: nothing is replicated between brokers"
CONTROLLER = "no KRaft quorum to join or reach: this one node is broker and controller at once"
ZOOKEEPER = "no ZooKeeper: Hourglass is a KRaft-era node, and Kafka 4.0 dropped ZooKeeper mode"
VERSIONS = "one protocol and storage version: nothing to negotiate between brokers"
SHARE_GROUPS = "share groups (KIP-932) are always served, as Kafka 4.2 does once share.version is finalized"
NEW_COORDINATOR = ("the group coordinator is always the new one, serving classic and KIP-848 consumer groups "
                   "(Kafka 4.0 removed this key)")
METRICS = "Kafka's metrics reporters are Java plugins: Hourglass exports Prometheus metrics on metrics.port"
QUOTAS = "client quotas are not enforced"
PURGATORY = "no request purgatories to purge: waiting requests are woken directly"
OFFSETS_LOG = "the internal offsets log is sized and written by Hourglass itself"
PLUGINS = "Java plugin classes cannot be loaded"
TIERED = "no tiered storage"
SECURITY = "no TLS/SASL listener is served yet, so there is nothing to secure with it"
PER_LISTENER = "per-listener values are not applied yet (no TLS/SASL listener is served)"

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
    "quota.window.num": ("int", QUOTAS),
    "quota.window.size.seconds": ("int", QUOTAS),
    "client.quota.callback.class": ("class", QUOTAS),
    "max.connection.creation.rate": ("int", QUOTAS),
    "fetch.purgatory.purge.interval.requests": ("int", PURGATORY),
    "producer.purgatory.purge.interval.requests": ("int", PURGATORY),
    "delete.records.purgatory.purge.interval.requests": ("int", PURGATORY),
    "create.topic.policy.class.name": ("class", PLUGINS),
    "alter.config.policy.class.name": ("class", PLUGINS),
    "remote.log.storage.system.enable": ("boolean", TIERED),
    "remote.log.storage.manager.class.name": ("class", TIERED),
    "remote.log.metadata.manager.class.name": ("class", TIERED),
    # security: the TLS/SASL issue turns these into served keys
    "security.inter.broker.protocol": ("string", _S),
    "sasl.mechanism.inter.broker.protocol": ("string", _S),
    "sasl.mechanism.controller.protocol": ("string", _S),
    "sasl.enabled.mechanisms": ("list", _S),
    "sasl.jaas.config": ("password", _S),
    "sasl.kerberos.service.name": ("string", _S),
    "sasl.kerberos.kinit.cmd": ("string", _S),
    "sasl.kerberos.principal.to.local.rules": ("list", _S),
    "sasl.server.callback.handler.class": ("class", _S),
    "sasl.login.class": ("class", _S),
    "sasl.login.callback.handler.class": ("class", _S),
    "sasl.oauthbearer.jwks.endpoint.url": ("string", _S),
    "sasl.oauthbearer.expected.audience": ("list", _S),
    "sasl.oauthbearer.expected.issuer": ("string", _S),
    "ssl.protocol": ("string", _S),
    "ssl.provider": ("string", _S),
    "ssl.cipher.suites": ("list", _S),
    "ssl.enabled.protocols": ("list", _S),
    "ssl.keystore.type": ("string", _S),
    "ssl.keystore.location": ("string", _S),
    "ssl.keystore.password": ("password", _S),
    "ssl.key.password": ("password", _S),
    "ssl.keystore.key": ("password", _S),
    "ssl.keystore.certificate.chain": ("password", _S),
    "ssl.truststore.type": ("string", _S),
    "ssl.truststore.location": ("string", _S),
    "ssl.truststore.password": ("password", _S),
    "ssl.truststore.certificates": ("password", _S),
    "ssl.keymanager.algorithm": ("string", _S),
    "ssl.trustmanager.algorithm": ("string", _S),
    "ssl.endpoint.identification.algorithm": ("string", _S),
    "ssl.secure.random.implementation": ("string", _S),
    "ssl.engine.factory.class": ("class", _S),
    "ssl.client.auth": ("string", _S),
    "ssl.principal.mapping.rules": ("string", _S),
    "ssl.allow.dn.changes": ("boolean", _S),
    "ssl.allow.san.changes": ("boolean", _S),
    "principal.builder.class": ("class", _S),
    "security.providers": ("string", _S),
    "connections.max.reauth.ms": ("long", _S),
    "connection.failed.authentication.delay.ms": ("int", _S),
    "super.users": ("string", _S + " (no authorizer runs: authorizer.class.name is refused)"),
    "allow.everyone.if.no.acl.found": ("boolean", _S + " (no authorizer runs: authorizer.class.name is refused)"),
    "delegation.token.secret.key": ("password", _S),
    "delegation.token.master.key": ("password", _S),
    "delegation.token.max.lifetime.ms": ("long", _S),
    "delegation.token.expiry.time.ms": ("long", _S),
    "delegation.token.expiry.check.interval.ms": ("long", _S),
}

# Per-mechanism SASL keys under a listener prefix: listener.name.<l>.<mechanism>.sasl.jaas.config
SASL_PER_MECHANISM = ("sasl.jaas.config", "sasl.server.callback.handler.class",
                      "sasl.login.class", "sasl.login.callback.handler.class")

# Keys whose value never appears in output (Kafka's PASSWORD type).
SENSITIVE_SUFFIXES = ("password", "sasl.jaas.config", "ssl.keystore.key", ".secret", "secret.key",
                      "master.key")
