"""DescribeUserScramCredentials (key 50), version 0, flexible (KIP-554).

Names the users to describe (null or empty: all users with credentials); each result lists
the user's mechanisms (1 SCRAM-SHA-256, 2 SCRAM-SHA-512) and iteration counts, never salts or
keys. An asked-for user without credentials answers RESOURCE_NOT_FOUND; a user named twice
answers DUPLICATE_RESOURCE.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(50, "DescribeUserScramCredentials", valid="0", flexible="0+", request=[
    F("users", "[]UserName", "0+", nullable="0+", default=None, fields=[
        F("name", "string", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("results", "[]DescribeUserScramCredentialsResult", "0+", fields=[
        F("user", "string", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("credential_infos", "[]CredentialInfo", "0+", fields=[
            F("mechanism", "int8", "0+"),
            F("iterations", "int32", "0+"),
        ]),
    ]),
])

DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse = compile_api(API)
