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


def _zone():
    # The zone __date uses: the current one, or with USE_TZ = False the connection's, which
    # Django sets to TIME_ZONE.
    return timezone.get_current_timezone() if settings.USE_TZ else timezone.get_default_timezone()


def _repeated(wall, tz):
    """Whether a wall-clock time happens twice in `tz` (clocks set back across it)."""
    earlier, later = wall.replace(tzinfo=tz, fold=0), wall.replace(tzinfo=tz, fold=1)
    return (
        earlier.utcoffset() != later.utcoffset()
        and earlier.astimezone(datetime.UTC).astimezone(tz).replace(tzinfo=None) == wall
    )


class _DayBounds(lookups.YearLookup):
    # YearLookup's as_sql, with a day's bounds instead of a year's: the first and the last
    # instant (to the microsecond) of the date in the zone __date uses. The instants of a date
    # are one stretch of time, [its first instant, the next date's first instant), unless clocks
    # were set back across one of the two midnights (St. John's did, from 00:01 to 23:01): then
    # the date comes, goes and comes back, no range of the key can hold it, and the lookup keeps
    # Django's own form, which compares the cast date and reads every row.
    def as_sql(self, compiler, connection):
        if self.rhs_is_direct_value() and self._split(self.rhs):
            return super(lookups.YearLookup, self).as_sql(compiler, connection)
        return super().as_sql(compiler, connection)

    @staticmethod
    def _split(day):
        tz = _zone()
        midnights = [datetime.datetime.combine(day, datetime.time.min)]
        if day < datetime.date.max:
            midnights.append(midnights[0] + datetime.timedelta(days=1))
        return any(_repeated(m, tz) for m in midnights)

    def year_lookup_bounds(self, connection, day):
        tz = _zone()
        first = timezone.make_aware(datetime.datetime.combine(day, datetime.time.min), tz)
        if day < datetime.date.max:
            # The next date's first instant, in UTC, so that the microsecond subtracted is one
            # of real time: where clocks are set back at midnight (Santiago, Cairo, Beirut),
            # 23:00-23:59 happens twice, and "23:59:59.999999" read as a wall-clock time would
            # be the first of the two, leaving the second hour out.
            after = timezone.make_aware(
                datetime.datetime.combine(day + datetime.timedelta(days=1), datetime.time.min), tz
            ).astimezone(datetime.UTC)
            last = after - datetime.timedelta(microseconds=1)
        else:
            last = timezone.make_aware(datetime.datetime.combine(day, datetime.time.max), tz)
        # Aware either way: with USE_TZ = False too, the bounds are instants of the zone the
        # connection runs in, so a date that does not exist there (Apia skipped 2011-12-30)
        # holds no instant rather than the next date's.
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
