"""The store against a brute-force model, over a real log (a broker's storage opened, no
server): random registrations and soft/permanent deletes; ids never reused, an identical
schema answers its live id, versions grow by one, and a replay of ``_schemas`` rebuilds the
same state."""
from __future__ import annotations

import asyncio
import json
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from broker.config import BrokerConfig
from broker.server import Broker
from schema_registry.errors import RegistryError
from schema_registry.store import SchemaStore

SUBJECTS = ["a", "b", "c"]


def schema(n: int) -> str:
    return json.dumps({"type": "record", "name": "R", "fields": [{"name": f"f{n}", "type": "int", "default": 0}]})


def open_store(data_dir: str) -> SchemaStore:
    broker = Broker(BrokerConfig.load(None, [f"log.dirs={data_dir}"]))
    broker.open_storage()
    store = SchemaStore(broker)
    asyncio.run(store.load())
    return store


def view(store: SchemaStore):
    return {s: {v: (e.id, e.deleted, e.schema) for v, e in vs.items()}
            for s, vs in store.state.subjects.items() if vs}


ops = st.lists(st.one_of(
    st.tuples(st.just("register"), st.sampled_from(SUBJECTS), st.integers(0, 4)),
    st.tuples(st.just("delete_subject"), st.sampled_from(SUBJECTS), st.booleans()),
    st.tuples(st.just("delete_version"), st.sampled_from(SUBJECTS), st.integers(1, 6)),
), max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_store_against_model(seq):
    with tempfile.TemporaryDirectory() as d:
        store = open_store(d)
        store.set_config(None, {"compatibility": "NONE"})
        ever: dict[int, int] = {}  # id -> content number: an id names one content forever
        highest = 0
        for op, subject, arg in seq:
            if op == "register":
                live_same = [e for e in store.state.subjects.get(subject, {}).values()
                             if not e.deleted and json.loads(e.schema) == json.loads(schema(arg))]
                known = next((i for i, c in ever.items() if c == arg and store.state.ids.get(i)), None)
                before_versions = store.state.subjects.get(subject, {})
                next_version = max(before_versions, default=0) + 1
                e = store.register(subject, {"schema": schema(arg)})
                if live_same:
                    assert (e.id, e.version) == (live_same[0].id, live_same[0].version)
                elif known is not None:
                    assert e.id == known and e.version == next_version
                else:
                    assert e.id > highest and e.version == next_version  # a fresh id: never one seen before
                assert ever.setdefault(e.id, arg) == arg
                highest = max(highest, e.id)
            elif op == "delete_subject":
                try:
                    store.delete_subject(subject, permanent=arg)
                except RegistryError as exc:
                    assert exc.error_code in (40401, 40404, 40405)
            else:
                try:
                    store.delete_version(subject, arg)
                    store.delete_version(subject, arg, permanent=True)
                except RegistryError as exc:
                    assert exc.error_code in (40401, 40402, 40406)
            for i, holders in store.state.ids.items():
                assert {json.loads(h.schema)["fields"][0]["name"] for h in holders.values()} == {f"f{ever[i]}"}
        store.broker.logs.shutdown()
        replayed = open_store(d)
        assert view(replayed) == view(store)
        assert replayed.state.max_id == store.state.max_id >= highest
        replayed.broker.logs.shutdown()


json_values = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                           max_leaves=8)
bodies = st.fixed_dictionaries({}, optional={
    "schema": st.one_of(json_values, st.sampled_from([schema(1), '"int"', '{"type":"object"}', "{", ""])),
    "schemaType": st.one_of(json_values, st.sampled_from(["AVRO", "JSON", "avro", "PROTOBUF"])),
    "references": st.one_of(json_values, st.lists(st.fixed_dictionaries(
        {"name": json_values, "subject": st.sampled_from(["a", "b", 1]), "version": json_values}), max_size=2)),
    "id": json_values, "version": json_values, "metadata": json_values, "ruleSet": json_values,
})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(bodies, min_size=1, max_size=5))
def test_hostile_bodies_get_confluent_errors_and_write_nothing_bad(seq):
    """Whatever the body, register and lookup answer or raise a RegistryError (never a crash),
    and nothing is written unless the registration succeeds."""
    with tempfile.TemporaryDirectory() as d:
        store = open_store(d)
        store.register("a", {"schema": schema(0)})
        for body in seq:
            end = store._plog().log_end_offset
            for fn in (lambda: store.lookup("a", body), lambda: store.register("b", body)):
                try:
                    fn()
                except RegistryError as exc:
                    assert exc.status in (404, 409, 422) and exc.error_code in (40401, 40403, 40901, 42201, 42205, 422)
            if store._plog().log_end_offset != end:
                assert any(isinstance(body.get("schema"), str) and e.schema for e in store.state.subjects["b"].values())
        store.broker.logs.shutdown()
