"""Alembic's environment for tests/frameworks/sqlalchemy: online migrations of the recipe's
models, to the database the test names in the configuration (sqlalchemy.url)."""

from alembic import context
from sqlalchemy import create_engine

from shop_sqlalchemy import Base

config = context.config
engine = create_engine(config.get_main_option("sqlalchemy.url"))
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata)
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
