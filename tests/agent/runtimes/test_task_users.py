"""Tasks run as their users (RunRequest.user), on both runtimes, with an agent that is root.

The theft this guards against (issue 14): on the process runtime every task ran as the agent's
user, root, so any task could read every other task's ``/proc/<pid>/environ`` and find its
``DET_SESSION_TOKEN``. Here two tasks run as two uids that have no passwd entry (setuid needs
none): the thief sees neither the victim's environment nor its run dir, and each task is its
own uid and gid with no other groups, owns its run dir and has a HOME it can write.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from agent.protocol import TaskUser
from tests.agent.runtimes.conftest import Box, eventually

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="starting tasks as other users needs an agent that runs as root"
)

VICTIM = TaskUser(uid=61002, gid=61002, user="victim", group="victim", owner="bob")
THIEF = TaskUser(uid=61001, gid=61001, user="thief", group="thief", owner="alice")
SECRET = "victims-session-token-0123456789"

VICTIM_CODE = "import pathlib, time; pathlib.Path('ready').write_text('1'); time.sleep(120)"
# Looks for the secret in every process's environment (it is given the secret reversed, so its
# own holds no copy), and in the victim's run dir.
THIEF_CODE = """
import glob, json, os
found, unreadable = [], 0
for path in glob.glob('/proc/[0-9]*/environ'):
    try:
        with open(path, 'rb') as f:
            if os.environ['SECRET_REVERSED'][::-1].encode() in f.read():
                found.append(path)
    except OSError:
        unreadable += 1
def attempt(fn):
    try:
        fn()
        return 'ok'
    except OSError as exc:
        return type(exc).__name__
victim = os.environ['VICTIM_RUN_DIR']
home = os.environ['HOME']
open(os.path.join(home, 'written'), 'w').write('x')
json.dump({
    'found': found, 'unreadable': unreadable,
    'list_victim': attempt(lambda: os.listdir(victim)),
    'read_victim_file': attempt(lambda: open(os.path.join(victim, 'workdir', 'ready')).read()),
    'uid': [os.getuid(), os.geteuid()], 'gid': [os.getgid(), os.getegid()],
    'groups': os.getgroups(), 'home': home, 'user': os.environ.get('USER'),
}, open('seen.json', 'w'))
"""


async def test_a_task_cannot_read_another_users_task(box: Box) -> None:
    victim = box.request(
        "python3", "-c", VICTIM_CODE, environment={"DET_SESSION_TOKEN": SECRET}, user=VICTIM
    )
    await box.runtime.start(victim)
    ready = victim.run_dir / "workdir" / "ready"
    await eventually(ready.exists)
    victim_seen = box.run_dir_seen_by_task(victim)
    if box.kind == "docker":  # another container's run dir is not even mounted: use the host's
        victim_seen = str(victim.run_dir.absolute())
    thief = box.request(
        "python3",
        "-c",
        THIEF_CODE,
        environment={"SECRET_REVERSED": SECRET[::-1], "VICTIM_RUN_DIR": victim_seen},
        mounts=(),
        user=THIEF,
    )
    await box.runtime.start(thief)
    assert await box.runtime.wait(thief.container_id) == 0
    seen = json.loads((thief.run_dir / "workdir" / "seen.json").read_text())

    # The secret is in no environment the thief can read; on the process runtime it saw the
    # victim's processes (and the agent's) and could not open them.
    assert seen["found"] == [], seen
    if box.kind == "process":
        assert seen["unreadable"] > 0
        assert seen["list_victim"] == "PermissionError"
        assert seen["read_victim_file"] == "PermissionError"
    else:
        assert seen["list_victim"] == "FileNotFoundError"
    assert seen["uid"] == [61001, 61001] and seen["gid"] == [61001, 61001]
    assert set(seen["groups"]) <= {61001}  # docker lists the primary group again; no others
    # Its own run dir is its own and no one else's; HOME is a folder it writes.
    for request, user in ((victim, VICTIM), (thief, THIEF)):
        info = request.run_dir.stat()
        assert (info.st_uid, info.st_gid) == (user.uid, user.gid)
        assert stat.S_IMODE(info.st_mode) == 0o700
        workdir = (request.run_dir / "workdir").stat()
        assert (workdir.st_uid, workdir.st_gid) == (user.uid, user.gid)
    assert seen["home"] == f"{box.run_dir_seen_by_task(thief)}/home"
    assert (thief.run_dir / "home" / "written").stat().st_uid == THIEF.uid
    if box.kind == "process":
        assert seen["user"] == "thief"
    await box.runtime.stop(victim.container_id, grace_s=5)


async def test_the_supervisor_stays_root_and_still_stops_the_task(box: Box) -> None:
    if box.kind != "process":
        pytest.skip("docker has no supervisor: the engine stops the container")
    request = box.request("python3", "-c", VICTIM_CODE, user=VICTIM)
    await box.runtime.start(request)
    await eventually((request.run_dir / "workdir" / "ready").exists)
    pids = json.loads((box.state_dir / request.container_id / "pids.json").read_text())
    assert os.stat(f"/proc/{pids['supervisor_pid']}").st_uid == 0
    assert os.stat(f"/proc/{pids['child_pid']}").st_uid == VICTIM.uid
    # The task's logs stay the agent's alone.
    folder = box.state_dir / request.container_id
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "stdout.log").stat().st_mode) == 0o600
    await box.runtime.stop(request.container_id, grace_s=5)
    assert await box.runtime.wait(request.container_id) == 128 + 15
