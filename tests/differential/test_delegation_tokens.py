"""Delegation tokens (38-41) asked of Apache Kafka 4.4 and Hourglass alike, at every version
both serve, over PLAINTEXT (refused), over SASL/SCRAM as their owner and renewers, and over a
token login; then Kafka's own ``kafka-delegation-tokens`` tool and a Java 4.4 client logging in
with a token, on both brokers with the same inputs.

A pair of its own: both brokers run a SASL_PLAINTEXT listener (SCRAM-SHA-512) beside PLAINTEXT
and a ``delegation.token.secret.key``; the users are created on each with
AlterUserScramCredentials. Token ids, HMACs and issue times are each broker's own; expiry and
max times are compared as offsets from the issue time, so the lifetimes stay compared.
"""
from __future__ import annotations

import base64
import re
import time

import pytest

from hourglass.cli.wire import WireClient, WireError
from protocol.errors import ErrorCode as E
from tests.differential.conftest import start_pair, stop_pair
from tests.differential.framework import Side, req
from tests.helpers.kafka_oracle import run_tool

pytestmark = pytest.mark.xdist_group("differential")

SECRET_KEY = "differential-token-key"
USERS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
SALT = b"differential-salt"
JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required"
TOKEN_KEYS = {"delegation.token.secret.key": SECRET_KEY, "delegation.token.max.lifetime.ms": 3_600_000,
              "delegation.token.expiry.time.ms": 600_000}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """This module's pair (the ``ex`` fixture of conftest.py exchanges on it)."""
    pair = start_pair(tmp_path_factory, {
        **TOKEN_KEYS, "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": JAAS + ";"}, {
        **TOKEN_KEYS, "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512"},
        name="tokens-pair", kafka_listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"})
    kafka, hourglass = pair.kafka, pair.hourglass
    from broker.security.scram import ScramMechanism, salted_password
    m = ScramMechanism.SCRAM_SHA_512
    for proc in (kafka, hourglass):
        with WireClient(proc.bootstrap) as c:
            r = c.request(51, 0, req(51, deletions=[], upsertions=[
                {"name": u, "mechanism": int(m), "iterations": 4096, "salt": SALT,
                 "salted_password": salted_password(m, pw, SALT, 4096)} for u, pw in USERS.items()]))
            assert [x.error_code for x in r.results] == [0, 0, 0], r
    for proc in (kafka, hourglass):  # Kafka's broker learns the credentials from its metadata log
        deadline = time.monotonic() + 30
        while True:
            try:
                with sasl(proc, "alice") as c:
                    c.request(3, 12, req(3, 12, topics=[]))
                break
            except WireError:
                assert time.monotonic() < deadline, f"{proc}: alice cannot log in"
                time.sleep(0.2)
    yield pair
    stop_pair(pair)


def sasl(proc, user: str, password: str | None = None, token: bool = False) -> WireClient:
    return WireClient(proc.listeners["SASL_PLAINTEXT"], client_id="differential", timeout=30.0,
                      props=props(user, password or USERS[user], token))


def props(user: str, password: str, token: bool = False) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{JAAS} username="{user}" password="{password}"'
                                + (' tokenauth="true"' if token else "") + ";"}


class SaslSide(Side):
    """A side whose requests go over the SASL listener as one user (or one token)."""

    def __init__(self, name: str, proc, user: str, password: str | None = None, token: bool = False):
        super().__init__(name, proc.listeners["SASL_PLAINTEXT"])
        self._props = props(user, password or USERS[user], token)

    @property
    def client(self) -> WireClient:
        if self._client is None:
            self._client = WireClient(self.bootstrap, client_id="differential", timeout=30.0, props=self._props)
        return self._client


@pytest.fixture
def tx(ex, pair):
    """The exchange on this module's pair; ``tx.as_user(name)`` switches both sides to that
    user (a token login with ``token=True``)."""
    e, token_pair = ex, pair

    def as_user(user, password=lambda s: None, token=False):
        e.close()
        procs = {"kafka": token_pair.kafka, "hourglass": token_pair.hourglass}
        old = {s.name: s.state for s in e.sides}
        e.kafka, e.hourglass = (SaslSide(n, procs[n], user(n) if callable(user) else user, password(n), token)
                                for n in ("kafka", "hourglass"))
        for s in e.sides:
            s.state = old[s.name]
        return e
    e.as_user = as_user
    return e


