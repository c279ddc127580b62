"""AlterUserScramCredentials (key 51), version 0, flexible (KIP-554).

Deletions name (user, mechanism); upsertions carry (user, mechanism, iterations, salt,
salted password): the client salts and iterates, so the password itself never crosses the
wire. Mechanisms: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512. One result per affected user.
"""
from protocol.codec import compile_api
from protocol.schema import F, api

API = api(51, "AlterUserScramCredentials", valid="0", flexible="0+", request=[
    F("deletions", "[]ScramCredentialDeletion", "0+", fields=[
        F("name", "string", "0+"),
        F("mechanism", "int8", "0+"),
    ]),
    F("upsertions", "[]ScramCredentialUpsertion", "0+", fields=[
        F("name", "string", "0+"),
        F("mechanism", "int8", "0+"),
        F("iterations", "int32", "0+"),
        F("salt", "bytes", "0+"),
        F("salted_password", "bytes", "0+"),
    ]),
], response=[
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]AlterUserScramCredentialsResult", "0+", fields=[
        F("user", "string", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])

AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse = compile_api(API)
