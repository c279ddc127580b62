"""The transaction coordinator: Kafka's TransactionCoordinator, TransactionStateManager and
TransactionMarkerChannelManager on one event loop.

This node coordinates every transactional id. ``TransactionCoordinator.txns`` maps each id to
its ``TransactionMetadata`` (broker.transactions.metadata); every transition is prepared,
written to ``__transaction_state`` (broker.transactions.log) and only then completed, so an
answer is sent only after its record is in the log. Writes and marker appends are synchronous
(one append each), so a request is decided without interleaving with any other.

EndTxn follows Kafka 4: the PrepareCommit/PrepareAbort record is written, the client is
answered, and the markers are written (``PartitionLog.append_marker`` on every partition of
the transaction; for ``__consumer_offsets`` partitions the group coordinator then
materializes or discards the transaction's pending offsets), then CompleteCommit/
CompleteAbort. Here the markers are local appends made right after the Prepare record; a
marker or Complete write that fails with a retriable error is retried every
``MARKER_RETRY_BACKOFF_MS`` while the id answers CONCURRENT_TRANSACTIONS, as Kafka's do. A
PrepareCommit/PrepareAbort found when the log is replayed at start-up is completed the same
way; an Ongoing one times out normally.

Timers (``scheduler.call_later``; a manual scheduler in tests): every
``transaction.abort.timed.out.transaction.cleanup.interval.ms`` Ongoing transactions older
than their timeout are aborted with an epoch bump (Kafka's fence: the zombie's next write or
EndTxn is refused); every ``transaction.remove.expired.transaction.cleanup.interval.ms`` ids
idle (Empty/Complete*) for ``transactional.id.expiration.ms`` are tombstoned and forgotten.

Transaction versions: as in Kafka, the request version picks the protocol of a client's
request (clients choose it from the finalized ``transaction.version`` they read in ApiVersions:
the Java client uses TV2 only at level 2): EndTxn v5, AddPartitionsToTxn v4+ adds, Produce v12
and TxnOffsetCommit v5 are TV2 and follow Kafka's TV2 rules (epoch bump at every EndTxn, a new
producer id when the epoch is exhausted); older versions TV0/TV1. The aborts the coordinator
starts itself (timeouts, an InitProducerId fencing an open transaction) use the finalized level
(``broker.features``), as Kafka's ``transactionVersionLevel``.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterable, NamedTuple, Optional

from protocol.deferred import dataclass
from broker.transactions.metadata import (
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TV_0, TV_1, TV_2, IllegalTransition, TransactionMetadata, TransactionState,
    TxnTransitMetadata, is_epoch_exhausted, supports_epoch_bump,
)
from protocol.errors import ErrorCode as E
from broker.groups.validation import compile_regex

log = logging.getLogger(__name__)
S = TransactionState
TP = tuple[str, int]

COORDINATOR_EPOCH = 0  # one node: the __transaction_state partitions never change leader
MARKER_RETRY_BACKOFF_MS = 100
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"

# TransactionSupportedOperation (AddPartitionsToTxnManager): how a verification result is told
# to the producer or group coordinator, by request version
DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED, ADD_PARTITION = 0, 1, 2


@dataclass
class TxnConfig:
    """The broker keys the coordinator follows (Kafka's names in the comments)."""
    transactional_id_expiration_ms: int = 604800000      # transactional.id.expiration.ms
    max_timeout_ms: int = 900000                         # transaction.max.timeout.ms
    num_partitions: int = 50                             # transaction.state.log.num.partitions
    segment_bytes: int = 104857600                       # transaction.state.log.segment.bytes
    min_isr: int = 1                                     # transaction.state.log.min.isr
    abort_timed_out_interval_ms: int = 10000             # transaction.abort.timed.out.transaction.cleanup.interval.ms
    remove_expired_interval_ms: int = 3600000            # transaction.remove.expired.transaction.cleanup.interval.ms
    verification_enabled: bool = True                    # transaction.partition.verification.enable

    @classmethod
    def from_broker_config(cls, cfg) -> "TxnConfig":
        return cls(
            transactional_id_expiration_ms=cfg["transactional.id.expiration.ms"],
            max_timeout_ms=cfg["transaction.max.timeout.ms"],
            num_partitions=cfg["transaction.state.log.num.partitions"],
            segment_bytes=cfg["transaction.state.log.segment.bytes"],
            min_isr=cfg["transaction.state.log.min.isr"],
            abort_timed_out_interval_ms=cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
            remove_expired_interval_ms=cfg["transaction.remove.expired.transaction.cleanup.interval.ms"],
            verification_enabled=cfg["transaction.partition.verification.enable"],
        )


class InitResult(NamedTuple):
    error: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TxnDescription(NamedTuple):
    """One DescribeTransactions entry."""
    transactional_id: str
    error: int
    state: str = ""
    timeout_ms: int = 0
    start_time_ms: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: tuple = ()


class TxnCounters:
    """Lifetime counts for the broker's metrics."""
    __slots__ = ("begun", "committed", "aborted", "timed_out")

    def __init__(self):
        self.begun = self.committed = self.aborted = self.timed_out = 0


def append_error(exc: BaseException) -> int:
    """Kafka's TransactionStateManager conversion of a failed append to the coordinator's error."""
    from broker.errors import error_code_for
    code = error_code_for(exc)
    if code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if code in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if code in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE):
        return E.UNKNOWN_SERVER_ERROR
    return code


