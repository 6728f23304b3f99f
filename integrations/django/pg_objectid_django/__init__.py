"""Django fields, expressions, lookups and a migration operation for pg_objectid.

    from pg_objectid_django import ObjectIdAutoField, ObjectIdField, GenObjectId, UUIDv7

See docs/frameworks.md of pg_objectid.
"""

from . import lookups  # noqa: F401  (registers __created, __created_after, __created_before)
from .fields import ObjectIdAutoField, ObjectIdField, ObjectIdFormField, UUIDv7AutoField
from .functions import GenObjectId, GenObjectIdAt, ObjectIdTimestamp, UUIDv7

__all__ = [
    "GenObjectId",
    "GenObjectIdAt",
    "ObjectIdAutoField",
    "ObjectIdField",
    "ObjectIdFormField",
    "ObjectIdTimestamp",
    "UUIDv7",
    "UUIDv7AutoField",
]
