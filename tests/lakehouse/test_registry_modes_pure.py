"""The pure decisions of the registry modes (lakehouse.registry_modes) and the Avro translator
(lakehouse.value_formats.avro), against brute-force models: the wire-format prefix, the mode's
options, exactly once across the topic's table and its dead-letter table through crashes
between the two commits, and Avro values -> rows pyarrow takes for the translator's columns."""
from __future__ import annotations

import datetime as dt
import io
import json
import re
import struct
from decimal import Decimal

import fastavro
import pytest
from hypothesis import given, settings, strategies as st

from lakehouse.registry_modes import ModeSettings, fresh, plan_commits, settings as mode_settings, wire_prefix
from lakehouse.translate import last_offsets, resume_offsets
from lakehouse.value_formats import Translator, translator
from storage.log_config import parse_iceberg_mode


@given(st.binary(max_size=12))
def test_wire_prefix_against_the_format(value):
    if len(value) >= 5 and value[0] == 0:
        assert wire_prefix(value) == (struct.unpack(">I", value[1:5])[0], value[5:])
    else:
        with pytest.raises(ValueError):
            wire_prefix(value)


def test_null_value_has_no_prefix():
    with pytest.raises(ValueError, match="magic byte"):
        wire_prefix(None)


def test_mode_options_as_redpanda_writes_them():
    assert mode_settings("value_schema_id_prefix", "t") == ModeSettings("value_schema_id_prefix")
    assert mode_settings("value_schema_latest", "sensor") == ModeSettings("value_schema_latest", "sensor-value")
    assert mode_settings("value_schema_latest:subject=s,protobuf_name=a.b.C", "t") == \
        ModeSettings("value_schema_latest", "s", "a.b.C")
    assert mode_settings("value_schema_latest:protobuf_name=a.B", "t") == ModeSettings("value_schema_latest", "t-value", "a.B")
    for bad in ("value_schema_latest:", "value_schema_latest:subject", "value_schema_latest:x=1",
                "key_value:subject=s", "value_schema_latest:subject=a,subject=b", "Key_Value", ""):
        with pytest.raises(ValueError):
            parse_iceberg_mode(bad)


# ---- exactly once across two tables ---------------------------------------------------------
# The log: per record (partition, offset, good?). Rounds read a random stretch of each partition
# from where the topic's table resumes; a crash may land after the dead-letter commit and before
# the topic's (or before both). The tables are modelled as what their snapshots hold.

record = st.tuples(st.integers(0, 2), st.booleans())


def row(p: int, o: int) -> dict:
    return {"redpanda": {"partition": p, "offset": o}}


@settings(max_examples=300, deadline=None)
@given(st.lists(record, min_size=1, max_size=60), st.lists(st.tuples(st.integers(1, 8), st.sampled_from(
    ("ok", "crash_between", "crash_before"))), min_size=1, max_size=40))
def test_each_record_is_one_row_of_one_table_through_crashes(log, rounds):
    offsets: dict[int, int] = {}
    records = []  # (partition, offset, good)
    for p, good in log:
        o = offsets.get(p, 0)
        offsets[p] = o + 1
        records.append((p, o, good))
    main: list = []
    dlq: list = []
    main_summary: dict = {}
    dlq_summary: dict = {}

    def run(step: int, crash: str) -> None:
        nonlocal main_summary, dlq_summary
        start = resume_offsets(main_summary)  # translation resumes from the topic's table
        covered, rows, dead = {}, [], []
        for p, end in offsets.items():
            todo = [(o, g) for q, o, g in records if q == p and o >= start.get(p, 0)][:step]
            if todo:
                covered[p] = todo[-1][0]
                for o, g in todo:
                    (rows if g else dead).append(row(p, o))
        if not covered:
            return
        plan = plan_commits(last_offsets(main_summary), last_offsets(dlq_summary), covered, rows, dead)
        if crash == "crash_before":
            return
        if plan.dlq_summary is not None:
            dlq.extend(plan.dlq_rows)
            dlq_summary = plan.dlq_summary
        if crash == "crash_between":
            return
        main.extend(plan.rows)
        main_summary = plan.summary

    for step, crash in rounds:
        run(step, crash)
    while resume_offsets(main_summary) != {p: n for p, n in offsets.items()}:
        run(8, "ok")  # after the last restart, translation catches up
    got_main = sorted((r["redpanda"]["partition"], r["redpanda"]["offset"]) for r in main)
    got_dlq = sorted((r["redpanda"]["partition"], r["redpanda"]["offset"]) for r in dlq)
    assert got_main == sorted((p, o) for p, o, g in records if g)
    assert got_dlq == sorted((p, o) for p, o, g in records if not g)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20))), st.dictionaries(st.integers(0, 3), st.integers(-1, 20)))
