"""`det user link-with-agent-user` against a fake master: the real client's request body, and
its refusal of a missing option before anything is sent."""

from __future__ import annotations

from tests.cli.fake_master import FakeMaster, logged_in, run_det

ARGS = ("--agent-uid", "1001", "--agent-gid", "1002", "--agent-user", "al", "--agent-group", "ml")


def master() -> FakeMaster:
    fake = FakeMaster({"admin": "secret"})
    logged_in(fake)
    fake.add("GET", "/api/v1/users", {"users": [{"id": 7, "username": "alice"}]})
    fake.add("PATCH", "/api/v1/users/7", {"user": {"id": 7, "username": "alice"}})
    fake.requests.clear()
    return fake


def test_link_sends_the_agent_user_group() -> None:
    fake = master()
    result = run_det(fake, "user", "link-with-agent-user", "alice", *ARGS)
    assert result.exit_code == 0, result.output
    assert result.stdout == "Linked user 'alice' with agent user al (1001) and group ml (1002)\n"
    (body,) = fake.json_bodies("PATCH", "/api/v1/users/7")
    link = {"agentUid": 1001, "agentGid": 1002, "agentUser": "al", "agentGroup": "ml"}
    assert body == {"agentUserGroup": link}


def test_every_option_is_required() -> None:
    fake = master()
    result = run_det(fake, "user", "link-with-agent-user", "alice", *ARGS[:6])
    assert result.exit_code != 0 and "agent-group argument required" in result.output
    assert not fake.json_bodies("PATCH", "/api/v1/users/7")
