"""What the AWS provisioner tests share besides fixtures: a settable clock and their inputs."""

from __future__ import annotations

from datetime import UTC, datetime

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SCRIPT = "#!/bin/bash\nset -e\necho 'agent for p1: ü'\n"
AWS_LOGGER = "provisioners.aws_ec2"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now
