"""ACL bindings as Kafka defines them (``org.apache.kafka.common.acl`` / ``.resource``).

A binding is a resource pattern (resource type, name, LITERAL or PREFIXED) plus an access
control entry (principal, host, operation, ALLOW or DENY). Filters (DescribeAcls, DeleteAcls)
have the same shape with wildcards: resource type ANY, pattern type ANY or MATCH, null name,
principal or host, operation or permission ANY.

The enum codes are the wire codes of the ACL APIs. Names print as Kafka prints them
(``Topic``, ``TransactionalId``, ``DESCRIBE_CONFIGS``), which is how ``kafka-acls.sh`` and our
``hourglass acls`` show them.
"""
from __future__ import annotations

import enum
from typing import NamedTuple

WILDCARD = "*"                       # resource name or host matching any
WILDCARD_PRINCIPAL = "User:*"        # principal matching any
CLUSTER_NAME = "kafka-cluster"       # the one name of the CLUSTER resource


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7

    @classmethod
    def of(cls, code: int) -> "ResourceType":
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN

    @property
    def title(self) -> str:
        """Kafka's display name (``SecurityUtils.resourceTypeName``): ``TransactionalId``."""
        return "".join(p.capitalize() for p in self.name.split("_"))


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1       # filters only: any pattern type, names compared exactly
    MATCH = 2     # filters only: every pattern that would match the given name
    LITERAL = 3
    PREFIXED = 4

    @classmethod
    def of(cls, code: int) -> "PatternType":
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15

    @classmethod
    def of(cls, code: int) -> "AclOperation":
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3

    @classmethod
    def of(cls, code: int) -> "AclPermissionType":
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


# The operations that can be authorized on each resource type (Kafka's
# ``AclEntry.supportedOperations``): authorized_operations bit sets are built from these.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


class AclError(ValueError):
    """A binding or filter Kafka would refuse with INVALID_REQUEST; the message is Kafka's."""


def parse_principal(text: str | None) -> tuple[str, str]:
    """``"User:alice"`` -> ``("User", "alice")`` (Kafka's ``SecurityUtils.parseKafkaPrincipal``)."""
    if not text or ":" not in text:
        raise AclError(f"Could not parse principal from `{text}` (no colon is present separating the "
                       "principal type from the principal name)")
    kind, name = text.split(":", 1)
    return kind, name


class ResourcePattern(NamedTuple):
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, " \
               f"patternType={self.pattern_type.name})"


class AccessControlEntry(NamedTuple):
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def __str__(self) -> str:
        return f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, " \
               f"permissionType={self.permission.name})"


class AclBinding(NamedTuple):
    pattern: ResourcePattern
    entry: AccessControlEntry

    def validate(self) -> None:
        """Refuse what Kafka refuses on CreateAcls (``AclControlManager.validateNewAcl`` and the
        broker's ``AclApis`` checks), with Kafka's messages."""
        p, e = self.pattern, self.entry
        if p.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise AclError(f"Invalid resourceType {p.resource_type.name}")
        if p.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise AclError(f"Invalid patternType {p.pattern_type.name}")
        if e.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise AclError(f"Invalid operation {e.operation.name}")
        if e.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
            raise AclError(f"Invalid permissionType {e.permission.name}")
        if not p.name:
            raise AclError("Invalid empty resource name")
        if p.resource_type == ResourceType.CLUSTER and p.name != CLUSTER_NAME:
            raise AclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        parse_principal(e.principal)


class ResourcePatternFilter(NamedTuple):
    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, p: ResourcePattern) -> bool:
        """Kafka's ``ResourcePatternFilter.matches``."""
        if self.resource_type != ResourceType.ANY and self.resource_type != p.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and self.pattern_type != p.pattern_type:
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, p.pattern_type):
            return self.name == p.name
        # MATCH: every pattern that would apply to a resource of this name
        if p.pattern_type == PatternType.LITERAL:
            return self.name == p.name or p.name == WILDCARD
        if p.pattern_type == PatternType.PREFIXED:
            return self.name.startswith(p.name)
        return False

    @property
    def is_unknown(self) -> bool:
        return PatternType.UNKNOWN == self.pattern_type or self.resource_type == ResourceType.UNKNOWN


class AccessControlEntryFilter(NamedTuple):
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches(self, e: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != e.principal:
            return False
        if self.host is not None and self.host != e.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != e.operation:
            return False
        return self.permission == AclPermissionType.ANY or self.permission == e.permission

    @property
    def is_unknown(self) -> bool:
        return self.operation == AclOperation.UNKNOWN or self.permission == AclPermissionType.UNKNOWN


class AclBindingFilter(NamedTuple):
    pattern: ResourcePatternFilter = ResourcePatternFilter()
    entry: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, b: AclBinding) -> bool:
        return self.pattern.matches(b.pattern) and self.entry.matches(b.entry)

    def validate(self) -> None:
        """Kafka's ``AclControlManager.validateFilter``."""
        if self.pattern.is_unknown:
            raise AclError("Unknown patternFilter.")
        if self.entry.is_unknown:
            raise AclError("Unknown entryFilter.")


ANY_FILTER = AclBindingFilter()


def binding(resource_type: int, name: str, pattern_type: int, principal: str, host: str,
            operation: int, permission: int) -> AclBinding:
    """A binding from wire codes (unknown codes become UNKNOWN, as Kafka's ``fromCode``)."""
    return AclBinding(ResourcePattern(ResourceType.of(resource_type), name, PatternType.of(pattern_type)),
                      AccessControlEntry(principal, host, AclOperation.of(operation),
                                         AclPermissionType.of(permission)))


def binding_filter(resource_type: int, name: str | None, pattern_type: int, principal: str | None,
                   host: str | None, operation: int, permission: int) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.of(resource_type), name, PatternType.of(pattern_type)),
        AccessControlEntryFilter(principal, host, AclOperation.of(operation), AclPermissionType.of(permission)))
