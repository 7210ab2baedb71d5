"""The ``docker`` runtime: one Docker container per task, through the docker SDK.

The only module that imports ``docker``. The SDK blocks, so every call runs in this runtime's own
thread pool (long waits would otherwise starve the event loop's default executor), and log
streams are read by daemon threads that never hold up the agent's exit.

Every container runs with host networking, ``init=True`` (docker-init as PID 1 passes SIGTERM
on, so a task can stop gracefully), the ``local`` log driver (it keeps output byte for byte,
where json-file replaces invalid UTF-8, and it rotates), our labels, the request's environment
and bind mounts, and the run dir mounted read-write at ``/run/determined``. The entrypoint is
``argv[0]``, so an image's own ENTRYPOINT never wraps the task. Containers are never removed
automatically: their exit code must be readable after an agent restart; ``remove`` removes.

With ``request.user`` the container runs as ``uid:gid`` (numbers: the image needs no passwd
entry), owns its run dir, and gets ``HOME=/run/determined/home`` unless its environment sets one.

The task's Python is the image's ``python3`` unless the request names one (``request.python``,
from ``environment.python`` or the pool's default; agent/task_python.py): that interpreter, a
path or command name *inside the image*, then replaces an argv[0] of ``python``/``python3``, and
a path's folder goes first on the task's PATH, before the image's own. The agent cannot look
inside the image beforehand, so a folder (a virtualenv) is not recognised here: name its
``bin/python3``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal as signals
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import docker
import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container, _create_container_args
from docker.types import DeviceRequest, LogConfig
from docker.types import Mount as DockerMount

from agent.run_dir import HOME, RunDirError, give_run_dir
from agent.runtimes.base import (
    RUN_DIR_IN_CONTAINER,
    Found,
    LaunchFailed,
    RunRequest,
    UnknownContainer,
)
from agent.runtimes.docker_client import open_client
from agent.runtimes.docker_logs import Seen, frames, split_timestamp
from agent.runtimes.labels import (
    AGENT_LABEL,
    ID_LABEL,
    TASK_CONTAINER,
    TYPE_LABEL,
    container_labels,
    cuda_devices,
    is_valid_container_id,
)

T = TypeVar("T")
API_TIMEOUT_S = 60
WAIT_POLL_S = 5  # a blocking wait is re-issued this often, so no thread waits forever
KILL_WAIT_S = 30.0
log = logging.getLogger("agent.runtimes.docker")

LOG_QUEUE_CHUNKS = 64
# A task's log is followed only if it still runs this long after its reader asked; one that has
# ended by then (a short command: most of them) is read once, in one request, where a follow
# took two (the follow, then the catch-up its end needs) and a log watcher in dockerd.
FOLLOW_AFTER_S = 0.5
REMOVAL_WAIT_S = 30.0
RUNNING_STATES = ("running", "restarting", "paused")
# A container created but never started (the agent died between create and start) has no real
# exit code; report it as killed, as the process runtime does for a task that vanished.
NEVER_STARTED_EXIT_CODE = 128 + signals.SIGKILL
_CALL_ERRORS = (DockerException, requests.RequestException)
PYTHON_NAMES = ("python", "python3")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def ping(timeout_s: float) -> bool:
    """Whether a Docker engine answers (``DOCKER_HOST`` or the default socket) within timeout_s."""
    try:
        client = docker.from_env(timeout=max(1, round(timeout_s)))
    except _CALL_ERRORS:
        return False
    try:
        return bool(client.ping())
    except _CALL_ERRORS:
        return False
    finally:
        client.close()


def uses_python(request: RunRequest) -> bool:
    """The request names a Python and its argv[0] is one of the names it stands for."""
    return bool(request.python) and bool(request.argv) and request.argv[0] in PYTHON_NAMES


def path_in_image(image_env: list[str] | None, python: str) -> str | None:
    """PATH for a task whose Python is ``python`` (a path inside the image): its folder first,
    then the image's own PATH (Docker's default when the image sets none). None for a command
    name: the image's PATH finds it as it is."""
    if not python.startswith("/"):
        return None
    first = str(PurePosixPath(python).parent)
    image_path = DEFAULT_PATH
    for entry in image_env or []:
        if entry.startswith("PATH="):
            image_path = entry.removeprefix("PATH=")
    rest = [p for p in image_path.split(":") if p and p != first]
    return ":".join([first, *rest])


