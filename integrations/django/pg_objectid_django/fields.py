"""Model fields for pg_objectid's `objectid` type.

An `objectid` is 12 bytes (4-byte big-endian Unix seconds, 5 random bytes, 3-byte counter), the
same as MongoDB's ObjectId; in SQL text it is 24 hex digits. The fields hand the server that
text, so they work whichever way the database connection reads the type: as text (Django's own
connections) or as bson.ObjectId (psycopg with the adapter of docs/clients.md registered).
"""

import re
from typing import ClassVar

from django import forms
from django.core import exceptions
from django.db import models
from django.db.models.expressions import DatabaseDefault
from django.db.models.fields import AutoFieldMixin
from django.utils.translation import gettext_lazy as _

__all__ = ["ObjectIdAutoField", "ObjectIdField", "ObjectIdFormField", "UUIDv7AutoField"]

_HEX24 = re.compile(r"[0-9a-fA-F]{24}\Z")


def _bson_objectid():
    try:
        from bson import ObjectId
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise exceptions.ImproperlyConfigured(
            "ObjectIdField maps objectid to bson.ObjectId, which pymongo's bson package provides:"
            " install pymongo, or declare the field with as_string=True for 24-hex strings"
        ) from e
    return ObjectId


def _hex(value):
    """The 24 lowercase hex digits of an ObjectId, 24-hex string or 12 bytes; None if not one."""
    if isinstance(value, str):
        return value.lower() if _HEX24.match(value) else None
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        return value.hex() if len(value) == 12 else None
    binary = getattr(value, "binary", None)  # bson.ObjectId, without importing bson
    if isinstance(binary, bytes) and len(binary) == 12:
        return binary.hex()
    return None


class ObjectIdFormField(forms.CharField):
    """A 24-hex-digit text input; cleans to the model field's Python type."""

    default_error_messages: ClassVar[dict] = {"invalid": _("Enter a valid ObjectId (24 hexadecimal digits).")}

    def __init__(self, *, as_string=False, **kwargs):
        self.as_string = as_string
        kwargs.setdefault("max_length", 24)
        kwargs.setdefault("min_length", 24)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        hex_ = _hex(value)
        return hex_ if hex_ is not None else value

    def to_python(self, value):
        value = super().to_python(value)
        if value in self.empty_values:
            return None
        hex_ = _hex(value.strip())
        if hex_ is None:
            raise exceptions.ValidationError(self.error_messages["invalid"], code="invalid")
        return hex_

    def has_changed(self, initial, data):
        # Compared as text: an initial bson.ObjectId never equals the submitted string.
        if self.disabled:
            return False
        try:
            data = self.to_python(data)
        except exceptions.ValidationError:
            return True
        initial = _hex(initial) if initial not in self.empty_values else None
        return initial != data

    def clean(self, value):
        # CharField's checks (required, length) on the text; the field's type after them.
        hex_ = super().clean(value)
        if hex_ is None or self.as_string:
            return hex_
        return _bson_objectid()(hex_)


