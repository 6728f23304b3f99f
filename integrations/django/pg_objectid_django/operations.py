"""A migration operation that creates the extension, like django.contrib.postgres's own."""

from django.contrib.postgres.operations import CreateExtension

__all__ = ["ObjectIdExtension"]


class ObjectIdExtension(CreateExtension):
    """`CREATE EXTENSION IF NOT EXISTS pg_objectid` forwards, `DROP EXTENSION` backwards.

    pg_objectid is a trusted extension: a role with CREATE on the database (its owner, say) may
    run it; no superuser is needed.
    """

    def __init__(self):
        self.name = "pg_objectid"
