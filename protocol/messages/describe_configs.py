"""DescribeConfigs (key 32), versions 0-4, flexible from 4.

An admin client reads the configuration of topics (``resource_type`` 2), brokers (4) or
broker loggers (8).
- ``configuration_keys`` null means "all keys" (empty list means none).
- v1+ ``include_synonyms``: each config lists, most specific first, the values it resolved
  from (``synonyms``, with their ``source``); v3+ ``include_documentation``.
- Response: ``is_default`` exists only in v0 (a non-default ``is_default`` cannot be encoded
  in v1+: use ``config_source``); v1+ ``config_source`` (1 DYNAMIC_TOPIC_CONFIG,
  4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG, ...) and ``synonyms``; v3+ ``config_type``
  (1 BOOLEAN, 2 STRING, 3 INT, 4 SHORT, 5 LONG, 6 DOUBLE, 7 LIST, 8 CLASS, 9 PASSWORD) and
  ``documentation``. Sensitive values are sent as null with ``is_sensitive`` true.
- Errors are per resource (UNKNOWN_TOPIC_OR_PARTITION (3) for a missing topic).
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(32, "DescribeConfigs", valid="0-4", flexible="4+", request=[
    F("resources", "[]DescribeConfigsResource", "0+", fields=[
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
        F("configuration_keys", "[]string", "0+", nullable="0+"),
    ]),
    F("include_synonyms", "bool", "1+", default=False),
    F("include_documentation", "bool", "3+", default=False),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]DescribeConfigsResult", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
        F("configs", "[]DescribeConfigsResourceResult", "0+", fields=[
            F("name", "string", "0+"),
            F("value", "string", "0+", nullable="0+"),
            F("read_only", "bool", "0+"),
            F("config_source", "int8", "1+", default=-1, ignorable=True),
            F("is_default", "bool", "0"),
            F("is_sensitive", "bool", "0+"),
            F("synonyms", "[]DescribeConfigsSynonym", "1+", ignorable=True, fields=[
                F("name", "string", "1+"),
                F("value", "string", "1+", nullable="0+"),
                F("source", "int8", "1+"),
            ]),
            F("config_type", "int8", "3+", default=0, ignorable=True),
            F("documentation", "string", "3+", nullable="0+", ignorable=True),
        ]),
    ]),
])

DescribeConfigsRequest, DescribeConfigsResponse = compile_api(API)