def test_fresh_keeps_rows_above_the_tables_offsets(rows, last):
    got = fresh([row(p, o) for p, o in rows], last)
    assert [(r["redpanda"]["partition"], r["redpanda"]["offset"]) for r in got] == \
        [(p, o) for p, o in rows if o > last.get(p, -1)]


# ---- Avro -> columns -------------------------------------------------------------------------
SCHEMA = {"type": "record", "name": "R", "namespace": "t", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
    {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
    {"name": "y", "type": "bytes"}, {"name": "opt", "type": ["null", "long"]},
    {"name": "u", "type": ["null", "int", "string"]},
    {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
    {"name": "date", "type": {"type": "int", "logicalType": "date"}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "arr", "type": {"type": "array", "items": ["null", "string"]}},
    {"name": "m", "type": {"type": "map", "values": "int"}},
    {"name": "nested", "type": {"type": "record", "name": "N", "fields": [{"name": "x", "type": "F4"}]}},
]}
i32, i64 = st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1)
text = st.text(max_size=6)
values = st.fixed_dictionaries({
    "b": st.booleans(), "i": i32, "l": i64, "f": st.floats(width=32, allow_nan=False),
    "d": st.floats(allow_nan=False), "s": text, "y": st.binary(max_size=6), "opt": st.none() | i64,
    "u": st.none() | i32 | text, "e": st.sampled_from(["A", "B"]), "fx": st.binary(min_size=4, max_size=4),
    "dec": st.integers(-10**11, 10**11).map(lambda n: Decimal(n).scaleb(-3)),
    "date": st.dates(), "ts": st.integers(0, 2**50).map(lambda us: dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=us)),
    "arr": st.lists(st.none() | text, max_size=3), "m": st.dictionaries(text, i32, max_size=3),
    "nested": st.fixed_dictionaries({"x": st.binary(min_size=4, max_size=4)})})


def _union_model(v):
    """The struct Redpanda makes of ["null", "int", "string"]: one field per non-null branch."""
    if v is None:
        return None
    return {"0": v if isinstance(v, int) else None, "1": v if isinstance(v, str) else None}


@settings(max_examples=150, deadline=None)
@given(values)
def test_avro_values_become_the_rows_arrow_takes(v):
    import pyarrow as pa
    from pyiceberg.schema import Schema
    t = translator("AVRO", json.dumps(SCHEMA), {})
    assert isinstance(t, Translator)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(SCHEMA), v)
    got = pa.Table.from_pylist([t.decode(buf.getvalue())], schema=Schema(*t.struct.fields).as_arrow()).to_pylist()[0]
    want = {**v, "u": _union_model(v["u"]), "m": sorted(v["m"].items()), "ts": v["ts"]}
    got["m"] = sorted(got["m"])
    assert got == want


def test_avro_types_map_as_redpanda_documents():
    t = translator("AVRO", json.dumps(SCHEMA), {})
    types = {f.name: re.sub(r"\d+: ", "", str(f.field_type)) for f in t.struct.fields}  # ids (and the union struct's names "0", "1") aside
    assert types == {"b": "boolean", "i": "int", "l": "long", "f": "float", "d": "double", "s": "string",
                     "y": "binary", "opt": "long", "u": "struct<optional int, optional string>",
                     "e": "string", "fx": "fixed[4]", "dec": "decimal(12, 3)", "date": "date", "ts": "timestamptz",
                     "arr": "list<string>", "m": "map<string, int>", "nested": "struct<x: optional fixed[4]>"}
    assert [f.name for f in t.struct.field_by_name("u").field_type.fields] == ["0", "1"]
    assert all(not f.required for f in t.struct.fields)


def test_avro_refusals_and_bad_bytes():
    rec = {"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]}
    with pytest.raises(ValueError, match="recursive"):
        translator("AVRO", json.dumps(rec), {})
    with pytest.raises(ValueError, match="record"):
        translator("AVRO", '"string"', {})
    t = translator("AVRO", json.dumps({"type": "record", "name": "P", "fields": [{"name": "s", "type": "string"}]}), {})
    for bad in (b"", b"\x10ab", b"\x02a\x00"):  # short, truncated, a byte past the datum
        with pytest.raises(ValueError):
            t.decode(bad)
    # a named type defined by a referenced schema (Confluent's schema references)
    ref = {"type": "record", "name": "Money", "namespace": "m", "fields": [{"name": "cents", "type": "long"}]}
    t = translator("AVRO", json.dumps({"type": "record", "name": "O", "fields": [{"name": "total", "type": "m.Money"}]}),
                   {"money.avsc": json.dumps(ref)})
    assert t.decode(b"\x04") == {"total": {"cents": 2}}  # zigzag 2
