"""The Kafka Streams application of issue 35 (tests/jvm/streams-app) as a subprocess, its
TopologyTestDriver reference run, and the input designed so both give the same output.

The topology (``dev.hourglass.streams.StreamsApp``): events (key user, value amount, event time =
record timestamp) -> 10 s tumbling windows with 5 s grace, count and sum per user -> suppressed
until the window closes -> re-keyed by the user's region and repartitioned -> joined with the
KTable over ``regions`` -> ``window-results``, and running totals per region -> ``region-totals``.

Why the output is deterministic (what :func:`make_input` guarantees)
--------------------------------------------------------------------
TopologyTestDriver runs one task over one unpartitioned stream: its stream time is the maximum
over *all* input, and its output is one sequence. On a broker each input partition is its own
task with its own stream time, tasks move between instances, and the output topics have
partitions. The two agree record for record, per output partition, because the input is built so
that none of those differences can show:

1. *Partitions do not mix.* Every user whose events land in input partition ``p`` belongs to a
   region whose key also hashes (murmur2, Java's default partitioner) to ``p``; the repartition
   topic and both outputs have as many partitions as the input. So output partition ``p`` holds
   exactly what task ``p`` produced, in the order it produced it, and the driver's output
   filtered to the keys of partition ``p`` is the same sequence.
2. *Stream time moves in lockstep.* The input is a sequence of rounds; in round ``r`` every
   partition gets records in window ``r`` (event times ``[10r, 10r + 5)`` s, the first one at
   ``10r`` s exactly) and late records of window ``r - 1`` (``[10r - 3, 10r)`` s) after that
   first one. Whatever order the partitions are read in, the stream time of every task (and the
   driver's global one) stays inside ``[10r, 10r + 5)`` s during round ``r``: a late record is
   always within grace (window ``r - 1`` closes at ``10r + 5`` s) and window ``r - 1`` is emitted
   by the first record of round ``r + 1``, in every partition and in the driver alike.
3. *The suppression buffer emits in (window end, key) order*, so whether windows are emitted one
   batch at a time or after a restart's catch-up, a partition's sequence is the same.
4. *No record is too late.* Kafka Streams keeps the observed stream time of a window aggregation
   in memory only: after a restart or a task moving to another instance it starts again from
   the next record. A record beyond grace would be dropped in the driver but could be counted
   after a restart, so the input has none (that is Kafka Streams' behaviour, not the broker's).
5. *The table is there first.* ``regions`` is written before any event and with timestamps before
   them; the join's task picks the smallest timestamp among its partitions and, with
   ``max.task.idle.ms`` 0, waits for a partition whose lag it does not know yet.
6. *No caching.* ``statestore.cache.max.bytes=0``: each update is forwarded when made, as the
   driver does, not when a commit happens to flush.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.partitioner.default import murmur2

from tests.helpers import jvm

MAIN = "dev.hourglass.streams.StreamsApp"
EVENTS, REGIONS = "events", "regions"
WINDOW_RESULTS, REGION_TOTALS = "window-results", "region-totals"
OUTPUTS = (WINDOW_RESULTS, REGION_TOTALS)
WINDOW_MS, GRACE_MS = 10_000, 5_000

LOG4J_LEVELS = {"org.apache.kafka.clients": "WARN", "org.apache.kafka.streams": "INFO"}
LOG4J_PATTERN = "[%d] %p [%t] %m (%c)%n"


def libs() -> Path:
    return jvm.libs(f"streams-app-{jvm.version('kafka')}")


def partition_of(key: str, partitions: int) -> int:
    """Java's default partitioner for a keyed record (murmur2 of the key bytes, sign bit off)."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


Row = tuple[str, str, str, int]  # topic, key, value, timestamp


@dataclass
class StreamsInput:
    """The regions table and the events, round by round; ``partitions`` for every topic."""
    partitions: int
    regions: list[Row]
    rounds: list[list[Row]]  # each round: events of every partition, in the order to produce them
    users: dict[int, list[str]] = field(default_factory=dict)

    def rows(self) -> list[Row]:
        """Everything in the order the driver is fed (and each partition is produced)."""
        return self.regions + [r for rnd in self.rounds for r in rnd]

    @property
    def events(self) -> int:
        return sum(len(r) for r in self.rounds)


