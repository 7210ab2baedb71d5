"""Experiments only: the real master with optional tweaks, to measure a fix before making it.

    BENCH_MASTER_ARGV=benchmarks/whatif_master.py BENCH_GC_FREEZE=1 \\
        .venv/bin/python benchmarks/run.py --only listing

Flags (environment, any non-empty value):
  BENCH_GC_FREEZE   gc.collect(); gc.freeze() once start-up (migrations, bootstrap) is done
  BENCH_FAST_JSON   msgspec as the engine's JSON serializer and deserializer
  BENCH_NO_PREPING  pool_pre_ping=False
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

import controlplane.__main__ as master_main
import controlplane.app as master_app

FAST_JSON = bool(os.environ.get("BENCH_FAST_JSON"))
NO_PREPING = bool(os.environ.get("BENCH_NO_PREPING"))
GC_FREEZE = bool(os.environ.get("BENCH_GC_FREEZE"))


def make_engine(url: str, *, pool_size: int = 10, echo: bool = False) -> AsyncEngine:
    """PostgreSQL only (the benchmarks' case), otherwise as controlplane.db.session's."""
    extra: dict[str, Any] = {}
    if FAST_JSON:
        encoder = msgspec.json.Encoder()
        extra["json_serializer"] = lambda obj: encoder.encode(obj).decode()
        extra["json_deserializer"] = msgspec.json.decode
    return create_async_engine(
        url,
        echo=echo,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=not NO_PREPING,
        **extra,
    )


def create_app(settings: Any, **kwargs: Any) -> Any:
    app = original_create_app(settings, **kwargs)
    if GC_FREEZE:

        def freeze() -> None:  # on_startup hooks run after the lifespan has started
            gc.collect()
            gc.freeze()

        app.on_startup.append(freeze)
    return app


original_create_app = master_main.create_app
if FAST_JSON or NO_PREPING:
    master_app.make_engine = make_engine  # type: ignore[assignment]
master_main.create_app = create_app  # type: ignore[assignment]

if __name__ == "__main__":
    master_main.main(sys.argv[1:])