def relative(r, issue: str, *fields: str) -> None:
    """Times as offsets from the issue time (errors keep their -1/0)."""
    t0 = getattr(r, issue)
    if t0 > 0:
        for f in fields:
            setattr(r, f, getattr(r, f) - t0)


def create(tx, v: int, scenario: str, **fields):
    body = req(38, v, **{"renewers": [], "max_lifetime_ms": -1, **fields})
    k, h = tx.send(38, v, body, compare_=False)
    for r in (k, h):
        relative(r, "issue_timestamp_ms", "expiry_timestamp_ms", "max_timestamp_ms")
    tx.compare(38, v, k, h, scenario=scenario)
    return k, h


def describe(tx, v: int, scenario: str, owners=None):
    body = req(41, v, owners=None if owners is None else [{"principal_type": "User", "principal_name": o}
                                                           for o in owners])
    k, h = tx.send(41, v, body, compare_=False)
    for r in (k, h):
        r.tokens.sort(key=lambda t: (t.issue_timestamp, t.token_id))  # Kafka lists them in hash order
        for t in r.tokens:
            relative(t, "issue_timestamp", "expiry_timestamp", "max_timestamp")
    tx.compare(41, v, k, h, scenario=scenario)
    return k, h


def test_refused_over_plaintext(tx):
    ex = tx
    for v in ex.versions(38):
        ex.send(38, v, req(38, v, renewers=[], max_lifetime_ms=-1, owner_principal_type="User",
                           owner_principal_name="bob"), scenario="CreateDelegationToken over PLAINTEXT")
    for v in ex.versions(39):
        ex.send(39, v, req(39, hmac=b"nope", renew_period_ms=-1), scenario="RenewDelegationToken over PLAINTEXT")
    for v in ex.versions(40):
        ex.send(40, v, req(40, hmac=b"nope", expiry_time_period_ms=-1), scenario="ExpireDelegationToken over PLAINTEXT")
    for v in ex.versions(41):
        ex.send(41, v, req(41, owners=None), scenario="DescribeDelegationToken over PLAINTEXT")
    assert ex.versions(38) == [1, 2, 3] and ex.versions(41) == [1, 2, 3]
    assert ex.versions(39) == [1, 2] and ex.versions(40) == [1, 2]


def test_token_lifecycle(tx):
    tx.as_user("alice")
    made = {}
    for v in tx.versions(38):
        k, h = create(tx, v, f"alice creates a token renewable by bob (v{v})",
                      renewers=[{"principal_type": "User", "principal_name": "bob"}])
        assert k.error_code == h.error_code == 0
        made[v] = {"kafka": k, "hourglass": h}
        create(tx, v, f"a renewer that is not a User (v{v})",
               renewers=[{"principal_type": "Group", "principal_name": "ops"}])
        create(tx, v, f"a shorter max lifetime (v{v})", max_lifetime_ms=120_000)
    create(tx, 3, "alice creates a token owned by carol (no authorizer: allowed)",
           owner_principal_type="User", owner_principal_name="carol")
    known_to_broker(tx)
    for v in tx.versions(41):
        describe(tx, v, f"every token alice may see (v{v})")
        describe(tx, v, f"an empty owner list (v{v})", owners=[])
        describe(tx, v, f"tokens bob owns or renews (v{v})", owners=["bob"])
        describe(tx, v, f"tokens of an unknown owner (v{v})", owners=["nobody"])
    hmac = lambda s: made[3][s.name].hmac  # noqa: E731
    for s in tx.sides:
        known_to_controller(tx.pair.kafka if s.name == "kafka" else tx.pair.hourglass, hmac(s))
    tx.as_user("bob")
    for v in tx.versions(39):
        k, h = tx.send(39, v, lambda s: req(39, hmac=hmac(s), renew_period_ms=60_000), compare_=False)
        for r in (k, h):  # now + 60 s, on each broker's clock
            r.expiry_timestamp_ms = abs(r.expiry_timestamp_ms - int(time.time() * 1000) - 60_000) < 30_000
        tx.compare(39, v, k, h, scenario=f"bob, a renewer, renews (v{v})")
        tx.send(39, v, req(39, hmac=b"unknown-hmac", renew_period_ms=1000), scenario=f"an unknown token (v{v})")
    tx.as_user("carol")
    for v in tx.versions(39):
        tx.send(39, v, lambda s: req(39, hmac=hmac(s), renew_period_ms=1000), scenario=f"carol may not renew (v{v})")
    for v in tx.versions(40):
        tx.send(40, v, lambda s: req(40, hmac=hmac(s), expiry_time_period_ms=-1), scenario=f"carol may not expire (v{v})")
        tx.send(40, v, req(40, hmac=b"unknown-hmac", expiry_time_period_ms=-1), scenario=f"expire an unknown token (v{v})")
    tx.as_user("alice")
    k, h = tx.send(40, 1, lambda s: req(40, hmac=made[1][s.name].hmac, expiry_time_period_ms=-1), compare_=False)
    assert k.error_code == h.error_code == 0
    for v in tx.versions(40):
        tx.send(40, v, lambda s: req(40, hmac=made[1][s.name].hmac, expiry_time_period_ms=5000),
                scenario=f"expire a removed token (v{v})")
    k, h = tx.send(40, 2, lambda s: req(40, hmac=hmac(s), expiry_time_period_ms=30_000), compare_=False)
    assert k.error_code == h.error_code == 0