def _names(prefix: str, partitions: int, want: int, start: int = 0) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {p: [] for p in range(partitions)}
    i = start
    while any(len(v) < want for v in found.values()):
        name = f"{prefix}{i}"
        p = partition_of(name, partitions)
        if len(found[p]) < want:
            found[p].append(name)
        i += 1
    return found


def make_input(partitions: int = 4, rounds: int = 30, per_round: int = 40, seed: int = 35,
               regions_per_partition: int = 2, users_per_region: int = 3, t0: int | None = None) -> StreamsInput:
    """Input for which the broker's output must equal the driver's (see the module docstring).

    One region per partition has no row in ``regions`` (the inner join drops its windows), and
    every region row is written twice (the compacted changelog keeps the second).
    """
    rnd = random.Random(seed)
    # Event times end a little before now (a multiple of the window size): far older ones would
    # be deleted from the windowed store's changelog by its retention.ms (a day), as Kafka does.
    if t0 is None:
        t0 = (int(time.time() * 1000) // WINDOW_MS - rounds - 6) * WINDOW_MS
    T0 = t0
    regions = _names("r", partitions, regions_per_partition + 1)
    users: dict[int, list[str]] = {p: [] for p in range(partitions)}
    for p in range(partitions):
        for region in regions[p]:
            i = 0
            while sum(1 for u in users[p] if u.startswith(region + "-")) < users_per_region:
                name = f"{region}-u{i}"
                if partition_of(name, partitions) == p:
                    users[p].append(name)
                i += 1
    region_rows: list[Row] = []
    ts = T0 - 60_000
    for version in ("old", "new"):
        for p in range(partitions):
            for region in regions[p][:regions_per_partition]:  # the last one stays unknown
                region_rows.append((REGIONS, region, f"{region.upper()}-{version}", ts))
                ts += 1
    out_rounds: list[list[Row]] = []
    for r in range(rounds):
        base = T0 + r * WINDOW_MS
        this: list[Row] = []
        for p in range(partitions):
            rows: list[Row] = [(EVENTS, rnd.choice(users[p]), str(rnd.randint(1, 100)), base)]
            for _ in range(per_round - 1):
                late = r > 0 and rnd.random() < 0.2
                t = base - rnd.randint(1, 3000) if late else base + rnd.randint(0, GRACE_MS - 1)
                rows.append((EVENTS, rnd.choice(users[p]), str(rnd.randint(1, 100)), t))
            this += rows
        out_rounds.append(this)
    return StreamsInput(partitions, region_rows, out_rounds, users)


def create_topics(bootstrap: str, partitions: int, timeout: float = 30.0) -> None:
    """The application's input and output topics, ``partitions`` each (``regions`` compacted: a table)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(EVENTS, partitions, 1), NewTopic(REGIONS, partitions, 1, config={"cleanup.policy": "compact"}),
              NewTopic(WINDOW_RESULTS, partitions, 1), NewTopic(REGION_TOTALS, partitions, 1)]
    for f in admin.create_topics(topics).values():
        f.result(timeout)


def produce(producer: Producer, rows: list[Row], partitions: int) -> None:
    """Each row into the partition Java's default partitioner picks for its key (what
    :func:`make_input` designed), in order, waiting out a full queue; the caller flushes."""
    for topic, key, value, ts in rows:
        while True:
            try:
                producer.produce(topic, value=value.encode(), key=key.encode(), timestamp=ts,
                                 partition=partition_of(key, partitions))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)


def run_driver(rows: list[Row], workdir: Path) -> list[Row]:
    """The same topology in TopologyTestDriver over ``rows``: its output, in order."""
    workdir.mkdir(parents=True, exist_ok=True)
    inp, out = workdir / "driver-input.tsv", workdir / "driver-output.tsv"
    inp.write_text("".join(f"{t}\t{k}\t{v}\t{ts}\n" for t, k, v, ts in rows))
    log = workdir / "driver.log"
    (workdir / "log4j2.properties").write_text(jvm.log4j2_properties(log, LOG4J_LEVELS, LOG4J_PATTERN))
    r = subprocess.run([jvm.java(), "-Xmx512m", f"-Dlog4j2.configurationFile={workdir / 'log4j2.properties'}",
                        "-cp", jvm.classpath(libs()), MAIN, "driver", str(inp), str(out)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"TopologyTestDriver run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    rows_out = []
    for line in out.read_text().splitlines():
        t, k, v, ts = line.split("\t")
        rows_out.append((t, k, v, int(ts)))
    return rows_out


def by_partition(rows: list[Row], partitions: int) -> dict[tuple[str, int], list[tuple[str, str, int]]]:
    """Output rows per (topic, partition) as the broker would hold them: key, value, timestamp."""
    out: dict[tuple[str, int], list[tuple[str, str, int]]] = {}
    for t, k, v, ts in rows:
        out.setdefault((t, partition_of(k, partitions)), []).append((k, v, ts))
    return out


class StreamsAppProcess:
    """One instance of the application (a JVM), its state in ``state_dir``, log in ``log_path``.

    ``states`` collects the ``KafkaStreams.State`` changes the app prints, in order.
    """

    def __init__(self, bootstrap: str, app_id: str, workdir: Path, name: str, extra: dict | None = None):
        self.bootstrap, self.app_id, self.name = bootstrap, app_id, name
        self.workdir = workdir / name
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state_dir = self.workdir / "state"
        self.log_path = self.workdir / "streams.log"
        self.extra = {"repartition.purge.interval.ms": 1000, **(extra or {})}
        self.proc: subprocess.Popen | None = None
        self._cds_dump: Path | None = None
        self.states: list[str] = []
        self.lines: list[str] = []
        self._cv = threading.Condition()

    def start(self, fresh_state: bool = False) -> "StreamsAppProcess":
        if fresh_state:
            self.state_dir = self.workdir / f"state-{time.monotonic_ns()}"
        (self.workdir / "log4j2.properties").write_text(jvm.log4j2_properties(self.log_path, LOG4J_LEVELS, LOG4J_PATTERN))
        cp = jvm.classpath(libs())
        # a test starts instances again and again: class-data sharing halves a start's CPU
        cds, self._cds_dump = jvm.class_share("streams-app", cp)
        argv = [jvm.java(), "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", *cds,
                f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                "-cp", cp, MAIN, "run", self.bootstrap, self.app_id, str(self.state_dir),
                *(f"{k}={v}" for k, v in self.extra.items())]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        return self

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._cv:
                self.lines.append(line.rstrip())
                if line.startswith("STATE "):
                    self.states.append(line.split()[1])
                self._cv.notify_all()

    def wait_state(self, state: str, timeout: float = 90.0, after: int = 0) -> None:
        """Wait until the app reported ``state`` (at index ``after`` or later of ``states``)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while state not in self.states[after:]:
                if self.proc is not None and self.proc.poll() is not None:
                    raise AssertionError(f"{self.name} exited {self.proc.returncode}:\n{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name} not {state} within {timeout:.0f} s "
                                         f"(states {self.states}):\n{self.tail()}")
                self._cv.wait(min(left, 0.5))

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL: no shutdown hook, no commit, open transactions left to the broker."""
        if self.running:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._settle()

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM: the app closes, leaving its group (another instance takes its tasks)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._settle()
        return self.proc.returncode

    def _settle(self) -> None:
        """The class-data archive this start wrote (if any), once the JVM has exited."""
        if self.proc is not None and self.proc.poll() is not None:
            jvm.settle_class_share(self._cds_dump, self.proc.returncode)
            self._cds_dump = None

    def tail(self, n: int = 60) -> str:
        log = ""
        try:
            log = "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            pass
        return "\n".join(self.lines[-20:]) + f"\n--- {self.log_path} ---\n" + log
