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
                             if not e.deleted and e.schema == json.dumps(json.loads(schema(arg)), separators=(",", ":"))]
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
