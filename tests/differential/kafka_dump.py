"""Kafka's own ``DumpLogSegments`` (kafka-dump-log.sh) run over a data dir, its output parsed.

``dump(files, *options)`` runs ``org.apache.kafka.tools.DumpLogSegments`` on the oracle's
classpath and parses what it prints, per file: batches (every field of the batch line), records
(``| offset: ...`` lines with key, payload and control marker), offset index entries
(``offset: O position: P``), time index entries (``timestamp: T offset: O``), transaction index
entries, producer snapshot entries, and the per-file verdicts (``passed sanity check.``,
``is empty.``). Its complaints are collected from stderr, where the tool prints them after all
files (``Mismatches in :``, ``Found timestamp mismatch in :``, ``Found out of order timestamp``,
``The following indexed offsets are not found in the log.``, ``Non-consecutive offsets in``),
and ``Found N invalid bytes at the end of`` from stdout. Holds no tests.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.kafka_oracle import run_tool

TOOL = "org.apache.kafka.tools.DumpLogSegments"
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")

_KV = re.compile(r"(\w+): (\S+)")
_RECORD = re.compile(r"^\| offset: (\d+) (CreateTime|LogAppendTime|NO_TIMESTAMP_TYPE): (-?\d+) keySize: (-?\d+) "
                     r"valueSize: (-?\d+)(?: sequence: (-?\d+) headerKeys: \[[^\]]*\])?(.*)$")


@dataclass
class Record:
    offset: int
    timestamp_type: str
    timestamp: int
    key_size: int
    value_size: int
    sequence: int | None
    key: str | None = None
    payload: str | None = None
    marker: str | None = None          # COMMIT / ABORT for a transaction marker


@dataclass
class Batch:
    fields: dict[str, str]
    timestamp_type: str
    records: list[Record] = field(default_factory=list)

    def __getitem__(self, k: str) -> str:
        return self.fields[k]

    def int(self, k: str) -> int:
        return int(self.fields[k])

    @property
    def max_timestamp(self) -> int:
        return int(self.fields[self.timestamp_type])


@dataclass
class FileDump:
    path: Path
    lines: list[str] = field(default_factory=list)
    batches: list[Batch] = field(default_factory=list)
    index: list[tuple[int, int]] = field(default_factory=list)        # (offset, position)
    time_index: list[tuple[int, int]] = field(default_factory=list)   # (timestamp, offset)
    txn_index: list[dict[str, int]] = field(default_factory=list)
    snapshot: list[dict[str, str]] = field(default_factory=list)
    passed_sanity: bool = False
    empty: bool = False
    invalid_trailing_bytes: int = 0


@dataclass
class DumpResult:
    returncode: int
    stdout: str
    stderr: str
    files: dict[Path, FileDump]

    def complaints(self) -> list[str]:
        """Every line of stderr, but the ``Non-consecutive offsets`` report (see ``gaps``), and
        every trailing-bytes notice: what a clean data dir must not produce."""
        out, skip = [], False
        for line in self.stderr.splitlines():
            if line.startswith("Non-consecutive offsets in "):
                skip = True
                continue
            if skip and line.startswith("  ") and " is followed by " in line:
                continue
            skip = False
            if line.strip():
                out.append(line)
        out += [f"{f.path}: {f.invalid_trailing_bytes} invalid bytes at the end"
                for f in self.files.values() if f.invalid_trailing_bytes]
        return out

    def gaps(self) -> dict[Path, list[tuple[int, int]]]:
        """``Non-consecutive offsets in F`` pairs (previous, next) per file. The tool starts
        every file at -1, so a segment whose first record is not offset 0 always has one."""
        out: dict[Path, list[tuple[int, int]]] = {}
        cur = None
        for line in self.stderr.splitlines():
            if line.startswith("Non-consecutive offsets in "):
                cur = Path(line[len("Non-consecutive offsets in "):].strip())
                out[cur] = []
            elif cur is not None and " is followed by " in line:
                a, b = line.strip().split(" is followed by ")
                out[cur].append((int(a), int(b)))
            else:
                cur = None
        return out


def segment_files(partition_dir: Path, suffixes=SEGMENT_SUFFIXES) -> list[Path]:
    return sorted(p for p in Path(partition_dir).iterdir() if p.suffix in suffixes)


def _parse_record(line: str) -> Record:
    m = _RECORD.match(line)
    if m is None:
        raise AssertionError(f"unparsed record line: {line!r}")
    off, tst, ts, ks, vs, seq, rest = m.groups()
    r = Record(int(off), tst, int(ts), int(ks), int(vs), None if seq is None else int(seq))
    rest = rest.lstrip()
    mk = re.match(r"endTxnMarker: (\w+) coordinatorEpoch: (-?\d+)", rest)
    if mk:
        r.marker = mk.group(1)
        return r
    # " key: K payload: V" (either may be missing); values are printed as strings
    km = re.match(r"key: (.*?)(?: payload: (.*))?$", rest)
    if km:
        r.key, r.payload = km.group(1), km.group(2)
    elif rest.startswith("payload: "):
        r.payload = rest[len("payload: "):]
    return r


def parse(stdout: str) -> dict[Path, FileDump]:
    files: dict[Path, FileDump] = {}
    cur: FileDump | None = None
    for line in stdout.splitlines():
        if line.startswith("Dumping "):
            cur = files.setdefault(Path(line[len("Dumping "):].strip()), FileDump(Path(line[len("Dumping "):].strip())))
            continue
        if cur is None:
            continue
        cur.lines.append(line)
        if line.startswith("baseOffset: "):
            fields = dict(_KV.findall(line))
            tst = "LogAppendTime" if "LogAppendTime" in fields else (
                "CreateTime" if "CreateTime" in fields else "NO_TIMESTAMP_TYPE")
            cur.batches.append(Batch(fields, tst))
        elif line.startswith("| offset: "):
            cur.batches[-1].records.append(_parse_record(line))
        elif line.startswith("offset: ") and " position: " in line:
            f = dict(_KV.findall(line))
            cur.index.append((int(f["offset"]), int(f["position"])))
        elif line.startswith("timestamp: ") and " offset: " in line:
            f = dict(_KV.findall(line))
            cur.time_index.append((int(f["timestamp"]), int(f["offset"])))
        elif line.startswith("version: ") and "producerId:" in line:
            cur.txn_index.append({k: int(v) for k, v in _KV.findall(line)})
        elif line.startswith("producerId: "):
            cur.snapshot.append(dict(_KV.findall(line)))
        elif line.endswith(" passed sanity check."):
            cur.passed_sanity = True
        elif line.endswith(" is empty."):
            cur.empty = True
        elif line.startswith("Found ") and " invalid bytes at the end of " in line:
            cur.invalid_trailing_bytes = int(line.split()[1])
    return files


def dump(files: list[Path], *options: str, timeout: float = 300.0) -> DumpResult:
    r = run_tool(TOOL, *options, "--files", ",".join(str(f) for f in files), check=False, timeout=timeout)
    return DumpResult(r.returncode, r.stdout, r.stderr, parse(r.stdout))
