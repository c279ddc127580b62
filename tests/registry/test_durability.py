"""The registry survives clean restarts and kill -9 in the middle of registrations: every
acknowledged registration comes back with its id, no id is ever handed out twice (also after
permanent deletes), and the state is rebuilt from ``_schemas`` alone."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

from tests.helpers.broker import BrokerProcess
from tests.helpers.kafka_oracle import free_port

CT = "application/vnd.schemaregistry.v1+json"


def post(url, body, timeout=5.0):
    req = urllib.request.Request(url, method="POST", data=json.dumps(body).encode(), headers={"Content-Type": CT})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def get(url, timeout=10.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def schema(n: int) -> str:
    return json.dumps({"type": "record", "name": f"R{n}", "fields": [{"name": f"f{n}", "type": "int"}]})


def test_kill_9_and_restart_mid_registration(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = BrokerProcess(tmp_path / "data", {"schema.registry.listeners": url})
    acked: dict[int, tuple[str, int]] = {}  # n -> (subject, id)
    n = 0
    try:
        proc.start()
        for rnd in range(6):
            stop = threading.Event()
            errors = []

            def writer():
                nonlocal n
                while not stop.is_set():
                    n += 1
                    try:
                        body = post(f"{url}/subjects/sub-{n % 7}/versions?normalize=false", {"schema": schema(n)})
                        acked[n] = (f"sub-{n % 7}", body["id"])
                    except (OSError, urllib.error.URLError, json.JSONDecodeError):
                        if not stop.is_set():
                            errors.append(n)

            # every subject accepts any change, so the writer never meets 409
            if rnd == 0:
                assert get(url + "/config")[0] == 200
                req = urllib.request.Request(url + "/config", method="PUT", data=b'{"compatibility":"NONE"}',
                                             headers={"Content-Type": CT})
                urllib.request.urlopen(req, timeout=10).read()
            t = threading.Thread(target=writer)
            t.start()
            # let some registrations through, then crash mid-flight (every other round: clean stop)
            deadline = len(acked) + 15
            while len(acked) < deadline and t.is_alive():
                threading.Event().wait(0.01)
            if rnd % 2 == 0:
                proc.kill()
            else:
                proc.stop()
            stop.set()
            t.join(10)
            proc.start()
            # everything acknowledged is there, with its id
            ids = {}
            for k, (subj, sid) in acked.items():
                status, body = get(f"{url}/schemas/ids/{sid}")
                assert status == 200 and json.loads(body["schema"]) == json.loads(schema(k)), (k, sid, body)
                ids.setdefault(sid, k)
            assert len(ids) == len(acked), "two acknowledged schemas share an id"
        # a permanent delete of the highest id, then a restart: that id stays spent
        top = max(sid for _, sid in acked.values())
        subj = next(s for s, sid in acked.values() if sid == top)
        versions = get(f"{url}/subjects/{subj}/versions")[1]
        for v in versions:
            status, body = get(f"{url}/subjects/{subj}/versions/{v}")
            if body["id"] == top:
                for q in ("", "?permanent=true"):
                    req = urllib.request.Request(f"{url}/subjects/{subj}/versions/{v}{q}", method="DELETE")
                    urllib.request.urlopen(req, timeout=10).read()
        assert get(f"{url}/schemas/ids/{top}")[0] == 404
        proc.kill()
        proc.start()
        new_id = post(f"{url}/subjects/fresh/versions", {"schema": schema(10**6)})["id"]
        assert new_id > top
    finally:
        proc.stop()


def test_state_survives_compaction():
    """Replaying ``_schemas`` as compaction leaves it (the last record per key, tombstones
    gone) gives the same subjects, versions and ids as the full log, and the same next id:
    the NOOP ``maxId`` record keeps a permanently deleted id spent."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from hourglass.embedded import EmbeddedBroker
    from schema_registry.store import RegistryState
    from tests.registry.test_api import read_schemas_topic

    with EmbeddedBroker(schema_registry=True) as b:
        c = SchemaRegistryClient({"url": b.schema_registry_url})
        c.set_compatibility(None, "NONE")
        for i in range(12):
            c.register_schema(f"s{i % 3}", Schema(schema(i), "AVRO"))
        c.delete_version("s0", 2)
        c.delete_subject("s1")
        c.delete_subject("s2")
        c.delete_subject("s2", permanent=True)  # holds the highest id
        c.delete_version("s0", 4)
        c.delete_version("s0", 4, permanent=True)
        records = read_schemas_topic(b)
    full = RegistryState()
    for k, v in records:
        full.apply(k, v, 0)
    last = {}
    for k, v in records:
        last.pop(k, None)
        last[k] = v
    compacted = RegistryState()
    for k, v in last.items():
        if v is not None:
            compacted.apply(k, v, 0)

    def view(st):
        return {s: {v: (e.id, e.deleted, e.schema) for v, e in vs.items()} for s, vs in st.subjects.items() if vs}

    assert view(compacted) == view(full)
    assert compacted.max_id == full.max_id == 12
    assert "s2" not in view(full) and view(full)["s1"] and all(e[1] for e in view(full)["s1"].values())
