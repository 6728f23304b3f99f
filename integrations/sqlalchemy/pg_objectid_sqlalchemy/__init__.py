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

from sqlalchemy import DateTime, literal
from sqlalchemy.dialects.postgresql import base as _pg_base
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.functions import GenericFunction
from sqlalchemy.types import UserDefinedType

__all__ = ["ObjectIdType", "gen_objectid", "gen_objectid_at", "objectid_timestamp"]

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
        # A datetime is bound as a timestamptz: a naive DateTime's bind cast would drop its zone.
        if not isinstance(when, ClauseElement):
            when = literal(when, DateTime(timezone=True))
        super().__init__(when, **kw)


class objectid_timestamp(GenericFunction):
    """`objectid_timestamp(id)`: the id's creation time, whole seconds, as a timestamptz."""

    type = DateTime(timezone=True)
    inherit_cache = True


# Reflection (Inspector, Alembic's autogenerate) maps a column's type name through this table;
# without the entry an objectid column reflects as NullType with a warning.
_pg_base.ischema_names.setdefault("objectid", ObjectIdType)
