"""Our message declarations against Kafka 4.4's own specs: for every API and every version both
declare, each request and response has the same fields in the same order with the same types
(and the same tagged fields), read from the ``common/message/*.json`` files inside the
kafka-clients jar ``make jvm`` resolved. A field Kafka added to a version we serve, or one we
declare differently, would make our codec misread a Kafka client's message."""
from __future__ import annotations

import json
import re
import zipfile

import pytest

from protocol.api_keys import APIS
from protocol.schema import Versions
from tests.helpers import jvm
from tests.helpers.kafka_oracle import kafka_libs

# Field names we spell differently from Kafka (same position and type on the wire), with why.
RENAMED = {
    ("TxnOffsetCommit", "generation_id"): "Kafka 4 renamed GenerationId to GenerationIdOrMemberEpoch (KIP-848); "
                                          "the same int32 at the same place",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])|(?<=[A-Z])([A-Z])(?=[a-z])", r"_\1\2", name).lower()


def _load_specs() -> dict[str, dict]:
    jar = kafka_libs() / f"kafka-clients-{jvm.version('kafka')}.jar"
    specs = {}
    with zipfile.ZipFile(jar) as z:
        for n in z.namelist():
            if n.startswith("common/message/") and n.endswith(".json"):
                text = z.read(n).decode()
                text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
                spec = json.loads(text)
                specs[spec["name"]] = spec
    return specs


def _kafka_type(t: str) -> str:
    t = t.replace("[]", "[]", 1)
    return {"float64": "float64"}.get(t, t)


def _kafka_fields(fields, v, flexible, common):
    """(name, type, sub) of the fields in version v, non-tagged in order; tagged as (tag, ...)."""
    plain, tagged = [], {}
    for f in fields or []:
        if v not in Versions.parse(f.get("versions", "0+")):
            continue
        t = f["type"]
        sub_fields = f.get("fields")
        if sub_fields is None:
            elem = t[2:] if t.startswith("[]") else t
            if elem in common:
                sub_fields = common[elem]
        sub = _kafka_fields(sub_fields, v, flexible, common) if sub_fields else None
        elem = t[2:] if t.startswith("[]") else t
        typ = ("[]" if t.startswith("[]") else "") + ("struct" if sub is not None else elem)
        entry = (_snake(f["name"]), typ, sub)
        if flexible and "tag" in f and v in Versions.parse(f.get("taggedVersions", "none")):
            tagged[f["tag"]] = entry
        else:
            plain.append(entry)
    return plain, tagged


def _our_fields(fields, v, flexible):
    plain, tagged = [], {}
    for f in fields or []:
        if v not in f.v:
            continue
        sub = _our_fields(f.fields, v, flexible) if f.is_struct else None
        typ = ("[]" if f.is_array else "") + ("struct" if f.is_struct else f.elem)
        entry = (f.name, typ, sub)
        if flexible and f.tag is not None and v in f.tag_v:
            tagged[f.tag] = entry
        else:
            plain.append(entry)
    return plain, tagged


def _compare(api, path, k, h, out):
    kp, kt = k
    hp, ht = h
    if [(t) for _n, t, _s in kp] != [t for _n, t, _s in hp]:
        out.append(f"{path}: kafka {[(n, t) for n, t, _ in kp]} ours {[(n, t) for n, t, _ in hp]}")
        return
    for (kn, _kt, ks), (hn, _ht, hs) in zip(kp, hp):
        if kn != hn and (api, hn) not in RENAMED:
            out.append(f"{path}.{hn}: Kafka calls it {kn}")
        if ks is not None and hs is not None:
            _compare(api, f"{path}.{hn}", ks, hs, out)
    if {t: typ for t, (_n, typ, _s) in kt.items()} != {t: typ for t, (_n, typ, _s) in ht.items()}:
        out.append(f"{path} tagged: kafka {sorted((t, n, ty) for t, (n, ty, _) in kt.items())} "
                   f"ours {sorted((t, n, ty) for t, (n, ty, _) in ht.items())}")


@pytest.mark.parametrize("key", sorted(APIS))
def test_message_schemas_match_kafka(key):
    specs = _SPECS
    api = APIS[key]
    problems = []
    for kind, decl in (("Request", api.api.request), ("Response", api.api.response)):
        spec = specs.get(api.name + kind)
        assert spec is not None, f"Kafka {jvm.version('kafka')} has no {api.name}{kind}"
        valid = Versions.parse(spec["validVersions"])
        flex = Versions.parse(spec.get("flexibleVersions", "none"))
        common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
        for v in range(api.min_version, api.max_version + 1):
            if v not in valid:
                continue  # a version Kafka 4 removed (KIP-896) that we still serve
            k = _kafka_fields(spec["fields"], v, v in flex, common)
            h = _our_fields(decl.fields, v, v in flex)
            _compare(api.name, f"{api.name}{kind} v{v}", k, h, problems)
    assert not problems, "\n".join(problems)


_SPECS = _load_specs()
