"""What the Python framework tests share: the server scripts/clients_test.sh started
(PG_OBJECTID_CLIENTS_DSN) and a fresh database owned by a role that is not a superuser, as an
application's is."""

import os

import psycopg
from psycopg import sql


def dsn_parts():
    """The libpq keywords of PG_OBJECTID_CLIENTS_DSN ("host=... port=... user=...") as a dict."""
    dsn = os.environ.get("PG_OBJECTID_CLIENTS_DSN")
    if not dsn:
        raise RuntimeError("PG_OBJECTID_CLIENTS_DSN is not set: run this through scripts/clients_test.sh")
    return dict(part.split("=", 1) for part in dsn.split())


def dsn(dbname, user=None):
    """A connection string to `dbname`, as the server's user (a superuser) or as `user`."""
    parts = {**dsn_parts(), **({"user": user} if user else {})}
    return " ".join(f"{k}={v}" for k, v in parts.items()) + f" dbname={dbname}"


def fresh_database(db, role):
    """Database `db` made anew, owned by login role `role` (made anew, not a superuser)."""
    with psycopg.connect(dsn("postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        # A session time zone that is not UTC: a time that loses its zone on the way shows.
        admin.execute(sql.SQL("ALTER ROLE {} SET timezone = 'Asia/Tokyo'").format(sql.Identifier(role)))
        admin.execute(
            sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(sql.Identifier(db), sql.Identifier(role))
        )