def container_environment(
    request: RunRequest, image_env: list[str] | None = None
) -> dict[str, str]:
    env = dict(request.environment)
    if request.python and "PATH" not in env:
        path = path_in_image(image_env, request.python)
        if path is not None:
            env["PATH"] = path
    if cuda_devices(request.devices):
        # The engine renumbers a container's GPUs from 0, so the host's indices would be wrong.
        env.pop("CUDA_VISIBLE_DEVICES", None)
    run_dir = PurePosixPath(RUN_DIR_IN_CONTAINER)
    if request.user is not None and "HOME" not in request.environment:
        # The image rarely knows the uid; Docker would give it HOME=/, which it cannot write.
        env["HOME"] = str(run_dir / HOME)
    env["DET_RUN_DIR"] = str(run_dir)
    env["DET_WORKDIR"] = str(run_dir / "workdir")
    extra = request.environment.get("PYTHONPATH")
    env["PYTHONPATH"] = ":".join(p for p in (str(run_dir / "pylib"), extra) if p)
    return env


def create_options(
    request: RunRequest, run_dir: Path, image_env: list[str] | None = None
) -> dict[str, Any]:
    """The keyword arguments of ``containers.create`` for one request (no I/O); ``image_env``
    is the image's own ``Config.Env``, read only when the request names its Python."""
    mounts = [DockerMount(RUN_DIR_IN_CONTAINER, str(run_dir), type="bind", read_only=False)]
    if request.pylib is not None:
        mounts.append(
            DockerMount(
                f"{RUN_DIR_IN_CONTAINER}/pylib", str(request.pylib), type="bind", read_only=True
            )
        )
    mounts += [
        DockerMount(m.container_path, m.host_path, type="bind", read_only=m.read_only)
        for m in request.mounts
    ]
    gpus = cuda_devices(request.devices)
    options: dict[str, Any] = {
        "image": request.image,
        "entrypoint": [request.python if uses_python(request) else request.argv[0]],
        "command": list(request.argv[1:]),
        "environment": container_environment(request, image_env),
        "labels": container_labels(request),
        "mounts": mounts,
        "working_dir": f"{RUN_DIR_IN_CONTAINER}/workdir",
        "network_mode": "host",
        "init": True,
        "stop_signal": "SIGTERM",
        "log_config": LogConfig(type="local"),
    }
    if request.user is not None:
        # Numeric ids need no passwd entry in the image; Docker sets no supplementary groups.
        options["user"] = request.user.key
    if request.shm_size_bytes is not None:
        options["shm_size"] = request.shm_size_bytes
    if gpus:
        options["device_requests"] = [
            DeviceRequest(device_ids=[d.uuid or str(d.id) for d in gpus], capabilities=[["gpu"]])
        ]
    return options


def exit_code_of(container: Container) -> int | None:
    """None while it runs; the exit code once it has stopped."""
    status = container.status
    if status in RUNNING_STATES:
        return None
    if status == "created":
        return NEVER_STARTED_EXIT_CODE
    return int(container.attrs["State"]["ExitCode"])


