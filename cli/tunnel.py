"""`python -m cli.tunnel MASTER TASK_ID`: ssh's ProxyCommand; carries stdin/stdout over the
master's WebSocket proxy (`/proxy/{task id}/`) to the shell's sshd. The token, when given, comes
from DET_TUNNEL_TOKEN (never the command line, which other users can read)."""

from __future__ import annotations

import os
import sys
import threading

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from cli.tls import master_trust


def ws_url(master: str, task_id: str) -> str:
    base = master.rstrip("/")
    scheme = "wss" if base.startswith("https://") else "ws"
    return f"{scheme}://{base.split('://', 1)[-1]}/proxy/{task_id}/"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m cli.tunnel MASTER_URL TASK_ID", file=sys.stderr)
        return 2
    token = os.environ.get("DET_TUNNEL_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else None
    url = ws_url(argv[0], argv[1])
    tls: dict[str, object] = {}
    try:
        if url.startswith("wss://"):
            trust = master_trust()
            tls = {"ssl": trust.ssl_context(), "server_hostname": trust.server_name}
        ws = connect(url, additional_headers=headers, max_size=None, **tls)
    except Exception as exc:
        print(f"tunnel: cannot reach the shell through the master: {exc}", file=sys.stderr)
        return 1

    def upward() -> None:
        try:
            while chunk := os.read(0, 65536):
                ws.send(chunk)
        except (OSError, ConnectionClosed):
            pass
        finally:
            ws.close()

    threading.Thread(target=upward, daemon=True).start()
    try:
        for message in ws:
            os.write(1, message if isinstance(message, bytes) else message.encode())
    except ConnectionClosed:
        pass
    reason = ws.close_reason if hasattr(ws, "close_reason") else ""
    if ws.close_code not in (None, 1000) and reason:
        print(f"tunnel: {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
