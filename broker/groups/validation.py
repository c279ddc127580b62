"""Request checks shared by the coordinators (Kafka's GroupMetadataManager
``throwIfEmptyString``; RE2/J regular expressions, which consumer-group subscriptions and
ListTransactions' transactional id pattern both use), so that each group type's module holds
only its own rules."""
from __future__ import annotations

from typing import Optional


def is_blank(s: Optional[str]) -> bool:
    """Kafka's ``throwIfEmptyString`` test: set, and empty after Java's ``trim``."""
    return s is not None and all(c <= " " for c in s)


def blank_id_message(req, *, member_id: bool) -> Optional[str]:
    """The message for the first blank id of a heartbeat request, in Kafka's order (member id
    when ``member_id`` is to be checked, then group, instance and rack ids); None when none is."""
    for check, value, message in ((member_id, getattr(req, "member_id", None), "MemberId can't be empty."),
                                  (True, req.group_id, "GroupId can't be empty."),
                                  (True, req.instance_id, "InstanceId can't be empty."),
                                  (True, req.rack_id, "RackId can't be empty.")):
        if check and is_blank(value):
            return message
    return None


def compile_regex(regex: str):
    """RE2/J syntax, as Kafka compiles ``subscribed_topic_regex``: the ``google-re2`` binding of
    RE2 (the engine RE2/J ports); Python's ``re`` when it is not installed (it accepts
    backreferences and lookarounds RE2 refuses, and misses RE2's ``\\C``/``\\pN`` forms)."""
    try:
        import re2 as engine
    except ImportError:  # pragma: no cover - google-re2 is a dependency
        import re as engine
    return engine.compile(regex)
