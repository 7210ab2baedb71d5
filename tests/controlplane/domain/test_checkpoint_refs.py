"""Checkpoint uuids and resource paths: what storage paths may be built from."""

from __future__ import annotations

import uuid

import pytest

from controlplane.domain import limits
from controlplane.domain.checkpoint_refs import check_resources, check_uuid, path_problem
from controlplane.domain.errors import InvalidArgument

GOOD_UUID = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"


class TestUuid:
    def test_a_canonical_uuid_passes(self) -> None:
        assert check_uuid(GOOD_UUID) == GOOD_UUID
        fresh = str(uuid.uuid4())
        assert check_uuid(fresh) == fresh

    @pytest.mark.parametrize(
        "value",
        [
            "../../../../tmp/evil",
            "",
            "ck-1",
            GOOD_UUID.upper(),  # storage paths are case-sensitive: one spelling only
            GOOD_UUID.replace("-", ""),
            "{" + GOOD_UUID + "}",
            "urn:uuid:" + GOOD_UUID,
            GOOD_UUID + "/..",
            GOOD_UUID + "\x00",
            " " + GOOD_UUID,
        ],
    )
    def test_anything_else_is_refused(self, value: str) -> None:
        with pytest.raises(InvalidArgument, match="is not a UUID"):
            check_uuid(value)


class TestPaths:
    @pytest.mark.parametrize(
        "path",
        ["model.pt", "state/", "state/optimizer.pt", "a/b/c/d.bin", "..hidden", "a..b", "a/.x"],
    )
    def test_relative_normalised_paths_pass(self, path: str) -> None:
        assert path_problem(path) is None

    @pytest.mark.parametrize(
        ("path", "why"),
        [
            ("../../../etc/passwd", "'..'"),
            ("a/../../b", "'..'"),
            ("..", "'..'"),
            ("../", "'..'"),
            ("/etc/passwd", "absolute"),
            ("//x", "absolute"),
            ("a//b", "normalised"),
            ("./a", "normalised"),
            ("a/./b", "normalised"),
            ("a/.", "normalised"),
            ("", "empty"),
            ("/", "absolute"),
            ("a\x00b", "NUL"),
            ("a\\..\\b", "backslash"),
            ("p" * (limits.PATH_CHARS + 1), str(limits.PATH_CHARS)),
        ],
    )
    def test_paths_outside_or_unnormalised_are_refused(self, path: str, why: str) -> None:
        problem = path_problem(path)
        assert problem is not None and why in problem


class TestResources:
    def test_sizes_are_stored_as_decimal_text(self) -> None:
        assert check_resources({"a": 1, "b/": 0, "c": "25"}) == {"a": "1", "b/": "0", "c": "25"}

    @pytest.mark.parametrize(
        ("resources", "needle"),
        [
            ({"../../../etc/passwd": 10}, "'..'"),
            ({"a": -1}, "size"),
            ({"a": "1e9"}, "size"),
            ({"a": 2**63}, "size"),
            ({"a": True}, "size"),
            ({"a": 1.5}, "size"),
            ({"a": None}, "size"),
            ({f"f{i}": 1 for i in range(limits.CHECKPOINT_RESOURCES + 1)}, "at most"),
        ],
    )
    def test_bad_entries_are_refused(self, resources: dict[str, object], needle: str) -> None:
        with pytest.raises(InvalidArgument, match=needle):
            check_resources(resources)
