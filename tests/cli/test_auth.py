"""Unit tests for cli.auth: password hash, token-store location/format/locking, user choice."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import filelock
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.auth import (
    FALLBACK_USER,
    TokenStore,
    auth_file_path,
    authenticate,
    hash_password,
)
from cli.client import ApiClient, canonicalize_master_url
from cli.errors import CliError, LoginFailed, Unauthenticated
from tests.cli.fake_master import MASTER, FakeMaster


def real_client_accepts(store: object) -> bool:
    """What determined 0.38.1's TokenStore checks before it deletes a "corrupt" auth.json
    (validate_token_store_v2), restated: the tests under tests/compat run the real client."""
    if not isinstance(store, dict) or not set(store) <= {"version", "masters"}:
        return False
    masters = store.get("masters", {})
    if store.get("version") != 2 or not isinstance(masters, dict):
        return False
    for url, entry in masters.items():
        if not isinstance(entry, dict) or not set(entry) <= {"active_user", "tokens"}:
            return False
        if "active_user" in entry and not isinstance(entry["active_user"], str):
            return False
        tokens = entry.get("tokens", {})
        if not isinstance(tokens, dict):
            return False
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in tokens.items()):
            return False
        if canonicalize_master_url(url) != url:
            return False
    return True


class TestHashPassword:
    def test_known_value(self) -> None:
        digest = hash_password("secret")
        assert digest.startswith("f6b1a15b") and digest.endswith("a723")
        assert len(digest) == 128

    def test_empty_password_is_sent_empty(self) -> None:
        assert hash_password("") == ""


class TestAuthFilePath:
    @pytest.mark.parametrize(
        ("env", "expected"),
        [
            ({"DET_DEBUG_CONFIG_PATH": "/a", "XDG_CONFIG_HOME": "/x"}, "/a/auth.json"),
            ({"XDG_CONFIG_HOME": "/x"}, "/x/determined/auth.json"),
            ({"DET_DEBUG_CONFIG_PATH": "", "XDG_CONFIG_HOME": "/x"}, "/x/determined/auth.json"),
        ],
    )
    def test_precedence(self, env: dict[str, str], expected: str) -> None:
        assert auth_file_path(env) == Path(expected)

    def test_home_default(self) -> None:
        assert auth_file_path({}) == Path.home() / ".config" / "determined" / "auth.json"


class TestTokenStore:
    def test_round_trip_and_file_format(self, tmp_path: Path) -> None:
        store = TokenStore(tmp_path / "auth.json")
        assert store.get_token(MASTER, "admin") is None
        store.set_token(MASTER, "admin", "t1")
        store.set_active_user(MASTER, "admin")
        store.set_token("http://127.0.0.1:9000", "bob", "t2")
        data = json.loads((tmp_path / "auth.json").read_text())
        assert data == {
            "version": 2,
            "masters": {
                MASTER: {"active_user": "admin", "tokens": {"admin": "t1"}},
                "http://127.0.0.1:9000": {"tokens": {"bob": "t2"}},
            },
        }
        assert (tmp_path / "auth.json").stat().st_mode & 0o777 == 0o600
        reopened = TokenStore(tmp_path / "auth.json")
        assert reopened.get_token(MASTER, "admin") == "t1"
        assert reopened.get_active_user(MASTER) == "admin"

    def test_drop_user_clears_active(self, tmp_path: Path) -> None:
        store = TokenStore(tmp_path / "auth.json")
        store.set_token(MASTER, "admin", "t1")
        store.set_active_user(MASTER, "admin")
        store.drop_user(MASTER, "admin")
        assert store.get_token(MASTER, "admin") is None
        assert store.get_active_user(MASTER) is None

    def test_drop_user_removes_the_active_user_key(self, tmp_path: Path) -> None:
        # The real client calls `"active_user": null` corrupt and deletes the whole file.
        store = TokenStore(tmp_path / "auth.json")
        store.set_token(MASTER, "admin", "t1")
        store.set_active_user(MASTER, "admin")
        store.drop_user(MASTER, "admin")
        data = json.loads((tmp_path / "auth.json").read_text())
        assert data["masters"][MASTER] == {"tokens": {}}

    def test_a_null_active_user_from_an_older_write_is_healed(self, tmp_path: Path) -> None:
        path = tmp_path / "auth.json"
        path.write_text(
            json.dumps({"version": 2, "masters": {MASTER: {"active_user": None, "tokens": {}}}})
        )
        TokenStore(path).set_token("http://127.0.0.1:9000", "bob", "t2")
        assert real_client_accepts(json.loads(path.read_text()))

    @settings(max_examples=60, deadline=None)
    @given(
        ops=st.lists(
            st.tuples(
                st.sampled_from(["set_token", "set_active_user", "drop_user"]),
                st.sampled_from([MASTER, "http://127.0.0.1:9000", "https://h:443/det"]),
                st.sampled_from(["admin", "bob"]),
            ),
            max_size=12,
        )
    )
    def test_every_write_passes_the_real_clients_validation(
        self, tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, str, str]]
    ) -> None:
        path = tmp_path_factory.mktemp("store") / "auth.json"
        store = TokenStore(path)
        for op, master, user in ops:
            if op == "set_token":
                store.set_token(master, user, f"{user}-token")
            elif op == "drop_user":
                store.drop_user(master, user)
            elif store.get_token(master, user):
                store.set_active_user(master, user)
            if path.exists():
                assert real_client_accepts(json.loads(path.read_text())), path.read_text()

    def test_active_user_needs_a_token(self, tmp_path: Path) -> None:
        with pytest.raises(CliError, match="no token"):
            TokenStore(tmp_path / "auth.json").set_active_user(MASTER, "ghost")

    def test_reads_a_file_written_by_the_real_client(self, tmp_path: Path) -> None:
        path = tmp_path / "auth.json"
        path.write_text(
            '{"version": 2, "masters": {"http://127.0.0.1:8080": '
            '{"active_user": "determined", "tokens": {"determined": "abc"}}}}'
        )
        store = TokenStore(path)
        assert store.get_active_user(MASTER) == "determined"
        assert store.get_token(MASTER, "determined") == "abc"

    def test_corrupt_file_is_a_clear_error(self, tmp_path: Path) -> None:
        (tmp_path / "auth.json").write_text("{not json")
        with pytest.raises(CliError, match="corrupt"):
            TokenStore(tmp_path / "auth.json").get_token(MASTER, "admin")

    def test_held_lock_times_out_cleanly(self, tmp_path: Path) -> None:
        path = tmp_path / "auth.json"
        with filelock.FileLock(str(path) + ".lock"):
            store = TokenStore(path, lock_timeout=0.2)
            with pytest.raises(CliError, match="timed out waiting for the lock"):
                store.set_token(MASTER, "admin", "t")

    def test_concurrent_writers_lose_nothing(self, tmp_path: Path) -> None:
        path = tmp_path / "auth.json"

        def write(index: int) -> None:
            TokenStore(path).set_token(MASTER, f"user{index}", f"tok{index}")

        threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        tokens = json.loads(path.read_text())["masters"][MASTER]["tokens"]
        assert tokens == {f"user{i}": f"tok{i}" for i in range(16)}


def _prompt_never(user: str) -> str:
    raise AssertionError(f"unexpected password prompt for {user}")


class TestAuthenticate:
    @pytest.fixture
    def master(self) -> FakeMaster:
        return FakeMaster({"admin": "secret", "bob": "pw", FALLBACK_USER: ""})

    @pytest.fixture
    def store(self, tmp_path: Path) -> TokenStore:
        return TokenStore(tmp_path / "auth.json")

    def client(self, master: FakeMaster) -> ApiClient:
        return ApiClient(MASTER, transport=master.transport)

    def test_valid_cached_token_is_checked_with_me(self, master, store) -> None:
        master.tokens["cached"] = "admin"
        store.set_token(MASTER, "admin", "cached")
        store.set_active_user(MASTER, "admin")
        creds = authenticate(self.client(master), store, None, _prompt_never, env={})
        assert (creds.username, creds.token) == ("admin", "cached")
        assert [r.url.path for r in master.requests] == ["/api/v1/me"]

    def test_stale_token_is_dropped_and_user_prompted(self, master, store) -> None:
        store.set_token(MASTER, "admin", "stale")
        store.set_active_user(MASTER, "admin")
        creds = authenticate(self.client(master), store, None, lambda u: "secret", env={})
        assert creds.username == "admin" and creds.token != "stale"
        assert store.get_token(MASTER, "admin") == creds.token

    def test_env_user_and_password(self, master, store) -> None:
        env = {"DET_USER": "bob", "DET_PASS": "pw"}
        creds = authenticate(self.client(master), store, None, _prompt_never, env=env)
        assert creds.username == "bob"
        login = master.json_bodies("POST", "/api/v1/auth/login")[0]
        assert login == {"username": "bob", "password": hash_password("pw"), "isHashed": True}

    def test_dash_u_beats_env_and_prompts(self, master, store) -> None:
        env = {"DET_USER": "bob", "DET_PASS": "pw"}
        creds = authenticate(self.client(master), store, "admin", lambda u: "secret", env=env)
        assert creds.username == "admin"

    def test_user_token_from_env(self, master, store) -> None:
        env = {"DET_USER": "bob", "DET_USER_TOKEN": "task-token"}
        creds = authenticate(self.client(master), store, "bob", _prompt_never, env=env)
        assert creds.token == "task-token"

    def test_fallback_user_with_empty_password(self, master, store) -> None:
        creds = authenticate(self.client(master), store, None, _prompt_never, env={})
        assert creds.username == FALLBACK_USER
        login = master.json_bodies("POST", "/api/v1/auth/login")[0]
        assert login == {"username": FALLBACK_USER, "password": "", "isHashed": True}

    def test_fallback_refused_becomes_unauthenticated(self, store) -> None:
        master = FakeMaster({FALLBACK_USER: "has-a-password"})
        with pytest.raises(Unauthenticated, match="det user login"):
            authenticate(self.client(master), store, None, _prompt_never, env={})

    def test_wrong_password_names_the_user(self, master, store) -> None:
        with pytest.raises(LoginFailed, match="login failed for user 'admin'"):
            authenticate(self.client(master), store, "admin", lambda u: "wrong", env={})
