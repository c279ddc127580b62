"""Compatibility levels over the formats' one-direction verdicts (pure functions).

Confluent's levels: BACKWARD (the new schema reads data written with the latest), FORWARD
(the latest reads data written with the new one), FULL (both); the _TRANSITIVE forms check
against every live version instead of only the latest; NONE checks nothing.
"""
from __future__ import annotations

from schema_registry.formats import BACKWARD, FORWARD, ParsedSchema

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
          "FULL", "FULL_TRANSITIVE")
DEFAULT_LEVEL = "BACKWARD"


def directions(level: str) -> tuple[str, ...]:
    base = level.removesuffix("_TRANSITIVE")
    return {"NONE": (), "BACKWARD": (BACKWARD,), "FORWARD": (FORWARD,),
            "FULL": (BACKWARD, FORWARD)}[base]


def check(new: ParsedSchema, previous: list[ParsedSchema], level: str, policy: str = "STRICT") -> list[str]:
    """Why ``new`` may not follow ``previous`` (live versions, oldest first) at ``level``;
    empty when it may."""
    if not previous or level == "NONE":
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    errors: list[str] = []
    # newest first, as Confluent reports them
    for old in reversed(against):
        for direction in directions(level):
            errors.extend(new.compatibility_errors(old, direction, policy))
    return errors
