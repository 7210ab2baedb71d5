"""Every command, subcommand and flag of the real `det` 0.38.1 (read from its argparse tree,
`det deploy` included) exists in ours, unless `cli_gaps.GAPS` names it with the reason.

The gap list must be exact: a gap that ours now covers has to leave it, so it only shrinks.
`python -m tests.compat.cli_gaps` prints the current gaps in the list's format."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import app
from tests.compat.cli_gaps import GAPS
from tests.compat.conftest import det_venv
from tests.support.cli_tree import gaps, our_tree, real_tree

pytestmark = [pytest.mark.compat]


def test_the_real_clients_tree_is_read(det_bin: Path) -> None:
    venv = det_venv()
    assert venv is not None
    real = {n.name: n for n in real_tree(venv)}
    assert "--paused" in real["experiment create"].flags
    assert real["experiment describe"].path[0][1:] == ("e",)
    assert "deploy aws up" in real and "deploy local cluster-up" in real


def test_every_real_command_and_flag_exists_or_is_documented(det_bin: Path) -> None:
    venv = det_venv()
    assert venv is not None
    found = gaps(real_tree(venv), our_tree(app))
    missing = set(found.commands) | set(found.flags)
    commands = found.total_commands - len(found.commands)
    flags = found.total_flags - len(found.flags)
    print(
        f"CLI coverage: commands {commands} / {found.total_commands}, "
        f"flags of present commands {flags} / {found.total_flags}"
    )
    undocumented = sorted(missing - GAPS.keys())
    assert not undocumented, f"missing from our det without a documented reason: {undocumented}"
    stale = sorted(GAPS.keys() - missing)
    assert not stale, f"ours has these now; remove them from cli_gaps.GAPS: {stale}"
    assert all(reason.strip() for reason in GAPS.values())
