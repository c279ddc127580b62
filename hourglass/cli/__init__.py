"""The ``hourglass`` command line, in its own room beside the server.

- ``main``: argument parsing and dispatch; ``hourglass serve`` starts ``broker.server``;
- ``topics`` (``hourglass topics``), ``client`` (``produce``, ``consume``, ``offsets``),
  ``transactions``, ``acls``, ``users``: client commands over the wire, each taking
  ``-b/--bootstrap-server`` and ``--command-config client.properties`` (a Java client's
  security properties, as Kafka's tools take them; ``client_properties`` turns them into
  librdkafka's for the commands that run on confluent-kafka);
- ``wire``: the one blocking wire client over our own codec (TLS and SASL included), for APIs
  the client libraries do not expose; ``probe``: the health check on it;
- ``inspect`` and ``plot``: a data dir read directly, no broker involved.
"""
from hourglass.cli.main import main

__all__ = ["main"]
