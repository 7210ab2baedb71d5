"""boto3 for `det deploy aws`: the one place the CLI makes AWS clients.

With RESOLUTE_AWS_CALL_LOG set to a file, every API call is appended to it as
`service Operation` before it is sent (a botocore 'before-call' hook): tests count the calls of
`up --dry-run` with it, and docs/deploy-aws-policy.json is checked against what it records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

CALL_LOG_ENV = "RESOLUTE_AWS_CALL_LOG"
__all__ = ["Aws", "BotoCoreError", "ClientError"]  # the rest of cli/deploy/aws uses these


def _record_call(model: Any, **_: Any) -> None:
    path = os.environ.get(CALL_LOG_ENV)
    if path:
        with open(path, "a") as log:
            log.write(f"{model.service_model.service_name} {model.name}\n")


@dataclass
class Aws:
    """Clients of one region (and profile), made on first use."""

    region: str
    profile: str | None = None
    _session: Any = field(default=None, repr=False)
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)

    def client(self, service: str) -> Any:
        if service not in self._clients:
            if self._session is None:
                self._session = boto3.session.Session(
                    profile_name=self.profile, region_name=self.region
                )
            config = Config(retries={"mode": "standard", "max_attempts": 5})
            client = self._session.client(service, config=config)
            client.meta.events.register("before-call", _record_call)
            self._clients[service] = client
        return self._clients[service]

    def use(self, service: str, client: Any) -> None:
        """Put a prepared client in place (a Stubber's, in tests)."""
        self._clients[service] = client
