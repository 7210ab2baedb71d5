"""`python -m controlplane` / `det-master`: run the master."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import uvicorn

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
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log.level,
        timeout_graceful_shutdown=5,
        **tls_options(settings),
    )


def tls_options(settings: MasterSettings) -> dict[str, str]:
    """uvicorn's TLS arguments for `security.tls` (none: plain HTTP)."""
    tls = settings.security.tls
    if tls.cert is None or tls.key is None:
        return {}
    return {"ssl_certfile": str(tls.cert.expanduser()), "ssl_keyfile": str(tls.key.expanduser())}


if __name__ == "__main__":
    main()
