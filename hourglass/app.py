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


class RegistrySchemas:
    """The lakehouse's schema lookups (iceberg.mode value_schema_id_prefix / value_schema_latest)
    over this broker's own Schema Registry; called on the event loop, whose state it is."""

    def __init__(self, broker):
        self.broker = broker

    def _store(self):
        store = getattr(self.broker, "schema_registry", None)
        if store is None:  # the mode waits (the round is retried) until a registry serves
            raise RuntimeError("a registry iceberg.mode needs this broker's Schema Registry "
                               "(schema.registry.listeners is empty)")
        if store.load_error is not None:
            raise RuntimeError(f"the Schema Registry failed to load: {store.load_error}")
        if not store.ready.is_set():
            raise RuntimeError("the Schema Registry is not ready yet")
        store.catch_up()
        return store

    @staticmethod
    def _version(store, e):
        from lakehouse.registry_modes import SchemaVersion
        return SchemaVersion(e.id, e.schema_type or "AVRO", e.schema, store.resolve_references(e.references))

    def by_id(self, schema_id: int):
        store = self._store()
        e = store.schema_by_id(schema_id)
        return None if e is None else self._version(store, e)

    def latest(self, subject: str):
        from schema_registry.errors import RegistryError
        store = self._store()
        try:
            e = store.get_version(subject, "latest")
        except RegistryError:
            return None
        return self._version(store, e)


def iceberg_topics(broker):
    # topics written as Iceberg tables (topic config iceberg.mode); pyiceberg is imported by
    # its worker thread when a topic first turns it on; the registry modes look schemas up in
    # the broker's own Schema Registry
    from lakehouse.service import IcebergTopics
    broker.lakehouse = IcebergTopics(broker, schemas=RegistrySchemas(broker))
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
