"""``hourglass users add|list|remove``: SCRAM users (``kafka-configs.sh --entity-type users``).

    hourglass users add alice --password alice-secret [--mechanism SCRAM-SHA-512] [--iterations 8192]
    hourglass users list [alice ...]
    hourglass users remove alice [--mechanism SCRAM-SHA-256]

Against a running broker (``-b``, ``--command-config``) through AlterUserScramCredentials and
DescribeUserScramCredentials (confluent-kafka's AdminClient); the password is salted and
iterated by the client, so it never crosses the wire. With ``--data-dir DIR`` instead, the
credentials are written straight into a stopped broker's data dir (what ``kafka-storage.sh
format --add-scram`` does before a first start: the way to create the first user of a
SCRAM-only broker). ``--mechanism`` defaults to both SCRAM-SHA-256 and SCRAM-SHA-512 for add,
and to every mechanism the user has for remove. The password may come from ``--password-file``
(its first line) rather than the command line.

``list`` prints ``User: alice  SCRAM-SHA-256 (iterations=4096), SCRAM-SHA-512 (iterations=4096)``
per user. Exit codes: 0 done, 1 refused or unreachable, 2 usage.
"""
from __future__ import annotations

import sys
from pathlib import Path

from hourglass.cli import topics
from hourglass.cli.topics import CliError

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_parser(subparsers):
    p = subparsers.add_parser("users", help="add, list or remove SCRAM users (kafka-configs.sh --entity-type users)")
    topics._add_common(p)
    p.add_argument("--data-dir", help="work on a stopped broker's data dir instead of over the wire")
    sub = p.add_subparsers(dest="users_cmd", required=True, metavar="{add,list,remove}")
    a = sub.add_parser("add", help="create or change a user's SCRAM credentials")
    a.add_argument("user")
    a.add_argument("--password")
    a.add_argument("--password-file", help="read the password from the first line of this file")
    a.add_argument("--mechanism", action="append", choices=MECHANISMS, help="default: both")
    a.add_argument("--iterations", type=int, default=4096, help="4096..16384 (default 4096)")
    ls = sub.add_parser("list", help="users with SCRAM credentials (all when none named)")
    ls.add_argument("users", nargs="*")
    r = sub.add_parser("remove", help="remove a user's SCRAM credentials")
    r.add_argument("user")
    r.add_argument("--mechanism", action="append", choices=MECHANISMS, help="default: every one it has")
    for s in (a, ls, r):
        topics._add_common(s, suppress=True)
        s.add_argument("--data-dir", default=argparse_suppress())
    return p


def argparse_suppress():
    import argparse
    return argparse.SUPPRESS


def _password(args) -> str:
    if args.password_file:
        return Path(args.password_file).read_text().splitlines()[0]
    if args.password is None:
        raise CliError("give --password or --password-file")
    return args.password


def _offline(args, out) -> int:
    from broker.config import BrokerConfig
    from broker.security.scram import (MAX_ITERATIONS, MIN_ITERATIONS, ScramCredentialStore, ScramMechanism,
                                       credential_from_password)
    from broker.security.state import security_dir
    store = ScramCredentialStore(security_dir(BrokerConfig({"log.dirs": args.data_dir}).log_dirs))
    if args.users_cmd == "add":
        if not MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:
            raise CliError(f"--iterations must be within {MIN_ITERATIONS}..{MAX_ITERATIONS}")
        pw = _password(args)
        mechs = [ScramMechanism.from_name(m) for m in (args.mechanism or MECHANISMS)]
        for m in mechs:
            store.apply({args.user: (m, credential_from_password(m, pw, args.iterations))}, {})
        print(f"Added SCRAM credentials of {args.user} ({', '.join(m.mechanism_name for m in mechs)}) "
              f"in {store.path}", file=out)
        return 0
    if args.users_cmd == "remove":
        have = store.users.get(args.user, {})
        mechs = [ScramMechanism.from_name(m) for m in args.mechanism] if args.mechanism else list(have)
        if not have or any(m not in have for m in mechs):
            raise CliError(f"{args.user} has no such SCRAM credential")
        for m in mechs:
            store.apply({}, {args.user: m})
        print(f"Removed SCRAM credentials of {args.user}", file=out)
        return 0
    for user in sorted(args.users or store.users):
        creds = store.users.get(user)
        if creds:
            print(f"User: {user}  " + ", ".join(f"{m.mechanism_name} (iterations={c.iterations})"
                                                for m, c in sorted(creds.items())), file=out)
    return 0


def run(args, out=None, err=None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    try:
        if getattr(args, "data_dir", None):
            return _offline(args, out)
        from confluent_kafka.admin import (ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion,
                                           UserScramCredentialUpsertion)
        admin, _md = topics._admin(args)
        if args.users_cmd == "add":
            pw = _password(args).encode()
            alterations = [UserScramCredentialUpsertion(args.user, ScramCredentialInfo(
                getattr(ScramMechanism, m.replace("-", "_")), args.iterations), pw)
                for m in (args.mechanism or MECHANISMS)]
        elif args.users_cmd == "remove":
            mechs = args.mechanism
            if not mechs:
                desc = admin.describe_user_scram_credentials([args.user])
                try:
                    found = desc[args.user].result(timeout=args.timeout)
                except Exception as exc:
                    raise CliError(topics._msg(exc)) from None
                mechs = [i.mechanism.name.replace("_", "-") for i in found.scram_credential_infos]
            alterations = [UserScramCredentialDeletion(args.user, getattr(ScramMechanism, m.replace("-", "_")))
                           for m in mechs]
        else:
            futs = admin.describe_user_scram_credentials(args.users or None)
            try:
                descs = futs.result(timeout=args.timeout) if hasattr(futs, "result") else \
                    {u: f.result(timeout=args.timeout) for u, f in futs.items()}
            except Exception as exc:
                raise CliError(topics._msg(exc)) from None
            for user in sorted(descs):
                infos = descs[user].scram_credential_infos
                print(f"User: {user}  " + ", ".join(f"{i.mechanism.name.replace('_', '-')} (iterations={i.iterations})"
                                                    for i in sorted(infos, key=lambda i: i.mechanism.value)), file=out)
            return 0
        for alteration in alterations:  # one per request: Kafka refuses a user altered twice in one
            errors = topics._wait(admin.alter_user_scram_credentials([alteration], request_timeout=args.timeout),
                                  args.timeout)
            if errors:
                raise CliError("; ".join(errors))
        print(f"{'Added' if args.users_cmd == 'add' else 'Removed'} SCRAM credentials of {args.user}", file=out)
        return 0
    except CliError as exc:
        print(f"hourglass users: error: {exc}", file=err)
        return 1
