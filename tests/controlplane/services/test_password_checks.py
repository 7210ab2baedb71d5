"""Password checks run lowest rank first, and guesses never hold every worker."""

from __future__ import annotations

import asyncio
import threading

import pytest

from controlplane.services.password_checks import PasswordChecks


class Gate:
    """A check that blocks its worker thread until opened, recording the order checks began."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.open = threading.Event()

    def check(self, name: str) -> str:
        self.started.append(name)
        assert self.open.wait(10)
        return name


async def until(condition: object, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.001)


async def test_clean_checks_jump_the_queue_and_keep_a_worker_of_their_own() -> None:
    checks, gate = PasswordChecks(workers=2), Gate()
    first = asyncio.create_task(checks.run(5, gate.check, "guess-1"))
    await until(lambda: gate.started == ["guess-1"])
    # a second guess may not take the last worker: it is kept for clean logins
    second = asyncio.create_task(checks.run(3, gate.check, "guess-2"))
    await until(lambda: checks.waiting == 1)
    clean = asyncio.create_task(checks.run(0, gate.check, "clean-1"))
    await until(lambda: gate.started == ["guess-1", "clean-1"])
    assert (checks.busy, checks.busy_ranked) == (2, 1)
    # with both workers busy, a clean check queued after a guess still starts before it
    late_clean = asyncio.create_task(checks.run(0, gate.check, "clean-2"))
    await until(lambda: checks.waiting == 2)
    gate.open.set()
    assert await asyncio.gather(first, second, clean, late_clean) == [
        "guess-1",
        "guess-2",
        "clean-1",
        "clean-2",
    ]
    assert gate.started.index("clean-2") < gate.started.index("guess-2")
    assert (checks.busy, checks.busy_ranked, checks.waiting) == (0, 0, 0)


async def test_lower_ranks_start_first_on_one_worker() -> None:
    checks, gate = PasswordChecks(workers=1), Gate()
    running = asyncio.create_task(checks.run(9, gate.check, "r9"))
    await until(lambda: gate.started == ["r9"])
    queued = [asyncio.create_task(checks.run(r, gate.check, f"r{r}")) for r in (7, 2, 4, 0)]
    await until(lambda: checks.waiting == 4)
    gate.open.set()
    await asyncio.gather(running, *queued)
    assert gate.started == ["r9", "r0", "r2", "r4", "r7"]


async def test_a_cancelled_waiter_gives_its_turn_away() -> None:
    checks, gate = PasswordChecks(workers=1), Gate()
    running = asyncio.create_task(checks.run(0, gate.check, "a"))
    await until(lambda: gate.started == ["a"])
    gone = asyncio.create_task(checks.run(0, gate.check, "gone"))
    after = asyncio.create_task(checks.run(1, gate.check, "b"))
    await until(lambda: checks.waiting == 2)
    gone.cancel()
    gate.open.set()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert await asyncio.gather(running, after) == ["a", "b"]
    assert gate.started == ["a", "b"] and checks.busy == 0


async def test_errors_free_the_worker() -> None:
    checks = PasswordChecks(workers=1)

    def boom() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError):
        await checks.run(0, boom)
    assert await checks.run(0, lambda: 42) == 42
    assert checks.busy == 0
