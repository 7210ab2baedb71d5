"""Which test modules wait for the machine-wide Docker lock (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import needs_docker_lock


class _Module:
    def __init__(self, *markers: str) -> None:
        self.markers = markers

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.markers else None


@pytest.mark.parametrize(
    ("text", "markers", "locked"),
    [
        ('deploy(runtime="docker")', (), True),
        ("import Docker", (), True),  # any mention, any case: a false alarm only costs a wait
        ('deploy(runtime="docker")', ("no_docker_engine",), False),
        ('deploy(runtime="process")', (), False),
        ('deploy(runtime="process")', ("no_docker_engine",), False),
    ],
)
def test_the_lock_is_for_modules_that_name_docker_unless_they_say_otherwise(
    tmp_path: Path, text: str, markers: tuple[str, ...], locked: bool
) -> None:
    path = tmp_path / "test_mod.py"
    path.write_text(text)
    assert needs_docker_lock(_Module(*markers), path) is locked  # type: ignore[arg-type]
