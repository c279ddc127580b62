"""The registry modes' value translators: records per second each decodes into table rows.

In process, no broker: for Avro, Protobuf and JSON Schema, one order-like schema (an id, a
name, a double, a timestamp, a list of two nested lines, an optional note) is translated once
(``lakehouse.value_formats.translator``, as the table side does per schema id), ``--records``
values written by each format's own library (fastavro, protobuf, json) are decoded, and the
rows are turned into an Arrow table of the struct's schema (what a commit writes). Rounds
alternate the formats; prints ``name value unit``:

    value_formats.<fmt>.decode   median records/s of ``decode`` alone
    value_formats.<fmt>.arrow    median records/s of ``decode`` plus ``pa.Table.from_pylist``

    .venv/bin/python bench/value_formats.py [--records 20000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

AVRO = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "price", "type": "double"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "long"}]}}},
    {"name": "note", "type": ["null", "string"], "default": None}]}
PROTO = """syntax = "proto3";
package bench;
import "google/protobuf/timestamp.proto";
message Order {
  message Line { string sku = 1; int64 qty = 2; }
  int64 id = 1; string name = 2; double price = 3; google.protobuf.Timestamp at = 4;
  repeated Line lines = 5; optional string note = 6;
}
"""
JSON = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["id"], "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "price": {"type": "number"},
    "at": {"type": "string", "format": "date-time"},
    "lines": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "integer"}}}},
    "note": {"type": ["string", "null"]}}}


def payloads(fmt: str, n: int, tr) -> list[bytes]:
    out = []
    for i in range(n):
        order = {"id": i, "name": f"order-{i}", "price": i / 4, "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": i}],
                 "note": None if i % 2 else "gift"}
        if fmt == "AVRO":
            import fastavro
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, fastavro.parse_schema(AVRO), {**order, "at": 1_700_000_000_000_000 + i})
            out.append(buf.getvalue())
        elif fmt == "PROTOBUF":
            m = tr.message_class(id=i, name=order["name"], price=order["price"])
            m.at.seconds = 1_700_000_000 + i
            for line in order["lines"]:
                m.lines.add(**line)
            if order["note"] is not None:
                m.note = order["note"]
            out.append(m.SerializeToString())
        else:
            out.append(json.dumps({**order, "at": "2026-12-07T10:00:00.123456Z"}).encode())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import pyarrow as pa
    from pyiceberg.schema import Schema

    from lakehouse.value_formats import translator
    schemas = {"AVRO": json.dumps(AVRO), "PROTOBUF": PROTO, "JSON": json.dumps(JSON)}
    translators = {fmt: translator(fmt, text, {}) for fmt, text in schemas.items()}
    data = {fmt: payloads(fmt, args.records, tr) for fmt, tr in translators.items()}
    results: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for fmt, tr in translators.items():
            arrow = Schema(*tr.struct.fields).as_arrow()
            t0 = time.perf_counter()
            rows = [tr.decode(p) for p in data[fmt]]
            t1 = time.perf_counter()
            assert pa.Table.from_pylist(rows, schema=arrow).num_rows == args.records
            t2 = time.perf_counter()
            results.setdefault(f"{fmt.lower()}.decode", []).append(args.records / (t1 - t0))
            results.setdefault(f"{fmt.lower()}.arrow", []).append(args.records / (t2 - t0))
    for name, values in results.items():
        print(f"value_formats.{name} {statistics.median(values):.0f} records/s")


if __name__ == "__main__":
    main()
