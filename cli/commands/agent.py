"""`det agent` (alias `a`): list agents, and enable, disable or drain one."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.client import ApiClient, path_quote
from cli.errors import CliError
from cli.options import CsvOption, JsonOption, UsageMistake
from cli.render import echo, format_time, print_json, print_rows
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
def list_agents(ctx: typer.Context, as_json: JsonOption = False, as_csv: CsvOption = False) -> None:
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
    print_rows([*headers, "Enabled", "Draining", "Connected"], rows, as_csv=as_csv)


app.command("ls", hidden=True)(list_agents)


def _post(ctx: typer.Context, agent_id: str, action: str, body: Any = None) -> dict[str, Any]:
    reply = open_session(ctx).client.post(f"{AGENTS_PATH}/{path_quote(agent_id)}/{action}", body)
    agent = reply.get("agent") if isinstance(reply, dict) else None
    return agent if isinstance(agent, dict) else {}


AllOption = Annotated[bool, typer.Option("--all", help="Every agent.")]
OptionalAgentIdArg = Annotated[str | None, typer.Argument(help="Agent ID.", show_default=False)]


def _targets(ctx: typer.Context, agent_id: str | None, every: bool, action: str) -> list[str]:
    """The agent named, or with --all every agent (Determined's client refuses both and none)."""
    if agent_id and every:
        raise UsageMistake("give an agent ID or --all, not both", ctx=ctx)
    if agent_id:
        return [agent_id]
    if not every:
        raise CliError(
            f"Please pass agent id or --all option. See `det agent {action} --help` for details."
        )
    return [str(a.get("id")) for a in fetch_agents(open_session(ctx).client)]


@app.command("enable")
def enable(
    ctx: typer.Context, agent_id: OptionalAgentIdArg = None, every: AllOption = False
) -> None:
    """Let the scheduler place new work on the agent (or --all agents) again."""
    for target in _targets(ctx, agent_id, every, "enable"):
        _post(ctx, target, "enable")
        echo(f"Enabled agent {target}")


@app.command("disable")
def disable(
    ctx: typer.Context,
    agent_id: OptionalAgentIdArg = None,
    every: AllOption = False,
    drain: Annotated[
        bool,
        typer.Option("--drain", help="Mark the agent draining: its running work may finish."),
    ] = False,
    as_json: JsonOption = False,
    as_csv: CsvOption = False,
) -> None:
    """Place no new work on the agent (or --all agents); --drain lets its running work finish.

    Without --drain a Determined master also kills its running work; Resolute's does not yet.
    With --drain, --json and --csv print the containers still running on the agents.
    """
    still: list[tuple[str, str, str]] = []
    for target in _targets(ctx, agent_id, every, "disable"):
        agent = _post(ctx, target, "disable", {"drain": True} if drain else None)
        containers = agent.get("containers") or {}
        still += [
            (target, str(cid), str((c or {}).get("state", ""))) for cid, c in containers.items()
        ]
        if not drain:
            echo(f"Disabled agent {target}")
        elif not (as_json or as_csv):
            echo(
                f"Disabled agent {target} (draining: {len(containers)} container(s) still running)"
            )
    if drain and as_json:
        print_json(
            {"containers": [{"agentId": a, "containerId": c, "state": s} for a, c, s in still]}
        )
    elif drain and as_csv:
        print_rows(["Agent ID", "Container ID", "State"], still, as_csv=True)
