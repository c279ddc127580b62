"""ApiVersions: the APIs and version ranges each broker advertises, and every ApiVersions
version both serve answered alike (features, error codes)."""
from __future__ import annotations

import pytest

from protocol.api_keys import APIS
from tests.differential.framework import req
from tests.differential.kept import KEPT_RANGES

pytestmark = pytest.mark.xdist_group("differential")


def _name(key: int) -> str:
    return APIS[key].name if key in APIS else f"key {key}"


def test_advertised_ranges(ex, differential_report):
    k, h = ex.pair.kafka_ranges, ex.pair.hourglass_ranges
    lines = ["| API (key) | Kafka | Hourglass | kept because |", "|---|---|---|---|"]
    unexplained = []
    for key in sorted(set(k) | set(h)):
        if k.get(key) == h.get(key):
            continue
        reason = KEPT_RANGES.get(key)
        fmt = lambda r: f"{r[0]}-{r[1]}" if r else "not served"  # noqa: E731
        lines.append(f"| {_name(key)} ({key}) | {fmt(k.get(key))} | {fmt(h.get(key))} | {reason or 'UNEXPECTED'} |")
        if reason is None:
            unexplained.append(f"{_name(key)} ({key}): kafka {k.get(key)} hourglass {h.get(key)}")
    same = sorted(key for key in set(k) & set(h) if k[key] == h[key])
    lines.append("")
    lines.append("Advertised alike: " + ", ".join(f"{_name(x)} {k[x][0]}-{k[x][1]}" for x in same))
    differential_report.note("ApiVersions: advertised ranges", lines)
    assert not unexplained, "advertised ranges differ without a kept reason:\n" + "\n".join(unexplained)


@pytest.mark.parametrize("version", range(0, 6))
def test_api_versions_response(ex, version):
    assert version in ex.versions(18)
    body = (req(18, client_software_name="differential", client_software_version="1.0") if version >= 3
            else req(18))
    k, h = ex.send(18, version, body, compare_=False)
    for r in (k, h):  # the key ranges are compared as a map above
        r.api_keys = []
    ex.compare(18, version, k, h, scenario="ApiVersions")


def test_api_versions_cluster_and_node_check(ex):
    """v5 (KIP-1242): the cluster and node the client means to reach, checked when a cluster id
    is given; another cluster, or another node of this cluster, is REBOOTSTRAP_REQUIRED."""
    for s in ex.sides:
        m = s.request(3, 12, req(3, 12, topics=[], allow_auto_topic_creation=False,
                                 include_topic_authorized_operations=False))
        s.state["cluster_id"], s.state["node_id"] = m.cluster_id, m.brokers[0].node_id
    for v in ex.versions(18, lo=5):
        def body(cluster=None, node=lambda s: -1):
            return lambda s: req(18, v, client_software_name="differential", client_software_version="1.0",
                                 cluster_id=cluster(s) if cluster else None, node_id=node(s))
        for scenario, b in (
                ("no cluster id, a node id", body(node=lambda s: 12345)),
                ("this cluster and node", body(lambda s: s.state["cluster_id"], lambda s: s.state["node_id"])),
                ("this cluster, node id -1", body(lambda s: s.state["cluster_id"])),
                ("this cluster, another node", body(lambda s: s.state["cluster_id"], lambda s: s.state["node_id"] + 1)),
                ("another cluster, this node", body(lambda s: "AAAAAAAAAAAAAAAAAAAAAA", lambda s: s.state["node_id"])),
                ("an empty cluster id", body(lambda s: "", lambda s: s.state["node_id"]))):
            k, h = ex.send(18, v, b, compare_=False)
            for r in (k, h):  # the key ranges are compared as a map above
                if r.error_code == 0:
                    r.api_keys = []
            ex.compare(18, v, k, h, scenario=f"ApiVersions v{v}: {scenario}")


def test_api_versions_unsupported_version(ex):
    """A version past both brokers' range: Kafka answers UNSUPPORTED_VERSION with v0 framing
    and its own ApiVersions range (KIP-511)."""
    body = req(18, client_software_name="differential", client_software_version="1.0")
    from hourglass.cli.wire import WireClient
    answers = []
    for s in ex.sides:
        with WireClient(s.bootstrap) as c:
            # the broker answers a too-new ApiVersions as v0; ask in v0 framing for a v9 request
            import struct
            from protocol.header import RequestHeader, encode_request_header
            hdr = RequestHeader(request_api_key=18, request_api_version=9, correlation_id=7, client_id="d")
            payload = encode_request_header(hdr, 2) + APIS[18].request.encode(body, 3)
            c.sock.sendall(struct.pack(">i", len(payload)) + payload)
            (n,) = struct.unpack(">i", c._recv_exact(4))
            frame = memoryview(c._recv_exact(n))
            answers.append(APIS[18].response.decode(frame, 0, 4)[0])
    k, h = answers
    for r in (k, h):  # the key ranges are compared as a map above
        r.api_keys = [a for a in r.api_keys if a.api_key != 18]
    ex.compare(18, 0, k, h, scenario="ApiVersions v9 (unsupported) answered as v0")
