"""Commands the agent runs on its own events (`hooks.on_connection_lost`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

log = logging.getLogger("agent.hooks")

HOOK_TIMEOUT_S = 60.0


async def run_hook(name: str, argv: Sequence[str], timeout_s: float = HOOK_TIMEOUT_S) -> int | None:
    """Run `argv` to completion (or `timeout_s`); its exit code, None if it could not run."""
    if not argv:
        return None
    log.warning("running %s hook: %s", name, " ".join(argv))
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
    except OSError as exc:
        log.error("%s hook could not start: %s", name, exc)
        return None
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        log.error("%s hook still running after %.0f s: killed", name, timeout_s)
        return None
    text = output.decode(errors="replace").strip()
    log.log(
        logging.INFO if proc.returncode == 0 else logging.ERROR,
        "%s hook exited with code %s%s",
        name,
        proc.returncode,
        f": {text[-2000:]}" if text else "",
    )
    return proc.returncode
