"""`det agent` (alias `a`): list agents, and enable, disable or drain one."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import ApiClient, path_quote
from cli.options import JsonOption
from cli.render import echo, format_time, print_json, print_table
from cli.session import open_session

app = typer.Typer(no_args_is_help=True)

AGENTS_PATH = "/api/v1/agents"

AgentIdArg = Annotated[str, typer.Argument(help="Agent ID.")]


def fetch_agents(client: ApiClient) -> list[dict[str, Any]]:
    """Every agent, sorted by id as the real client shows them."""
    agents = client.paginate(AGENTS_PATH, "agents")
    return sorted(agents, key=lambda a: str(a.get("id", "")))


def used_slots(agent: dict[str, Any]) -> int:
    return sum(1 for slot in (agent.get("slots") or {}).values() if slot.get("container"))


@app.command("list")
def list_agents(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the agents: pool, slots, containers and whether they take new work (alias: ls)."""
    agents = fetch_agents(open_session(ctx).client)
    if as_json:
        print_json({"agents": agents})
        return
    rows = [
        (
            a.get("id"),
            format_time(a.get("registeredTime")),
            ", ".join(a.get("resourcePools") or []),
            f"{used_slots(a)}/{len(a.get('slots') or {})}",
            len(a.get("containers") or {}),
            a.get("enabled"),
            a.get("draining"),
            a.get("connected"),
        )
        for a in agents
    ]
    headers = ["Agent ID", "Registered", "Resource Pool", "Slots (used/total)", "Containers"]
    print_table([*headers, "Enabled", "Draining", "Connected"], rows)


app.command("ls", hidden=True)(list_agents)


def _post(ctx: typer.Context, agent_id: str, action: str, body: Any = None) -> dict[str, Any]:
    reply = open_session(ctx).client.post(f"{AGENTS_PATH}/{path_quote(agent_id)}/{action}", body)
    agent = reply.get("agent") if isinstance(reply, dict) else None
    return agent if isinstance(agent, dict) else {}


@app.command("enable")
def enable(ctx: typer.Context, agent_id: AgentIdArg) -> None:
    """Let the scheduler place new work on the agent again."""
    _post(ctx, agent_id, "enable")
    echo(f"Enabled agent {agent_id}")


@app.command("disable")
def disable(
    ctx: typer.Context,
    agent_id: AgentIdArg,
    drain: Annotated[
        bool,
        typer.Option("--drain", help="Mark the agent draining: its running work may finish."),
    ] = False,
) -> None:
    """Place no new work on the agent; --drain lets its running work finish.

    Without --drain a Determined master also kills its running work; Resolute's does not yet.
    """
    agent = _post(ctx, agent_id, "disable", {"drain": True} if drain else None)
    if not drain:
        echo(f"Disabled agent {agent_id}")
        return
    running = len(agent.get("containers") or {})
    echo(f"Disabled agent {agent_id} (draining: {running} container(s) still running)")
