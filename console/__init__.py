"""The broker's web console and Kafka REST v3 (``console.listeners``).

- ``console.model``: every read and write the console and ``/v3`` make, as plain dicts and
  lists, through the broker's own Kafka API handlers (``console.model.Kafka``), so ACLs,
  validation and error codes are exactly those of the Kafka listener;
- ``console.rest_v3``: Confluent's REST v3 routes (and Hourglass's additions) over the model;
- ``console.ui``: the pages (templates, static assets), when present;
- ``console.app``: ``create_app(broker, users)`` for ``web.services``.
"""
