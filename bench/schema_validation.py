"""Produce throughput with schema ID validation off (this checkout vs a base checkout, e.g.
main) and on (this checkout, registry on, every record checked), rounds interleaved.

    .venv/bin/python bench/schema_validation.py [--base DIR] [--rounds 5] [--records 100000]

Without ``--base`` the script exports ``git archive main`` to a temp dir and runs that code
with this venv. Prints one ``name value unit`` line per figure: records/s medians and the
off/base ratio, which must sit within the noise of repeated base runs (printed as base_spread).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VALUE_SCHEMA = {"type": "record", "name": "Tick", "fields": [{"name": "v", "type": "string"}]}


def start(root: Path, tmp: Path, registry: bool):
    data = Path(tempfile.mkdtemp(dir=tmp))
    ready = data.with_suffix(".ready")
    cmd = [sys.executable, "-m", "broker", "--log-level", "WARNING", "serve", "--port", "0",
           "--data-dir", str(data), "--ready-file", str(ready)]
    if registry:
        cmd += ["--override", "schema.registry.listeners=http://127.0.0.1:0"]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    while not (ready.exists() and ready.read_text().strip()):
        if proc.poll() is not None or time.monotonic() - t0 > 30:
            raise RuntimeError(f"broker in {root} did not start")
        time.sleep(0.01)
    lines = ready.read_text().splitlines()
    bootstrap = lines[0].strip().replace("0.0.0.0", "127.0.0.1")
    url = next((ln.split()[2] for ln in lines if ln.startswith("service schema-registry ")), None)
    return proc, bootstrap, url


def produce(bootstrap: str, topic: str, values: list[bytes]) -> float:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1, "batch.num.messages": 10000})
    t0 = time.perf_counter()
    for v in values:
        while True:
            try:
                p.produce(topic, v)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(60) == 0
    return len(values) / (time.perf_counter() - t0)


def run_variant(root: Path, tmp: Path, n: int, validation: bool) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic
    proc, bootstrap, url = start(root, tmp, validation)
    try:
        cfg = {"confluent.value.schema.validation": "true"} if validation else {}
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("bench", 1, 1, config=cfg)])["bench"].result(10)
        body = b"x" * 95
        if validation:
            req = urllib.request.Request(f"{url}/subjects/bench-value/versions", method="POST",
                                         data=json.dumps({"schema": json.dumps(VALUE_SCHEMA)}).encode(),
                                         headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
            for _ in range(100):
                try:
                    sid = json.load(urllib.request.urlopen(req, timeout=5))["id"]
                    break
                except OSError:
                    time.sleep(0.05)
            body = b"\x00" + sid.to_bytes(4, "big") + body[5:]
        produce(bootstrap, "bench", [body] * 2000)  # warm-up
        return produce(bootstrap, "bench", [body] * n)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="checkout to compare with (default: git archive main)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--records", type=int, default=100_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hg-bench-sv-") as t:
        tmp = Path(t)
        base = Path(a.base) if a.base else tmp / "base"
        if not a.base:
            base.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", "main"], check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        res: dict[str, list[float]] = {"base": [], "off": [], "on": []}
        for _ in range(a.rounds):
            res["base"].append(run_variant(base, tmp, a.records, False))
            res["off"].append(run_variant(ROOT, tmp, a.records, False))
            res["on"].append(run_variant(ROOT, tmp, a.records, True))
        med = {k: statistics.median(v) for k, v in res.items()}
        for k in ("base", "off", "on"):
            print(f"produce_{k} {med[k]:.0f} records/s  (rounds: {', '.join(f'{x:.0f}' for x in res[k])})")
        print(f"off_vs_base {med['off'] / med['base']:.3f} ratio")
        print(f"on_vs_off {med['on'] / med['off']:.3f} ratio")
        print(f"base_spread {(max(res['base']) - min(res['base'])) / med['base']:.3f} fraction")


if __name__ == "__main__":
    main()
