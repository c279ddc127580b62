#!/usr/bin/env python3
"""kill -9, many times: producers and consumers run against a broker that is SIGKILLed at
random moments and restarted on the same data dir; after every round nothing acknowledged
may be missing or duplicated.

Usage::

    python scripts/crash_test.py --rounds 100 --seconds 2     # make crash-test
    python scripts/crash_test.py --rounds 4 --seconds 1       # the short pass pytest runs

Workload (threads, our own wire client so every acknowledgement is counted exactly):

* producers on topic ``crash`` (one partition each): acks=1 and acks=all, each with and
  without idempotence; on topic ``churn`` (tiny segments, size retention, so segments are
  deleted all the time) an idempotent acks=all producer. An idempotent producer retries its
  in-flight batch after a crash with the same sequence (the broker must deduplicate it); a
  plain producer gives up on a batch whose answer was lost (it may or may not be in the log,
  but never twice, since it is never resent).
* a consumer per partition reading from its own position; after a crash it resumes there:
  its position must still be valid (<= log end offset) and its next record must be exactly
  that offset (contiguous offsets), and what it read before must still be what the log holds.

Kill moments: half the rounds SIGKILL the broker from outside at a random time; the other
half arm a crash point inside the broker (``--child`` mode wraps its file operations in
``storage.faults.FaultyFileOps`` with a hook that SIGKILLs the process at the N-th matching
operation): mid-append (half a batch written), mid-roll (a new segment's index being
created), mid-retention (a segment renamed to ``.deleted``), mid-checkpoint (checkpoint
``.tmp`` written, not renamed), mid-index-write, before an fsync.

After each restart, with producers paused: every partition is read from its log start
offset; offsets must be contiguous; every acknowledged record must be at its acknowledged
offset exactly once (below the log start offset only on ``churn``, where retention may have
removed it); no record may appear twice; the high watermark may not move back (SIGKILL
loses no written byte); ``hourglass dump-log --verify-index-only`` must pass on every index
file. The summary line is ``crash-test: rounds=.. acked=.. lost=.. duplicates=..``; the exit
status is 1 on any loss, duplicate or violation.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CRASH_POINTS = {
    # name: (op, path substring, phase)
    "mid-append": ("pwrite", ".log", "mid"),
    "mid-roll": ("create", ".timeindex", "after"),
    "mid-retention": ("rename", ".log", "after"),     # segment -> .deleted (also cleaner swaps)
    "mid-checkpoint": ("pwrite", "checkpoint.tmp", "after"),
    "mid-index-write": ("pwrite", ".index", "mid"),
    "before-fsync": ("fsync", ".log", "before"),
}

BROKER_CONFIG = {
    "log.segment.bytes": 8192,
    "log.index.interval.bytes": 512,
    "log.retention.check.interval.ms": 100,
    "log.flush.offset.checkpoint.interval.ms": 150,
    "log.flush.start.offset.checkpoint.interval.ms": 150,
    "log.segment.delete.delay.ms": 200,
    "num.partitions": 4,
}
CHURN_RETENTION_BYTES = 24576


# ------------------------------------------------------------------------------- child mode

def child_main(spec: str, argv: list[str]) -> int:
    """Run ``hourglass <argv>`` with a crash point armed: ``spec`` is ``name:n``."""
    from storage import manager
    from storage.faults import FaultyFileOps

    name, n = spec.rsplit(":", 1)
    op_want, path_want, phase_want = CRASH_POINTS[name]
    remaining = [int(n)]

    def hook(op: str, path: str, phase: str) -> None:
        if op == op_want and phase == phase_want and path_want in path:
            remaining[0] -= 1
            if remaining[0] <= 0:
                os.kill(os.getpid(), signal.SIGKILL)

    ops = FaultyFileOps(track_unsynced=False)
    ops.on_op = hook
    manager.DEFAULT_FILE_OPS = ops  # the LogManager's default file layer (no file_ops given)
    from hourglass.cli import main
    return main(argv)


# ------------------------------------------------------------------------------- bookkeeping

@dataclass
class PartitionBook:
    topic: str
    partition: int
    retention: bool = False
    acked: dict = field(default_factory=dict)        # value -> offset acknowledged
    unknown: set = field(default_factory=set)        # values whose answer was lost
    consumed: dict = field(default_factory=dict)     # offset -> value a consumer saw
    last_hwm: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.violations: list[str] = []
        self.errors: dict[str, int] = {}
        self.lost = 0
        self.duplicates = 0
        self.resumes = 0
        self.retried_batches = 0
        self.commits = 0
        self.group_resumes = 0

    def violation(self, msg: str) -> None:
        with self.lock:
            self.violations.append(msg)
        print(f"VIOLATION: {msg}", flush=True)

    def error(self, what: str) -> None:
        with self.lock:
            self.errors[what] = self.errors.get(what, 0) + 1


class Gate:
    """Producers and consumers run while open; ``close()`` waits until all are parked."""

    def __init__(self, n: int):
        self.cv = threading.Condition()
        self.open = True
        self.parked = 0
        self.n = n
        self.stop = False

    def wait_open(self) -> bool:
        with self.cv:
            if not self.open:
                self.parked += 1
                self.cv.notify_all()
                while not self.open and not self.stop:
                    self.cv.wait(0.1)
                self.parked -= 1
            return not self.stop

    def close(self, timeout: float = 60) -> bool:
        with self.cv:
            self.open = False
            deadline = time.monotonic() + timeout
            while self.parked < self.n and time.monotonic() < deadline:
                self.cv.wait(0.1)
            return self.parked >= self.n

    def reopen(self) -> None:
        with self.cv:
            self.open = True
            self.cv.notify_all()


# ------------------------------------------------------------------------------- workers

class Worker(threading.Thread):
    def __init__(self, name: str, bp, gate: Gate, stats: Stats):
        super().__init__(name=name, daemon=True)
        self.bp = bp
        self.gate = gate
        self.stats = stats
        self.client = None

    def connect(self):
        from tests.reliability.wire import Wire
        while not self.gate.stop:
            try:
                self.client = Wire(self.bp.bootstrap, client_id=self.name, timeout=5)
                return self.client
            except (OSError, RuntimeError):
                time.sleep(0.05)
        return None

    def drop(self):
        if self.client is not None:
            try:
                self.client.close()
            except OSError:
                pass
        self.client = None


class Producer(Worker):
    def __init__(self, name, bp, gate, stats, book: PartitionBook, acks: int, idempotent: bool, rng):
        super().__init__(name, bp, gate, stats)
        self.book = book
        self.acks = acks
        self.idempotent = idempotent
        self.rng = rng
        self.seq = 0           # next value number
        self.base_sequence = 0
        self.pid = -1
        self.epoch = -1
        self.pending: list[bytes] | None = None   # idempotent: the batch in flight

    def run(self):
        from protocol.errors import ErrorCode
        while self.gate.wait_open():
            if self.client is None and self.connect() is None:
                return
            try:
                if self.idempotent and self.pid < 0:
                    self.pid, self.epoch = self.client.init_producer_id()
                if self.pending is None:
                    n = self.rng.randint(1, 8)
                    self.pending = [f"{self.name}:{self.seq + i}".encode() + b"." * self.rng.randint(0, 120)
                                    for i in range(n)]
                    self.seq += n
                else:
                    self.stats.retried_batches += 1
                batch = self.pending
                if self.idempotent:
                    r = self.client.produce(self.book.topic, self.book.partition, batch, acks=self.acks,
                                            producer_id=self.pid, producer_epoch=self.epoch,
                                            base_sequence=self.base_sequence)
                else:
                    with self.book.lock:
                        self.book.unknown.update(batch)   # until answered
                    r = self.client.produce(self.book.topic, self.book.partition, batch, acks=self.acks)
            except (OSError, ConnectionError, AssertionError, ValueError) as exc:
                self.drop()
                if not self.idempotent and self.pending is not None:
                    self.pending = None     # answer lost: never resent, stays "unknown"
                self.stats.error(f"{type(exc).__name__}")
                time.sleep(0.02)
                continue
            if r.error_code == 0:
                with self.book.lock:
                    for i, v in enumerate(batch):
                        self.book.unknown.discard(v)
                        self.book.acked[v] = r.base_offset + i
                if self.idempotent:
                    self.base_sequence += len(batch)
                self.pending = None
            else:
                code = ErrorCode(r.error_code).name if r.error_code in ErrorCode._value2member_map_ else r.error_code
                self.stats.error(f"produce:{code}")
                if not self.idempotent:
                    # not resent; stays "unknown" (an fsync error, say, follows a successful append)
                    self.pending = None
                elif r.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
                    self.stats.violation(f"{self.name}: OUT_OF_ORDER_SEQUENCE_NUMBER for seq {self.base_sequence} "
                                         f"({r.error_message})")
                    self.pending = None
                    self.pid = -1   # start over as a new producer
                    self.base_sequence = 0
                time.sleep(0.02)


class Consumer(Worker):
    def __init__(self, name, bp, gate, stats, book: PartitionBook):
        super().__init__(name, bp, gate, stats)
        self.book = book
        self.position = 0
        self.just_reconnected = False

    def run(self):
        from protocol.errors import ErrorCode
        from protocol.records.batch import iter_batch_positions
        from protocol.records.record import decode_batch
        while self.gate.wait_open():
            if self.client is None:
                if self.connect() is None:
                    return
                self.just_reconnected = True
            try:
                p = self.client.fetch(self.book.topic, self.book.partition, self.position, max_bytes=64 << 10,
                                      max_wait_ms=100)
            except (OSError, ConnectionError, AssertionError, ValueError):
                self.drop()
                time.sleep(0.02)
                continue
            if self.just_reconnected and p.error_code == 0:
                self.stats.resumes += 1
                self.just_reconnected = False
            if p.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                if self.book.retention and self.position < p.log_start_offset:
                    self.position = p.log_start_offset   # retention passed us: legitimate
                    continue
                self.stats.violation(f"{self.name}: position {self.position} out of range "
                                     f"[{p.log_start_offset}, {p.high_watermark}] after resume")
                self.position = max(p.log_start_offset, 0)
                continue
            if p.error_code:
                self.stats.error(f"fetch:{p.error_code}")
                time.sleep(0.05)
                continue
            data = bytes(p.records or b"")
            for pos, _h in iter_batch_positions(data):
                _hdr, recs = decode_batch(data, pos)
                for r in recs:
                    if r.offset < self.position:
                        continue
                    if r.offset != self.position:
                        self.stats.violation(f"{self.name}: expected offset {self.position}, got {r.offset}")
                    with self.book.lock:
                        self.book.consumed[r.offset] = r.value
                    self.position = r.offset + 1


class Committer(Consumer):
    """A consumer that also commits its position for a group after each fetch (OffsetCommit,
    waiting for the answer) and, after a restart, resumes from the group's committed offset,
    as a group consumer does: the committed offset must be the last one acknowledged (or one
    in flight at the kill), and the first record read after resuming must be exactly there."""

    GROUP = "crash-group"

    def __init__(self, name, bp, gate, stats, book: PartitionBook):
        super().__init__(name, bp, gate, stats, book)
        self.acked_commit = -1
        self.inflight_commit = -1

    def run(self):
        from protocol.errors import ErrorCode
        from protocol.records.batch import iter_batch_positions
        from protocol.records.record import decode_batch
        while self.gate.wait_open():
            if self.client is None:
                if self.connect() is None:
                    return
                try:
                    committed = self.client.committed_offset(self.GROUP, self.book.topic, self.book.partition)
                except (OSError, ConnectionError, RuntimeError, AssertionError, ValueError):
                    self.drop()
                    time.sleep(0.02)
                    continue
                if committed not in (self.acked_commit, self.inflight_commit) or committed < self.acked_commit:
                    self.stats.violation(f"{self.name}: committed offset {committed} after restart, "
                                         f"last acknowledged commit {self.acked_commit}")
                self.stats.group_resumes += 1
                self.acked_commit = max(self.acked_commit, committed)
                self.position = max(committed, 0)
            try:
                p = self.client.fetch(self.book.topic, self.book.partition, self.position, max_bytes=64 << 10,
                                      max_wait_ms=100)
            except (OSError, ConnectionError, AssertionError, ValueError):
                self.drop()
                continue
            if p.error_code:
                if p.error_code != ErrorCode.OFFSET_OUT_OF_RANGE:
                    self.stats.error(f"group-fetch:{p.error_code}")
                else:
                    self.stats.violation(f"{self.name}: committed position {self.position} out of range")
                time.sleep(0.05)
                continue
            data = bytes(p.records or b"")
            for pos, _h in iter_batch_positions(data):
                for r in decode_batch(data, pos)[1]:
                    if r.offset < self.position:
                        continue
                    if r.offset != self.position:
                        self.stats.violation(f"{self.name}: expected offset {self.position}, got {r.offset}")
                    self.position = r.offset + 1
            if self.position > max(self.acked_commit, 0):
                self.inflight_commit = self.position
                try:
                    err = self.client.commit_offset(self.GROUP, self.book.topic, self.book.partition, self.position)
                except (OSError, ConnectionError, AssertionError, ValueError):
                    self.drop()
                    continue
                if err == 0:
                    self.acked_commit = self.position
                    self.stats.commits += 1
                else:
                    self.stats.error(f"commit:{err}")


# ------------------------------------------------------------------------------- verification

def verify(bp, books: list[PartitionBook], stats: Stats, round_no: int) -> tuple[int, int]:
    """Check every partition (see the module docstring); returns (lost, duplicates) found now."""
    from tests.reliability.wire import Wire
    lost = dups = 0
    c = Wire(bp.bootstrap, client_id="verifier", timeout=20)
    try:
        for b in books:
            recs, lso, hwm = c.read_all(b.topic, b.partition)
            tp = f"{b.topic}-{b.partition}"
            offsets = [o for o, _v in recs]
            if offsets != list(range(lso, hwm)):
                stats.violation(f"round {round_no} {tp}: offsets not contiguous from {lso} to {hwm}")
            if hwm < b.last_hwm:
                stats.violation(f"round {round_no} {tp}: high watermark went back from {b.last_hwm} to {hwm}")
            b.last_hwm = hwm
            at = {}
            seen_values: dict[bytes, int] = {}
            for o, v in recs:
                at[o] = v
                key = v.rstrip(b".")
                if key in seen_values:
                    dups += 1
                    stats.violation(f"round {round_no} {tp}: {key!r} at offsets {seen_values[key]} and {o}")
                seen_values[key] = o
            with b.lock:
                for v, off in b.acked.items():
                    if off < lso and b.retention:
                        continue
                    if at.get(off) != v:
                        lost += 1
                        stats.violation(f"round {round_no} {tp}: acknowledged {v[:30]!r} not at offset {off} "
                                        f"(found {at.get(off, b'<missing>')[:30]!r})")
                for off, v in b.consumed.items():
                    if off >= lso and at.get(off) != v:
                        stats.violation(f"round {round_no} {tp}: consumer read {v[:30]!r} at {off}, "
                                        f"log now has {at.get(off, b'<missing>')[:30]!r}")
    finally:
        c.close()
    return lost, dups


def verify_indexes(data_dir: Path, stats: Stats, round_no: int) -> int:
    files = sorted(str(p) for p in data_dir.rglob("*") if p.suffix in (".index", ".timeindex")
                   and not p.name.endswith(".deleted"))
    if not files:
        return 0
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "broker", "--log-level", "WARNING", "dump-log",
                        "--verify-index-only", *files], capture_output=True, text=True, env=env, cwd=REPO)
    if r.returncode != 0:
        # a segment deleted by retention between listing and reading is not a finding
        missing = [f for f in files if not os.path.exists(f)]
        bad = [ln for ln in r.stdout.splitlines() if ("Mismatches" in ln or "entry" in ln or "cannot" in ln)
               and not any(m in ln for m in missing)]
        if bad or not missing:
            stats.violation(f"round {round_no}: dump-log --verify-index-only failed: "
                            f"{(bad or [r.stderr.strip()[-500:]])[:5]}")
    return len(files)


# ------------------------------------------------------------------------------- driver

def run(rounds: int, seconds: float, seed: int, data_dir: Path | None, keep: bool, quiet: bool) -> int:
    from tests.helpers.broker import BrokerProcess, BrokerStartError
    from tests.reliability.wire import Wire

    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="hourglass-crash-")) if data_dir is None else data_dir
    data = tmp / "data"
    child = [sys.executable, str(Path(__file__).resolve()), "--child", "none:0", "--"]
    bp = BrokerProcess(data, BROKER_CONFIG, cmd=child, ready_timeout=60)
    stats = Stats()
    t0 = time.monotonic()
    bp.start()
    if not _create_topics(bp):
        c = Wire(bp.bootstrap)
        c.create_topic("crash")
        c.create_topic("churn")
        c.close()

    books = [PartitionBook("crash", p) for p in range(4)] + [PartitionBook("churn", 0, retention=True)]
    specs = [(books[0], 1, False), (books[1], -1, False), (books[2], -1, True), (books[3], 1, True),
             (books[4], -1, True)]
    n_workers = len(specs) + len(books) + 1  # + the committing group consumer
    gate = Gate(n_workers)
    workers: list[Worker] = []
    for i, (book, acks, idem) in enumerate(specs):
        name = f"p{i}-acks{'all' if acks == -1 else acks}-{'idem' if idem else 'plain'}"
        workers.append(Producer(name, bp, gate, stats, book, acks, idem, random.Random(rng.random())))
    for book in books:
        workers.append(Consumer(f"c-{book.topic}-{book.partition}", bp, gate, stats, book))
    workers.append(Committer("g-crash-1", bp, gate, stats, books[1]))
    for w in workers:
        w.start()

    index_files = 0
    points = sorted(CRASH_POINTS)
    try:
        for rnd in range(1, rounds + 1):
            how = "external"
            if rnd % 2 == 0:
                point = points[(rnd // 2) % len(points)]
                n = rng.randint(1, 40 if point in ("mid-append", "mid-index-write", "before-fsync") else 3)
                how = f"{point}:{n}"
                bp.stop()  # restart with the crash point armed (a clean restart is a case too)
                bp.cmd = [sys.executable, str(Path(__file__).resolve()), "--child", how, "--"]
                bp.start()
            deadline = time.monotonic() + rng.uniform(0.2, max(0.3, seconds))
            while time.monotonic() < deadline and bp.running:
                time.sleep(0.01)
            died_by_itself = not bp.running
            rc = bp.kill()
            if how != "external" and not died_by_itself:
                how += " (not reached; killed from outside)"
            bp.cmd = child[:3] + ["none:0", "--"]
            try:
                bp.start()
            except BrokerStartError as exc:
                stats.violation(f"round {rnd}: broker did not restart after the crash: {exc}")
                break
            if not gate.close():
                stats.violation(f"round {rnd}: workers did not pause")
            try:
                lost, dups = verify(bp, books, stats, rnd)
            except Exception as exc:  # a verifier failure is a finding, not a crash of the tool
                stats.violation(f"round {rnd}: verification failed: {exc!r}")
                lost = dups = 0
            stats.lost += lost
            stats.duplicates += dups
            index_files += verify_indexes(data, stats, rnd)
            gate.reopen()
            if not quiet:
                acked = sum(len(b.acked) for b in books)
                print(f"round {rnd}/{rounds}: {how} (exit {rc}); acked so far {acked}, lost {stats.lost}, "
                      f"duplicates {stats.duplicates}, violations {len(stats.violations)}", flush=True)
        # final: clean stop, every index verified with the broker down
        gate.close()
        bp.stop()
        index_files += verify_indexes(data, stats, rounds)
    finally:
        gate.stop = True
        gate.reopen()
        if bp.running:
            bp.stop()
        for w in workers:
            w.join(2)
    acked = sum(len(b.acked) for b in books)
    unknown = sum(len(b.unknown) for b in books)
    consumed = sum(len(b.consumed) for b in books)
    print(f"crash-test: rounds={rounds} acked={acked} lost={stats.lost} duplicates={stats.duplicates} "
          f"unacknowledged={unknown} consumed={consumed} consumer_resumes={stats.resumes} "
          f"idempotent_retries={stats.retried_batches} group_commits={stats.commits} "
          f"group_resumes={stats.group_resumes} index_files_checked={index_files} "
          f"violations={len(stats.violations)} seconds={time.monotonic() - t0:.0f} seed={seed}")
    if stats.errors and not quiet:
        print("client-visible errors (expected around crashes):", dict(sorted(stats.errors.items())))
    failed = stats.lost or stats.duplicates or stats.violations or acked == 0
    if failed:
        print(f"broker log: {bp.log_path}", file=sys.stderr)
    elif not keep and data_dir is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def _create_topics(bp) -> bool:
    """``crash`` (4 partitions, no retention) and ``churn`` (tiny segments, size retention) via
    CreateTopics; False if the broker does not serve it (``churn`` is then auto-created and
    only churns segments, without retention)."""
    from protocol.messages.create_topics import CreateTopicsRequest as R
    from tests.reliability.wire import Wire
    c = Wire(bp.bootstrap)
    try:
        cfg = [R.CreatableTopic.CreatableTopicConfig(name="retention.bytes", value=str(CHURN_RETENTION_BYTES)),
               R.CreatableTopic.CreatableTopicConfig(name="segment.bytes", value="4096")]
        req = R(topics=[R.CreatableTopic(name="crash", num_partitions=4, replication_factor=1, assignments=[],
                                         configs=[]),
                        R.CreatableTopic(name="churn", num_partitions=1, replication_factor=1, assignments=[],
                                         configs=cfg)], timeout_ms=10000, validate_only=False)
        resp = c.request(19, 5, req)
        return all(t.error_code == 0 for t in resp.topics)
    except Exception as exc:
        print(f"note: CreateTopics failed ({exc!r}); auto-creating instead", file=sys.stderr)
        return False
    finally:
        c.close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        spec = argv[1]
        rest = argv[3:] if len(argv) > 2 and argv[2] == "--" else argv[2:]
        if spec == "none:0":
            from hourglass.cli import main as cli_main
            return cli_main(rest)
        return child_main(spec, rest)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--seconds", type=float, default=2.0, help="longest run before each kill (random below it)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--data-dir", type=Path, default=None, help="keep the broker data here")
    p.add_argument("--keep", action="store_true", help="keep the temp data dir even on success")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    return run(a.rounds, a.seconds, seed, a.data_dir, a.keep, a.quiet)


if __name__ == "__main__":
    raise SystemExit(main())
