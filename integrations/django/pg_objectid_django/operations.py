"""A migration operation that creates the extension, like django.contrib.postgres's own."""

from django.contrib.postgres.operations import CreateExtension

__all__ = ["ObjectIdExtension"]


class ObjectIdExtension(CreateExtension):
    """`CREATE EXTENSION IF NOT EXISTS pg_objectid` forwards; backwards, `DROP EXTENSION`, but only
    where the migrating role owns the extension (is the owner or a member of the owner's role).

    pg_objectid is a trusted extension: a role with CREATE on the database (its owner, say) may
    run it; no superuser is needed. An extension someone else installed (a DBA, for several
    applications) is theirs to drop: reversing leaves it, rather than failing with "must be owner
    of extension" or taking it from the others.
    """

    def __init__(self):
        self.name = "pg_objectid"

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql" and not self._owned(schema_editor):
            return
        super().database_backwards(app_label, schema_editor, from_state, to_state)

    def _owned(self, schema_editor):
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_catalog.pg_has_role(current_user, extowner, 'USAGE')"
                "  FROM pg_catalog.pg_extension WHERE extname = %s",
                [self.name],
            )
            row = cursor.fetchone()
        return row is not None and row[0]
