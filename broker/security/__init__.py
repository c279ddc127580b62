"""Kafka's security model, as plain pieces the server shell wires together.

- ``principal``: KafkaPrincipal, the TLS client certificate's DN and ``ssl.principal.mapping.rules``.
- ``jaas``: Kafka's ``sasl.jaas.config`` syntax.
- ``scram``: SCRAM credentials (salted, iterated, never the password) and their durable store.
- ``sasl``: the SASL mechanisms as sans-IO servers (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER).
- ``oauth``: OAUTHBEARER token validation (Kafka's unsecured JWS, or signed JWTs against a JWKS).
- ``authenticator``: the per-connection SASL state machine (handshake, authenticate, KIP-368).
- ``tls``: ``ssl.SSLContext`` from Kafka's ``ssl.*`` keys.
- ``acl``: ACL bindings, patterns and filters; ``authorizer``: StandardAuthorizer semantics and
  the durable ACL store; ``api_acls``: what each served API checks, in one table.

Nothing here opens a socket; files are touched only by the two stores and the TLS loader.
"""
