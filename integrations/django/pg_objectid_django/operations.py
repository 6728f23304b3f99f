"""A migration operation that creates the extension, like django.contrib.postgres's own."""

from django.contrib.postgres.operations import CreateExtension
from django.db import DatabaseError, router, transaction

__all__ = ["ObjectIdExtension"]


class ObjectIdExtension(CreateExtension):
    """`CREATE EXTENSION IF NOT EXISTS pg_objectid` forwards. Backwards, `DROP EXTENSION`, but only
    where the migrating role is the extension's owner and nothing else uses it.

    pg_objectid is a trusted extension: a role with CREATE on the database (its owner, say) may
    run it; no superuser is needed. An extension another role installed (a DBA, for several
    applications) is theirs to drop, and one that other tables still use must stay: reversing
    leaves it in either case, rather than failing ("must be owner of extension", "cannot drop
    extension ... because other objects depend on it") or taking it from the others. Ownership
    is by name, not by privilege: a superuser reversing the migration drops only an extension it
    installed itself.
    """

    def __init__(self):
        self.name = "pg_objectid"

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        connection = schema_editor.connection
        if connection.vendor != "postgresql" or not router.allow_migrate(connection.alias, app_label):
            return
        if schema_editor.collect_sql:  # sqlmigrate: show the statement, run nothing
            schema_editor.execute(f"DROP EXTENSION IF EXISTS {schema_editor.quote_name(self.name)}")
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT extowner = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user)"
                "  FROM pg_catalog.pg_extension WHERE extname = %s",
                [self.name],
            )
            row = cursor.fetchone()
        if not (row and row[0]):
            return
        try:
            # In a savepoint: a refused DROP must not abort the migration's transaction.
            with transaction.atomic(using=connection.alias):
                schema_editor.execute(f"DROP EXTENSION {schema_editor.quote_name(self.name)}")
        except DatabaseError as e:
            if getattr(e.__cause__, "sqlstate", None) != "2BP01":  # dependent_objects_still_exist
                raise
