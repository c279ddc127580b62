"""Profile the broker's hot paths with py-spy while stock clients load it.

    .venv/bin/python bench/profile.py [--workloads java_produce,java_consume,rdkafka_produce,ingest,serve]
                                      [--records 500000] [--top 25] [--out DIR]

Starts a broker (fresh data dir, port 0, as ``bench/run.py`` does), then for each workload
attaches ``py-spy record --nonblocking`` to the broker process for exactly the workload's
duration and prints two tables from the collapsed stacks: the top frames by *self* samples
(where the CPU goes) and by *inclusive* samples (which call paths cost). Idle samples (the
event loop waiting in epoll) are not recorded, so percentages are of busy time. The raw
collapsed stacks are kept in ``--out`` (default a temp dir) for flame graphs.

Workloads: ``java_produce`` (Java producer, 100 B, acks=1), ``java_consume`` (Java consumer
reading that topic from the beginning), ``java_produce_1KiB_acksall`` and ``java_consume_1KiB``
(the same at 1 KiB, acks=all), ``rdkafka_consume`` (librdkafka reading ``rdkafka_produce``'s topic), ``offsets_for_times`` (the shared suite's Java
``offsetsForTimes`` step: load, then 2000 timed lookups), ``rdkafka_produce`` (librdkafka, 100 B, acks=1),
``ingest`` / ``serve`` (1 MiB batches in, then fetched back, by ``bench/rawclient.py``).
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import SHARED, Hourglass, cpu_seconds, create_topic  # noqa: E402

PY_SPY = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")


def bench_env() -> dict:
    home = subprocess.run([str(SHARED / "setup.sh")], capture_output=True, text=True, check=True).stdout.strip()
    return dict(os.environ, BENCH_HOME=home)


def workload_cmd(name: str, bootstrap: str, topic: str, records: int, env: dict) -> list[str] | None:
    k = str(SHARED / "java" / "kbench.sh")
    rd_py = str(Path(env["BENCH_HOME"]) / "venv" / "bin" / "python")
    if name == "java_produce":
        return [k, "produce", "--bootstrap", bootstrap, "--topic", topic, "--records", str(records),
                "--record-size", "100", "--acks", "1", "--batch-size", "65536", "--linger-ms", "5", "--name", name]
    if name == "java_consume":
        return [k, "consume", "--bootstrap", bootstrap, "--topic", topic, "--records", str(records), "--name", name]
    if name == "offsets_for_times":
        return [k, "offsets-for-times", "--bootstrap", bootstrap, "--topic", topic + "-ofs", "--records",
                str(records // 5), "--record-size", "100", "--lookups", "2000", "--segment-bytes", str(1 << 20),
                "--name", name]
    if name == "rdkafka_produce":
        return [rd_py, str(SHARED / "rdkafka_bench.py"), "produce", "--bootstrap", bootstrap, "--topic",
                topic + "-rd", "--records", str(records * 2), "--record-size", "100", "--acks", "1", "--name", name]
    if name == "rdkafka_consume":   # reads back what rdkafka_produce wrote
        return [rd_py, str(SHARED / "rdkafka_bench.py"), "consume", "--bootstrap", bootstrap, "--topic",
                topic + "-rd", "--records", str(records * 2), "--name", name]
    if name == "java_produce_1KiB_acksall":   # the path furthest behind Kafka's in bench/run.py --kafka
        return [k, "produce", "--bootstrap", bootstrap, "--topic", topic + "-1k", "--records", str(records // 5),
                "--record-size", "1024", "--acks", "all", "--batch-size", "65536", "--linger-ms", "5", "--name", name]
    if name == "java_consume_1KiB":
        return [k, "consume", "--bootstrap", bootstrap, "--topic", topic + "-1k", "--records", str(records // 5),
                "--name", name]
    return None


def raw_ingest_and_serve(bootstrap: str, which: str, mib: int, topic: str) -> None:
    """1 MiB batches in (acks=1, 4 in flight), or all of them fetched back 32 MiB at a time."""
    from bench.rawclient import RawClient
    from protocol.messages.produce import ProduceRequest as PR
    from protocol.records import build_batch
    c = RawClient(bootstrap)
    if which == "ingest":
        batch = build_batch([(None, os.urandom(1024), int(time.time() * 1000))] * 1000)
        req = PR(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            PR.TopicProduceData(name=topic, partition_data=[PR.PartitionProduceData(index=0, records=batch)])])
        inflight = 0
        for _ in range(mib):
            c.send(0, 9, req)
            inflight += 1
            if inflight >= 4:
                c.recv(0, 9)
                inflight -= 1
        for _ in range(inflight):
            c.recv(0, 9)
    else:
        for _ in c.read_partition(topic):
            pass
    c.close()


def summarize(collapsed: Path, top: int) -> str:
    self_c: collections.Counter = collections.Counter()
    incl_c: collections.Counter = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        n = int(n)
        total += n
        frames = [f for f in stack.split(";") if f.strip()]
        # first frames are process/thread labels in py-spy's raw format; real frames hold "("
        frames = [f for f in frames if "(" in f] or frames
        self_c[_short(frames[-1])] += n
        for f in set(_short(f) for f in frames):
            incl_c[f] += n
    out = [f"  {total} busy samples", "  self%   frame"]
    out += [f"  {100 * n / total:5.1f}  {f}" for f, n in self_c.most_common(top)]
    out += ["  incl%   frame"]
    out += [f"  {100 * n / total:5.1f}  {f}" for f, n in incl_c.most_common(top)]
    return "\n".join(out)


def _short(frame: str) -> str:
    # "func (path/to/file.py:123)" -> "func (file.py:123)"; keep line numbers (the hot line matters)
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path, _, line = where.rpartition(":")
    return f"{name} ({Path(path).name}:{line})" if path else frame


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="java_produce,java_consume,rdkafka_produce,ingest,serve")
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--mib", type=int, default=1024, help="size of the ingest workload")
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if not PY_SPY:
        raise SystemExit("py-spy not found: .venv/bin/python -m pip install py-spy")
    out = Path(a.out or tempfile.mkdtemp(prefix="hourglass-profile-"))
    out.mkdir(parents=True, exist_ok=True)
    env = bench_env()
    tmp = Path(tempfile.mkdtemp(prefix="hourglass-profile-data-"))
    hg = Hourglass(tmp / "data")
    hg.start()
    topic = f"prof-{os.getpid()}"
    from bench.rawclient import RawClient
    c = RawClient(hg.bootstrap)
    create_topic(c, topic, 1)
    create_topic(c, topic + "-raw", 1)
    c.close()
    try:
        for w in a.workloads.split(","):
            collapsed = out / f"{w}.txt"
            spy = subprocess.Popen([PY_SPY, "record", "--pid", str(hg.proc.pid), "--format", "raw", "--nonblocking",
                                    "--rate", str(a.rate), "-o", str(collapsed)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(1.0)  # py-spy attaches
            cpu0, t0 = cpu_seconds(hg.proc.pid), time.perf_counter()
            cmd = workload_cmd(w, hg.bootstrap, topic, a.records, env)
            if cmd is not None:
                r = subprocess.run(cmd, capture_output=True, text=True, env=env)
                figures = " ".join(line for line in r.stdout.splitlines() if "_rps" in line or "_p50" in line
                                   or "_p99" in line)
            else:
                raw_ingest_and_serve(hg.bootstrap, w, a.mib, topic + "-raw")
                figures = ""
            dt, cpu = time.perf_counter() - t0, cpu_seconds(hg.proc.pid) - cpu0
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
            print(f"== {w}: {dt:.2f} s wall, broker {cpu:.2f} cpu-s  {figures}", flush=True)
            if collapsed.exists():
                print(summarize(collapsed, a.top), flush=True)
            else:
                print("  (no profile: " + spy.stderr.read().decode(errors="replace")[-300:] + ")")
    finally:
        hg.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"collapsed stacks in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
