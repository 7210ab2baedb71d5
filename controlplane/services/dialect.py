"""The one place that knows which SQL dialect is underneath (upserts and JSON casts differ)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Float
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

_T = TypeVar("_T")
_BUILT: dict[tuple[str, object], Any] = {}


def name_of(session: AsyncSession) -> str:
    """The session's dialect ("postgresql" or "sqlite")."""
    return session.bind.dialect.name if session.bind is not None else "sqlite"


def built(session: AsyncSession, key: object, build: Callable[[str], _T]) -> _T:
    """`build(dialect name)`, made once per dialect and kept: a statement built afresh costs its
    construction and its cache key (SQLAlchemy memoizes the key on the statement object) on
    every execution, which on the master's hot paths was more than the statement's own run.
    `key` names the statement (a module-level constant of the caller)."""
    name = name_of(session)
    stmt = _BUILT.get((name, key))
    if stmt is None:
        stmt = _BUILT[(name, key)] = build(name)
    return stmt  # type: ignore[no-any-return]


def insert_ignoring_duplicates(session: AsyncSession, table: Any, index: list[str]) -> Any:
    """INSERT … ON CONFLICT (index) DO NOTHING for the session's dialect."""
    name = session.bind.dialect.name if session.bind is not None else "sqlite"
    if name == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(index_elements=index)
    return sqlite.insert(table).on_conflict_do_nothing(index_elements=index)


def insert_or_merge(session: AsyncSession, table: Any) -> Any:
    """INSERT for the session's dialect, to finish with `.on_conflict_do_update` (both dialects
    spell it alike; `.excluded` names the row that was not inserted)."""
    name = session.bind.dialect.name if session.bind is not None else "sqlite"
    return (postgresql if name == "postgresql" else sqlite).insert(table)


class json_number(FunctionElement[float]):
    """A JSON element as a float where it is a JSON number, else NULL. PostgreSQL's cast of a
    JSON string would fail the whole query (a hyperparameter "adam" compared with 0.01)."""

    type = Float()
    inherit_cache = True
    name = "json_number"


@compiles(json_number)
def _json_number_default(element: json_number, compiler: Any, **kw: Any) -> str:
    (inner,) = list(element.clauses)
    return str(compiler.process(inner.as_float(), **kw))


@compiles(json_number, "postgresql")
def _json_number_pg(element: json_number, compiler: Any, **kw: Any) -> str:
    (inner,) = list(element.clauses)
    sql = compiler.process(inner, **kw)
    return f"CASE WHEN jsonb_typeof({sql}) = 'number' THEN ({sql})::float8 END"
