"""`python -m controlplane` / `det-master`: run the master."""

from __future__ import annotations

import argparse
import copy
import logging
from pathlib import Path
from typing import Any

import uvicorn
import uvicorn.config

from controlplane.api.proxy_front import http_protocol
from controlplane.app import create_app
from controlplane.config import MasterSettings, load_settings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="det-master", description="Run the Resolute master.")
    parser.add_argument("--config-file", type=Path, help="master YAML (default: DET_CONFIG_FILE)")
    parser.add_argument("--host", help="listen address (default 0.0.0.0)")
    parser.add_argument("--port", type=int, help="listen port (default 8080)")
    parser.add_argument("--data-dir", type=Path, help="data directory for the embedded default")
    args = parser.parse_args(argv)
    overrides = {
        k: v
        for k, v in {"host": args.host, "port": args.port, "data_dir": args.data_dir}.items()
        if v is not None
    }
    try:
        settings = load_settings(args.config_file, **overrides)
    except Exception as exc:  # a bad config is a user error: one clear message, no traceback
        parser.exit(2, f"det-master: invalid configuration: {exc}\n")
    logging.basicConfig(
        level=settings.log.level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    app = create_app(settings)
    uvicorn.run(
        app,
        # The front protocol for /proxy/ (docs/interactive.md) unless turned off.
        http=http_protocol(app, settings.http.proxy_front),  # type: ignore[arg-type]
        host=settings.host,
        port=settings.port,
        log_level=settings.log.level,
        timeout_graceful_shutdown=5,
        log_config=log_config(),
        **tls_options(settings),
    )


class NotProxied(logging.Filter):
    """Keeps the proxy's requests (`/proxy/{task}/…`) out of the access log: an open notebook
    polls several of its endpoints every few seconds, so they would be most of the master's
    log, and writing each line was a tenth of the proxy's CPU per request."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args  # uvicorn's: (client, method, path with query, version, status)
        path = args[2] if isinstance(args, tuple) and len(args) > 2 else ""
        return not str(path).startswith("/proxy/")


def log_config() -> dict[str, Any]:
    """uvicorn's logging, with `NotProxied` on its access log."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config.setdefault("filters", {})["not_proxied"] = {"()": NotProxied}
    config["loggers"]["uvicorn.access"]["filters"] = ["not_proxied"]
    return config


def tls_options(settings: MasterSettings) -> dict[str, str]:
    """uvicorn's TLS arguments for `security.tls` (none: plain HTTP)."""
    tls = settings.security.tls
    if tls.cert is None or tls.key is None:
        return {}
    return {"ssl_certfile": str(tls.cert.expanduser()), "ssl_keyfile": str(tls.key.expanduser())}


if __name__ == "__main__":
    main()
