"""Settings of the Django test project (tests/frameworks/django/test_django.py sets the database)."""

import os

SECRET_KEY = "pg-objectid-framework-tests"  # a test project's; nothing is signed that matters
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "urls"
# The test client's host name.
ALLOWED_HOSTS = ["testserver"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "shop",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]


def _database(options=None, user=None):
    # PG_OBJECTID_DJANGO_* are set by test_django.py before Django reads this module.
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["PG_OBJECTID_DJANGO_DB"],
        "USER": user or os.environ["PG_OBJECTID_DJANGO_USER"],
        "HOST": os.environ["PG_OBJECTID_DJANGO_HOST"],
        "PORT": os.environ["PG_OBJECTID_DJANGO_PORT"],
        "OPTIONS": options or {},
        "TEST": {"MIRROR": "default"},
    }


DATABASES = {
    "default": _database(),
    # The same database through psycopg's server-side binding, Django's other way of sending
    # parameters.
    "server_binding": _database({"server_side_binding": True}),
    # The server's superuser, in both ways, for the attack test: it runs the application's
    # queries in a database whose owner has planted functions.
    "superuser": _database(user=os.environ["PG_OBJECTID_DJANGO_SUPERUSER"]),
    "superuser_server_binding": _database(
        {"server_side_binding": True}, user=os.environ["PG_OBJECTID_DJANGO_SUPERUSER"]
    ),
}
