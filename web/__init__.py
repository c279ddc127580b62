"""HTTP plumbing shared by the broker's HTTP services (the Schema Registry, the console and
Kafka REST v3): listeners from ``<service>.listeners`` keys, TLS from the broker's ``ssl.*``
keys, HTTP basic auth against the broker's own SASL users, and Confluent's error JSON.

The Kafka request path never imports this package; the broker only asks ``web.services`` to
bind the configured listeners at start and to close them at stop. Each service is a room of
its own (``schema_registry/``, ``console/``) that builds an ``aiohttp`` application over the
broker's existing interfaces (log manager, coordinators, authorizer).
"""
