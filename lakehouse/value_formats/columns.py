"""What the value translators share about Iceberg column types."""
from __future__ import annotations

from pyiceberg.types import ListType, MapType, StructType


def has_no_columns(itype) -> bool:
    """A struct without fields, or a list or map of one: a type Parquet cannot write (it has no
    empty groups), so a field of it is left out of the table."""
    if isinstance(itype, StructType):
        return not itype.fields
    if isinstance(itype, ListType):
        return has_no_columns(itype.element_type)
    if isinstance(itype, MapType):
        return has_no_columns(itype.value_type)
    return False
