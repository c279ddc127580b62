"""AlterClientQuotas (key 49), versions 0-1 (v1 flexible), KIP-546.

Each entry names one entity (a list of (entity type, name); a null name is the type's
``<default>``) and the ops on it: set ``key`` to ``value`` (float64), or remove it. With
``validate_only`` the broker checks everything and changes nothing. One result per entity.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(49, "AlterClientQuotas", valid="0-1", flexible="1+", request=[
    F("entries", "[]EntryData", "0+", fields=[
        F("entity", "[]EntityData", "0+", fields=[
            F("entity_type", "string", "0+"),
            F("entity_name", "string", "0+", nullable="0+", default=None),
        ]),
        F("ops", "[]OpData", "0+", fields=[
            F("key", "string", "0+"),
            F("value", "float64", "0+"),
            F("remove", "bool", "0+"),
        ]),
    ]),
    F("validate_only", "bool", "0+"),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("entries", "[]EntryData", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("entity", "[]EntityData", "0+", fields=[
            F("entity_type", "string", "0+"),
            F("entity_name", "string", "0+", nullable="0+", default=None),
        ]),
    ]),
])

AlterClientQuotasRequest, AlterClientQuotasResponse = compile_api(API)
