"""SQLAlchemy 2 type and SQL functions for pg_objectid's `objectid`.

    from pg_objectid_sqlalchemy import ObjectIdType, gen_objectid, objectid_timestamp

    class Order(Base):
        __tablename__ = "orders"
        id: Mapped[ObjectId] = mapped_column(
            ObjectIdType, primary_key=True, server_default=text("gen_objectid()"))

    select(Order).where(Order.id.created >= since)   # objectid_timestamp(orders.id) >= :since

See docs/frameworks.md of pg_objectid. Importing this module also teaches the PostgreSQL dialect's
reflection (and so Alembic's autogenerate) the type's name.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import DateTime, cast, literal
from sqlalchemy.dialects.postgresql import base as _pg_base
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.functions import GenericFunction
from sqlalchemy.types import UserDefinedType

__all__ = ["ObjectIdType", "alembic_render_item", "gen_objectid", "gen_objectid_at", "objectid_timestamp"]

_HEX24 = re.compile(r"[0-9a-fA-F]{24}\Z")


def _hex(value: Any) -> str | None:
    """The 24 lowercase hex digits of an ObjectId, a 24-hex string or 12 bytes; else None."""
    if isinstance(value, str):
        return value.lower() if _HEX24.match(value) else None
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        return value.hex() if len(value) == 12 else None
    binary = getattr(value, "binary", None)  # bson.ObjectId, without importing bson
    if isinstance(binary, bytes) and len(binary) == 12:
        return binary.hex()
    return None


class ObjectIdType(UserDefinedType):
    """The `objectid` column type. Python values are bson.ObjectId (pymongo's bson package), or
    24-hex strings with `ObjectIdType(as_string=True)`; either form, or 12 bytes, may be bound.

    Parameters are sent as text with a cast (`%(p)s::OBJECTID` under psycopg 3), so they work
    whether or not the psycopg adapter of docs/clients.md is registered on the connection;
    results are read from text, or taken from that adapter's bson.ObjectId.
    """

    cache_ok = True
    render_bind_cast = True

    def __init__(self, as_string: bool = False):
        self.as_string = as_string

    def get_col_spec(self, **kw: Any) -> str:
        return "OBJECTID"

    @property
    def python_type(self) -> type:
        if self.as_string:
            return str
        from bson import ObjectId

        return ObjectId

    def _to_python(self, hex_: str) -> Any:
        if self.as_string:
            return hex_
        from bson import ObjectId

        return ObjectId(hex_)

    def bind_processor(self, dialect: Any) -> Any:
        def process(value: Any) -> str | None:
            if value is None:
                return None
            hex_ = _hex(value)
            if hex_ is None:
                # SQLAlchemy raises this as a StatementError naming the parameter.
                raise ValueError(f"invalid ObjectId: {value!r} (24 hexadecimal digits or 12 bytes)")
            return hex_

        return process

    def literal_processor(self, dialect: Any) -> Any:
        bind = self.bind_processor(dialect)

        def process(value: Any) -> str:
            return f"'{bind(value)}'::objectid"

        return process

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        def process(value: Any) -> Any:
            if value is None:
                return None
            hex_ = _hex(value)
            if hex_ is None:  # the server only sends valid ids: a driver set up wrongly
                raise ValueError(f"unexpected objectid value from the database: {value!r}")
            return self._to_python(hex_)

        return process

    class comparator_factory(UserDefinedType.Comparator):
        @property
        def created(self) -> Any:
            """`objectid_timestamp(col)`: compared with a time, the planner answers it from the
            column's index."""
            return objectid_timestamp(self.expr)


class gen_objectid(GenericFunction):
    """`gen_objectid()`: a new id from the server-wide generator."""

    type = ObjectIdType()
    inherit_cache = True


class gen_objectid_at(GenericFunction):
    """`gen_objectid_at(t)`: a new unique id carrying time `t` (backfills, imports)."""

    type = ObjectIdType()
    inherit_cache = True

    def __init__(self, when: Any, **kw: Any):
        # Always an explicit CAST to timestamptz: a datetime keeps its zone, and the call is
        # exactly gen_objectid_at(timestamptz) even where values are rendered inline (Alembic's
        # --sql mode), where an untyped literal would let a gen_objectid_at(text) found
        # earlier on the search_path take the call.
        super().__init__(cast(when, DateTime(timezone=True)), **kw)


class objectid_timestamp(GenericFunction):
    """`objectid_timestamp(id)`: the id's creation time, whole seconds, as a timestamptz."""

    type = DateTime(timezone=True)
    inherit_cache = True

    def __init__(self, id_: Any, **kw: Any):
        # A value (not a column) is bound as an objectid, cast, so the call is exactly
        # objectid_timestamp(objectid) however it is rendered.
        if not isinstance(id_, ClauseElement) and not hasattr(id_, "__clause_element__"):
            id_ = literal(id_, ObjectIdType())
        elif not isinstance(getattr(id_, "type", None), ObjectIdType):
            # Any other expression (an untyped bindparam, a string literal, a text column) cast,
            # as Django's Created does: untyped, objectid_timestamp(text) would take the call.
            id_ = cast(id_, ObjectIdType())
        super().__init__(id_, **kw)


def alembic_render_item(type_: str, obj: Any, autogen_context: Any) -> Any:
    """For Alembic's env.py, `context.configure(..., render_item=alembic_render_item)`: an
    autogenerated revision then writes objectid columns as `ObjectIdType()` and imports it;
    without it, it writes `pg_objectid_sqlalchemy.ObjectIdType()` with no import."""
    if type_ == "type" and isinstance(obj, ObjectIdType):
        autogen_context.imports.add("from pg_objectid_sqlalchemy import ObjectIdType")
        return "ObjectIdType(as_string=True)" if obj.as_string else "ObjectIdType()"
    return False


# Reflection (Inspector, Alembic's autogenerate) maps a column's type name through this table;
# without the entry an objectid column reflects as NullType with a warning.
_pg_base.ischema_names.setdefault("objectid", ObjectIdType)
