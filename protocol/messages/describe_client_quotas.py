"""DescribeClientQuotas (key 48), versions 0-1 (v1 flexible), KIP-546.

A filter of components, each (entity type, match type, match): match type 0 = exactly the
named entity (``match`` null means the default entity), 1 = the default entity, 2 = any
specified (non-default) name. ``strict`` leaves out entities that have entity types the
filter does not name. The answer lists each matching entity with its quota values (float64);
an entity name of null is the ``<default>`` of its type.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(48, "DescribeClientQuotas", valid="0-1", flexible="1+", request=[
    F("components", "[]ComponentData", "0+", fields=[
        F("entity_type", "string", "0+"),
        F("match_type", "int8", "0+"),
        F("match", "string", "0+", nullable="0+", default=None),
    ]),
    F("strict", "bool", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("entries", "[]EntryData", "0+", nullable="0+", default=None, fields=[
        F("entity", "[]EntityData", "0+", fields=[
            F("entity_type", "string", "0+"),
            F("entity_name", "string", "0+", nullable="0+", default=None),
        ]),
        F("values", "[]ValueData", "0+", fields=[
            F("key", "string", "0+"),
            F("value", "float64", "0+"),
        ]),
    ]),
])

DescribeClientQuotasRequest, DescribeClientQuotasResponse = compile_api(API)
