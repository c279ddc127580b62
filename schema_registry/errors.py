"""Confluent's Schema Registry errors: HTTP status, ``error_code`` and message wording
(``io.confluent.kafka.schemaregistry.rest.exceptions.Errors`` and the Rest*Exception classes)."""
from __future__ import annotations

from web.http import HttpError


class RegistryError(HttpError):
    pass


def subject_not_found(subject) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id=None) -> RegistryError:
    return RegistryError(404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def subject_soft_deleted(subject) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")


def subject_not_soft_deleted(subject) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject, version) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted."
                                     "Set permanent=true to delete permanently")


def version_not_soft_deleted(subject, version) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted "
                                     "first before being permanently deleted")


def subject_config_not_found(subject) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")


def subject_mode_not_found(subject) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible(subject, errors: list[str], latest=None, level: str = "") -> RegistryError:
    details = list(errors)
    if latest is not None:
        details += [f"{{oldSchemaVersion: {latest.version}}}", f"{{oldSchema: '{latest.schema}'}}"]
    details.append(f"{{compatibility: '{level}'}}")
    return RegistryError(409, 40901, f'Schema being registered is incompatible with an earlier schema for subject '
                                   f'"{subject}", details: [{", ".join(details)}]')


def invalid_schema(message: str) -> RegistryError:
    return RegistryError(422, 42201, message)


def invalid_version(version) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. "
                                     "Allowed values are between [1, 2^31-1] and the string \"latest\"")


def invalid_compatibility() -> RegistryError:
    return RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
                                     "backward_transitive, forward_transitive, and full_transitive")


def invalid_mode() -> RegistryError:
    return RegistryError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.")


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def invalid_subject(subject) -> RegistryError:
    return RegistryError(422, 42208, f"The specified subject '{subject}' is not a valid.")


def context_not_empty(context) -> RegistryError:
    return RegistryError(422, 42211, f"The specified context '{context}' is not empty.")


def reference_exists(subject, version) -> RegistryError:
    return RegistryError(422, 42206, f"One or more references exist to the schema "
                                     f"{{magic=1,keytype=SCHEMA,subject={subject},version={version}}}.")


def store_error(message: str) -> RegistryError:
    return RegistryError(500, 50001, message)
