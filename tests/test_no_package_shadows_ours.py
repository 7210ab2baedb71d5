"""No installed distribution but ours ships a top-level package named like one of ours.

python-hcl2 8.x installs a top-level `cli`: site-packages comes before the editable install's
path, so `import cli` found theirs and `.venv/bin/det` failed to start."""

from __future__ import annotations

import importlib.metadata as md

OURS = {"agent", "cli", "controlplane", "harness", "provisioners", "resource_pools", "terraform"}


def test_no_other_distribution_ships_a_package_named_like_ours() -> None:
    clashes = set()
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name == "resolute":
            continue
        for f in dist.files or []:
            top = f.parts[0] if f.parts else ""
            if top in OURS and len(f.parts) > 1:
                clashes.add((name, top))
    assert clashes == set()
