"""The console's client view: a librdkafka producer pushing metrics (KIP-714) for a subscription
that selects it appears on /clients with its client id, software and metrics."""
from __future__ import annotations

import urllib.request

from confluent_kafka import Producer

from hourglass.cli.wire import WireClient
from hourglass.embedded import EmbeddedBroker
from tests.differential.framework import req
from tests.helpers.clients import wait_until


def test_pushed_metrics_on_the_clients_page():
    with EmbeddedBroker({"console.listeners": "http://127.0.0.1:0"}) as b:
        def page():
            with urllib.request.urlopen(b.console_url + "/clients", timeout=10) as r:
                return r.read().decode()
        assert "No client pushes metrics." in page()
        with WireClient(b.bootstrap_servers) as c:
            r = c.request(44, 1, req(44, 1, resources=[{"resource_type": 16, "resource_name": "console", "configs": [
                {"name": "metrics", "config_operation": 0, "value": "org.apache.kafka.producer."},
                {"name": "interval.ms", "config_operation": 0, "value": "500"}]}]))
            assert r.responses[0].error_code == 0
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "client.id": "console-pusher",
                      "enable.metrics.push": True})
        p.produce("t", b"v")
        p.flush(10)
        wait_until(lambda: "console-pusher" in page(), timeout=30, what="the pushing client on /clients")
        html = page()
        assert "org.apache.kafka.producer." in html and 'data-instance="' in html
