"""`det slot` (alias `s`): every slot of every agent, and what holds it."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import path_quote
from cli.commands.agent import fetch_agents
from cli.options import CsvOption, JsonOption
from cli.render import print_json, print_rows, strip_state
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)


def _device_type(device: dict[str, Any]) -> str:
    kind = str(device.get("type") or "")
    return kind.removeprefix("TYPE_").lower() if kind not in ("", "TYPE_UNSPECIFIED") else "unknown"


def _slot_id(slot_key: str, slot: dict[str, Any]) -> str:
    return str(slot.get("id") or slot_key)


def _sort_key(item: tuple[str, dict[str, Any]]) -> tuple[int, str]:
    key = _slot_id(*item)
    return (int(key), "") if key.isascii() and key.isdigit() else (1 << 30, key)


def slots_of(agents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per slot: the master's v1Slot plus the agent's id and pools."""
    out = []
    for agent in agents:
        for _key, slot in sorted((agent.get("slots") or {}).items(), key=_sort_key):
            out.append(
                {
                    "agentId": agent.get("id"),
                    "resourcePools": agent.get("resourcePools") or [],
                    **slot,
                }
            )
    return out


@app.command("list")
def list_slots(ctx: typer.Context, as_json: JsonOption = False, as_csv: CsvOption = False) -> None:
    """List the slots: enabled, draining, device, and the container holding it (alias: ls)."""
    slots = slots_of(fetch_agents(open_session(ctx).client))
    if as_json:
        print_json({"slots": slots})
        return
    rows = []
    for slot in slots:
        device = slot.get("device") or {}
        container = slot.get("container") or {}
        rows.append(
            (
                slot["agentId"],
                ", ".join(slot["resourcePools"]),
                slot.get("id"),
                slot.get("enabled"),
                slot.get("draining"),
                _device_type(device),
                device.get("brand"),
                container.get("id") or "FREE",
                container.get("parent"),
                strip_state(container.get("state")),
            )
        )
    headers = ["Agent ID", "Resource Pool", "Slot ID", "Enabled", "Draining", "Type", "Device"]
    print_rows([*headers, "Container ID", "Allocation ID", "Container State"], rows, as_csv=as_csv)


app.command("ls", hidden=True)(list_slots)


def _toggle(ctx: typer.Context, agent_id: str, slot_id: int, enabled: bool) -> None:
    verb = "enable" if enabled else "disable"
    open_session(ctx).client.post(f"/api/v1/agents/{path_quote(agent_id)}/slots/{slot_id}/{verb}")
    typer.echo(f"{'Enabled' if enabled else 'Disabled'} slot {slot_id} of agent {agent_id}")


@app.command("enable")
def enable(
    ctx: typer.Context,
    agent_id: Annotated[str, typer.Argument(help="Agent ID.")],
    slot_id: Annotated[int, typer.Argument(help="Slot ID.")],
) -> None:
    """Let one slot take new work again (admins)."""
    _toggle(ctx, agent_id, slot_id, True)


@app.command("disable")
def disable(
    ctx: typer.Context,
    agent_id: Annotated[str, typer.Argument(help="Agent ID.")],
    slot_id: Annotated[int, typer.Argument(help="Slot ID.")],
) -> None:
    """Take one slot out of scheduling: what runs there finishes, nothing new starts (admins)."""
    _toggle(ctx, agent_id, slot_id, False)
