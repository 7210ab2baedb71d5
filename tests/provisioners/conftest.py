"""Fixtures of the AWS provisioner tests: a reset moto server, or no AWS at all."""

from __future__ import annotations

import pytest

from tests.support.moto_server import MotoEc2, fresh_moto, offline_aws


@pytest.fixture
def moto_ec2(monkeypatch: pytest.MonkeyPatch) -> MotoEc2:
    return fresh_moto(monkeypatch)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> MotoEc2:
    return offline_aws(monkeypatch)
