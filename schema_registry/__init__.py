"""The Schema Registry (Confluent's REST API), served inside the broker.

A room of its own, in layers:

- ``formats``: pure parsing, canonical forms and compatibility verdicts per schema type
  (AVRO with Apache Avro's own checker, JSON Schema with ``jsonschema``, PROTOBUF);
- ``compatibility``: the levels (NONE, BACKWARD, FORWARD, FULL and their _TRANSITIVE forms)
  over the formats' verdicts, plain functions;
- ``records``: Confluent's ``_schemas`` key/value JSON, byte for byte (pure);
- ``store``: the registry's state, rebuilt from and written to the compacted ``_schemas``
  topic through the broker's own partition log (the path a produce takes);
- ``app``: the aiohttp routes, a thin layer mapping requests onto the store.
"""
