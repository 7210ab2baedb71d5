"""The command trees of the real `det` (determined==0.38.1, read from its argparse parser in its
own venv) and of ours (read from our Typer app), and what of theirs ours lacks.

Each tree is a list of nodes: the path of commands (each level: its name, then its aliases),
the option strings it takes (`--json`, `-f`) and its positional arguments."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

_DUMP = r"""
import argparse, json, sys
from determined.cli import cli
from determined.cli import _declarative_argparse as d
from determined.deploy import cli as deploy_cli

def walk(parser, path, out):
    flags, positionals, subs = [], [], None
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            subs = a
        elif a.option_strings:
            flags.extend(s for s in a.option_strings if s not in ("-h", "--help"))
        else:
            positionals.append(a.dest)
    out.append({"path": path, "flags": sorted(flags), "positionals": positionals})
    if subs is None:
        return
    seen = {}
    for name, sp in subs.choices.items():
        seen.setdefault(id(sp), []).append(name)
    for names in seen.values():
        if names[0] == "help":
            continue
        walk(subs.choices[names[0]], path + [names], out)

out = []
parser = cli.make_parser()
d.add_args(parser, cli.all_args_description)
walk(parser, [], out)
deploy = []
dp = cli.make_parser()
d.add_args(dp, [deploy_cli.args_description])
walk(dp, [], deploy)
out = [e for e in out if not (e["path"] and e["path"][0][0] == "deploy")]
out += [e for e in deploy if e["path"] and e["path"][0][0] == "deploy"]
json.dump(out, sys.stdout)
"""


@dataclass(frozen=True)
class Node:
    path: tuple[tuple[str, ...], ...]  # per level: (name, *aliases)
    flags: frozenset[str]

    @property
    def name(self) -> str:
        return " ".join(level[0] for level in self.path)


def real_tree(venv: Path) -> list[Node]:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _DUMP],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return [
        Node(tuple(tuple(level) for level in e["path"]), frozenset(e["flags"]))
        for e in json.loads(out)
    ]


def our_tree(app: typer.Typer) -> list[Node]:
    root = typer.main.get_command(app)
    nodes: list[Node] = []

    # Typer carries its own copy of click (typer._click): read it by duck typing.
    def walk(cmd: Any, path: tuple[tuple[str, ...], ...]) -> None:
        flags = {
            opt
            for p in cmd.params
            if p.param_type_name == "option"
            for opt in (*p.opts, *p.secondary_opts)
            if opt not in ("-h", "--help")
        }
        nodes.append(Node(path, frozenset(flags)))
        if hasattr(cmd, "commands"):
            by_command: dict[int, list[str]] = {}
            for name, sub in cmd.commands.items():
                by_command.setdefault(id(sub), []).append(name)
            for names in by_command.values():
                walk(cmd.commands[names[0]], (*path, tuple(names)))

    walk(root, ())
    return nodes


@dataclass(frozen=True)
class Gaps:
    commands: tuple[str, ...]  # real command paths ours lacks, e.g. "experiment label add"
    flags: tuple[str, ...]  # "experiment create --paused" for a command ours has
    total_commands: int
    total_flags: int


def gaps(real: list[Node], ours: list[Node]) -> Gaps:
    """What ours lacks: a real command is present where ours has a node whose every level
    answers to the real level's name or one of its aliases; its flags are then compared."""
    index: dict[tuple[str, ...], Node] = {}
    for node in ours:
        for key in _spellings(node.path):
            index.setdefault(key, node)
    missing_commands, missing_flags = [], []
    for node in real:
        if not node.path:
            continue
        found = next((index[k] for k in _spellings(node.path) if k in index), None)
        if found is None:
            missing_commands.append(node.name)
            continue
        missing_flags += [f"{node.name} {flag}" for flag in sorted(node.flags - found.flags)]
    commands = [n for n in real if n.path]
    return Gaps(
        commands=tuple(missing_commands),
        flags=tuple(missing_flags),
        total_commands=len(commands),
        total_flags=sum(len(n.flags) for n in commands),
    )


def _spellings(path: tuple[tuple[str, ...], ...]) -> list[tuple[str, ...]]:
    """The main-name path and, per level, each alias (enough to match either spelling)."""
    out = [tuple(level[0] for level in path)]
    for i, level in enumerate(path):
        for alias in level[1:]:
            out.append(tuple(alias if j == i else lv[0] for j, lv in enumerate(path)))
    return out