def write_marker(topics, groups, topic: str, partition: int, producer_id: int, producer_epoch: int,
                 coordinator_epoch: int, commit: bool, transaction_version: int = 0) -> int:
    """Append one COMMIT/ABORT marker (Kafka's WriteTxnMarkers on the partition leader) and,
    for a ``__consumer_offsets`` partition, let the group coordinator complete the producer's
    pending offsets. Returns the partition's error code."""
    from broker.errors import error_code_for
    plog = topics.log(topic, partition) if topics is not None else None
    if plog is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION
    try:
        plog.append_marker(producer_id, producer_epoch, coordinator_epoch, commit,
                           transaction_version=transaction_version)
    except Exception as exc:
        code = error_code_for(exc)
        if code == E.UNKNOWN_SERVER_ERROR:
            log.exception("writing a %s marker for producer %d to %s-%d failed", "COMMIT" if commit else "ABORT",
                          producer_id, topic, partition)
        return code
    if topic == GROUP_METADATA_TOPIC_NAME and groups is not None:
        groups.complete_transaction(producer_id, partition, commit)
    return 0


class TransactionCoordinator:
    def __init__(self, broker=None, *, config: TxnConfig | None = None, clock=None, scheduler=None, store=None,
                 producer_ids=None, marker_writer: Callable | None = None,
                 transaction_version_level: Callable[[], int] | None = None):
        self.broker = broker
        self.config = config or (TxnConfig.from_broker_config(broker.cfg) if broker is not None else TxnConfig())
        self.clock = clock or (broker.clock if broker is not None else None)
        self.scheduler = scheduler
        self.store = store
        self.producer_ids = producer_ids or (broker.producer_ids if broker is not None else None)
        # the finalized transaction.version: the protocol of the aborts the coordinator starts
        # itself (a timeout, an InitProducerId fencing an open transaction), as Kafka's
        # TransactionStateManager.transactionVersionLevel
        # (without a broker, unit tests: TV1 unless they pass a level)
        if transaction_version_level is None:
            features = getattr(broker, "features", None)
            transaction_version_level = ((lambda: features.level("transaction.version")) if features is not None
                                         else (lambda: TV_1))
        self.transaction_version_level: Callable[[], int] = transaction_version_level
        # (topic, partition, producer id, epoch, coordinator epoch, commit) -> error code
        self.marker_writer = marker_writer or self._write_marker
        self.txns: dict[str, TransactionMetadata] = {}
        self.active = False
        self.counters = TxnCounters()
        self._retry_timer = None
        self._markers_pending: dict[str, tuple[bool, TxnTransitMetadata]] = {}  # id -> (commit, Complete* transit)
        self._timers: list = []

    def now(self) -> int:
        return self.clock.now_ms()

    # ---- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        if self.scheduler is None:
            from broker.groups.timers import LoopScheduler
            self.scheduler = LoopScheduler(asyncio.get_running_loop())
        if self.store is None:
            from broker.transactions.log import TransactionLog
            self.store = TransactionLog(self.broker.topics, self.config.num_partitions, self.clock,
                                        segment_bytes=self.config.segment_bytes, min_isr=self.config.min_isr)
        self.load()

    def load(self) -> None:
        """Replay ``__transaction_state`` and start serving; transactions found preparing are
        completed (markers, then Complete*), as Kafka does when it loads a partition."""
        self.txns = self.store.load()
        self.active = True
        preparing = [m for m in self.txns.values() if m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)]
        for m in preparing:
            commit = m.state is S.PREPARE_COMMIT
            log.info("completing %s of transactional id %s found at load (producer %d, epoch %d, %d partitions)",
                     "commit" if commit else "abort", m.transactional_id, m.producer_id, m.producer_epoch,
                     len(m.topic_partitions))
            self._send_markers(m, commit, m.prepare_complete(self.now()))
        if self.txns:
            log.info("loaded %d transactional id(s) (%d preparing)", len(self.txns), len(preparing))
        self._schedule(self.config.abort_timed_out_interval_ms, self.abort_timed_out_transactions)
        self._schedule(self.config.remove_expired_interval_ms, self.expire_transactional_ids)

    async def stop(self) -> None:
        self.unload()

    def unload(self) -> None:
        self.active = False
        for h in self._timers:
            h.cancel()
        self._timers.clear()
        if self._retry_timer is not None:
            self._retry_timer.cancel()
            self._retry_timer = None

    def _schedule(self, interval_ms: int, fn) -> None:
        def run():
            if not self.active:
                return
            try:
                fn()
            except Exception:
                log.exception("transaction coordinator task %s failed", fn.__name__)
            self._timers[:] = [h for h in self._timers if h is not handle[0]]
            self._schedule(interval_ms, fn)
        handle = [self.scheduler.call_later(interval_ms, run)]
        self._timers.append(handle[0])

    def ensure_topic(self) -> None:
        """Create ``__transaction_state`` now if it does not exist (FindCoordinator and
        InitProducerId for a transactional id do, as in Kafka)."""
        ensure = getattr(self.store, "ensure_topic", None)
        if ensure is not None:
            ensure()

    def partition_for(self, transactional_id: str) -> int:
        fn = getattr(self.store, "partition_for", None)
        return fn(transactional_id) if fn is not None else 0

    def validate_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.max_timeout_ms

    # ---- the log --------------------------------------------------------------------------------
    def _append(self, m: TransactionMetadata, t: TxnTransitMetadata, *, keep_pending_on_error: bool = False) -> int:
        """Write the transition's record, then complete it in memory (Kafka's
        appendTransactionToLog). On failure the transition is dropped, or kept pending for a retry."""
        try:
            self.store.write(m.transactional_id, t)
        except Exception as exc:
            code = append_error(exc)
            log.warning("writing %s of transactional id %s to the transaction log failed: %r",
                        t.txn_state, m.transactional_id, exc)
            if not keep_pending_on_error:
                m.abort_transition()
            return code
        before = m.state
        m.complete_transition(t)
        if t.txn_state is S.ONGOING and before is not S.ONGOING:
            self.counters.begun += 1
        return 0

    # ---- InitProducerId -------------------------------------------------------------------------
    def handle_init_producer_id(self, transactional_id: str, timeout_ms: int,
                                expected: Optional[tuple[int, int]] = None) -> InitResult:
        """InitProducerId for a transactional id; ``expected`` is the KIP-360 (producer id,
        epoch) the producer already has, or None for a new incarnation."""
        if transactional_id == "":
            return InitResult(E.INVALID_REQUEST)
        if not self.validate_timeout(timeout_ms):
            return InitResult(E.INVALID_TRANSACTION_TIMEOUT)
        if not self.active:
            return InitResult(E.NOT_COORDINATOR)
        try:
            self.ensure_topic()
        except Exception as exc:
            log.warning("cannot create the transaction state topic: %r", exc)
            return InitResult(E.COORDINATOR_NOT_AVAILABLE)
        m = self.txns.get(transactional_id)
        if m is None:
            m = TransactionMetadata(transactional_id, self.producer_ids.allocate(), txn_timeout_ms=timeout_ms,
                                    txn_last_update_timestamp=self.now(), client_transaction_version=TV_0)
            self.txns[transactional_id] = m
        err, t = self._prepare_init(m, timeout_ms, expected)
        if err:
            return InitResult(err)
        if t.txn_state is S.PREPARE_EPOCH_FENCE:
            # abort the fenced incarnation's transaction; the client retries (and then gets a
            # second bump, or a new producer id if the fence used the last epoch)
            err, _, _ = self._end_transaction(transactional_id, t.producer_id, t.producer_epoch, False,
                                              from_client=False, client_tv=self.transaction_version_level())
            return InitResult(err or E.CONCURRENT_TRANSACTIONS)
        err = self._append(m, t)
        if err:
            log.info("returning %s to InitProducerId of %s", E(err).name, transactional_id)
            return InitResult(err)
        log.info("initialized transactional id %s with producer id %d and epoch %d on partition "
                 "__transaction_state-%d", transactional_id, t.producer_id, t.producer_epoch,
                 self.partition_for(transactional_id))
        return InitResult(0, t.producer_id, t.producer_epoch)

    def _prepare_init(self, m: TransactionMetadata, timeout_ms: int, expected):
        def valid_producer_id(pid: int, epoch: int) -> bool:
            # a new metadata (no epoch yet), the current id, or a retry of a rotation whose
            # answer was lost (the previous id at an exhausted epoch)
            return (m.producer_epoch == NO_PRODUCER_EPOCH or pid == m.producer_id
                    or (pid == m.previous_producer_id and is_epoch_exhausted(epoch)))

        if m.pending_transition_in_progress:
            return E.CONCURRENT_TRANSACTIONS, None
        if expected is not None and not valid_producer_id(*expected):
            return E.PRODUCER_FENCED, None
        state = m.state
        if state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return E.CONCURRENT_TRANSACTIONS, None
        if state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if m.is_producer_epoch_exhausted and (expected is None or expected[1] == m.producer_epoch):
                return 0, m.prepare_producer_id_rotation(self.producer_ids.allocate(), timeout_ms, self.now(),
                                                         expected is not None)
            return m.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1],
                                                      self.now())
        if state is S.ONGOING:
            return 0, m.prepare_fence_producer_epoch()
        raise IllegalTransition(f"transactional id {m.transactional_id} found in state {state}")

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------
    def handle_add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: Iterable[TP], client_tv: int = TV_0) -> int:
        if not transactional_id:
            return E.INVALID_REQUEST
        if not self.active:
            return E.NOT_COORDINATOR
        partitions = set(partitions)
        m = self.txns.get(transactional_id)
        if m is None or m.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        if m.producer_epoch != producer_epoch:
            return E.PRODUCER_FENCED
        if m.pending_transition_in_progress or m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.CONCURRENT_TRANSACTIONS
        if m.state is S.ONGOING and partitions <= m.topic_partitions:
            return 0  # already there: answered without a write
        return self._append(m, m.prepare_add_partitions(partitions, self.now(), client_tv))

    def handle_verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                 partitions: Iterable[TP]) -> dict[TP, int]:
        """AddPartitionsToTxn v4+ with verify_only (KIP-890 part 1): is each partition in the
        producer's ongoing transaction? (TRANSACTION_ABORTABLE when not.)"""
        partitions = list(partitions)
        if not transactional_id:
            return {tp: E.INVALID_REQUEST for tp in partitions}
        if not self.active:
            return {tp: E.NOT_COORDINATOR for tp in partitions}
        m = self.txns.get(transactional_id)
        if m is None or m.producer_id != producer_id:
            err = E.INVALID_PRODUCER_ID_MAPPING
        elif m.producer_epoch != producer_epoch:
            err = E.PRODUCER_FENCED
        elif m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            err = E.CONCURRENT_TRANSACTIONS
        else:
            return {tp: 0 if tp in m.topic_partitions else E.TRANSACTION_ABORTABLE for tp in partitions}
        return {tp: err for tp in partitions}

    def verify_partition(self, transactional_id: Optional[str], producer_id: int, producer_epoch: int, tp: TP,
                         plog, operation: int) -> int:
        """KIP-890 part 1, as ReplicaManager + AddPartitionsToTxnManager do for a transactional
        write (a Produce batch, or a TxnOffsetCommit into ``__consumer_offsets``): unless the
        partition already holds this producer's open transaction, the coordinator must have the
        partition in the transaction (``operation`` ADD_PARTITION adds it, TV2). Returns the
        error as the manager hands it back to the request (0 when the write may go ahead)."""
        if not self.config.verification_enabled or transactional_id is None:
            return 0
        if plog is not None and _has_ongoing_transaction(plog, producer_id, producer_epoch):
            return 0
        if operation == ADD_PARTITION:
            err = self.handle_add_partitions(transactional_id, producer_id, producer_epoch, [tp], client_tv=TV_2)
        else:
            err = self.handle_verify_partitions(transactional_id, producer_id, producer_epoch, [tp])[tp]
        if err == E.PRODUCER_FENCED:
            return E.INVALID_PRODUCER_EPOCH  # what producers expect here
        if err == E.TRANSACTION_ABORTABLE and operation == DEFAULT_ERROR:
            return E.INVALID_TXN_STATE  # clients before TRANSACTION_ABORTABLE
        return err

    # ---- EndTxn ---------------------------------------------------------------------------------
    def handle_end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                       client_tv: int = TV_0) -> InitResult:
        """EndTxn from a client: (error, producer id, epoch); the id/epoch are set for TV2 only."""
        return InitResult(*self._end_transaction(transactional_id, producer_id, producer_epoch, commit,
                                                 from_client=True, client_tv=client_tv))

    def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, *,
                         from_client: bool, client_tv: int) -> tuple[int, int, int]:
        if not transactional_id:
            return E.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not self.active:
            return E.NOT_COORDINATOR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        m = self.txns.get(transactional_id)
        if m is None:
            return E.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if supports_epoch_bump(client_tv):
            err, t, is_fence = self._prepare_end_tv2(m, producer_id, producer_epoch, commit, from_client, client_tv)
        else:
            err, t, is_fence = self._prepare_end_tv1(m, producer_id, producer_epoch, commit, from_client)
        if t is None:
            if m.pending_state is S.PREPARE_EPOCH_FENCE:
                m.abort_transition()  # the fence did not happen
            if err == 0 and supports_epoch_bump(client_tv):  # a TV2 retry: the current id and epoch
                return 0, m.producer_id, m.producer_epoch
            return err, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        err = self._append(m, t)
        if err:
            if is_fence:
                # the epoch was bumped in memory but not written: do not bump again next time
                m.has_failed_epoch_fence = True
                log.warning("failed to write the epoch fence of %s (%s); its epoch %d was not returned to the client",
                            transactional_id, E(err).name, t.producer_epoch)
            return err, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        # answered now (Kafka answers once the Prepare record is written); markers follow
        self._send_markers(m, commit, m.prepare_complete(self.now()))
        if supports_epoch_bump(client_tv):
            return 0, m.producer_id, m.producer_epoch
        return 0, NO_PRODUCER_ID, NO_PRODUCER_EPOCH

    def _fence_into_abort(self, m: TransactionMetadata, producer_epoch: int) -> None:
        # the fence's bumped epoch becomes the aborting transaction's epoch
        m.pending_state = None
        m.producer_epoch = producer_epoch
        m.last_producer_epoch = NO_PRODUCER_EPOCH

    def _prepare_end_tv1(self, m, producer_id, producer_epoch, commit, from_client):
        if m.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING, None, False
        # strict equality for clients (they never bump the epoch themselves)
        if (from_client and producer_epoch != m.producer_epoch) or producer_epoch < m.producer_epoch:
            return E.PRODUCER_FENCED, None, False
        if m.pending_transition_in_progress and m.pending_state is not S.PREPARE_EPOCH_FENCE:
            return E.CONCURRENT_TRANSACTIONS, None, False
        state = m.state
        if state is S.ONGOING:
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            is_fence = next_state is S.PREPARE_ABORT and m.pending_state is S.PREPARE_EPOCH_FENCE
            if is_fence:
                self._fence_into_abort(m, producer_epoch)
            return 0, m.prepare_abort_or_commit(next_state, TV_0, NO_PRODUCER_ID, self.now(), False), is_fence
        if state is S.COMPLETE_COMMIT:
            return (0 if commit else E.INVALID_TXN_STATE), None, False  # a retried commit is idempotent
        if state is S.COMPLETE_ABORT:
            return (0 if not commit else E.INVALID_TXN_STATE), None, False
        if state is S.PREPARE_COMMIT:
            return (E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE), None, False
        if state is S.PREPARE_ABORT:
            return (E.CONCURRENT_TRANSACTIONS if not commit else E.INVALID_TXN_STATE), None, False
        if state is S.EMPTY:
            return E.INVALID_TXN_STATE, None, False
        raise IllegalTransition(f"transactional id {m.transactional_id} found in state {state}")

    def _prepare_end_tv2(self, m, producer_id, producer_epoch, commit, from_client, client_tv):
        """Kafka 4's endTransaction for TV2: the epoch is bumped at every EndTxn; a retry
        carries the epoch before the bump (or the exhausted epoch of the previous id)."""
        is_fence = m.pending_state is S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not is_fence and m.previous_producer_id == producer_id
                             and producer_epoch == 32767 - 1 and m.producer_epoch == 0)
        retry_on_bump = not is_fence and m.producer_epoch == producer_epoch + 1
        state = m.state
        if not is_fence:
            if state in (S.ONGOING, S.EMPTY, S.DEAD, S.PREPARE_EPOCH_FENCE):
                valid_epoch = producer_epoch == m.producer_epoch
            elif state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                valid_epoch = retry_on_bump
            else:
                valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == m.producer_epoch
        else:
            valid_epoch = (not from_client or producer_epoch == m.producer_epoch) and producer_epoch >= m.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow

        def completion(next_state, no_partition_added):
            # Kafka 4.4's TV2 generateTxnTransitMetadataForTxnCompletion: an exhausted epoch
            # takes a new producer id (a fence too); a fence's prepared bump is dropped, not
            # applied, so the abort's own TV2 bump is the only one (epoch + 1 in all, where the
            # TV1 abort applies the fence's bump and bumps no more)
            next_pid = NO_PRODUCER_ID
            if m.is_producer_epoch_exhausted:
                next_pid = self.producer_ids.allocate()
            if next_state is S.PREPARE_ABORT and is_fence:
                m.pending_state = None
            return 0, m.prepare_abort_or_commit(next_state, client_tv, next_pid, self.now(), no_partition_added), is_fence

        if m.producer_id != producer_id and not retry_on_overflow:
            return E.INVALID_PRODUCER_ID_MAPPING, None, False
        if not valid_epoch:
            return E.PRODUCER_FENCED, None, False
        if m.pending_transition_in_progress and m.pending_state is not S.PREPARE_EPOCH_FENCE:
            return E.CONCURRENT_TRANSACTIONS, None, False
        if state is S.ONGOING:
            return completion(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False)
        if state is S.COMPLETE_COMMIT:
            if commit:
                return (0 if is_retry else E.INVALID_TXN_STATE), None, False
            return (E.INVALID_TXN_STATE, None, False) if is_retry else completion(S.PREPARE_ABORT, True)
        if state is S.COMPLETE_ABORT:
            if not commit:
                return (0, None, False) if is_retry else completion(S.PREPARE_ABORT, True)
            return E.INVALID_TXN_STATE, None, False
        if state is S.PREPARE_COMMIT:
            return (E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE), None, False
        if state is S.PREPARE_ABORT:
            return (E.CONCURRENT_TRANSACTIONS if not commit else E.INVALID_TXN_STATE), None, False
        if state is S.EMPTY:
            return completion(S.PREPARE_ABORT, True) if not commit else (E.INVALID_TXN_STATE, None, False)
        raise IllegalTransition(f"transactional id {m.transactional_id} found in state {state}")

    # ---- markers --------------------------------------------------------------------------------
    def _send_markers(self, m: TransactionMetadata, commit: bool, complete: TxnTransitMetadata) -> None:
        """Write the markers still missing, then the Complete* record (Kafka's
        TransactionMarkerChannelManager). ``m`` has its Complete* transition pending."""
        self._markers_pending[m.transactional_id] = (commit, complete)
        retry = False
        for topic, partition in sorted(m.topic_partitions):
            err = self.marker_writer(topic, partition, m.producer_id, m.producer_epoch, COORDINATOR_EPOCH, commit)
            if err == 0 or err in (E.UNKNOWN_TOPIC_OR_PARTITION, E.UNSUPPORTED_FOR_MESSAGE_FORMAT):
                # written; or the partition is gone (its topic was deleted): nothing to mark
                m.remove_partition((topic, partition))
            elif err in (E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED):
                # a newer producer epoch or coordinator owns the partition: Kafka stops sending
                log.error("%s marker of transactional id %s for %s-%d refused with %s; the transaction stays %s",
                          "COMMIT" if commit else "ABORT", m.transactional_id, topic, partition, E(err).name, m.state)
                self._markers_pending.pop(m.transactional_id, None)
                return
            else:
                log.warning("%s marker of transactional id %s for %s-%d failed with %s; retrying",
                            "COMMIT" if commit else "ABORT", m.transactional_id, topic, partition, E(err).name)
                retry = True
        if retry:
            self._schedule_marker_retry()
            return
        # one node: nobody else would finish it, so a failed Complete write is retried on
        # any error (Kafka retries on COORDINATOR_NOT_AVAILABLE)
        err = self._append(m, complete, keep_pending_on_error=True)
        if err:
            self._schedule_marker_retry()
            return
        self._markers_pending.pop(m.transactional_id, None)
        if commit:
            self.counters.committed += 1
        else:
            self.counters.aborted += 1

    def _schedule_marker_retry(self) -> None:
        if self._retry_timer is not None or self.scheduler is None:
            return

        def run():
            self._retry_timer = None
            if not self.active:
                return
            for tid, (commit, complete) in list(self._markers_pending.items()):
                m = self.txns.get(tid)
                if m is not None:
                    self._send_markers(m, commit, complete)
        self._retry_timer = self.scheduler.call_later(MARKER_RETRY_BACKOFF_MS, run)

    def _write_marker(self, topic, partition, producer_id, producer_epoch, coordinator_epoch, commit) -> int:
        b = self.broker
        return write_marker(b.topics if b is not None else None, b.groups if b is not None else None, topic,
                            partition, producer_id, producer_epoch, coordinator_epoch, commit)

    # ---- timeouts and expiration ----------------------------------------------------------------
    def timed_out_transactions(self, now_ms: Optional[int] = None) -> list[tuple[str, int, int]]:
        now = self.now() if now_ms is None else now_ms
        return [(tid, m.producer_id, m.producer_epoch) for tid, m in self.txns.items()
                if not m.pending_transition_in_progress and m.state is S.ONGOING
                and m.txn_start_timestamp + m.txn_timeout_ms < now]

    def abort_timed_out_transactions(self, now_ms: Optional[int] = None) -> int:
        """Abort (with an epoch bump) every Ongoing transaction past its timeout."""
        n = 0
        for tid, pid, _epoch in self.timed_out_transactions(now_ms):
            m = self.txns.get(tid)
            if m is None or m.producer_id != pid or m.pending_transition_in_progress:
                continue
            t = m.prepare_fence_producer_epoch()
            err, _, _ = self._end_transaction(tid, t.producer_id, t.producer_epoch, False, from_client=False,
                                              client_tv=self.transaction_version_level())
            if err:
                log.warning("rollback of timed-out transaction of %s failed: %s", tid, E(err).name)
                continue
            n += 1
            self.counters.timed_out += 1
            log.info("aborted the transaction of transactional id %s after its timeout of %d ms", tid, m.txn_timeout_ms)
        return n

    def expire_transactional_ids(self, now_ms: Optional[int] = None) -> int:
        """Tombstone ids idle for ``transactional.id.expiration.ms`` (Empty or Complete*)."""
        now = self.now() if now_ms is None else now_ms
        horizon = now - self.config.transactional_id_expiration_ms
        by_partition: dict[int, list[TransactionMetadata]] = {}
        for m in self.txns.values():
            if m.state.expiration_allowed and not m.pending_transition_in_progress \
                    and m.txn_last_update_timestamp <= horizon:
                m.prepare_dead()
                by_partition.setdefault(self.partition_for(m.transactional_id), []).append(m)
        n = 0
        for partition, ms in by_partition.items():
            try:
                self.store.write_tombstones(partition, [m.transactional_id for m in ms])
            except Exception as exc:
                log.warning("writing tombstones of expired transactional ids failed: %r", exc)
                for m in ms:
                    m.abort_transition()
                continue
            for m in ms:
                if self.txns.get(m.transactional_id) is m:
                    del self.txns[m.transactional_id]
                n += 1
        if n:
            log.info("removed %d expired transactional id(s)", n)
        return n

    # ---- admin ----------------------------------------------------------------------------------
    def handle_describe(self, transactional_id: str) -> TxnDescription:
        if not self.active:
            return TxnDescription(transactional_id, E.COORDINATOR_NOT_AVAILABLE)
        if transactional_id == "":
            return TxnDescription(transactional_id, E.INVALID_REQUEST)
        m = self.txns.get(transactional_id)
        if m is None or m.state is S.DEAD:
            return TxnDescription(transactional_id, E.TRANSACTIONAL_ID_NOT_FOUND)
        return TxnDescription(transactional_id, 0, m.state.state_name, m.txn_timeout_ms, m.txn_start_timestamp,
                              m.producer_id, m.producer_epoch, tuple(sorted(m.topic_partitions)))

    def handle_list(self, producer_ids: Iterable[int] = (), states: Iterable[str] = (), duration_ms: int = -1,
                    id_pattern: str | None = None) -> tuple[int, list[str], list[tuple[str, int, str]]]:
        """(error, unknown state filters, [(transactional id, producer id, state name)]).
        ``id_pattern`` (KIP-1152; None or empty: no filter) must match a whole transactional id,
        in RE2 syntax as Kafka compiles it; one that does not compile is INVALID_REGULAR_EXPRESSION."""
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE, [], []
        pattern = None
        if id_pattern:
            try:
                pattern = compile_regex(id_pattern)
            except Exception:  # re2.error / re.error: Kafka's response carries no message
                log.info("ListTransactions: transactional id pattern %r is not a valid regular expression",
                         id_pattern)
                return E.INVALID_REGULAR_EXPRESSION, [], []
        pids = set(producer_ids)
        wanted, unknown = set(), []
        for name in states:
            s = S.from_name(name)
            if s is None:
                unknown.append(name)
            else:
                wanted.add(s)
        now = self.now()
        out = []
        for tid, m in self.txns.items():
            if m.state is S.DEAD:
                continue  # transient: being expired
            if pids and m.producer_id not in pids:
                continue
            if states and m.state not in wanted:
                continue
            if duration_ms >= 0 and now - m.txn_start_timestamp <= duration_ms:
                continue
            if pattern is not None and pattern.fullmatch(tid) is None:
                continue
            out.append((tid, m.producer_id, m.state.state_name))
        return 0, unknown, out


def _has_ongoing_transaction(plog, producer_id: int, producer_epoch: int) -> bool:
    """Kafka's UnifiedLog.hasOngoingTransaction: this producer (at this epoch) has an open
    transaction in the partition, so its earlier write was verified already."""
    for e in plog.producer_entries():
        if e.producer_id == producer_id:
            return e.producer_epoch == producer_epoch and e.current_txn_start_offset >= 0
    return False
