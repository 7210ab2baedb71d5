"""An in-memory Transport: records requests and answers from a script of handlers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness._session import RetryPolicy

Handler = Callable[[str, str, Any, Mapping[str, Any] | None], Any]


@dataclass
class Call:
    method: str
    path: str
    body: Any
    params: Mapping[str, Any] | None


@dataclass
class FakeTransport:
    """Answers with ``handler`` (default: ``{}``); a handler may raise to simulate failures."""

    handler: Handler | None = None
    calls: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> Any:
        with self.lock:
            self.calls.append(Call(method, path, body, params))
        if self.handler is None:
            return {}
        return self.handler(method, path, body, params)

    def to(self, path_part: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if path_part in c.path]

    def reports(self) -> list[dict[str, Any]]:
        """Every metrics report sent, in order, whether alone or in a batch."""
        out: list[dict[str, Any]] = []
        with self.lock:
            for c in self.calls:
                if c.path.endswith("/metrics"):
                    out.append(c.body)
                elif c.path.endswith("/metrics/batch"):
                    out.extend(c.body["reports"])
        return out
