"""The broker process: wiring, the accept loop, background tasks and graceful shutdown.

``Broker.start()`` opens the log manager (recovering unclean logs), binds the listeners
(port 0 picks a free port), and starts the periodic tasks (retention, flush, checkpoints,
delayed file deletion). ``Broker.stop()`` stops accepting, lets in-flight requests finish,
flushes every log, writes the checkpoints and the clean-shutdown marker.

Everything runs on one event loop; storage calls are synchronous and short (an append is
one write), fsyncs of whole segments run in the default executor.
"""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import time
from functools import partial
from pathlib import Path

from broker import acceptor
from broker.cluster import ClusterMeta
from broker.extensions import NONE as NO_EXTENSIONS, Extensions
from broker.config import BrokerConfig
from broker.connection import Connection
from broker.metrics import Metrics
from broker.registry import load_handlers
from broker.topics import TopicManager
from broker.waiters import PartitionWaiters
from storage.clock import SystemClock
from storage.files import DEFAULT_FILE_OPS
from storage.manager import LogManager

log = logging.getLogger(__name__)


class ProducerIds:
    """Hands out producer ids from durably reserved blocks (Kafka's ProducerIdManager)."""

    def __init__(self, meta: ClusterMeta, block: int = 1000):
        self.meta = meta
        self.block = block
        self.next = 0
        self.end = 0

    def allocate(self) -> int:
        if self.next >= self.end:
            self.next = self.meta.allocate_producer_id_block(self.block)
            self.end = self.next + self.block
        pid = self.next
        self.next += 1
        return pid


