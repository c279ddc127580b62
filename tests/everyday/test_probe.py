"""``hourglass probe --ready-file``: the health check follows the listeners the broker bound
(any port, any listener name), read from the file ``serve --ready-file`` writes."""
from __future__ import annotations

from hourglass.cli.probe import bound_listeners
from tests.everyday.test_config_dropin import hg


def test_bound_listeners_of_a_ready_file():
    text = "0.0.0.0:19092\nCLIENT://0.0.0.0:19092\nINTERNAL://10.0.0.5:19093\nV6://[::]:19094\n"
    assert bound_listeners(text) == [("CLIENT", "127.0.0.1", 19092), ("INTERNAL", "10.0.0.5", 19093),
                                     ("V6", "::1", 19094)]
    assert bound_listeners("127.0.0.1:5555\n") == [("", "127.0.0.1", 5555)]  # an older single-line file
    # HTTP services' lines are not Kafka listeners
    assert bound_listeners(text + "service schema-registry http://127.0.0.1:8081\n") == bound_listeners(text)
    assert bound_listeners("") == []


def test_probe_follows_the_bound_listeners(broker_factory, tmp_path):
    b = broker_factory({"listeners": "CLIENT://127.0.0.1:0,BACKUP://127.0.0.1:0",
                        "listener.security.protocol.map": "CLIENT:PLAINTEXT,BACKUP:PLAINTEXT"})
    assert not b.bootstrap.endswith(":9092")
    r = hg("probe", "--ready-file", str(b.ready_path), "--timeout", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("CLIENT ")
    # the first listener gone (here: a stale port), the next one answers
    stale = tmp_path / "stale.ready"
    lines = b.ready_path.read_text().splitlines()
    stale.write_text("\n".join([lines[0], "GONE://127.0.0.1:1"] + lines[1:]) + "\n")
    r = hg("probe", "--ready-file", str(stale), "--timeout", "2")
    assert r.returncode == 0 and r.stdout.startswith("CLIENT "), r.stderr
    # no ready file: not serving yet
    r = hg("probe", "--ready-file", str(tmp_path / "none.ready"), "--timeout", "1")
    assert r.returncode == 1 and "not serving yet" in r.stderr
    stale.write_text("127.0.0.1:1\nGONE://127.0.0.1:1\n")
    r = hg("probe", "--ready-file", str(stale), "--timeout", "1")
    assert r.returncode == 1 and "GONE 127.0.0.1:1" in r.stderr
