"""Option types shared by several commands."""

from __future__ import annotations

from typing import Annotated

import typer

JsonOption = Annotated[bool, typer.Option("--json", help="Print the master's raw JSON.")]
CsvOption = Annotated[bool, typer.Option("--csv", help="Print the table as CSV.")]
YamlOption = Annotated[bool, typer.Option("--yaml", help="Print the master's reply as YAML.")]
FollowOption = Annotated[
    bool, typer.Option("-f", "--follow", help="Keep streaming new log lines until the end.")
]
TailOption = Annotated[
    int | None,
    typer.Option("--tail", min=1, help="Only the last N log lines.", show_default=False),
]


class UsageMistake(typer.BadParameter):
    """Options that do not go together: the usage line and the message, exit code 2."""

    def format_message(self) -> str:
        return self.message
