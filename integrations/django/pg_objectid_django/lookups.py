"""Creation-time lookups on ObjectIdField, written so that the key's index answers them.

`objectid_timestamp(col) <op> t` is what pg_objectid's planner turns into a range of the key
(docs/time-queries.md). Django's own `__date` and `__year` on a DateTimeField would wrap the
column in a cast or an extract, which no index of the key can answer; `__year` already becomes a
BETWEEN of two instants in Django, and `__date` here does the same, as its year lookup does.
"""

import datetime

from django.conf import settings
from django.db import models
from django.db.models import lookups
from django.db.models.functions import TruncDate
from django.utils import timezone

from .fields import ObjectIdField

__all__ = ["Created", "CreatedAfter", "CreatedBefore", "CreatedDate"]


@ObjectIdField.register_lookup
class Created(models.Transform):
    """`id__created`: the id's creation time (whole seconds), a timestamptz."""

    lookup_name = "created"
    function = "objectid_timestamp"
    # The argument typed, so that exactly objectid_timestamp(objectid) is called whatever the
    # transform is applied to; a cast of a column to its own type adds nothing to the plan.
    template = "%(function)s(CAST(%(expressions)s AS objectid))"
    output_field = models.DateTimeField()


@ObjectIdField.register_lookup
class CreatedAfter(lookups.GreaterThan):
    """`id__created_after=t`: made after `t` (objectid_timestamp(id) > t)."""

    lookup_name = "created_after"

    def __init__(self, lhs, rhs):
        super().__init__(Created(lhs), rhs)

    def get_rhs_op(self, connection, rhs):
        return connection.operators["gt"] % rhs


@ObjectIdField.register_lookup
class CreatedBefore(lookups.LessThan):
    """`id__created_before=t`: made before `t` (objectid_timestamp(id) < t)."""

    lookup_name = "created_before"

    def __init__(self, lhs, rhs):
        super().__init__(Created(lhs), rhs)

    def get_rhs_op(self, connection, rhs):
        return connection.operators["lt"] % rhs


@Created.register_lookup
class CreatedDate(TruncDate):
    """`id__created__date`: the creation date in the current time zone, as DateTimeField's
    `__date`; compared with a date, it becomes a range of instants (below)."""


class _DayBounds(lookups.YearLookup):
    # YearLookup's as_sql, with a day's bounds instead of a year's: the first and the last
    # instant (to the microsecond) of the date in the current time zone, computed as Django's
    # year_lookup_bounds_for_datetime_field computes a year's, except for the last one.
    def year_lookup_bounds(self, connection, day):
        first = datetime.datetime.combine(day, datetime.time.min)
        after = first + datetime.timedelta(days=1) if day < datetime.date.max else None
        if settings.USE_TZ:
            tz = timezone.get_current_timezone()
            first = timezone.make_aware(first, tz)
            if after is not None:
                # The next day's first instant, in UTC, so that the microsecond subtracted below
                # is one of real time: where a zone sets its clocks back at midnight (Cairo,
                # Santiago, Beirut ...), 23:00-23:59 happens twice, and "23:59:59.999999" read as
                # a wall-clock time would be the first of the two, leaving the second hour out.
                after = timezone.make_aware(after, tz).astimezone(datetime.UTC)
        if after is not None:
            last = after - datetime.timedelta(microseconds=1)
        else:
            last = datetime.datetime.combine(day, datetime.time.max)
            if settings.USE_TZ:
                last = timezone.make_aware(last, tz)
        return [
            connection.ops.adapt_datetimefield_value(first),
            connection.ops.adapt_datetimefield_value(last),
        ]


@CreatedDate.register_lookup
class CreatedDateExact(_DayBounds, lookups.YearExact):
    pass


@CreatedDate.register_lookup
class CreatedDateGt(_DayBounds, lookups.YearGt):
    pass


@CreatedDate.register_lookup
class CreatedDateGte(_DayBounds, lookups.YearGte):
    pass


@CreatedDate.register_lookup
class CreatedDateLt(_DayBounds, lookups.YearLt):
    pass


@CreatedDate.register_lookup
class CreatedDateLte(_DayBounds, lookups.YearLte):
    pass
