"""pg_objectid's SQL functions as Django expressions, for `db_default`, values and queries."""

from django.db import models
from django.utils.deconstruct import deconstructible

__all__ = ["GenObjectId", "GenObjectIdAt", "ObjectIdTimestamp", "UUIDv7"]


# Migrations name the package, not this module, so that they outlive a move of the code.
@deconstructible(path="pg_objectid_django.GenObjectId")
class GenObjectId(models.Func):
    """`gen_objectid()`: a new id from the server-wide generator (ids of all sessions ascend)."""

    function = "gen_objectid"
    arity = 0

    @property
    def output_field(self):
        from .fields import ObjectIdField

        return ObjectIdField()


@deconstructible(path="pg_objectid_django.GenObjectIdAt")
class GenObjectIdAt(models.Func):
    """`gen_objectid_at(t)`: a new unique id carrying time `t`, for backfills and imports."""

    function = "gen_objectid_at"
    arity = 1
    # The argument typed, so that exactly gen_objectid_at(timestamptz) is called.
    template = "%(function)s(CAST(%(expressions)s AS timestamptz))"

    def __init__(self, when, **extra):
        # A plain datetime is a value, not a column name.
        if not hasattr(when, "resolve_expression"):
            when = models.Value(when, output_field=models.DateTimeField())
        super().__init__(when, **extra)

    @property
    def output_field(self):
        from .fields import ObjectIdField

        return ObjectIdField()


@deconstructible(path="pg_objectid_django.ObjectIdTimestamp")
class ObjectIdTimestamp(models.Func):
    """`objectid_timestamp(id)`: the id's creation time, whole seconds, as a timestamptz.

    Compared with a time (`filter(created__gte=...)` after `annotate(created=...)`, or the
    `created` transform of ObjectIdField), the planner turns it into a range of the key itself.
    """

    function = "objectid_timestamp"
    arity = 1
    # The argument typed, so that exactly objectid_timestamp(objectid) is called, even for a value.
    template = "%(function)s(CAST(%(expressions)s AS objectid))"
    output_field = models.DateTimeField()


@deconstructible(path="pg_objectid_django.UUIDv7")
class UUIDv7(models.Func):
    """`uuidv7()`: PostgreSQL 18's own, or pg_objectid's on 13-17, for `UUIDField(db_default=...)`."""

    function = "uuidv7"
    arity = 0
    output_field = models.UUIDField()
