"""The agent's containers: launch, watch, signal, reattach and remove them through a runtime.

Every state change becomes a ContainerStateChanged in the outbox, whether or not the master is
connected right now. A container is removed (with its run directory) only after its TERMINATED
report has been written to the master, so an agent that dies in between finds it again by its
labels and reports the exit then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent.container_labels import (
    ALLOCATION_LABEL,
    OUTPUT_BY_AGENT,
    OUTPUT_LABEL,
    TASK_LABEL,
    allocation_of,
    user_labels,
    user_of,
)
from agent.outbox import Outbox
from agent.protocol import (
    Container,
    ContainerFailure,
    ContainerLog,
    ContainerState,
    ContainerStateChanged,
    Device,
    FailureType,
    MasterInfo,
    StartContainer,
    TaskSpec,
    TaskUser,
)
from agent.reattach import Observed, ReattachPlan, exit_failure
from agent.run_dir import (
    RunDirError,
    SharedPylibs,
    harness_source,
    prepare_run_dir,
    remove_run_dir,
    run_dir_of,
)
from agent.runtimes.base import (
    ContainerRuntime,
    LaunchFailed,
    RunRequest,
    UnknownContainer,
)
from agent.task_env import AgentEnv, task_argv, task_environment, task_files
from agent.task_output import OutputShipper, runs_directly
from agent.task_python import choose as choose_task_python
from agent.task_user import AgentIdentity, decide
from agent.task_venv import TaskVenvError, ensure_task_venv

log = logging.getLogger("agent.containers")

# How long the exit report waits for the output shipper to hand over the last lines.
OUTPUT_DRAIN_S = 30.0
STRAY_WAIT_S = 10.0
# Exit codes that mean the harness launcher never ran its command, or its log shipper died
# (126/127: not executable / not found, as docker-init and shells report; 80: the shipper
# crashed). The task's own log then says nothing, so the agent sends the container's last output.
LAUNCHER_FAILED = frozenset({80, 126, 127})
LOG_TAIL_BYTES = 8 * 1024
LOG_TAIL_TIMEOUT_S = 5.0
_REMEMBERED = 4096
# How long a launch may take before the agent reports the container STARTING (see _launch).
STARTING_REPORT_S = 0.5


@dataclass
class Record:
    container_id: str
    allocation_id: str
    devices: tuple[Device, ...]
    state: ContainerState
    exit_code: int | None = None
    failure: ContainerFailure | None = None
    # A signal that arrived while the container was still being launched.
    pending_signal: int | None = None
    # The master does not want this container: kill it and say nothing more about it.
    abandoned: bool = False
    # The Unix user the master named for the task (None: it named none).
    user: TaskUser | None = None
    # Why this agent refuses to run it (a single-user agent, another user's tasks running).
    refused: str | None = None
    # It runs its command without the harness launcher; the agent ships its output.
    direct: bool = False
    output: asyncio.Task[None] | None = None
    shipper: OutputShipper | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


@dataclass(frozen=True)
class ContainerOptions:
    agent_id: str
    work_dir: Path
    env: AgentEnv
    python: str
    keep_exited: bool = False
    # The harness package the tasks import (tests inject a stand-in).
    harness: Callable[[], Path] = harness_source
    # The agent's tier of the task's Python (agent/task_python.py): its task_python setting, or
    # the task venv it makes on the first launch that needs it (``task_venv``). Empty on docker.
    task_python: str = ""
    task_venv: Path | None = None
    # Who the agent runs as: root starts tasks as their users; anyone else is single-user.
    identity: AgentIdentity = field(default_factory=AgentIdentity.current)


def parse_signal(name: str) -> int | None:
    """ "SIGKILL", "KILL" or "9" → 9; None for anything else."""
    text = name.strip().upper()
    if text.isascii() and text.isdigit():  # "¹".isdigit() holds, but int() refuses it
        return int(text)
    try:
        return int(signal.Signals[text if text.startswith("SIG") else f"SIG{text}"])
    except KeyError:
        return None


class ContainerManager:
    def __init__(
        self,
        runtime: ContainerRuntime,
        outbox: Outbox,
        options: ContainerOptions,
        clock: Callable[[], float],
    ) -> None:
        self.runtime = runtime
        self.outbox = outbox
        self.options = options
        self.clock = clock
        self._pylib = SharedPylibs(options.work_dir, options.harness)
        self.master_info: MasterInfo | None = None
        # The pool's tier of the task's Python, from the master's MasterSetAgentOptions.
        self.pool_python = ""
        self._venv_lock = threading.Lock()
        self._venv_ready = False
        self.records: dict[str, Record] = {}
        self._finished: deque[str] = deque(maxlen=_REMEMBERED)
        self._background: set[asyncio.Task[None]] = set()

    # --- reports ----------------------------------------------------------------------------

    def _report(
        self,
        rec: Record,
        state: ContainerState,
        *,
        exit_code: int | None = None,
        failure: ContainerFailure | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> None:
        rec.state = state
        message = ContainerStateChanged(
            container=Container(id=rec.container_id, state=state, devices=rec.devices),
            allocation_id=rec.allocation_id,
            exit_code=exit_code,
            failure=failure,
        )
        self.outbox.put(message, on_sent)

    def _say(self, rec: Record, text: str, level: str = "INFO") -> None:
        stream = "stderr" if level == "ERROR" else "stdout"
        self.outbox.put(
            ContainerLog(
                container_id=rec.container_id,
                timestamp=self.clock(),
                stream=stream,
                level=level,
                message=text[: 64 * 1024],
            )
        )

    def report_exit(self, rec: Record) -> None:
        """The TERMINATED report; the container is removed once it has been sent."""
        rec.state = ContainerState.TERMINATED
        found_dead = rec.failure is not None and rec.failure.agent_restarted
        self._report(
            rec,
            ContainerState.TERMINATED,
            exit_code=rec.exit_code,
            failure=rec.failure if found_dead else exit_failure(rec.exit_code),
            on_sent=lambda: self._spawn(self._remove(rec)),
        )

    # --- launch -----------------------------------------------------------------------------

    def launch(self, message: StartContainer) -> None:
        cid = message.container.id
        if cid in self.records or cid in self._finished:
            log.warning("StartContainer for %s again: already known, ignored", cid)
            return
        running = [
            r.user
            for r in self.records.values()
            if r.state is not ContainerState.TERMINATED and r.refused is None
        ]
        decision = decide(message.spec.user, self.options.identity, running)
        rec = Record(
            container_id=cid,
            allocation_id=message.spec.allocation_id,
            devices=message.container.devices,
            state=ContainerState.ASSIGNED,
            user=message.spec.user,
            refused=decision.refused,
            direct=runs_directly(message.spec.environment, message.spec.argv),
        )
        self.records[cid] = rec
        self._track(rec, self._launch(rec, message))

    async def _launch(self, rec: Record, message: StartContainer) -> None:
        # STARTING goes out only for a start that takes a while (an image pull, the task venv,
        # a busy engine): a container that runs sooner goes ASSIGNED → RUNNING in one report,
        # which spares the master a transaction per task (trivial commands are bounded by the
        # master's CPU per task).
        starting = asyncio.get_running_loop().call_later(
            STARTING_REPORT_S, self._still_starting, rec
        )
        try:
            await self._start(rec, message)
        finally:
            starting.cancel()

    def _still_starting(self, rec: Record) -> None:
        if rec.state is ContainerState.ASSIGNED:
            self._report(rec, ContainerState.STARTING)

    async def _start(self, rec: Record, message: StartContainer) -> None:
        if rec.refused is not None:
            self._fail_launch(rec, FailureType.LAUNCH_ERROR, rec.refused)
            return
        try:
            request = await asyncio.to_thread(self._prepare, message, rec.direct)
            if rec.pending_signal is not None:
                self._fail_launch(rec, FailureType.CONTAINER_ABORTED, "killed before it started")
                return
            await self.runtime.start(request)
        except (LaunchFailed, RunDirError) as exc:
            self._fail_launch(rec, FailureType.LAUNCH_ERROR, str(exc))
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # any runtime surprise still ends the container cleanly
            log.exception("launching %s failed", rec.container_id)
            self._fail_launch(rec, FailureType.LAUNCH_ERROR, f"{type(exc).__name__}: {exc}")
            return
        log.info("container %s running", rec.container_id)
        if rec.abandoned:
            self._spawn(self._discard(rec.container_id))
            return
        if rec.direct:
            self._ship_output(rec)
        self._report(rec, ContainerState.RUNNING)
        if rec.pending_signal is not None:
            await self._signal_runtime(rec, rec.pending_signal)
        self._track(rec, self._watch(rec))

    def _prepare(self, message: StartContainer, direct: bool) -> RunRequest:
        spec, container = message.spec, message.container
        run_dir = run_dir_of(self.options.work_dir, container.id)
        pylib = self._pylib()
        env = task_environment(
            spec, container.id, container.devices, self.options.env, self.master_info
        )
        prepare_run_dir(run_dir, task_files(spec, env))
        python = self._task_python(spec, container.id)
        # Root switches to the task's user; a single-user agent runs it as itself.
        run_as = spec.user if self.options.identity.can_switch else None
        return RunRequest(
            container_id=container.id,
            agent_id=self.options.agent_id,
            argv=spec.argv if direct else task_argv(spec, self.options.python),
            run_dir=run_dir,
            image=spec.image,
            environment=env,
            mounts=spec.mounts,
            devices=container.devices,
            shm_size_bytes=spec.shm_size_bytes,
            force_pull=spec.force_pull,
            labels={
                ALLOCATION_LABEL: spec.allocation_id,
                TASK_LABEL: spec.task_id,
                **user_labels(spec.user),
                **({OUTPUT_LABEL: OUTPUT_BY_AGENT} if direct else {}),
            },
            pylib=pylib,
            python=python,
            user=run_as,
        )

    def _task_python(self, spec: TaskSpec, container_id: str) -> str:
        """The experiment's, else the pool's, else the agent's Python (runs in a thread)."""
        choice = choose_task_python(spec.python, self.pool_python, self.options.task_python)
        if choice.source:
            log.info("container %s runs Python %s (%s)", container_id, choice.value, choice.source)
        venv = self.options.task_venv
        if choice.source == "agent" and venv is not None and choice.value == str(venv):
            with self._venv_lock:  # the first launch makes it; later ones find it made
                if not self._venv_ready or not (venv / "bin" / "python").exists():
                    try:
                        made = ensure_task_venv(venv)
                    except TaskVenvError as exc:
                        raise LaunchFailed(f"the agent's task venv: {exc}") from exc
                    if made.created:
                        log.info("made the task venv %s over %s", venv, ", ".join(made.layer))
                    self._venv_ready = True
        return choice.value

    def _fail_launch(self, rec: Record, kind: FailureType, reason: str) -> None:
        log.warning("container %s did not start: %s", rec.container_id, reason)
        if rec.abandoned:
            self._spawn(self._remove(rec))
            return
        self._say(rec, f"container {rec.container_id} did not start: {reason}", "ERROR")
        rec.failure = ContainerFailure(type=kind, message=reason)
        self._report(
            rec,
            ContainerState.TERMINATED,
            failure=rec.failure,
            on_sent=lambda: self._spawn(self._remove(rec)),
        )

    # --- running containers -----------------------------------------------------------------

    async def _watch(self, rec: Record) -> None:
        try:
            rec.exit_code = await self.runtime.wait(rec.container_id)
        except UnknownContainer:
            rec.exit_code = None
            log.warning("container %s disappeared from the runtime", rec.container_id)
        log.info("container %s exited with code %s", rec.container_id, rec.exit_code)
        if rec.output is not None:
            await self._output_drained(rec)
        if rec.abandoned:
            return
        if rec.exit_code in LAUNCHER_FAILED and not rec.direct:
            tail = await self._log_tail(rec.container_id)
            self._say(
                rec,
                f"container {rec.container_id} exited with code {rec.exit_code} before its "
                f"output could be shipped; its last output:\n{tail or '(none)'}",
                "ERROR",
            )
        self.report_exit(rec)

    async def _log_tail(self, container_id: str) -> str:
        """The end of the container's output as the runtime kept it (stdout and stderr)."""
        tail = bytearray()

        async def read() -> None:
            async for _stream, chunk in self.runtime.logs(container_id):
                tail.extend(chunk)
                del tail[:-LOG_TAIL_BYTES]

        with contextlib.suppress(UnknownContainer, TimeoutError):
            await asyncio.wait_for(read(), LOG_TAIL_TIMEOUT_S)
        return tail.decode(errors="replace").strip()

    # --- output of direct tasks -------------------------------------------------------------

    def _ship_output(self, rec: Record, since: float | None = None) -> None:
        """Reads the container's output from the runtime (from its start, or from ``since`` for
        one found again after an agent restart) and queues it for the master."""
        shipper = OutputShipper(rec.container_id, self.outbox.put, self.clock)
        rec.shipper = shipper

        async def ship() -> None:
            try:
                await shipper.run(self.runtime.logs(rec.container_id, since=since))
            except UnknownContainer:
                log.info("output of %s: the runtime no longer has it", rec.container_id)

        rec.output = asyncio.ensure_future(ship())
        rec.output.add_done_callback(_log_crash)

    async def _output_drained(self, rec: Record) -> None:
        """Waits until the master has stored the last lines (the runtime's log ends with the
        container), so they are in the task's log before its exit is, and a container is never
        removed with lines the master may not have."""
        assert rec.output is not None and rec.shipper is not None
        output, shipper = rec.output, rec.shipper

        async def drained() -> None:
            with contextlib.suppress(Exception):  # logged by its done callback
                await asyncio.shield(output)
            await shipper.settled()

        try:
            await asyncio.wait_for(drained(), OUTPUT_DRAIN_S)
        except TimeoutError:
            log.warning(
                "output of %s: not all stored %g s after its exit", rec.container_id, OUTPUT_DRAIN_S
            )

    def output_stored(self, container_id: str, seq: int) -> None:
        rec = self.records.get(container_id)
        if rec is not None and rec.shipper is not None:
            rec.shipper.stored(seq)

    def resend_output(self) -> int:
        """After a reconnect: the batches sent on the last connection that the master did not
        say it stored go again, ahead of what is still queued. The number of batches."""
        queued = {id(m) for m in self.outbox}
        again = [
            m
            for rec in self.records.values()
            if rec.shipper is not None
            for m in rec.shipper.unacked
            if id(m) not in queued
        ]
        self.outbox.put_first(again)
        return len(again)

    async def signal(self, container_id: str, name: str) -> None:
        signum = parse_signal(name)
        rec = self.records.get(container_id)
        if signum is None:
            log.warning("SignalContainer %s: unknown signal %r, ignored", container_id, name)
            return
        if rec is None:
            # No reply: the master answers reports about containers it does not know with a
            # SIGKILL, and a reply here would start an endless exchange.
            log.info("signal %s for unknown container %s ignored", name, container_id)
            return
        if rec.state in (ContainerState.ASSIGNED, ContainerState.PULLING, ContainerState.STARTING):
            rec.pending_signal = signum
            return
        if rec.state is ContainerState.TERMINATED:
            return
        await self._signal_runtime(rec, signum)

    async def _signal_runtime(self, rec: Record, signum: int) -> None:
        try:
            await self.runtime.signal(rec.container_id, signum)
        except UnknownContainer:
            log.warning("signal for %s: the runtime no longer has it", rec.container_id)

    # --- reattach ---------------------------------------------------------------------------

    async def observe(self) -> dict[str, Observed]:
        """This agent's containers now: the runtime's labelled ones plus launches in flight."""
        found = await self.runtime.find(self.options.agent_id)
        seen: dict[str, Observed] = {}
        for f in found:
            rec = self.records.get(f.container_id)
            if rec is not None and rec.state is ContainerState.TERMINATED:
                seen[f.container_id] = Observed(rec.state, rec.exit_code, rec.failure)
            elif f.running:
                seen[f.container_id] = Observed(ContainerState.RUNNING)
            elif rec is None:
                # It died before this agent process started: no agent saw it go (the one
                # before this may have been killed with it). Said so in its failure.
                failure = exit_failure(f.exit_code, agent_restarted=True)
                seen[f.container_id] = Observed(ContainerState.TERMINATED, f.exit_code, failure)
            else:
                seen[f.container_id] = Observed(ContainerState.TERMINATED, f.exit_code)
            if rec is None:
                # Found only through its labels (the agent restarted): remember it.
                self.records[f.container_id] = Record(
                    container_id=f.container_id,
                    allocation_id=allocation_of(f.container_id, f.labels),
                    devices=(),
                    state=seen[f.container_id].state,
                    exit_code=f.exit_code,
                    failure=seen[f.container_id].failure,
                    user=user_of(f.labels),
                    direct=f.labels.get(OUTPUT_LABEL) == OUTPUT_BY_AGENT,
                )
        for cid, rec in self.records.items():
            if cid not in seen and rec.state is not ContainerState.RUNNING:
                seen[cid] = Observed(rec.state, rec.exit_code, rec.failure)
        return seen

    def apply_reattach(self, plan: ReattachPlan, listed: Sequence[Container]) -> None:
        """Kill the strays, watch the reattached, and queue the exits the master must hear.

        Returns at once (the strays die in the background), so the handshake is not held up.
        """
        for cid in plan.strays:
            rec = self.records.get(cid)
            if rec is not None:
                rec.abandoned = True
                if rec.state in (ContainerState.ASSIGNED, ContainerState.STARTING):
                    rec.pending_signal = signal.SIGKILL
                    continue  # the launch kills and removes it once the runtime returns
            self._spawn(self._discard(cid))
        devices = {c.id: c.devices for c in listed}
        pending_exits = {
            m.container.id
            for m in self.outbox
            if isinstance(m, ContainerStateChanged)
            and m.container.state is ContainerState.TERMINATED
        }
        for ack in plan.acks:
            rec = self.records.get(ack.container.id)
            if rec is None:
                continue
            rec.devices = rec.devices or devices.get(rec.container_id, ())
            if ack.container.state is ContainerState.RUNNING and not rec.tasks:
                if rec.direct and rec.output is None:
                    # Found again after an agent restart: what it printed while no agent read
                    # it stays in the runtime's log (`docker logs`), not in the task's.
                    self._ship_output(rec, since=self.clock())
                self._track(rec, self._watch(rec))
        for cid in plan.exited:
            rec = self.records[cid]
            # A watcher still running reports the exit itself (it has just seen it).
            if cid not in pending_exits and not rec.tasks:
                self.report_exit(rec)

    async def _discard(self, container_id: str) -> None:
        rec = self.records.get(container_id)
        log.info("removing container %s: the master did not ask for it", container_id)
        if rec is not None:
            rec.abandoned = True
        try:
            running = rec is None or rec.state is not ContainerState.TERMINATED
            if running:
                with contextlib.suppress(UnknownContainer):
                    await self.runtime.signal(container_id, signal.SIGKILL)
                with contextlib.suppress(UnknownContainer, TimeoutError):
                    await asyncio.wait_for(self.runtime.wait(container_id), STRAY_WAIT_S)
        finally:
            await self._remove_by_id(container_id)

    # --- removal ----------------------------------------------------------------------------

    async def _remove(self, rec: Record) -> None:
        if self.options.keep_exited:
            self._forget(rec)
            return
        await self._remove_by_id(rec.container_id)

    async def _remove_by_id(self, container_id: str) -> None:
        rec = self.records.get(container_id)
        if not self.options.keep_exited:
            with contextlib.suppress(UnknownContainer):
                await self.runtime.remove(container_id)
            await asyncio.to_thread(remove_run_dir, run_dir_of(self.options.work_dir, container_id))
        if rec is not None:
            self._forget(rec)
        else:
            self._finished.append(container_id)

    def _forget(self, rec: Record) -> None:
        if self.records.get(rec.container_id) is rec:
            del self.records[rec.container_id]
        self._finished.append(rec.container_id)

    # --- tasks ------------------------------------------------------------------------------

    def _track(self, rec: Record, coro: object) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        rec.tasks.add(task)
        task.add_done_callback(rec.tasks.discard)
        task.add_done_callback(_log_crash)

    def _spawn(self, coro: object) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_log_crash)

    async def detach(self) -> None:
        """Stop watching without touching the containers (the agent is going away)."""
        tasks = [t for rec in self.records.values() for t in rec.tasks] + list(self._background)
        tasks += [rec.output for rec in self.records.values() if rec.output is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task


def _log_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("container task failed", exc_info=task.exception())
