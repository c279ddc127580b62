"""``hourglass certs DIR``: a throwaway CA with a broker certificate and client certificates, as
PEM files, for trying TLS (the docker SASL_SSL example uses it; tests use ``hourglass.secure``).

    hourglass certs ./secrets --host broker --host localhost --client alice

writes ``ca.pem`` (the CA to trust: ``ssl.truststore.type=PEM`` and
``ssl.truststore.location``), ``broker.pem`` (the broker's key and chain:
``ssl.keystore.type=PEM`` and ``ssl.keystore.location``) and ``<client>.pem`` /
``<client>.key`` per ``--client`` (CN = the name). Keys are unencrypted and the files mode 0644
so a container user can read them: they are for tests and demos, not production.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def add_parser(subparsers):
    p = subparsers.add_parser("certs", help="make a throwaway CA, broker and client certificates (PEM) for TLS tests")
    p.add_argument("dir")
    p.add_argument("--host", action="append", default=[], help="a name or address of the broker (repeatable; "
                                                                 "default localhost and 127.0.0.1)")
    p.add_argument("--client", action="append", default=[], help="a client certificate for this name (repeatable)")
    return p


def run(args, out=None) -> int:
    import trustme
    out = out or sys.stdout
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    hosts = args.host or ["localhost", "127.0.0.1"]
    ca.issue_cert(*hosts).private_key_and_cert_chain_pem.write_to_path(str(d / "broker.pem"))
    written = ["ca.pem", "broker.pem"]
    for name in args.client:
        c = ca.issue_cert(f"{name}@hourglass.test", common_name=name)
        c.cert_chain_pems[0].write_to_path(str(d / f"{name}.pem"))
        c.private_key_pem.write_to_path(str(d / f"{name}.key"))
        written += [f"{name}.pem", f"{name}.key"]
    for f in written:
        os.chmod(d / f, 0o644)
    print(f"wrote {', '.join(written)} in {d} (broker certificate for {', '.join(hosts)})", file=out)
    return 0
