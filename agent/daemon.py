"""The agent's life: connect, reattach, serve the master, survive losing it (reference §3.3).

One session per connection: the master's options arrive first, the agent reconciles its
containers with the master's list (agent/reattach.py), answers AgentStarted, then runs three
loops until the socket ends: reading the master's commands, sending queued reports, and
heartbeats. Losing the socket never touches the containers; the agent dials again up to
`agent_reconnect_attempts` times, `agent_reconnect_backoff` seconds apart, with `reconnect=true`.
Out of tries it runs `hooks.on_connection_lost` and exits, leaving its containers running, so a
restarted agent can reattach them.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import random
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from agent.config import AgentSettings
from agent.connection import DialFailed, Refused, TryAgainLater, dial
from agent.containers import ContainerManager, ContainerOptions
from agent.hooks import run_hook
from agent.interruption import Notice, Probe, make_probe, watch
from agent.outbox import Outbox
from agent.protocol import (
    AgentShutdown,
    AgentStarted,
    Device,
    DeviceType,
    Heartbeat,
    InterruptionNotice,
    MasterSetAgentOptions,
    OutputStored,
    ProtocolError,
    SignalContainer,
    StartContainer,
    decode_to_agent,
    encode,
)
from agent.reattach import acked_states, keep_queued, plan_reattach
from agent.redial import RedialPolicy, plan_redial
from agent.run_dir import harness_source
from agent.runtimes.base import ContainerRuntime
from agent.task_env import DOCKER_PYTHON, AgentEnv
from agent.task_user import AgentIdentity

log = logging.getLogger("agent")


class ExitCode(enum.IntEnum):
    OK = 0  # stopped by SIGTERM / SIGINT: containers left running
    REFUSED = 1  # the master sent AgentShutdown
    CONFIG = 2  # bad settings, or devices that cannot be detected
    CONNECTION_LOST = 3  # the master could not be reached within the tries allowed


class _Stopped:
    pass


STOPPED = _Stopped()


def agent_version() -> str:
    try:
        return metadata.version("resolute")
    except metadata.PackageNotFoundError:
        return "0.0.0"


@dataclass
class SessionStats:
    """What tests and logs want to know about the connections so far."""

    sessions: int = 0
    heartbeats: int = 0
    refusal: str | None = None


class Daemon:
    def __init__(
        self,
        settings: AgentSettings,
        runtime: ContainerRuntime,
        devices: tuple[Device, ...],
        *,
        clock: Callable[[], float] = time.time,
        hostname: str | None = None,
        harness: Callable[[], Path] = harness_source,
        probe: Probe | None = None,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.devices = devices
        self.version = agent_version()
        self.hostname = hostname or socket.gethostname()
        self.outbox = Outbox()
        self.stats = SessionStats()
        self.connected = asyncio.Event()
        self._stop = asyncio.Event()
        # Explicit configuration only: by default no metadata server is ever contacted.
        self.probe = probe if probe is not None else make_probe(settings)
        self._jitter = jitter  # spreads the reconnect tries of agents that lost the master together
        self.interruption: InterruptionNotice | None = None
        env = AgentEnv(
            agent_id=settings.agent_id,
            master_host=settings.task_master_host,
            master_port=settings.task_master_port,
            use_tls=settings.security.tls.enabled,
            advertise_address=settings.advertise_address,
            hides_gpus=any(d.type == DeviceType.CUDA for d in devices),
            proxies={
                "http_proxy": settings.http_proxy,
                "https_proxy": settings.https_proxy,
                "ftp_proxy": settings.ftp_proxy,
                "no_proxy": settings.no_proxy,
            },
        )
        # The agent's tier of the task's Python is a host setting: the process runtime's only.
        on_host = runtime.name == "process"
        own_venv = settings.own_task_venv if on_host else None
        self.containers = ContainerManager(
            runtime,
            self.outbox,
            ContainerOptions(
                agent_id=settings.agent_id,
                work_dir=settings.effective_work_dir,
                env=env,
                # Docker images have python3 on PATH; the process runtime maps it to the task's
                # Python (and so does docker when the task names one), so one argv fits both.
                python=DOCKER_PYTHON,
                keep_exited=settings.container_auto_remove_disabled,
                harness=harness,
                task_python=(settings.task_python or str(own_venv)) if on_host else "",
                task_venv=own_venv,
                identity=AgentIdentity.current(single_user=settings.single_user),
            ),
            clock,
        )

    def stop(self) -> None:
        """Leave gracefully: close the socket, keep the containers running."""
        self._stop.set()

    async def run(self) -> int:
        watcher = None
        if self.probe is not None:
            interval = self.settings.interruption_poll_interval
            watcher = asyncio.ensure_future(watch(self.probe, interval, self._interrupted))
        try:
            return int(await self._run())
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(BaseException):
                    await watcher
            self.connected.clear()
            await self.containers.detach()

    def _interrupted(self, notice: Notice) -> None:
        """Tell the master at once (it drains this agent and preempts its work)."""
        when = notice.deadline.isoformat() if notice.deadline else "soon"
        log.warning(
            "%s interruption notice: this machine will %s at %s; telling the master",
            notice.cloud,
            notice.action,
            when,
        )
        self.interruption = InterruptionNotice(
            cloud=notice.cloud, action=notice.action, deadline=notice.deadline
        )
        self.outbox.put(self.interruption)

    async def _run(self) -> ExitCode:
        reconnect = False
        while True:
            opened = await self._open(reconnect)
            if self._stop.is_set():
                if isinstance(opened, tuple):
                    await opened[0].close()
                return ExitCode.OK
            if opened is None:
                return await self._give_up(reconnect)
            if isinstance(opened, Refused):
                return self._refused(opened.reason)
            outcome = await self._session(*opened)
            if outcome is STOPPED:
                log.info("stopping; containers are left running")
                return ExitCode.OK
            if isinstance(outcome, Refused):
                return self._refused(outcome.reason)
            log.warning("lost the connection to the master; containers keep running")
            reconnect = True

    def _refused(self, reason: str) -> ExitCode:
        self.stats.refusal = reason
        log.error("the master shut this agent down: %s", reason)
        return ExitCode.REFUSED

    async def _give_up(self, reconnect: bool) -> ExitCode:
        s = self.settings
        where = f"{s.master_host}:{s.master_port}"
        if not reconnect:
            log.error("could not reach the master at %s", where)
            return ExitCode.CONNECTION_LOST
        log.error(
            "could not reconnect to the master at %s after %d tries; exiting with containers "
            "left running",
            where,
            s.agent_reconnect_attempts,
        )
        await run_hook("on_connection_lost", s.hooks.on_connection_lost)
        return ExitCode.CONNECTION_LOST

    async def _open(
        self, reconnect: bool
    ) -> tuple[ClientConnection, MasterSetAgentOptions] | Refused | None:
        """Dial until the master answers; None when out of tries or asked to stop.

        A fresh start tries once at once, then `agent_reconnect_attempts` more times, and a
        refusal ends it (a bad pool or id will not get better). After a loss each of the
        `agent_reconnect_attempts` tries follows a backoff, and a refusal is one failed try: the
        master may not have noticed the old socket die yet, or may have given up on this agent
        ("past its reconnect period"), so the tries after a refusal dial as a fresh start, which
        is what restarting the agent would do (the master's list then decides what survives).
        After a loss, or once the master said "try again later" (its database is away), the
        agent keeps trying for `master_outage_s` too (agent/redial.py decides the pauses).
        """
        s = self.settings
        tries = s.agent_reconnect_attempts + (0 if reconnect else 1)
        fresh = not reconnect
        outage = reconnect
        loop = asyncio.get_running_loop()
        began = loop.time()
        number = 0
        while True:
            if reconnect or number > 0:
                policy = RedialPolicy(
                    attempts=s.agent_reconnect_attempts,
                    backoff_s=s.agent_reconnect_backoff,
                    outage_s=s.master_outage_s if outage else 0.0,
                )
                failed = number - (0 if reconnect else 1)
                pause = plan_redial(policy, failed, loop.time() - began, self._jitter())
                if pause is None or await self._sleep(pause):
                    return None
            number += 1
            attempt = asyncio.ensure_future(
                dial(s, reconnect=not fresh, version=self.version, hostname=self.hostname)
            )
            stopper = asyncio.ensure_future(self._stop.wait())
            await asyncio.wait({attempt, stopper}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if not attempt.done():
                attempt.cancel()
                with contextlib.suppress(BaseException):
                    await attempt
                return None
            try:
                result = attempt.result()
            except DialFailed as exc:
                outage = outage or isinstance(exc, TryAgainLater)
                self._say_failed_try(number, tries, exc, s.master_outage_s if outage else 0.0)
                continue
            if isinstance(result, Refused) and reconnect:
                log.warning(
                    "the master refused the reconnection (try %d of %d): %s",
                    number,
                    tries,
                    result.reason,
                )
                self.stats.refusal = result.reason
                fresh = True
                continue
            if number > tries:
                log.info(
                    "reached the master again after %d tries in %.0f s", number, loop.time() - began
                )
            return result

    def _say_failed_try(self, number: int, tries: int, exc: DialFailed, outage_s: float) -> None:
        """Each counted try in a line; past them (only the outage time keeps the agent trying)
        one line, not one per try for minutes."""
        if number <= tries:
            log.warning("connecting to the master (try %d of %d): %s", number, tries, exc)
        elif number == tries + 1:
            log.warning(
                "still cannot reach the master (%s); trying again with backoff for up to %.0f s "
                "after the first failure",
                exc,
                outage_s,
            )
        else:
            log.debug("connecting to the master (try %d): %s", number, exc)

    async def _sleep(self, seconds: float) -> bool:
        """Wait `seconds`; True when asked to stop meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)
        return self._stop.is_set()

    # --- one connection ---------------------------------------------------------------------

    async def _session(
        self, ws: ClientConnection, options: MasterSetAgentOptions
    ) -> Refused | _Stopped | None:
        try:
            await self._handshake(ws, options)
        except ConnectionClosed:
            return None
        self.stats.sessions += 1
        self.connected.set()
        log.info(
            "registered with the master as %s in pool %s with %d slots",
            self.settings.agent_id,
            self.settings.resource_pool,
            len(self.devices),
        )
        loops = {
            asyncio.ensure_future(self._read(ws)),
            asyncio.ensure_future(self._send(ws)),
            asyncio.ensure_future(self._beat(ws, options.heartbeat_interval_s)),
        }
        stopper = asyncio.ensure_future(self._stop.wait())
        done, _ = await asyncio.wait({*loops, stopper}, return_when=asyncio.FIRST_COMPLETED)
        self.connected.clear()
        for task in (*loops, stopper):
            task.cancel()
        for task in (*loops, stopper):
            with contextlib.suppress(BaseException):
                await task
        with contextlib.suppress(Exception):
            await ws.close()
        if stopper in done:
            return STOPPED
        for task in done:
            if not task.cancelled() and isinstance(task.exception(), Exception):
                log.debug("connection loop ended: %r", task.exception())
            elif not task.cancelled() and isinstance(task.result(), Refused):
                return task.result()
        return None

    async def _handshake(self, ws: ClientConnection, options: MasterSetAgentOptions) -> None:
        self.containers.master_info = options.master_info
        self.containers.pool_python = options.task_python
        listed = options.containers_to_reattach
        plan = plan_reattach(listed, await self.containers.observe())
        self.containers.apply_reattach(plan, listed)
        acked = acked_states(plan.acks)
        dropped = self.outbox.retain(lambda message: keep_queued(message, acked))
        if dropped:
            log.info("dropped %d reports the master no longer needs", len(dropped))
        again = self.containers.resend_output()
        if again:
            log.info("sending %d output batches again: the master did not confirm them", again)
        if plan.acks or plan.strays:
            log.info(
                "reattach: %d listed by the master (%d exited meanwhile), %d strays removed",
                len(plan.acks),
                len(plan.exited),
                len(plan.strays),
            )
        local = ws.local_address
        await ws.send(
            encode(
                AgentStarted(
                    version=self.version,
                    devices=self.devices,
                    containers_reattached=plan.acks,
                    # The socket's own address first (rendezvous uses it), then the one tasks
                    # listen on: the master's proxy connects to no other (docs/interactive.md).
                    addresses=tuple(
                        dict.fromkeys(
                            [*((str(local[0]),) if local else ()), self.settings.advertise_address]
                        )
                    ),
                )
            )
        )
        if self.interruption is not None:
            # The queued copy was dropped above; a restarted master must hear it again.
            self.outbox.put(self.interruption)

    async def _read(self, ws: ClientConnection) -> Refused | None:
        async for frame in ws:
            try:
                message = decode_to_agent(frame)
            except ProtocolError as exc:
                log.warning("ignoring a bad frame from the master: %s", exc)
                continue
            if isinstance(message, StartContainer):
                self.containers.launch(message)
            elif isinstance(message, SignalContainer):
                await self.containers.signal(message.container_id, message.signal)
            elif isinstance(message, OutputStored):
                self.containers.output_stored(message.container_id, message.seq)
            elif isinstance(message, AgentShutdown):
                return Refused(message.error)
            else:
                log.warning("ignoring %s after the handshake", type(message).__name__)
        return None

    async def _send(self, ws: ClientConnection) -> None:
        while True:
            envelope = await self.outbox.head()
            await ws.send(encode(envelope.message))
            self.outbox.sent(envelope)

    async def _beat(self, ws: ClientConnection, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await ws.send(encode(Heartbeat()))
            self.stats.heartbeats += 1
