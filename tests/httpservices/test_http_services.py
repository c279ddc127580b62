"""The shared HTTP plumbing (web/): listeners, background start, basic auth against the
broker's own users, and Confluent's error JSON, through a real broker and real HTTP requests."""
from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest
from hypothesis import given, strategies as st

from broker.config import BrokerConfig, ConfigError
from hourglass.embedded import EmbeddedBroker
from web import services
from web.auth import BasicAuthError, parse_basic
from broker.http_listeners import parse_http_listeners, url_of


@pytest.fixture
def echo_service(monkeypatch):
    """The console's key serves the echo app (thread-mode brokers read the patched table)."""
    monkeypatch.setattr(services, "SERVICES",
                        (services.ServiceSpec("console", "console.listeners", "tests.httpservices.echo_service"),))


def call(url, *, method="GET", body=None, auth=None, ctype="application/json"):
    req = urllib.request.Request(url, method=method, data=body)
    if body is not None:
        req.add_header("Content-Type", ctype)
    if auth is not None:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def test_listener_values():
    assert parse_http_listeners("http://127.0.0.1:8081, https://:0") == [("http", "127.0.0.1", 8081), ("https", "", 0)]
    assert parse_http_listeners("") == []
    assert parse_http_listeners("http://[::1]:80")[0].host == "::1"
    for bad in ("127.0.0.1:8081", "ftp://h:1", "http://h", "http://h:99999"):
        with pytest.raises(ValueError, match="Invalid listener"):
            parse_http_listeners(bad)
    assert url_of(parse_http_listeners("http://0.0.0.0:0")[0], ("0.0.0.0", 5)) == "http://127.0.0.1:5"


def test_bad_listener_refuses_to_start():
    with pytest.raises(ConfigError, match="schema.registry.listeners"):
        BrokerConfig.load(None, ["schema.registry.listeners=localhost:8081"], strict=True)


@given(st.text(min_size=1).filter(lambda u: ":" not in u), st.text())
def test_basic_header_round_trip(user, password):
    header = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    assert parse_basic(header) == (user, password)


@pytest.mark.parametrize("header", [None, "", "Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"nocolon").decode()])
def test_bad_basic_headers(header):
    with pytest.raises(BasicAuthError):
        parse_basic(header)


def test_service_serves_with_errors_as_json(echo_service):
    with EmbeddedBroker(console=True) as b:
        url = b.console_url
        assert url.startswith("http://127.0.0.1:")
        status, _, body = call(url + "/whoami")
        assert (status, body["principal"], body["cluster"]) == (200, "User:ANONYMOUS", b.broker.cluster_id)
        assert call(url + "/teapot")[::2] == (418, {"error_code": 41801, "message": "no coffee here"})
        status, _, body = call(url + "/nope")
        assert (status, body["error_code"]) == (404, 404)
        status, _, body = call(url + "/echo", method="POST", body=b"{not json")
        assert (status, body["error_code"]) == (400, 400) and "malformed JSON" in body["message"]
        status, _, body = call(url + "/echo", method="POST", body=b"[" + b"1," * 2000 + b"1]")
        assert (status, body["error_code"]) == (413, 413)
        status, _, body = call(url + "/boom")
        assert (status, body) == (500, {"error_code": 50001, "message": "Internal server error"})
        # still serving, HTTP and Kafka alike
        assert call(url + "/echo", method="POST", body=b'{"a": 1}')[2] == {"body": {"a": 1}}
        from confluent_kafka.admin import AdminClient
        assert b.broker.cluster_id == AdminClient({"bootstrap.servers": b.bootstrap_servers}).list_topics(
            timeout=10).cluster_id


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_basic_auth_checks_the_brokers_users(echo_service, mechanism):
    with EmbeddedBroker(security={"protocol": "SASL_PLAINTEXT", "mechanism": mechanism}, console=True) as b:
        user, password = b.security.user, b.security.password
        url = b.console_url + "/whoami"
        status, headers, body = call(url)
        assert status == 401 and body["error_code"] == 401 and headers["WWW-Authenticate"].startswith("Basic")
        assert call(url, auth=(user, password + "x"))[0] == 401
        assert call(url, auth=("mallory", password))[0] == 401
        for _ in range(3):  # the SCRAM check is remembered: same answer each time
            status, _, body = call(url, auth=(user, password))
            assert (status, body["principal"]) == (200, f"User:{user}")
        assert password not in json.dumps(body)
        assert call(b.console_url + "/public")[0] == 200


def test_subprocess_broker_reports_service_urls(echo_service):
    # the subprocess reads the real SERVICES table: its console module may not exist yet, and a
    # service that fails to start must leave the Kafka listener serving
    with EmbeddedBroker(mode="subprocess", console=True) as b:
        assert b.console_url and b.console_url.startswith("http://127.0.0.1:")
        from confluent_kafka.admin import AdminClient
        assert AdminClient({"bootstrap.servers": b.bootstrap_servers}).list_topics(timeout=10).brokers
