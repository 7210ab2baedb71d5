"""The end of a PostgreSQL transaction's writes as one statement: the loaded rows it changed
(UPDATEs) and the rows it adds (INSERTs), chained as data-modifying CTEs.

The unit of work sends each changed object as a statement of its own; a trial's end changes
three (its experiment, allocation and trial) and adds its state changes, four round trips.
On the master's loopback link a round trip costs more CPU than the statement's own work
(issue 15's bookkeeping budget), so they go as one. The objects are then told the values as
committed, so they agree with their rows and the commit's flush has nothing left to write.

Only plain column changes of single-table objects are chained; anything else (a new or deleted
object, a changed relationship, an inherited mapping) leaves the session to its own flush.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Table, bindparam, func, insert, inspect, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstanceState
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.exc import StaleDataError

from controlplane.services.dialect import name_of

Change = tuple[object, Table, dict[str, Any], dict[str, Any]]  # object, table, key, values


def _column_changes(state: InstanceState[Any]) -> dict[str, Any] | None:
    """The object's changed columns (attribute key -> new value); None: not chainable."""
    mapper = state.mapper
    if len(mapper.tables) != 1 or mapper.inherits is not None:
        return None
    for rel in mapper.relationships:
        if state.attrs[rel.key].history.has_changes():
            return None
    out: dict[str, Any] = {}
    for attr in mapper.column_attrs:
        hist = state.attrs[attr.key].history
        if hist.added:
            if len(attr.columns) != 1 or attr.columns[0].primary_key:
                return None
            out[attr.key] = hist.added[0]
    return out


def _changes(session: AsyncSession) -> list[Change] | None:
    sync = session.sync_session
    if sync.new or sync.deleted:
        return None
    out: list[Change] = []
    for obj in sync.dirty:
        state = inspect(obj)
        values = _column_changes(state)
        if values is None:
            return None
        if not values:
            continue
        mapper = state.mapper
        table = mapper.local_table
        key = dict(zip((c.name for c in mapper.primary_key), state.identity or (), strict=True))
        columns = {mapper.get_property(k).columns[0].name: v for k, v in values.items()}
        out.append((obj, table, key, {"values": columns, "attrs": values}))
    # A fixed order gives one statement text per shape (prepared and cached once by asyncpg).
    return sorted(out, key=lambda c: (c[1].name, sorted(c[3]["values"])))


# Statements by shape (the tables, keys and columns they write, rows per insert): built and
# compiled once each. A statement with its values in it has no cache key, so SQLAlchemy would
# compile it afresh every time, which costs more than the round trips it saves.
_STATEMENTS: dict[tuple[Any, ...], Any] = {}
_MAX_SHAPES = 256


def _build(updated: Sequence[Table], inserted: Sequence[Table], shape: tuple[Any, ...]) -> Any:
    counted = []
    ctes = []
    for i, (table, (_, key, columns)) in enumerate(zip(updated, shape[0], strict=True)):
        stmt = update(table).values({c: bindparam(f"u{i}_v_{c}") for c in columns})
        for name in key:
            stmt = stmt.where(table.c[name] == bindparam(f"u{i}_k_{name}"))
        cte = stmt.returning(table.c[key[0]]).cte(f"u{i}")
        ctes.append(cte)
        counted.append(select(func.count()).select_from(cte).scalar_subquery())
    for j, (table, (_, columns)) in enumerate(zip(inserted, shape[1], strict=True)):
        # Rows as one array per column (unnest): one statement for any number of rows (a
        # VALUES list of N rows would be a statement per N, and has no cache key at all).
        arrays = [bindparam(f"i{j}_{c}", type_=ARRAY(table.c[c].type)) for c in columns]
        source = func.unnest(*arrays).table_valued(*columns).render_derived(name=f"r{j}")
        rows = select(*(source.c[c] for c in columns))
        ctes.append(insert(table).from_select(list(columns), rows).cte(f"i{j}"))
    statement = select(*counted) if counted else select(func.count())
    for cte in ctes:
        statement = statement.add_cte(cte)
    return statement


async def flush(
    session: AsyncSession, inserts: Sequence[tuple[Table, Sequence[Mapping[str, Any]]]]
) -> bool:
    """Write the session's pending column changes and `inserts` in one statement (PostgreSQL).
    False: nothing written, the caller writes them its own way (another dialect, or changes
    this cannot chain)."""
    if name_of(session) != "postgresql":
        return False
    inserts = [(table, rows) for table, rows in inserts if rows]
    changes = _changes(session)
    if changes is None or len(changes) + len(inserts) < 2:
        return False  # one statement (or none) either way
    shape = (
        tuple((t.name, tuple(key), tuple(sorted(c["values"]))) for _, t, key, c in changes),
        tuple((t.name, tuple(sorted(rows[0]))) for t, rows in inserts),
    )
    if any(set(r) != set(rows[0]) for _, rows in inserts for r in rows):
        return False  # rows of one table with different columns: not one VALUES list
    statement = _STATEMENTS.get(shape)
    if statement is None:
        statement = _build([t for _, t, _, _ in changes], [t for t, _ in inserts], shape)
        if len(_STATEMENTS) >= _MAX_SHAPES:
            _STATEMENTS.pop(next(iter(_STATEMENTS)))
        _STATEMENTS[shape] = statement
    params: dict[str, Any] = {}
    for i, (_, _, key, change) in enumerate(changes):
        params.update({f"u{i}_k_{k}": v for k, v in key.items()})
        params.update({f"u{i}_v_{k}": v for k, v in change["values"].items()})
    for j, (_, rows) in enumerate(inserts):
        params.update({f"i{j}_{k}": [row[k] for row in rows] for k in rows[0]})
    with session.no_autoflush:
        row = (await session.execute(statement, params)).one()
    for (_, table, _, _), n in zip(changes, row, strict=False):
        if n != 1:
            raise StaleDataError(f"UPDATE of a {table.name} row matched {n} rows, expected 1")
    for obj, _, _, change in changes:
        for attr, value in change["attrs"].items():
            set_committed_value(obj, attr, value)
    # What the unit of work does after its own flush: the objects leave the session's modified
    # set, so the commit does not start a flush that finds nothing to write. Without this
    # (another SQLAlchemy) that empty flush is all that is lost.
    commit_all = getattr(InstanceState, "_commit_all_states", None)
    if commit_all is not None:
        sync = session.sync_session
        commit_all(((inspect(obj), inspect(obj).dict) for obj, *_ in changes), sync.identity_map)
    return True
