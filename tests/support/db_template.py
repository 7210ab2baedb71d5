"""Databases already at the head migration, copied per test instead of migrated per test.

Running the 13 migrations took about a second per test (more on PostgreSQL): over the suite's
thousands of masters that was most of the suite's time. The schema is built once per test
session (per backend) by the same Alembic upgrade the master runs, then each test gets a copy:
a file copy for SQLite, `CREATE DATABASE … TEMPLATE` for PostgreSQL. The master's own start-up
upgrade then finds the database at head and does nothing, so the code under test is unchanged.
Tests of the migrations themselves keep using the empty `db_url`.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import uuid
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from controlplane.db.session import upgrade

_sqlite_template: Path | None = None
_pg_template: str | None = None


def _admin_dsn(db_url: str) -> str:
    url = make_url(db_url).set(drivername="postgresql", database="postgres")
    return url.render_as_string(hide_password=False)


async def _admin(db_url: str, *statements: str) -> None:
    conn = await asyncpg.connect(_admin_dsn(db_url))
    try:
        for sql in statements:
            await conn.execute(sql)
    finally:
        await conn.close()


async def _sqlite_copy(target: Path) -> None:
    global _sqlite_template
    if _sqlite_template is None:
        folder = Path(tempfile.mkdtemp(prefix="resolute-schema-"))
        path = folder / "template.db"
        await upgrade(f"sqlite+aiosqlite:///{path}")
        with sqlite3.connect(path) as conn:  # fold the WAL into the file before copying it
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        _sqlite_template = path
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_sqlite_template, target)


async def _pg_copy(db_url: str) -> None:
    global _pg_template
    if _pg_template is None:
        name = f"resolute_schema_{uuid.uuid4().hex[:12]}"
        await _admin(db_url, f'CREATE DATABASE "{name}"')
        await upgrade(str(make_url(db_url).set(database=name).render_as_string(False)))
        _pg_template = name
    target = make_url(db_url).database
    await _admin(
        db_url,
        f'DROP DATABASE IF EXISTS "{target}" WITH (FORCE)',
        f'CREATE DATABASE "{target}" TEMPLATE "{_pg_template}"',
    )


async def migrated(db_url: str) -> str:
    """Turn the fresh, empty database at `db_url` into one at the head migration; return it."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        await _sqlite_copy(Path(str(url.database)))
    else:
        await _pg_copy(db_url)
    return db_url


async def drop_templates(any_pg_url: str) -> None:
    """At the end of the session: the PostgreSQL template goes (the SQLite one is a temp file)."""
    global _pg_template, _sqlite_template
    if _pg_template is not None:
        await _admin(any_pg_url, f'DROP DATABASE IF EXISTS "{_pg_template}" WITH (FORCE)')
        _pg_template = None
    if _sqlite_template is not None:
        shutil.rmtree(_sqlite_template.parent, ignore_errors=True)
        _sqlite_template = None