def test_token_login(tx):
    tx.as_user("alice")
    k, h = create(tx, 3, "a token to log in with")
    tokens = {"kafka": k, "hourglass": h}
    known_to_broker(tx)  # Kafka's broker logs tokens in from the same cache
    tx.as_user(lambda n: tokens[n].token_id, lambda n: base64.b64encode(tokens[n].hmac).decode(), token=True)
    tx.send(3, 12, req(3, 12, topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False),
            scenario="Metadata over a token login", normalize=())
    for v in tx.versions(38):
        create(tx, v, f"no token from a token login (v{v})")
    for v in tx.versions(41):
        describe(tx, v, f"no describe from a token login (v{v})")
    for v in tx.versions(39):
        tx.send(39, v, lambda s: req(39, hmac=tokens[s.name].hmac, renew_period_ms=-1),
                scenario=f"no renewal from a token login (v{v})")


# ---- Kafka's own tool and a Java 4.4 client --------------------------------------------------------
TOOL = "org.apache.kafka.tools.DelegationTokenCommand"
_TOKEN_ID = re.compile(r"tokenId : (\S+)")
_B64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==")  # an HMAC-SHA512, base64
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?")


def normalized(out: str, token_ids=()) -> str:
    """Ids, HMACs and times out; the token rows sorted (Kafka lists tokens in hash order); the
    token this run made stays told apart from the others."""
    for t in token_ids:
        out = out.replace(t, "<this token>")
    out = _B64.sub("<hmac>", out)
    out = re.sub(r"(?m)^[A-Za-z0-9_-]{22}(?= )", "<token id>", out)
    out = _TIME.sub("<time>", out)
    out = re.sub(r"\b1\d{12}\b", "<epoch ms>", out)
    lines = out.split("\n")
    rows = sorted(i for i, line in enumerate(lines) if line.startswith("<"))
    for i, line in zip(rows, sorted(lines[i] for i in rows)):
        lines[i] = line
    return "\n".join(lines)


def _config(tmp_path, name: str, p: dict[str, str]):
    f = tmp_path / f"{name}.properties"
    f.write_text("".join(f"{k}={v}\n" for k, v in p.items()))
    return str(f)


def tool(proc, config: str, *args: str, token_ids=()):
    r = run_tool(TOOL, "--bootstrap-server", proc.listeners["SASL_PLAINTEXT"], "--command-config", config, *args,
                 check=False)
    return r.returncode, normalized(r.stdout + r.stderr, token_ids), r.stdout


def known_to_broker(tx) -> None:
    """Kafka's broker lists tokens from a cache its metadata log fills a moment after the
    controller answered the creation: wait until it lists as many as Hourglass does."""
    deadline = time.monotonic() + 30
    k, h = tx.send(41, 3, req(41, owners=None), compare_=False)
    while len(k.tokens) < len(h.tokens):
        assert time.monotonic() < deadline, "Kafka's broker never listed the new tokens"
        time.sleep(0.05)
        k = tx.kafka.request(41, 3, req(41, owners=None))


