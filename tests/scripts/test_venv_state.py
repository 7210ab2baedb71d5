"""scripts/venv_state.py: what lets scripts/setup.sh skip pip when .venv already has what
pyproject.toml asks for (a re-run, or the quick start after the test setup), and run it when
something is missing, excluded, or pyproject.toml changed since the last install."""

from __future__ import annotations

import importlib.util
import json
from importlib import metadata
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "venv_state.py"
_spec = importlib.util.spec_from_file_location("venv_state", SCRIPT)
assert _spec is not None and _spec.loader is not None
venv_state = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(venv_state)
Requirement = venv_state.Requirement

HTTPX = metadata.version("httpx")


@pytest.mark.parametrize(
    ("requirement", "problem"),
    [
        ("httpx>=0.1", None),
        (f"httpx=={HTTPX}", None),
        ("httpx<0.1", f"httpx<0.1 is wanted, {HTTPX} is installed"),
        ("no-such-package-resolute-test>=1", "no-such-package-resolute-test>=1 is not installed"),
        # Only for an extra nobody asked for: not wanted.
        ('no-such-package-resolute-test; extra == "other"', None),
        # An extra of a dependency is walked: sqlalchemy[asyncio] needs greenlet.
        ("sqlalchemy[asyncio]", None),
    ],
)
def test_requirements_against_what_is_installed(requirement: str, problem: str | None) -> None:
    found = venv_state.missing([Requirement(requirement)])
    assert found == ([] if problem is None else [problem])


def test_a_dependency_of_a_dependency_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A package present whose own requirement is gone (a broken venv) is not "nothing to do"."""
    real = metadata.distribution

    class Broken:
        version = "1.0"
        requires = ["no-such-package-resolute-test>=2"]

    def distribution(name: str):  # type: ignore[no-untyped-def]
        return Broken() if name == "outer-package" else real(name)

    monkeypatch.setattr(venv_state.metadata, "distribution", distribution)
    found = venv_state.missing([Requirement("outer-package")])
    assert found == ["no-such-package-resolute-test>=2 is not installed"]


def project(tmp_path: Path, extras: dict[str, list[str]] | None = None) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    lines = ["[project]", 'name = "x"', 'dependencies = ["httpx>=0.1"]']
    lines.append("[project.optional-dependencies]")
    for name, reqs in (extras or {}).items():
        lines.append(f"{name} = {json.dumps(reqs)}")
    (tmp_path / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_wanted_reads_the_dependencies_and_the_named_extras(tmp_path: Path) -> None:
    root = project(tmp_path, {"a": ["rich>=1"], "b": ["no-such-package-resolute-test"]})
    assert [str(r) for r in venv_state.wanted(root, ["a"])] == ["httpx>=0.1", "rich>=1"]
    assert venv_state.missing(venv_state.wanted(root, ["a"])) == []
    assert venv_state.missing(venv_state.wanted(root, ["a", "b"])) != []
    with pytest.raises(SystemExit, match="no extra 'c'"):
        venv_state.wanted(root, ["c"])


def test_the_project_must_be_editable_from_this_checkout_and_stamped_current(
    tmp_path: Path,
) -> None:
    """Against the installed Resolute (editable from the checkout the tests run in)."""
    here = Path(venv_state.ROOT)
    venv = tmp_path / "venv"
    venv.mkdir()
    # No stamp (a venv made before stamps): its packages decide.
    assert venv_state.project_problems(here, venv) == []
    (venv / venv_state.STAMP).write_text(json.dumps({"pyproject": "0" * 64}))
    assert venv_state.project_problems(here, venv) == [
        "pyproject.toml changed since the last install"
    ]
    (venv / venv_state.STAMP).write_text(
        json.dumps({"pyproject": venv_state.pyproject_digest(here)})
    )
    assert venv_state.project_problems(here, venv) == []
    # A copy of the checkout elsewhere is not what .venv has installed.
    other = project(tmp_path / "elsewhere")
    assert venv_state.project_problems(other, venv) == [
        f"resolute is not installed in editable mode from {other}"
    ]