class DockerRuntime:
    name = "docker"

    def __init__(self, *, max_threads: int = 64) -> None:
        self._executor = ThreadPoolExecutor(max_threads, thread_name_prefix="docker-runtime")
        self._client_lock = threading.Lock()
        self._client: docker.DockerClient | None = None
        self._max_threads = max_threads
        self._docker_ids: dict[str, str] = {}
        # Containers this runtime created and started: running or exited, never "created", so
        # waiting on one needs no inspect first.
        self._started: set[str] = set()
        self._images: set[str] = set()  # images known to be present (a task never removes one)
        # Each image's Config.Env, for tasks whose Python is a path inside it. An image is
        # immutable under its id; a tag that moves is re-read after a pull (force_pull).
        self._image_envs: dict[str, list[str] | None] = {}
        self._log_streams: set[Any] = set()
        # Set when `wait` saw the container (by docker id) end: its log is then complete.
        self._exited: dict[str, threading.Event] = {}
        # Agents whose containers `find` has listed: every one of theirs is then in _docker_ids
        # (found, or created here since), so a miss there needs no search by label.
        self._listed_agents: set[str] = set()

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def _docker(self) -> docker.DockerClient:
        with self._client_lock:
            if self._client is None:
                self._client = open_client(timeout_s=API_TIMEOUT_S, max_pool_size=self._max_threads)
            return self._client

    # --- start ---------------------------------------------------------------------------------

    async def start(self, request: RunRequest) -> None:
        if not is_valid_container_id(request.container_id):
            raise LaunchFailed(f"invalid container id {request.container_id!r}")
        if not request.argv:
            raise LaunchFailed("no command to run")
        if not request.image:
            raise LaunchFailed("no image given for a docker container")
        try:
            await self._call(self._start, request)
        except _CALL_ERRORS as exc:
            raise LaunchFailed(f"docker: {_explain(exc)}") from exc

    def _start(self, request: RunRequest) -> None:
        if self._known(request):
            raise LaunchFailed(f"container {request.container_id} already exists")
        self._ensure_image(request.image, request.force_pull)
        run_dir = request.run_dir.absolute()
        try:
            (run_dir / "workdir").mkdir(parents=True, exist_ok=True)
            if request.user is not None:
                give_run_dir(run_dir, request.user.uid, request.user.gid)
        except (OSError, RunDirError) as exc:
            raise LaunchFailed(f"cannot prepare the task's run dir: {exc}") from exc
        needs_env = bool(request.python) and request.python.startswith("/")
        image_env = self._image_env(request.image) if needs_env else None
        api = self._docker().api
        try:
            options = create_options(request, run_dir, image_env)
            # The low-level call: containers.create would inspect the new container at once
            # (one more round trip per task) for a handle whose attributes nothing here reads.
            docker_id = api.create_container(
                **_create_container_args({**options, "version": api._version})
            )["Id"]
        except APIError as exc:
            self._images.discard(request.image)  # it may have been removed since we saw it
            self._image_envs.pop(request.image, None)
            raise LaunchFailed(f"cannot create the container: {_explain(exc)}") from exc
        self._docker_ids[request.container_id] = docker_id
        try:
            api.start(docker_id)
        except APIError as exc:
            with contextlib.suppress(*_CALL_ERRORS):
                api.remove_container(docker_id, force=True)
            self._docker_ids.pop(request.container_id, None)
            raise LaunchFailed(f"cannot start the container: {_explain(exc)}") from exc
        self._started.add(request.container_id)

    def _known(self, request: RunRequest) -> bool:
        """Whether a container with this id exists. The agent lists its containers (`find`)
        before it starts any, so after that our own records answer without a call to dockerd
        (container ids come from the master, unique across agents)."""
        if request.container_id in self._docker_ids:
            return True
        if request.agent_id in self._listed_agents:
            return False
        return self._lookup(request.container_id) is not None

    def _image_env(self, image: str) -> list[str] | None:
        if image in self._image_envs:
            return self._image_envs[image]
        try:
            config = self._docker().api.inspect_image(image).get("Config") or {}
        except _CALL_ERRORS:
            return None
        self._image_envs[image] = env = list(config.get("Env") or [])
        return env

    def _ensure_image(self, image: str, force_pull: bool) -> None:
        if image in self._images and not force_pull:
            return
        images = self._docker().images
        self._image_envs.pop(image, None)  # a pull may move the tag to another image
        if not force_pull:
            try:
                images.get(image)
                self._images.add(image)
                return
            except ImageNotFound:
                pass
        try:
            images.pull(image)
        except _CALL_ERRORS as exc:
            if force_pull:
                raise LaunchFailed(f"image {image!r} could not be pulled: {_explain(exc)}") from exc
            raise LaunchFailed(
                f"image {image!r} not found and could not be pulled: {_explain(exc)}"
            ) from exc

    # --- watch and signal ----------------------------------------------------------------------

    async def wait(self, container_id: str) -> int:
        docker_id = self._docker_ids.get(container_id)
        if container_id not in self._started or docker_id is None:
            container = await self._get(container_id)
            if container.status == "created":
                return NEVER_STARTED_EXIT_CODE
            docker_id = container.id
        api = self._docker().api
        while True:
            try:
                result = await self._call(api.wait, docker_id, timeout=WAIT_POLL_S)
            except NotFound as exc:
                raise UnknownContainer(container_id) from exc
            except requests.RequestException:  # the SDK's read timeout: still running
                continue
            self._exit_event(docker_id).set()
            return int(result["StatusCode"])

    def _exit_event(self, docker_id: str) -> threading.Event:
        return self._exited.setdefault(docker_id, threading.Event())

    async def signal(self, container_id: str, signum: int) -> None:
        container = await self._get(container_id)
        try:
            await self._call(container.kill, signal=int(signum))
        except NotFound as exc:
            raise UnknownContainer(container_id) from exc
        except APIError as exc:
            if exc.status_code != 409:  # 409: not running, nothing to signal
                raise

    async def stop(self, container_id: str, grace_s: float) -> None:
        await self.signal(container_id, signals.SIGTERM)
        try:
            await asyncio.wait_for(self.wait(container_id), timeout=max(grace_s, 0.0))
            return
        except TimeoutError:
            pass
        await self.signal(container_id, signals.SIGKILL)
        await asyncio.wait_for(self.wait(container_id), timeout=KILL_WAIT_S)

    # --- find and remove -----------------------------------------------------------------------

    async def find(self, agent_id: str) -> list[Found]:
        filters = {"label": [f"{TYPE_LABEL}={TASK_CONTAINER}", f"{AGENT_LABEL}={agent_id}"]}
        containers = await self._call(
            self._docker().containers.list, all=True, filters=filters, ignore_removed=True
        )
        self._listed_agents.add(agent_id)
        found = []
        for container in containers:
            container_id = container.labels.get(ID_LABEL, "")
            self._docker_ids[container_id] = container.id
            code = exit_code_of(container)
            found.append(
                Found(
                    container_id=container_id,
                    running=code is None,
                    exit_code=code,
                    labels=dict(container.labels),
                )
            )
        return found

    async def remove(self, container_id: str) -> None:
        # A container started here is removed by the docker id we were given: no inspect first.
        docker_id = self._docker_ids.get(container_id)
        if container_id not in self._started or docker_id is None:
            container = await self._call(self._lookup, container_id)
            if container is None:
                self._started.discard(container_id)
                return
            docker_id = container.id
        self._started.discard(container_id)
        try:
            await self._call(self._docker().api.remove_container, docker_id, force=True)
        except NotFound:
            pass
        except APIError as exc:
            # Someone else (the agent's own cleanup, a reattach, an operator) is removing it:
            # ours is done when theirs is.
            if exc.status_code != 409 or "in progress" not in str(exc.explanation or exc):
                raise
            await self._gone(container_id)
        self._docker_ids.pop(container_id, None)
        self._exited.pop(docker_id, None)

    async def _gone(self, container_id: str) -> None:
        deadline = time.monotonic() + REMOVAL_WAIT_S
        while await self._call(self._lookup, container_id) is not None:
            if time.monotonic() > deadline:
                log.warning("container %s is still being removed by someone else", container_id)
                return
            await asyncio.sleep(0.1)

    # --- logs ----------------------------------------------------------------------------------

    async def logs(
        self, container_id: str, since: float | None = None
    ) -> AsyncIterator[tuple[str, bytes]]:
        docker_id = self._docker_ids.get(container_id) or (await self._get(container_id)).id
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, bytes] | BaseException | None] = asyncio.Queue(
            LOG_QUEUE_CHUNKS
        )
        done = threading.Event()
        threading.Thread(
            target=self._pump_log,
            args=(docker_id, since, loop, queue, done),
            name=f"docker-logs-{container_id}",
            daemon=True,
        ).start()
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, NotFound):  # removed while we read it
                    raise UnknownContainer(container_id) from item
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            done.set()

    def _pump_log(
        self,
        docker_id: str,
        since: float | None,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[tuple[str, bytes] | BaseException | None],
        done: threading.Event,
    ) -> None:
        """Follows both streams in one request (the engine multiplexes them into frames that
        name their stream): one connection and one thread per container, where the SDK's
        ``logs`` takes a request per stream or loses which stream a chunk came from. A task
        that `wait` sees end within FOLLOW_AFTER_S is read once instead. Each response is
        closed as it ends, so its connection goes back to the pool or is dropped at once."""

        def put(item: tuple[str, bytes] | BaseException | None) -> bool:
            """Hands one item over, waiting while the reader is behind; False once it left."""
            while not done.is_set():
                try:
                    future = asyncio.run_coroutine_threadsafe(queue.put(item), loop)
                except RuntimeError:  # the loop is closed
                    return False
                try:
                    future.result(timeout=0.5)
                    return True
                except TimeoutError:
                    future.cancel()
            return False

        response = None
        try:
            if since is None and self._exit_event(docker_id).wait(FOLLOW_AFTER_S):
                if done.is_set():
                    return
                response = self._open_log(docker_id, {"stdout": 1, "stderr": 1})
                for item in frames(response.raw):
                    if not put(item):
                        return
                put(None)
                return
            api = self._docker().api
            params: dict[str, Any] = {"follow": 1, "stdout": 1, "stderr": 1, "timestamps": 1}
            if since is not None:
                params["since"] = f"{since:.6f}"
            response = self._open_log(docker_id, params)
            closer = threading.Thread(target=_close_when, args=(done, response), daemon=True)
            closer.start()
            api._disable_socket_timeout(api._get_raw_response_socket(response))
            seen = Seen()
            for stream, data in frames(response.raw):
                stamp, chunk = split_timestamp(data)
                seen.add(stream, stamp)
                if not put((stream, chunk)):
                    return
            # The follow ended with the container; plain reads now have what it dropped.
            for catch_up in seen.catch_up_requests(params):
                if done.is_set():
                    return
                _close(self._log_streams, response)
                response = self._open_log(docker_id, catch_up)
                stamped = ((s, *split_timestamp(d)) for s, d in frames(response.raw))
                for stream, chunk in seen.missed(stamped):
                    if not put((stream, chunk)):
                        return
            put(None)
        except Exception as exc:  # handed to the reader, who raises it (nothing if it left)
            if not done.is_set():
                put(exc)
        finally:
            if response is not None:
                _close(self._log_streams, response)

    def _open_log(self, docker_id: str, params: dict[str, Any]) -> Any:
        api = self._docker().api
        response = api._get(api._url("/containers/{0}/logs", docker_id), params=params, stream=True)
        api._raise_for_status(response)
        self._log_streams.add(response)
        return response

    async def close(self) -> None:
        for output in list(self._log_streams):
            with contextlib.suppress(Exception):
                output.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._client is not None:
            self._client.close()

    # --- lookups -------------------------------------------------------------------------------

    async def _get(self, container_id: str) -> Container:
        container = await self._call(self._lookup, container_id)
        if container is None:
            raise UnknownContainer(container_id)
        return container

    def _lookup(self, container_id: str) -> Container | None:
        """Our container with this id (cached docker id first, then by label), or None."""
        containers = self._docker().containers
        docker_id = self._docker_ids.get(container_id)
        if docker_id is not None:
            try:
                return containers.get(docker_id)
            except NotFound:
                self._docker_ids.pop(container_id, None)
        filters = {"label": [f"{TYPE_LABEL}={TASK_CONTAINER}", f"{ID_LABEL}={container_id}"]}
        for container in containers.list(all=True, filters=filters, ignore_removed=True):
            self._docker_ids[container_id] = container.id
            return container
        return None


def _close(streams: set[Any], response: Any) -> None:
    streams.discard(response)
    with contextlib.suppress(Exception):
        response.close()


def _close_when(done: threading.Event, output: Any) -> None:
    """Closes a log stream once its reader has gone, which unblocks the thread reading it."""
    done.wait()
    with contextlib.suppress(Exception):
        output.close()


def _explain(exc: BaseException) -> str:
    if isinstance(exc, APIError) and exc.explanation:
        return str(exc.explanation)
    return str(exc)
