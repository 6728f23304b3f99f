"""docs/frameworks.md's Django recipe against a real server.

Run by scripts/clients_test.sh with the pinned packages and integrations/django on PYTHONPATH,
the server in PG_OBJECTID_CLIENTS_DSN and the page's files (models.py, 0001_initial.py)
extracted into PG_OBJECTID_FRAMEWORK_FILES. The project runs as a role that owns its database and
is not a superuser, as an application's does: its migration creates the (trusted) extension.
"""

import datetime
import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

import psycopg
from bson import ObjectId

from framework_server import dsn, dsn_parts, fresh_database

HERE = Path(__file__).resolve().parent
ROLE = "django_app"
DB = "frameworks_django"


def _setup_database_and_project():
    fresh_database(DB, ROLE)
    files = Path(os.environ["PG_OBJECTID_FRAMEWORK_FILES"])
    project = Path(tempfile.mkdtemp(prefix="pg_objectid-django-"))
    shutil.copytree(HERE, project, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(files / "models.py", project / "shop" / "models.py")
    shutil.copy(files / "0001_initial.py", project / "shop" / "migrations" / "0001_initial.py")
    sys.path.insert(0, str(project))
    parts = dsn_parts()
    os.environ.update(
        DJANGO_SETTINGS_MODULE="settings",
        PG_OBJECTID_DJANGO_DB=DB,
        PG_OBJECTID_DJANGO_USER=ROLE,
        PG_OBJECTID_DJANGO_HOST=parts["host"],
        PG_OBJECTID_DJANGO_PORT=parts["port"],
        PG_OBJECTID_DJANGO_SUPERUSER=parts["user"],
    )
    return project


PROJECT = _setup_database_and_project()

import django

django.setup()

from django.core import exceptions, serializers
from django.core.management import call_command
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from pg_objectid_django import GenObjectIdAt, ObjectIdField, ObjectIdTimestamp
from shop.models import Customer, Order, Shipment

T0 = datetime.datetime(2026, 3, 1, 22, 30, tzinfo=datetime.UTC)


def column(table, name):
    """(type, default expression) of a column, from the catalogs."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid)"
            "  FROM pg_attribute a LEFT JOIN pg_attrdef d ON (d.adrelid, d.adnum) = (a.attrelid, a.attnum)"
            " WHERE a.attrelid = %s::regclass AND a.attname = %s",
            [table, name],
        )
        return cur.fetchone()


def plan(queryset, using="default"):
    """EXPLAIN of a queryset with sequential scans priced out: an index the condition cannot use
    still leaves a Seq Scan."""
    with connections[using].cursor() as cur:
        cur.execute("SET enable_seqscan = off")
    try:
        return queryset.explain()
    finally:
        with connections[using].cursor() as cur:
            cur.execute("RESET enable_seqscan")


class DjangoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        call_command("migrate", verbosity=0)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(PROJECT, ignore_errors=True)

    def setUp(self):
        Shipment.objects.all().delete()
        Order.objects.all().delete()
        Customer.objects.all().delete()

    # --- DDL and migrations ---------------------------------------------------------------

    def test_migration_creates_the_columns_and_defaults(self):
        self.assertEqual(column("shop_customer", "id"), ("objectid", "gen_objectid()"))
        self.assertEqual(column("shop_order", "id"), ("objectid", "gen_objectid()"))
        self.assertEqual(column("shop_order", "customer_id"), ("objectid", None))
        self.assertEqual(column("shop_shipment", "parcel"), ("objectid", "gen_objectid()"))
        self.assertEqual(column("shop_shipment", "id")[0], "uuid")
        self.assertRegex(column("shop_shipment", "id")[1], r"^(public\.)?uuidv7\(\)$")
        self.assertRegex(column("shop_order", "reference")[1], r"^(public\.)?uuidv7\(\)$")
        with connection.cursor() as cur:
            cur.execute("SELECT extowner::regrole::text FROM pg_extension WHERE extname = 'pg_objectid'")
            self.assertEqual(cur.fetchone(), (ROLE,))
            cur.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            self.assertEqual(cur.fetchone(), (False,))

    def test_the_models_match_the_migration(self):
        # makemigrations --check exits non-zero if the models would need a new migration.
        call_command("makemigrations", "shop", check=True, dry_run=True, verbosity=0)

    def test_the_migration_reverses_and_applies_again(self):
        call_command("migrate", "shop", "zero", verbosity=0)
        with connection.cursor() as cur:
            cur.execute("SELECT to_regclass('shop_order'), count(*) FROM pg_extension WHERE extname = 'pg_objectid'")
            self.assertEqual(cur.fetchone(), (None, 0))
        call_command("migrate", "shop", verbosity=0)
        self.assertEqual(column("shop_order", "id"), ("objectid", "gen_objectid()"))
        self.assertIsInstance(Customer.objects.create(name="again").pk, ObjectId)

    def test_sqlmigrate_shows_the_column(self):
        from io import StringIO

        out = StringIO()
        call_command("sqlmigrate", "shop", "0001", stdout=out)
        text = out.getvalue()
        # The extension exists already, so sqlmigrate (which runs its check) shows the step as a no-op.
        self.assertIn("-- Creates extension pg_objectid", text)
        self.assertIn('"id" objectid DEFAULT (gen_objectid()) NOT NULL PRIMARY KEY', text)

    # --- server-made ids --------------------------------------------------------------------

    def test_save_and_create_get_server_ids_that_ascend(self):
        customer = Customer(name="ada")
        self.assertIsNone(customer.pk)  # as with AutoField, until saved
        customer.save()
        self.assertIsInstance(customer.pk, ObjectId)
        orders = [Order.objects.create(customer=customer, total=i) for i in range(50)]
        ids = [o.pk for o in orders]
        self.assertTrue(all(isinstance(i, ObjectId) for i in ids))
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(len(set(ids)), 50)
        # The value read back is the one the server stored.
        with connection.cursor() as cur:
            cur.execute("SELECT id::text FROM shop_order ORDER BY id")
            self.assertEqual([r[0] for r in cur.fetchall()], [str(i) for i in ids])
        self.assertEqual(Order.objects.get(pk=ids[7]).total, 7)
        self.assertEqual(Order.objects.get(pk=str(ids[7])).pk, ids[7])
        self.assertEqual(list(customer.orders.order_by("id").values_list("id", flat=True)), ids)

    def test_bulk_create_returns_the_server_ids(self):
        customer = Customer.objects.create(name="bob")
        orders = Order.objects.bulk_create([Order(customer=customer, total=i) for i in range(200)])
        ids = [o.pk for o in orders]
        self.assertTrue(all(isinstance(i, ObjectId) for i in ids))
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(set(ids), set(Order.objects.values_list("id", flat=True)))
        self.assertTrue(all(o.reference.version == 7 for o in orders))
        self.assertEqual(dict(Order.objects.values_list("id", "reference")), {o.pk: o.reference for o in orders})
        shipments = Shipment.objects.bulk_create([Shipment(order=o) for o in orders[:20]])
        self.assertTrue(all(s.pk.version == 7 for s in shipments))
        self.assertTrue(all(isinstance(s.parcel, str) and len(s.parcel) == 24 for s in shipments))
        self.assertEqual([s.parcel for s in shipments], sorted(s.parcel for s in shipments))

    def test_a_uuid_key_and_a_string_objectid_made_by_the_server(self):
        order = Order.objects.create(customer=Customer.objects.create(name="c"), total=1)
        shipment = Shipment.objects.create(order=order)
        self.assertEqual(shipment.pk.version, 7)
        self.assertRegex(shipment.parcel, r"^[0-9a-f]{24}$")
        again = Shipment.objects.get(parcel=shipment.parcel.upper())
        self.assertEqual((again.pk, again.parcel, again.order_id), (shipment.pk, shipment.parcel, order.pk))

    def test_client_made_ids_are_kept(self):
        customer = Customer.objects.create(name="mongo")
        mine = ObjectId()
        Order.objects.create(id=mine, customer=customer, total=3)
        self.assertEqual(Order.objects.get(pk=mine).pk, mine)
        Order.objects.create(id="507f1f77bcf86cd799439011", customer=customer, total=4)
        self.assertTrue(Order.objects.filter(pk=ObjectId("507f1f77bcf86cd799439011")).exists())

    # --- creation-time lookups ----------------------------------------------------------------

    def _orders_at(self, times):
        """Orders whose ids carry the given times (gen_objectid_at); their ids, in that order.
        bulk_create leaves an expression given as a key in place, so they are read back."""
        customer = Customer.objects.create(name="clock")
        Order.objects.bulk_create(
            [Order(id=GenObjectIdAt(t), customer=customer, total=i) for i, t in enumerate(times)]
        )
        by_total = dict(Order.objects.values_list("total", "id"))
        return [by_total[i] for i in range(len(times))]

    def test_creation_time_lookups_return_the_right_rows(self):
        times = [T0 + datetime.timedelta(minutes=37 * i) for i in range(200)]
        ids = self._orders_at(times)
        by_id = dict(zip(ids, times))
        for i, t in by_id.items():
            self.assertEqual(i.generation_time, t)
        latest = Order.objects.annotate(created=ObjectIdTimestamp("id")).order_by("-created").first()
        self.assertEqual((latest.pk, latest.created), (ids[-1], times[-1]))
        backfilled = Order.objects.create(id=GenObjectIdAt(T0), customer=latest.customer, total=1000)
        self.assertEqual(backfilled.pk.generation_time, T0)
        backfilled.delete()

        def ids(qs):
            return sorted(qs.values_list("id", flat=True))

        def expect(pred):
            return sorted(i for i, t in by_id.items() if pred(t))

        since = T0 + datetime.timedelta(hours=30)
        self.assertEqual(ids(Order.objects.filter(id__created_after=since)), expect(lambda t: t > since))
        self.assertEqual(ids(Order.objects.filter(id__created_before=since)), expect(lambda t: t < since))
        self.assertEqual(ids(Order.objects.filter(id__created__gte=since)), expect(lambda t: t >= since))
        day = datetime.date(2026, 3, 3)
        self.assertEqual(ids(Order.objects.filter(id__created__date=day)), expect(lambda t: t.date() == day))
        self.assertEqual(ids(Order.objects.filter(id__created__date__gt=day)), expect(lambda t: t.date() > day))
        self.assertEqual(ids(Order.objects.filter(id__created__date__lte=day)), expect(lambda t: t.date() <= day))
        self.assertEqual(ids(Order.objects.filter(id__created__year=2026)), sorted(by_id))
        self.assertEqual(ids(Order.objects.filter(id__created__year=2025)), [])
        # A date in another time zone: the current one decides, as for DateTimeField's __date.
        from django.utils import timezone

        tokyo = datetime.timezone(datetime.timedelta(hours=9))
        with timezone.override(tokyo):
            self.assertEqual(
                ids(Order.objects.filter(id__created__date=day)),
                expect(lambda t: t.astimezone(tokyo).date() == day),
            )
        # Through a foreign key: orders whose customer was created since a time (Django reads the
        # customer's key from the order's own customer_id column; no join).
        customer = Customer.objects.get()
        self.assertEqual(
            ids(Order.objects.filter(customer__id__created__lte=customer.pk.generation_time)), sorted(by_id)
        )
        self.assertEqual(ids(Order.objects.filter(customer__id__created__gt=customer.pk.generation_time)), [])

    def test_dates_in_zones_that_change_their_clocks_at_midnight(self):
        # America/Santiago sets its clocks back at midnight ending 2025-04-05 (23:00-23:59 happen
        # twice) and forward at midnight starting 2025-09-07 (00:00-00:59 do not happen);
        # America/St_Johns set them back from 00:01 to 23:01 on 2005-10-30, so that 2005-10-29
        # comes back after 2005-10-30 has begun (no range of the key holds either date).
        import zoneinfo

        for name, starts in [
            ("America/Santiago", [datetime.date(2025, 4, 4), datetime.date(2025, 9, 6)]),
            ("America/St_Johns", [datetime.date(2005, 10, 28)]),
        ]:
            zone = zoneinfo.ZoneInfo(name)
            self._check_dates_in(zone, starts)

    def test_dates_without_time_zone_support(self):
        # USE_TZ = False: Django's connections run in TIME_ZONE and __date means a date there; the
        # bounds are that zone's instants (Santiago's clocks go back at midnight on 2025-04-05).
        import zoneinfo

        from django.test import override_settings

        with override_settings(USE_TZ=False, TIME_ZONE="America/Santiago"):
            self._check_dates_in(zoneinfo.ZoneInfo("America/Santiago"), [datetime.date(2025, 4, 4)])

    def _check_dates_in(self, zone, starts):
        from django.utils import timezone

        Order.objects.all().delete()
        Customer.objects.all().delete()
        times, days = [], []
        for start in starts:
            first = datetime.datetime.combine(start, datetime.time.min, tzinfo=datetime.UTC)
            times += [first + datetime.timedelta(minutes=10 * i) for i in range(4 * 144)]
            days += [start + datetime.timedelta(days=d) for d in range(4)]
        by_id = dict(zip(self._orders_at(times), times))
        with timezone.override(zone):
            for day in days:
                for lookup, pred in [
                    ("", lambda d, day=day: d == day),
                    ("__gt", lambda d, day=day: d > day),
                    ("__gte", lambda d, day=day: d >= day),
                    ("__lt", lambda d, day=day: d < day),
                    ("__lte", lambda d, day=day: d <= day),
                ]:
                    with self.subTest(zone=str(zone), day=day, lookup=lookup):
                        got = sorted(Order.objects.filter(**{f"id__created__date{lookup}": day}).values_list("id", flat=True))
                        self.assertEqual(got, sorted(i for i, t in by_id.items() if pred(t.astimezone(zone).date())))

    def test_reversing_leaves_an_extension_someone_else_installed(self):
        call_command("migrate", "shop", "zero", verbosity=0)
        with psycopg.connect(dsn(DB), autocommit=True) as dba:
            dba.execute("CREATE EXTENSION pg_objectid")  # owned by the superuser, not the app
            try:
                call_command("migrate", "shop", verbosity=0)
                call_command("migrate", "shop", "zero", verbosity=0)
                owner = dba.execute("SELECT extowner::regrole::text FROM pg_extension WHERE extname = 'pg_objectid'").fetchall()
                self.assertEqual(owner, [("postgres",)])
                self.assertIsNone(dba.execute("SELECT to_regclass('shop_order')").fetchone()[0])
            finally:
                dba.execute("DROP EXTENSION IF EXISTS pg_objectid")
        call_command("migrate", "shop", verbosity=0)
        self.assertEqual(column("shop_order", "id"), ("objectid", "gen_objectid()"))

    def test_reversing_leaves_an_extension_other_tables_use(self):
        with connection.cursor() as cur:
            cur.execute("CREATE TABLE other_app (id objectid)")
        try:
            call_command("migrate", "shop", "zero", verbosity=0)
            with connection.cursor() as cur:
                cur.execute("SELECT to_regclass('shop_order'), count(*) FROM pg_extension WHERE extname = 'pg_objectid'")
                self.assertEqual(cur.fetchone(), (None, 1))
        finally:
            with connection.cursor() as cur:
                cur.execute("DROP TABLE other_app")
            call_command("migrate", "shop", verbosity=0)
        self.assertEqual(column("shop_order", "id"), ("objectid", "gen_objectid()"))

    def test_overloads_planted_by_the_database_owner_catch_nothing(self):
        # The database's owner (the application's role, not a superuser) plants text-taking
        # overloads of the functions the integration calls; a superuser then runs the
        # application's queries, with either way of sending parameters.
        from django.db.models import Value

        planted = """
            CREATE TABLE planted_calls (f text);
            CREATE FUNCTION public.gen_objectid_at(text) RETURNS objectid LANGUAGE plpgsql AS $f$
            BEGIN INSERT INTO planted_calls VALUES ('gen_objectid_at'); ALTER ROLE django_app SUPERUSER;
                  RETURN NULL; END $f$;
            CREATE FUNCTION public.objectid_timestamp(text) RETURNS timestamptz LANGUAGE plpgsql AS $f$
            BEGIN INSERT INTO planted_calls VALUES ('objectid_timestamp'); ALTER ROLE django_app SUPERUSER;
                  RETURN NULL; END $f$;
        """
        with connection.cursor() as cur:
            cur.execute(planted)
        try:
            for alias in ("superuser", "superuser_server_binding"):
                with self.subTest(alias=alias):
                    customer = Customer.objects.using(alias).create(name=alias)
                    made = Order.objects.using(alias).create(id=GenObjectIdAt(T0), customer=customer, total=1)
                    self.assertEqual(made.pk.generation_time, T0)
                    orders = Order.objects.using(alias)
                    self.assertEqual(orders.filter(id__created__gte=T0, id__created_before=T0 + datetime.timedelta(1)).count(), 1)
                    self.assertEqual(orders.filter(id__created__date=T0.date()).count(), 1)
                    value = Value("507f1f77bcf86cd799439011", output_field=ObjectIdField())
                    self.assertEqual(
                        orders.annotate(t=ObjectIdTimestamp(value)).values_list("t", flat=True).first(),
                        datetime.datetime(2012, 10, 17, 21, 13, 27, tzinfo=datetime.UTC),
                    )
                    Order.objects.all().delete()
            with connection.cursor() as cur:
                cur.execute("SELECT count(*) FROM planted_calls")
                self.assertEqual(cur.fetchone(), (0,))
                cur.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [ROLE])
                self.assertEqual(cur.fetchone(), (False,))
        finally:
            for alias in ("superuser", "superuser_server_binding"):
                connections[alias].close()
            with connection.cursor() as cur:
                cur.execute(
                    "DROP FUNCTION public.gen_objectid_at(text); DROP FUNCTION public.objectid_timestamp(text);"
                    " DROP TABLE planted_calls"
                )

    def test_creation_time_lookups_use_the_primary_key(self):
        self._orders_at([T0 + datetime.timedelta(minutes=i) for i in range(2000)])
        with connection.cursor() as cur:
            cur.execute("ANALYZE shop_order")
        for qs in [
            Order.objects.filter(id__created_after=T0),
            Order.objects.filter(id__created__gte=T0, id__created__lt=T0 + datetime.timedelta(hours=1)),
            Order.objects.filter(id__created__date=datetime.date(2026, 3, 2)),
            Order.objects.filter(id__created__year=2026),
        ]:
            with self.subTest(sql=str(qs.query)):
                text = plan(qs)
                self.assertIn("shop_order_pkey", text)
                self.assertNotIn("Seq Scan", text)
                self.assertIn("objectid_timestamp", str(qs.query))

    def test_server_side_binding(self):
        # psycopg's server-side binding sends parameters as typed values, not literals.
        customer = Customer.objects.using("server_binding").create(name="bound")
        self.assertIsInstance(customer.pk, ObjectId)
        self._orders_at([T0, T0 + datetime.timedelta(days=1)])
        qs = Order.objects.using("server_binding")
        self.assertEqual(qs.filter(id__created__date=T0.date()).count(), 1)
        self.assertEqual(qs.filter(id__created_after=T0).count(), 1)
        self.assertEqual(Customer.objects.using("server_binding").get(pk=str(customer.pk)).name, "bound")
        self.assertIn("shop_order_pkey", plan(qs.filter(id__created__gte=T0), using="server_binding"))

    # --- bad values ------------------------------------------------------------------------------

    def test_bad_values_raise_validation_errors(self):
        customer = Customer.objects.create(name="v")
        for bad in ["507f1f77bcf86cd79943901", "507f1f77bcf86cd79943901g", "", 5, 5.0, b"short", object()]:
            with self.subTest(bad=bad):
                with self.assertRaises(exceptions.ValidationError) as caught:
                    list(Order.objects.filter(pk=bad))
                self.assertEqual(caught.exception.code, "invalid")
                with self.assertRaises(exceptions.ValidationError):
                    Order(id=bad, customer=customer, total=1).save(force_insert=True)
        with self.assertRaises(exceptions.ValidationError) as caught:
            Shipment(order=Order.objects.create(customer=customer, total=1), parcel="x" * 23).full_clean()
        self.assertIn("parcel", caught.exception.message_dict)
        self.assertIn("“xxxxxxxxxxxxxxxxxxxxxxx” is not a valid ObjectId.", caught.exception.message_dict["parcel"])
        self.assertEqual(Order.objects.count(), 1)

    def test_form_field(self):
        field = ObjectIdField().formfield()
        self.assertEqual(field.clean("507F1F77BCF86CD799439011"), ObjectId("507f1f77bcf86cd799439011"))
        for bad in ["507f1f77bcf86cd79943901", "zz" * 12]:
            with self.assertRaises(exceptions.ValidationError):
                field.clean(bad)
        self.assertEqual(ObjectIdField(as_string=True).formfield().clean("507F1F77BCF86CD799439011"), "507f1f77bcf86cd799439011")
        # An unchanged id is unchanged, whichever form the initial value has.
        self.assertFalse(field.has_changed(ObjectId("507f1f77bcf86cd799439011"), "507F1F77BCF86CD799439011"))
        self.assertTrue(field.has_changed(ObjectId("507f1f77bcf86cd799439011"), "507f1f77bcf86cd799439012"))
        self.assertTrue(field.has_changed(None, "507f1f77bcf86cd799439011"))
        self.assertFalse(field.has_changed(None, ""))

    # --- admin, serializers, the psycopg adapter -----------------------------------------------

    def test_admin_shows_and_finds_objects_by_their_text_form(self):
        from django.contrib.auth.models import User

        admin_user, _ = User.objects.get_or_create(username="root", is_staff=True, is_superuser=True)
        customer = Customer.objects.create(name="in-admin")
        order = Order.objects.create(customer=customer, total=12)
        client = Client()
        client.force_login(admin_user)
        page = client.get(f"/admin/shop/order/{order.pk}/change/")
        self.assertEqual(page.status_code, 200)
        self.assertContains(page, str(customer.pk))  # the foreign key's choice
        listing = client.get("/admin/shop/order/")
        self.assertContains(listing, f"/admin/shop/order/{order.pk}/change/")
        # An id that is not one: the admin's "does not exist" redirect, not a server error.
        missing = client.get("/admin/shop/order/xyz/change/")
        self.assertEqual(missing.status_code, 302)
        response = client.post(
            "/admin/shop/order/add/", {"customer": str(customer.pk), "total": "5.00"}
        )
        self.assertEqual(response.status_code, 302)
        self.assertEqual(Order.objects.filter(total=5).get().customer_id, customer.pk)

    def assertContains(self, response, text):
        self.assertIn(text, response.content.decode())

    def test_serializers_use_the_text_form_and_read_it_back(self):
        customer = Customer.objects.create(name="dumped")
        order = Order.objects.create(customer=customer, total=2)
        shipment = Shipment.objects.create(order=order)
        data = serializers.serialize("json", [customer, order, shipment])
        self.assertIn(f'"pk": "{order.pk}"', data)
        self.assertIn(f'"customer": "{customer.pk}"', data)
        self.assertIn(f'"parcel": "{shipment.parcel}"', data)
        Shipment.objects.all().delete()
        Order.objects.all().delete()
        Customer.objects.all().delete()
        for obj in serializers.deserialize("json", data):
            obj.save()
        self.assertEqual(Order.objects.get().pk, order.pk)
        self.assertEqual(Shipment.objects.get().parcel, shipment.parcel)

    def test_loaddata(self):
        customer = Customer.objects.create(name="fixture")
        path = Path(tempfile.mkdtemp()) / "fixture.json"
        path.write_text(serializers.serialize("json", [customer]))
        Customer.objects.all().delete()
        call_command("loaddata", str(path), verbosity=0)
        self.assertEqual(Customer.objects.get().pk, customer.pk)

    def test_with_the_psycopg_adapter_registered(self):
        # docs/clients.md's adapter makes the driver itself read objectid as bson.ObjectId.
        from psycopg.types import TypeInfo

        from objectid_psycopg import register_objectid

        customer = Customer.objects.create(name="adapted")
        with connections["server_binding"].cursor() as cur:
            raw = cur.connection
            register_objectid(TypeInfo.fetch(raw, "objectid"), raw)
        qs = Customer.objects.using("server_binding")
        self.assertEqual(qs.get(pk=customer.pk).pk, customer.pk)
        made = qs.create(name="adapted-2")
        self.assertIsInstance(made.pk, ObjectId)
        self.assertEqual(qs.filter(id__created__gte=T0).count(), 2)
        connections["server_binding"].close()

    def test_queries_name_the_function(self):
        with CaptureQueriesContext(connection) as queries:
            list(Order.objects.filter(id__created__date=datetime.date(2026, 3, 2)))
        self.assertRegex(
            queries[-1]["sql"],
            r'objectid_timestamp\(CAST\("shop_order"\."id" AS objectid\)\) BETWEEN .*2026-03-02 00:00:00.* AND .*2026-03-02 23:59:59\.999999',
        )


if __name__ == "__main__":
    unittest.main()
