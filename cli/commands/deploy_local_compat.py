"""`det deploy local cluster-up|cluster-down|logs`: Determined 0.38.1's spellings of our
`det deploy local up|down`, with its flags where they mean something here.

Determined runs the master, its PostgreSQL and the agents as Docker containers named after
`--cluster-name`; ours runs them as processes that keep their state in a data directory, so a
cluster name picks the data directory (`determined`, the default, is our default directory;
another name a folder of its own beside it) and `--delete-db` removes the SQLite database."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from cli import __version__
from cli.commands import deploy
from cli.deploy import local
from cli.errors import CliError
from cli.render import echo, print_warning

DEFAULT_CLUSTER = "determined"
DB_FILE = "resolute.db"  # the master's SQLite file in its data directory (controlplane.config)

ClusterNameOption = Annotated[
    str,
    typer.Option(
        "--cluster-name",
        help="Which local cluster: 'determined' is the default data directory, any other name "
        "a data directory of its own beside it.",
    ),
]
DeleteDbOption = Annotated[
    bool, typer.Option("--delete-db", help="Remove the master's database (a fresh cluster).")
]


def cluster_dir(name: str, default: Path | None = None) -> Path:
    """The data directory of the local cluster called `name`."""
    if not name or name in (".", "..") or "/" in name or "\x00" in name:
        raise CliError(f"invalid cluster name {name!r}: use a plain name, e.g. determined")
    base = (default or local.default_data_dir()).expanduser().resolve()
    return base if name == DEFAULT_CLUSTER else base.parent / f"{base.name}-{name}"


def delete_db(data_dir: Path) -> list[Path]:
    """Remove the master's SQLite database (and its journal files); return what went."""
    gone = []
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = data_dir / f"{DB_FILE}{suffix}"
        if path.exists():
            path.unlink()
            gone.append(path)
    return gone


def set_initial_password(data_dir: Path, password: str) -> None:
    """The admin password a new database gets; an existing one keeps its own."""
    path = data_dir / local.PASSWORD_FILE
    if path.exists() and path.read_text().strip():
        if path.read_text().strip() != password:
            print_warning(
                f"{path} already holds this cluster's admin password; --initial-user-password "
                "only applies to a new database (add --delete-db for one)"
            )
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(password + "\n")


def cluster_up(
    agents: Annotated[int, typer.Option("--agents", min=0, help="Agents to start.")] = 1,
    master_port: Annotated[
        int, typer.Option("--master-port", min=1, max=65535, help="Master port on 127.0.0.1.")
    ] = 8080,
    master_config_path: Annotated[
        Path | None,
        typer.Option("--master-config-path", help="Master YAML to start with.", show_default=False),
    ] = None,
    cluster_name: ClusterNameOption = DEFAULT_CLUSTER,
    delete_db_first: DeleteDbOption = False,
    initial_user_password: Annotated[
        str | None,
        typer.Option(
            "--initial-user-password",
            help="The admin password of a new database (default: a random one, saved in the "
            "data directory).",
            show_default=False,
        ),
    ] = None,
    no_gpu: Annotated[
        bool,
        typer.Option(
            "--no-gpu/--gpu",
            help="--no-gpu: CPU slots only (one per agent); --gpu: the agent detects its GPUs.",
        ),
    ] = False,
    auto_work_dir: Annotated[
        Path | None,
        typer.Option(
            "--auto-work-dir",
            help="Accepted for Determined's scripts; tasks here start in their own folders.",
            show_default=False,
        ),
    ] = None,
    no_autorestart: Annotated[
        bool,
        typer.Option(
            "--no-autorestart",
            help="Accepted for Determined's scripts; local processes are never restarted.",
        ),
    ] = False,
    db_password: Annotated[
        str | None,
        typer.Option(
            "--db-password",
            help="Accepted for Determined's scripts: the local master keeps SQLite, which has "
            "no password.",
            show_default=False,
        ),
    ] = None,
    det_version: Annotated[
        str | None,
        typer.Option(
            "--det-version",
            help="Accepted for Determined's scripts: the cluster runs this installation.",
            show_default=False,
        ),
    ] = None,
    enterprise_edition: Annotated[
        bool, typer.Option("--enterprise-edition", help="Refused: there is no enterprise edition.")
    ] = False,
) -> None:
    """Start a local cluster (`det deploy local up` under Determined's name and flags)."""
    del auto_work_dir, no_autorestart, db_password  # nothing to do here: see their help
    if enterprise_edition:
        raise CliError("--enterprise-edition: Resolute has no enterprise edition")
    if det_version is not None and det_version != __version__:
        print_warning(f"--det-version {det_version}: starting this installation's {__version__}")
    data_dir = cluster_dir(cluster_name)
    if delete_db_first:
        if local.read_state(data_dir) is not None:
            raise CliError(
                f"cluster '{cluster_name}' is running: stop it first "
                f"(det deploy local cluster-down --cluster-name {cluster_name})"
            )
        delete_db(data_dir)
        (data_dir / local.PASSWORD_FILE).unlink(missing_ok=True)
    if initial_user_password is not None:
        set_initial_password(data_dir, initial_user_password)
    deploy.up(
        agents=agents,
        slots_per_agent=1 if no_gpu else None,
        runtime="auto",
        port=master_port,
        data_dir=data_dir,
        master_config=master_config_path,
    )


def cluster_down(
    cluster_name: ClusterNameOption = DEFAULT_CLUSTER,
    delete_db_after: DeleteDbOption = False,
) -> None:
    """Stop a local cluster (`det deploy local down` under Determined's name and flags)."""
    data_dir = cluster_dir(cluster_name)
    deploy.down(data_dir=data_dir)
    if delete_db_after:
        gone = delete_db(data_dir)
        (data_dir / local.PASSWORD_FILE).unlink(missing_ok=True)
        echo(f"Deleted the database of cluster '{cluster_name}'" if gone else "No database")


def _log_files(data_dir: Path) -> list[Path]:
    logs = data_dir / local.LOG_DIR
    master = logs / "master.log"
    others = sorted(p for p in logs.glob("*.log") if p != master) if logs.is_dir() else []
    return [p for p in (master, *others) if p.is_file()]


def follow_files(
    files: list[Path],
    *,
    keep_going: Callable[[], bool],
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Print each file, then what is appended to any of them while `keep_going()` holds."""
    offsets: dict[Path, int] = {}
    while True:
        for path in files:
            try:
                with path.open("rb") as f:
                    f.seek(offsets.get(path, 0))
                    chunk = f.read()
                    offsets[path] = f.tell()
            except OSError:
                continue
            if chunk:
                prefix = f"[{path.stem}] "
                for line in chunk.decode(errors="replace").splitlines():
                    echo(prefix + line)
        if not keep_going():
            return
        sleep(0.5)


def logs(
    cluster_name: ClusterNameOption = DEFAULT_CLUSTER,
    no_follow: Annotated[
        bool, typer.Option("--no-follow", help="Print what is there and stop.")
    ] = False,
) -> None:
    """Print the local cluster's master and agent logs, following them (Ctrl-C stops)."""
    data_dir = cluster_dir(cluster_name)
    files = _log_files(data_dir)
    if not files:
        raise CliError(f"no logs in {data_dir / local.LOG_DIR}: has cluster '{cluster_name}' run?")
    follow_files(files, keep_going=lambda: not no_follow)
