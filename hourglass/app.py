"""The composition root: a Hourglass broker is the Kafka core (``broker/``) with the rooms
beside it wired in here: the HTTP services (``web/``: the Schema Registry and the console),
the registry's schema ID validation of produced records, the registry's metrics, and the
translation of topics into Iceberg tables (``lakehouse/``).

``hourglass serve`` and ``EmbeddedBroker`` run ``run_broker(cfg, extensions=extensions())``; a
``Broker`` built without them (bench scripts, in-process unit tests) is a plain Kafka broker.
Each piece is imported when first used, so a broker whose HTTP services are off never imports
aiohttp or a schema format.
"""
from __future__ import annotations

from broker.extensions import Extensions


def http_services(broker):
    from web.services import HttpServices
    # the console's pages read the services' URLs from the broker (broker.http.urls)
    broker.http = HttpServices(broker)
    return broker.http


def check_schema_ids(broker, topic, config, records, version):
    from schema_registry.produce_validation import check_schema_ids as check
    return check(broker, topic, config, records, version)


def iceberg_topics(broker):
    # topics written as Iceberg tables (topic config iceberg.mode); pyiceberg is imported by
    # its worker thread when a topic first turns it on
    from lakehouse.service import IcebergTopics
    broker.lakehouse = IcebergTopics(broker)
    return broker.lakehouse


def registry_metrics(broker):
    from schema_registry.metrics import metric_families
    return metric_families(broker)


def iceberg_metrics(broker):
    from lakehouse.metrics import metric_families
    return metric_families(broker)


def extensions() -> Extensions:
    return Extensions(services=(http_services, iceberg_topics), record_validator=check_schema_ids,
                      metric_collectors=(registry_metrics, iceberg_metrics))
