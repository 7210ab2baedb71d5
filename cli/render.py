"""Output: rich tables for people, raw JSON (`--json`) and YAML for scripts."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table
from ruamel.yaml import YAML

PIPE_WIDTH = 200  # table width when stdout is not a terminal


def stdout_console() -> Console:
    """A console bound to the current sys.stdout (test runners swap it)."""
    console = Console(file=sys.stdout, highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(file=sys.stdout, highlight=False, width=PIPE_WIDTH)
    return console


def stderr_console() -> Console:
    return Console(file=sys.stderr, highlight=False)


def print_error(message: str) -> None:
    """One red line on stderr."""
    stderr_console().print(escape(message), style="bold red", soft_wrap=True)


def print_warning(message: str) -> None:
    stderr_console().print(escape(message), style="yellow", soft_wrap=True)


def echo(text: str = "", end: str = "\n") -> None:
    sys.stdout.write(text + end)
    sys.stdout.flush()


def print_json(data: Any) -> None:
    """The master's JSON, unchanged apart from indentation."""
    echo(json.dumps(data, indent=2))


def to_yaml(data: Any) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # keep the master's key order
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def print_yaml(data: Any) -> None:
    echo(to_yaml(data), end="")


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None
) -> None:
    table = Table(title=title, show_lines=False, header_style="bold", title_justify="left")
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell(value)) for value in row))
    stdout_console().print(table)


def print_csv(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """`--csv`: a header line, then one line per row, cells as the table shows them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows([cell(value) for value in row] for row in rows)
    sys.stdout.write(out.getvalue())


def print_rows(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    as_csv: bool = False,
    title: str | None = None,
) -> None:
    """A table, or CSV where `--csv` asks for it."""
    if as_csv:
        print_csv(headers, rows)
    else:
        print_table(headers, rows, title=title)


def print_record(pairs: Sequence[tuple[str, Any]], *, title: str | None = None) -> None:
    """A two-column key/value table for one object."""
    print_table(["Field", "Value"], [(k, v) for k, v in pairs], title=title)


def cell(value: Any) -> str:
    """Render one table cell: None → empty, bools lower-case, dicts as k=v."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, Mapping):
        return format_mapping(value)
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value)
    return str(value)


def format_number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def format_mapping(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={cell(v)}" for k, v in values.items())


def strip_state(state: Any) -> str:
    """`STATE_ACTIVE` → `ACTIVE` (display only)."""
    text = "" if state is None else str(state)
    return text.removeprefix("STATE_")


def format_time(stamp: Any) -> str:
    """RFC 3339 → `YYYY-MM-DD HH:MM:SS` in UTC-as-sent; unparsable values pass through."""
    if not stamp:
        return ""
    text = str(stamp)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    return parsed.strftime("%Y-%m-%d %H:%M:%S")


def format_bytes(count: Any) -> str:
    try:
        size = float(count)
    except (TypeError, ValueError):
        return ""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return ""  # pragma: no cover


@contextlib.contextmanager
def byte_progress(
    description: str, total: int, *, min_bytes: int
) -> Iterator[Callable[[int], None]]:
    """A transient progress bar on stderr for slow transfers; a no-op when small or piped."""
    console = stderr_console()
    if total < min_bytes or not console.is_terminal:
        yield lambda _n: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield lambda n: progress.advance(task, n)