def known_to_controller(proc, hmac: bytes) -> None:
    """Kafka's controller answers renewals from its own token cache, which learns a new token
    from the metadata log a moment after the broker's: until then a renewal answers
    DELEGATION_TOKEN_NOT_FOUND. Wait for it with a renewal carol may not make (no change)."""
    deadline = time.monotonic() + 30
    with sasl(proc, "carol") as c:
        while c.request(39, 2, req(39, hmac=hmac, renew_period_ms=1)).error_code == E.DELEGATION_TOKEN_NOT_FOUND:
            assert time.monotonic() < deadline, f"{proc}: the controller never learned the token"
            time.sleep(0.05)


def test_kafka_delegation_tokens_tool(pair, tmp_path):
    token_pair = pair
    alice = _config(tmp_path, "alice", props("alice", USERS["alice"]))
    bob = _config(tmp_path, "bob", props("bob", USERS["bob"]))
    procs = {"kafka": token_pair.kafka, "hourglass": token_pair.hourglass}
    outs = {}
    for name, proc in procs.items():
        rc, _, raw = tool(proc, alice, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
        hmac, token_id = _B64.search(raw), _TOKEN_ID.search(raw)
        assert rc == 0 and hmac and token_id, raw
        ids = (token_id.group(1),)
        steps = [(rc, normalized(raw, ids))]
        known_to_controller(proc, base64.b64decode(hmac.group(0)))
        for config, *args in ((alice, "--describe", "--owner-principal", "User:bob"),
                              (bob, "--renew", "--hmac", hmac.group(0), "--renew-time-period", "-1"),
                              (alice, "--expire", "--hmac", hmac.group(0), "--expiry-time-period", "-1"),
                              (bob, "--renew", "--hmac", hmac.group(0), "--renew-time-period", "-1"),
                              (bob, "--describe")):
            steps.append(tool(proc, config, *args, token_ids=ids)[:2])
        outs[name] = steps
    for (k_rc, k_out), (h_rc, h_out) in zip(outs["kafka"], outs["hourglass"]):
        assert h_rc == k_rc and h_out == k_out, f"kafka ({k_rc}):\n{k_out}\nhourglass ({h_rc}):\n{h_out}"


def test_java_client_logs_in_with_a_token(pair, tmp_path):
    """Kafka 4.4's admin client (kafka-topics) logs in with a token, as Spark's connector does."""
    procs = {"kafka": pair.kafka, "hourglass": pair.hourglass}
    alice = _config(tmp_path, "alice", props("alice", USERS["alice"]))
    for name, proc in procs.items():
        rc, _, raw = tool(proc, alice, "--create", "--max-life-time-period", "-1")
        assert rc == 0, raw
        token_id, hmac = _TOKEN_ID.search(raw).group(1), _B64.search(raw).group(0)
        deadline = time.monotonic() + 30
        with sasl(proc, "alice") as c:  # Kafka's broker logs tokens in from its metadata cache
            while token_id not in [t.token_id for t in c.request(41, 3, req(41, owners=None)).tokens]:
                assert time.monotonic() < deadline, f"{name}: the token is never listed"
                time.sleep(0.05)
        cfg = _config(tmp_path, f"token-{name}", props(token_id, hmac, token=True))
        topic = f"token-topic-{int(time.time() * 1000)}"
        made = run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", proc.listeners["SASL_PLAINTEXT"],
                        "--command-config", cfg, "--create", "--topic", topic, "--partitions", "1", check=False)
        assert made.returncode == 0, f"{name}: {made.stdout}{made.stderr}"
        listed = run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                          proc.listeners["SASL_PLAINTEXT"], "--command-config", cfg, "--list", check=False)
        assert listed.returncode == 0 and topic in listed.stdout.split(), f"{name}: {listed.stdout}{listed.stderr}"
        bad = _config(tmp_path, f"bad-{name}", props(token_id, "bm90LXRoZS1obWFj", token=True))
        refused = run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                           proc.listeners["SASL_PLAINTEXT"], "--command-config", bad, "--list", check=False)
        assert refused.returncode != 0 and "Authentication failed" in refused.stdout + refused.stderr, name