class Broker:
    def __init__(self, cfg: BrokerConfig, *, clock=None, file_ops=None, extensions: Extensions = NO_EXTENSIONS):
        self.cfg = cfg
        self.extensions = extensions  # services, record validation, metrics: what hourglass.app wires in
        self.clock = clock or SystemClock()
        self.file_ops = file_ops  # storage.files.FileOps for the logs (None: the real OS); tests inject faults
        self.handlers = load_handlers()
        self.metrics = Metrics()
        from broker.loop_lag import LoopLagProbe
        self.loop_lag = LoopLagProbe()  # started with the broker: how late the event loop runs
        self.waiters = PartitionWaiters()
        self.rejections_logged: dict = {}  # (client id, kind) -> (last logged, held back); see connection.py
        self.metrics_server = None
        self.services: list = []  # the extensions' services (broker.extensions.BrokerService), started
        self.servers: list[asyncio.base_events.Server] = []
        self.connections: set[Connection] = set()
        self.tasks: list[asyncio.Task] = []
        self.bound: list[tuple[str, int]] = []
        self.bound_by_listener: dict[str, tuple[str, int]] = {}  # listener name -> its first bound address
        self.started_at = time.monotonic()
        self._stopping = False
        self.logs: LogManager | None = None
        self.meta: ClusterMeta | None = None
        self.topics: TopicManager | None = None
        self.groups = None
        self.security = None  # broker.security.state.BrokerSecurity (authorizer, SCRAM credentials)
        self.listener_security: dict = {}  # listener name -> broker.security.listener.ListenerSecurity
        self.per_ip_limits: dict[str, int] = {}  # max.connections.per.ip.overrides, by address
        self.txn = None  # broker.transactions.coordinator.TransactionCoordinator
        self.share_groups = None  # broker.share.coordinator.ShareCoordinator
        self.producer_ids: ProducerIds | None = None
        self.quotas = None  # broker.quotas.manager.ClientQuotas
        self.dynamic_configs = None  # broker.dynamic_config.DynamicBrokerConfigs
        self.features = None  # broker.features.FeatureStore: the finalized feature levels

    # ---- identity --------------------------------------------------------------------------
    @property
    def node_id(self) -> int:
        return self.cfg.node_id

    @property
    def cluster_id(self) -> str:
        return self.meta.cluster_id

    def advertised(self, listener: str | None = None) -> tuple[str, int]:
        """Host and port given to clients in Metadata/FindCoordinator/DescribeCluster: the
        advertised endpoint of the listener the client came in on (None: the first broker
        listener). An empty host or port 0 there means "as bound"."""
        a = self.cfg.listener_setup.advertised_for(listener)
        bhost, bport = self.bound_by_listener.get(a.name) or self.bound[0]
        host = a.host
        if host in ("", "0.0.0.0", "::"):
            # Kafka would advertise the canonical host name for "" (and refuse 0.0.0.0);
            # "" stays "localhost" here as before, a wildcard the machine's name.
            host = "localhost" if host == "" else socket.gethostname()
        return host, (a.port or bport)

    # ---- lifecycle -------------------------------------------------------------------------
    def open_storage(self) -> None:
        # Loading makes a few objects per partition and frees almost none: the cyclic
        # collector would walk the growing heap again and again for nothing (a quarter of
        # the start-up of 20,000 partitions).
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._open_storage()
        finally:
            if enabled:
                gc.enable()
        # What was loaded lives as long as its partitions (~29 tracked objects each) and forms no
        # reference cycles (deleted partitions leave no cyclic garbage: freed by reference
        # counting, tests/broker/test_long_lived_heap.py). Left in the collector's generations,
        # every full collection, set off by any burst of allocation, walked all of it on the
        # loop (~0.6 s for 20,000 partitions): moved to the permanent generation, it is not.
        gc.freeze()

    def _open_storage(self) -> None:
        cfg = self.cfg
        self._set_up_file_limits()
        self.meta = ClusterMeta(cfg.log_dirs, cfg.node_id, cfg["cluster.id"])
        t0 = time.monotonic()
        known = self.meta.load_topics()
        self.logs = LogManager([str(d) for d in cfg.log_dirs], cfg.topic_defaults, self.clock,
                               topic_overrides={t.name: t.configs for t in known}, file_ops=self.file_ops)
        self.logs.load()
        self.topics = TopicManager(self.meta, self.logs, cfg.topic_defaults,
                                   num_partitions=cfg["num.partitions"],
                                   auto_create=cfg["auto.create.topics.enable"])
        self.topics.open_all()
        self.topics.on_partition_created = self._wire_log
        for plog in self.logs.all_logs():
            self._wire_log(plog.topic, plog.partition, plog)
        self.producer_ids = ProducerIds(self.meta)
        from broker.features import FeatureStore
        self.features = FeatureStore(cfg.log_dirs[0] / ".hourglass" / "features.json")
        from broker.groups.group_configs import GroupConfigs
        self.group_configs = GroupConfigs(cfg, cfg.log_dirs[0])
        from broker.client_metrics import ClientMetricsSubscriptions
        self.client_metrics = ClientMetricsSubscriptions(cfg.log_dirs[0])
        from broker.client_telemetry import ClientMetricsManager
        self.client_telemetry = ClientMetricsManager(self.client_metrics.subscriptions,
                                                     lambda: self.client_metrics.version, cfg["telemetry.max.bytes"])
        # Kafka drops pushed metrics without an exporter plugin; Hourglass keeps them for /metrics
        from broker.pushed_metrics import PushedMetrics
        self.pushed_metrics = PushedMetrics()
        self.client_telemetry.on_push.append(
            lambda inst, compression, payload: self.pushed_metrics.accept(inst.attributes, inst.interval_ms,
                                                                          compression, payload))
        from broker.security.listener import ListenerSecurity, per_ip_limits
        from broker.security.state import BrokerSecurity, security_dir
        self.per_ip_limits = per_ip_limits(cfg["max.connections.per.ip.overrides"])
        from broker.security.delegation import TokenSettings
        self.security = BrokerSecurity.from_config(
            cfg.raw.get, security_dir(cfg.log_dirs),
            TokenSettings(cfg["delegation.token.secret.key"], cfg["delegation.token.max.lifetime.ms"],
                          cfg["delegation.token.expiry.time.ms"]))
        from broker.quotas.manager import ClientQuotas
        from broker.quotas.store import QuotaStore
        self.quotas = ClientQuotas(QuotaStore(security_dir(cfg.log_dirs)), samples=cfg["quota.window.num"],
                                   window_s=cfg["quota.window.size.seconds"],
                                   controller_samples=cfg["controller.quota.window.num"],
                                   controller_window_s=cfg["controller.quota.window.size.seconds"])
        for lst in cfg.listeners:  # a bad keystore or SASL setting refuses to start here
            self.listener_security[lst.name] = ListenerSecurity.build(
                lst.name, lst.security_protocol, lst.overrides, cfg.raw, self.security.scram, self.security.tokens)
        from broker import dynamic_config
        self.dynamic_configs = dynamic_config.DynamicBrokerConfigs(security_dir(cfg.log_dirs))
        dynamic_config.apply(self)
        log.info("opened %d partition log(s) in %.0f ms", len(self.logs.all_logs()),
                 (time.monotonic() - t0) * 1000)

    def _set_up_file_limits(self) -> None:
        """Raise the soft descriptor limit to the hard one (as Go's runtime does: the soft
        limit is 1024 on most desktops and CI boxes, the hard one far higher) and size the
        cache of open segment and index files from it."""
        from storage.files import DEFAULT_FILE_OPS, capacity_for_limit
        before, after = raise_nofile_limit()
        cache = (self.file_ops or DEFAULT_FILE_OPS).file_cache
        configured = self.cfg["hourglass.log.max.open.files"]
        cache.set_capacity(configured or None)
        log.info("file descriptor limit %d%s; up to %d segment and index files open at once (%s)",
                 after, f" (soft limit raised from {before})" if after != before else "", cache.capacity,
                 "hourglass.log.max.open.files" if configured else
                 f"three quarters of the limit, hourglass.log.max.open.files=0; {after - capacity_for_limit(after)} "
                 "left for connections")

    def _wire_log(self, topic: str, partition: int, plog) -> None:
        waiters = self.waiters
        key = (topic, partition)
        plog.on_append = lambda *_a: waiters.notify(key)

    async def start(self) -> None:
        self.loop_lag.start()
        self.open_storage()
        try:
            from broker.groups.coordinator import GroupCoordinator
        except ImportError:  # groups not built yet
            GroupCoordinator = None
        if GroupCoordinator is not None:
            self.groups = GroupCoordinator(self)
            await self.groups.start()
        from broker.share.coordinator import ShareCoordinator
        self.share_groups = ShareCoordinator(self)
        await self.share_groups.start()
        # after the groups: transactions completed at load hand their offsets to them
        from broker.transactions.coordinator import TransactionCoordinator
        self.txn = TransactionCoordinator(self)
        await self.txn.start()
        for level, note in self.cfg.startup_notes():
            log.log(logging.getLevelName(level), "%s", note)
        auth_timeout = self.cfg["hourglass.authentication.timeout.ms"] / 1000
        for lst in self.cfg.listeners:
            host = lst.host or None
            sec = self.listener_security[lst.name]
            tls = {} if sec.ssl_context is None else {"ssl": sec.ssl_context, "ssl_handshake_timeout": auth_timeout}
            # our own accept loop: running out of descriptors is logged and met (broker/acceptor.py)
            server = await acceptor.start_server(partial(self._accept, lst.name), host, lst.port,
                                                 limit=1 << 20, backlog=1024,
                                                 file_cache=(self.file_ops or DEFAULT_FILE_OPS).file_cache,
                                                 **tls)
            self.servers.append(server)
            for sock in server.sockets:
                addr = sock.getsockname()
                self.bound.append((addr[0], addr[1]))
                self.bound_by_listener.setdefault(lst.name, (addr[0], addr[1]))
                log.info("listening on %s:%d, listener %s (%s%s) (cluster id %s, node id %d)",
                         addr[0], addr[1], lst.name, lst.security_protocol,
                         "" if sec.sasl is None else " " + ",".join(sec.sasl.mechanisms),
                         self.cluster_id, self.node_id)
        # services beside the Kafka listeners (the HTTP services): bound now, before the ready
        # file is written, then served in the background
        for make_service in self.extensions.services:
            service = make_service(self)
            service.bind()
            self.services.append(service)
        for service in self.services:
            service.start()
        if self.cfg["metrics.port"] >= 0:
            from broker.metrics import MetricsServer
            self.metrics_server = MetricsServer(self, self.cfg["metrics.host"], self.cfg["metrics.port"])
            await self.metrics_server.start()
        self.tasks.append(asyncio.create_task(self._every(self.cfg["log.retention.check.interval.ms"], self._retention)))
        self.tasks.append(asyncio.create_task(self._every(1000, self._housekeeping)))
        self.tasks.append(asyncio.create_task(self._every(
            self.cfg["producer.id.expiration.check.interval.ms"], self._expire_producers)))
        self.tasks.append(asyncio.create_task(self._every(
            min(self.cfg["log.flush.offset.checkpoint.interval.ms"],
                self.cfg["log.flush.start.offset.checkpoint.interval.ms"]), self._checkpoint)))
        self.tasks.append(asyncio.create_task(self._idle_reaper()))
        from broker.log_dirs import LogDirMoves
        self.log_dir_moves = LogDirMoves(self)
        self.log_dir_moves.resume()   # moves a crash or shutdown interrupted
        if self.security.tokens.settings.enabled:
            self.tasks.append(asyncio.create_task(self._every(
                self.cfg["delegation.token.expiry.check.interval.ms"], self._sweep_tokens)))
        # Log compaction (storage/cleaner): cleaning rounds every log.cleaner.backoff.ms when idle.
        from storage.cleaner import LogCleaner
        self.cleaner = LogCleaner.from_broker_config(self.logs, self.cfg)
        if self.cleaner.enabled:
            self.tasks.append(asyncio.create_task(self.cleaner.run()))

    async def _accept(self, listener: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._stopping or len(self.connections) >= self.cfg["max.connections"]:
            writer.close()
            return
        sec = self.listener_security.get(listener)
        if sec is not None and sec.max_connections is not None and \
                sum(1 for c in self.connections if c.listener == listener) >= sec.max_connections:
            writer.close()
            return
        peer = writer.get_extra_info("peername")
        ip = peer[0] if isinstance(peer, tuple) else None
        if ip is not None and self.quotas is not None and self.quotas.connections.enabled:
            throttle = self.quotas.connections.record(ip, int(time.time() * 1000))
            if throttle > 0:  # Kafka closes a throttled connection after the throttle time
                log.debug("connection from %s over its connection_creation_rate: closed in %d ms", ip, throttle)
                self.metrics.rejected["connection_rate"] += 1
                await asyncio.sleep(throttle / 1000)
                writer.close()
                return
        per_ip = self.per_ip_limits.get(ip, self.cfg["max.connections.per.ip"])
        if ip is not None and per_ip < 2**31 - 1:
            if sum(1 for c in self.connections if c.host == ip) >= per_ip:
                log.warning("refusing connection from %s: max.connections.per.ip=%d reached", ip, per_ip)
                writer.close()
                return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        # Bound what the transport buffers for a client that does not read (back-pressure).
        writer.transport.set_write_buffer_limits(high=4 << 20)
        conn = Connection(self, reader, writer, listener, sec)
        if sec is not None and sec.ssl_context is not None and sec.sasl is None:
            from broker.security.listener import NoMatchingRule
            try:
                conn.principal = sec.tls_principal(writer.get_extra_info("ssl_object"))
            except NoMatchingRule as exc:
                conn.close(f"SSL principal mapping failed: {exc}", "authentication")
                return
        self.connections.add(conn)
        self.metrics.connections_open = len(self.connections)
        self.metrics.connections_total += 1
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            self.metrics.connections_open = len(self.connections)

    async def _every(self, interval_ms: int, fn) -> None:
        interval = max(interval_ms, 10) / 1000.0
        while True:
            await asyncio.sleep(interval)
            try:
                res = fn()
                if asyncio.iscoroutine(res):
                    await res
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("background task %s failed", getattr(fn, "__name__", fn))

    def _retention(self) -> None:
        n = self.logs.cleanup_expired(self.clock.now_ms())
        if n:
            log.info("retention deleted %d segment(s)", n)

    def _sweep_tokens(self) -> None:
        self.security.tokens.sweep(self.clock.now_ms())

    def _expire_producers(self) -> None:
        n = self.logs.remove_expired_producers(self.clock.now_ms(), self.cfg["producer.id.expiration.ms"])
        if n:
            log.info("forgot %d idle producer id(s) (producer.id.expiration.ms)", n)

    def _housekeeping(self) -> None:
        self.logs.flush_dirty()
        if self.quotas is not None and self.quotas.active:
            self.quotas.expire(self.clock.now_ms())
        self.logs.run_pending_deletes(self.clock.now_ms())

    async def _checkpoint(self) -> None:
        # the snapshot on the loop, the four fsyncs off it (Kafka's scheduler thread does this)
        snapshot = self.logs.checkpoint_snapshot()
        await asyncio.get_running_loop().run_in_executor(None, self.logs.write_checkpoints, snapshot)

    async def _idle_reaper(self) -> None:
        idle_ms = self.cfg["connections.max.idle.ms"]
        read_ms = self.cfg["request.read.timeout.ms"]
        period = max(0.05, min(idle_ms, read_ms, self.cfg["hourglass.authentication.timeout.ms"]) / 4000.0)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for c in list(self.connections):
                if c.auth_deadline is not None and now > c.auth_deadline and not c.busy:
                    c.close("SASL authentication not completed within hourglass.authentication.timeout.ms="
                            f"{self.cfg['hourglass.authentication.timeout.ms']}", "authentication")
                elif c.frame_started is not None and (now - c.frame_started) * 1000 > read_ms:
                    c.close(f"request frame not received whole within request.read.timeout.ms={read_ms}", "slow_request")
                elif c.frame_started is None and (now - c.last_active) * 1000 > idle_ms and not c.busy:
                    c.close(None)

    async def stop(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        log.info("shutting down")
        self.loop_lag.stop()
        for s in self.servers:
            s.close()
        if self.metrics_server is not None:
            self.metrics_server.close()
        for service in reversed(self.services):
            await service.close()
        if getattr(self, "cleaner", None) is not None:
            self.cleaner.shutdown()  # a cleaning in progress stops at its next check
        for t in self.tasks:
            t.cancel()
        # background tasks end before the logs close (the cleaner's thread must not outlive them)
        await asyncio.gather(*self.tasks, return_exceptions=True)
        # let in-flight requests finish (bounded), then close the connections
        deadline = time.monotonic() + 5
        while any(c.busy for c in self.connections) and time.monotonic() < deadline:
            self.waiters.wake_all()
            await asyncio.sleep(0.01)
        for c in list(self.connections):
            c.close(None)
        if self.txn is not None:
            await self.txn.stop()
        if self.groups is not None:
            await self.groups.stop()
        if self.share_groups is not None:
            self.share_groups.stop()
        if self.logs is not None:
            self.logs.shutdown()
        log.info("shutdown complete")


def raise_nofile_limit() -> tuple[int, int]:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; returns (before, after)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux/macOS
        return -1, -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or (hard != resource.RLIM_INFINITY and soft >= hard):
        return soft, soft
    # an unlimited hard limit: Linux's default fs.nr_open (setrlimit refuses more)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.warning("could not raise the file descriptor limit from %d to %d: %s", soft, target, exc)
        return soft, soft
    return soft, target


def announce_started(cfg: BrokerConfig) -> None:
    """Kafka's own start-up lines, once every listener answers: scripts and Testcontainers' Kafka
    modules wait for them in the log (Java's and Go's for "Transitioning from RECOVERY to
    RUNNING", Python's for "Kafka Server started", or, given a ZooKeeper-era configuration as
    a Confluent 7 image in ZooKeeper mode gets, for "[KafkaServer id=N] started")."""
    node = cfg.node_id
    log.info("[BrokerServer id=%d] Transitioning from RECOVERY to RUNNING", node)
    if cfg.raw.get("zookeeper.connect"):
        log.info("[KafkaServer id=%d] started (no ZooKeeper is used: this node is its own controller)", node)
    log.info("[KafkaRaftServer nodeId=%d] Kafka Server started", node)


async def run_broker(cfg: BrokerConfig, *, ready_file: str | None = None,
                     shutdown: asyncio.Event | None = None, on_ready=None,
                     extensions: Extensions = NO_EXTENSIONS) -> None:
    """Run until ``shutdown`` is set (or SIGTERM/SIGINT when running as the main program)."""
    broker = Broker(cfg, extensions=extensions)
    shutdown = shutdown or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, shutdown.set)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        await broker.start()
        host, port = broker.bound[0]
        if ready_file:
            # first line: the first listener's host:port (what single-listener tools read);
            # then every bound listener as NAME://host:port
            tmp = ready_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(f"{host}:{port}\n")
                for name, (h, p) in broker.bound_by_listener.items():
                    f.write(f"{name}://{h}:{p}\n")
                for service in broker.services:
                    for line in service.ready_lines():  # `service <name> <url>`
                        f.write(line + "\n")
            os.replace(tmp, ready_file)
        announce_started(cfg)
        if on_ready is not None:
            on_ready(broker)
        await shutdown.wait()
    finally:
        await broker.stop()
        for sig in installed:
            loop.remove_signal_handler(sig)
