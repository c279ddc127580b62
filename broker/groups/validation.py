"""Request checks shared by every group type's heartbeat (Kafka's GroupMetadataManager
``throwIfEmptyString``), so that each type's module holds only its own rules."""
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
