"""Test helpers: ``broker.BrokerProcess`` (a broker subprocess), ``java.run_java`` (the Java
client harness), ``clients`` (kcat and small client wrappers), ``raw.RawClient`` (exact
requests over our own codec)."""