class ObjectIdField(models.Field):
    """A column of type `objectid`.

    Values are bson.ObjectId, or 24-hex strings (lower case) with `as_string=True`. Assigning
    either form, or 12 bytes, works in both modes; anything else raises ValidationError, as
    UUIDField does for a bad UUID. `db_default=GenObjectId()` has the server make the id.

    Lookups: `__created` (the id's creation time, a DateTimeField transform: `__created__gte`,
    `__created__date`, `__created__year`, ...) and `__created_after` / `__created_before`; each
    compiles to `objectid_timestamp(col) <op> t`, which pg_objectid's planner answers from the
    column's index.
    """

    description = _("MongoDB-compatible 12-byte ObjectId")
    empty_strings_allowed = False
    default_error_messages: ClassVar[dict] = {
        "invalid": _("“%(value)s” is not a valid ObjectId."),
    }

    def __init__(self, *args, as_string=False, **kwargs):
        self.as_string = as_string
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        # Migrations name the package, not this module, so that they outlive a move of the code.
        if path.startswith("pg_objectid_django."):
            path = f"pg_objectid_django.{type(self).__name__}"
        if self.as_string:
            kwargs["as_string"] = True
        return name, path, args, kwargs

    def db_type(self, connection):
        return "objectid"

    def get_internal_type(self):
        return "ObjectIdField"

    def _python(self, hex_):
        return hex_ if self.as_string else _bson_objectid()(hex_)

    def to_python(self, value):
        if value is None or isinstance(value, DatabaseDefault):
            return value
        hex_ = _hex(value)
        if hex_ is None:
            raise exceptions.ValidationError(
                self.error_messages["invalid"], code="invalid", params={"value": value}
            )
        return self._python(hex_)

    def from_db_value(self, value, expression, connection):
        # Text from Django's connections; bson.ObjectId or 12 bytes where the driver reads the
        # type itself.
        if value is None:
            return None
        hex_ = _hex(value)
        if hex_ is None:  # the server only sends valid ids: this is a driver set up wrongly
            raise exceptions.FieldError(f"unexpected objectid value from the database: {value!r}")
        return self._python(hex_)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        return self.to_python(value)

    def get_db_prep_value(self, value, connection, prepared=False):
        if not prepared:
            value = self.get_prep_value(value)
        if value is None or hasattr(value, "as_sql"):
            return value
        # Text of unknown type: the server reads it with objectid's input function.
        return _hex(value)

    def value_to_string(self, obj):
        value = self.value_from_object(obj)
        return None if value is None else _hex(value)

    def formfield(self, **kwargs):
        return super().formfield(
            **{"form_class": ObjectIdFormField, "as_string": self.as_string, **kwargs}
        )


class _ServerMadeKey(AutoFieldMixin):
    """What makes a column whose DEFAULT makes the key behave as AutoField's sequence does.

    A new instance's key is None until it is saved, not Django's DatabaseDefault placeholder:
    Django takes that placeholder for a key already set, and bulk_create() then leaves it in
    place instead of reading the server's key back. Saved, the INSERT says DEFAULT for the column
    and RETURNING reads the key back, in save() and in bulk_create() alike.
    """

    def __init__(self, *args, **kwargs):
        if "db_default" not in kwargs:
            kwargs["db_default"] = self._server_default()
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        if isinstance(kwargs.get("db_default"), type(self._server_default())):
            del kwargs["db_default"]
        return name, path, args, kwargs

    def get_default(self):
        return None

    def pre_save(self, model_instance, add):
        value = super().pre_save(model_instance, add)
        if add and value is None:
            return DatabaseDefault(self.db_default, output_field=self)
        return value

    def formfield(self, **kwargs):
        return None


class ObjectIdAutoField(_ServerMadeKey, ObjectIdField):
    """A primary key the server fills with `gen_objectid()`, as AutoField's are with a sequence.

    Declare it on each model (or an abstract base): `id = ObjectIdAutoField(primary_key=True)`.
    It cannot be DEFAULT_AUTO_FIELD, which Django requires to be an integer AutoField subclass;
    being one would also make `loaddata` reset a sequence the column does not have.
    """

    @staticmethod
    def _server_default():
        from .functions import GenObjectId

        return GenObjectId()

    def get_internal_type(self):
        return "ObjectIdAutoField"

    # AutoFieldMixin's would hand the driver the Python value (a bson.ObjectId) as it is.
    get_db_prep_value = ObjectIdField.get_db_prep_value


class UUIDv7AutoField(_ServerMadeKey, models.UUIDField):
    """A uuid primary key the server fills with `uuidv7()` (PostgreSQL 18's own, or
    pg_objectid's on 13-17): `id = UUIDv7AutoField(primary_key=True)`."""

    @staticmethod
    def _server_default():
        from .functions import UUIDv7

        return UUIDv7()

    def get_internal_type(self):
        return "UUIDField"

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        path = "pg_objectid_django.UUIDv7AutoField" if type(self) is UUIDv7AutoField else path
        return name, path, args, kwargs

    get_db_prep_value = models.UUIDField.get_db_prep_value
