"""Names of models, workspaces and projects: what is refused and why; what is kept as given."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controlplane.domain import registry_names as names
from controlplane.domain.errors import InvalidArgument


class TestNameProblem:
    @pytest.mark.parametrize(
        ("name", "why"),
        [
            ("", "empty"),
            ("   ", "empty"),
            ("a/b", "slash"),
            ("a\\b", "slash"),
            ("a\x00b", "control"),
            ("line\nbreak", "control"),
            ("tab\there", "control"),
            ("del\x7f", "control"),
            (" lead", "blanks"),
            ("trail ", "blanks"),
            ("x" * 256, "at most 255"),
        ],
    )
    def test_refused(self, name: str, why: str) -> None:
        problem = names.name_problem(name)
        assert problem is not None and why in problem

    @pytest.mark.parametrize(
        "name", ["m1", "my model", "модель", "模型 ✓", "a.b-c_d (v2)", "x" * 255]
    )
    def test_kept(self, name: str) -> None:
        assert names.name_problem(name) is None
        assert names.check_name("model", name) == name

    @given(st.text(min_size=1, max_size=255))
    def test_a_kept_name_has_no_slash_or_control_and_is_trimmed(self, name: str) -> None:
        if names.name_problem(name) is None:
            assert "/" not in name and "\x00" not in name and name == name.strip()
            assert all(ord(c) >= 32 and ord(c) != 127 for c in name)


class TestModelNames:
    @pytest.mark.parametrize("name", ["1", "42", "0007"])
    def test_numbers_name_ids_so_no_model_is_one(self, name: str) -> None:
        with pytest.raises(InvalidArgument, match="number"):
            names.check_model_name(name)

    @pytest.mark.parametrize("name", ["m42", "42m", "4 2", "\u00b9", "\u0663"])
    def test_names_with_digits_are_fine(self, name: str) -> None:
        assert names.check_model_name(name) == name


class TestProjectKeys:
    @pytest.mark.parametrize(
        ("name", "taken", "key"),
        [
            ("Vision", set(), "VIS"),
            ("Vision", {"VIS"}, "VIS1"),
            ("Vision", {"VIS", "VIS1", "VIS2"}, "VIS3"),
            ("ab", set(), "AB"),
            ("модель", set(), "PRJ"),
            ("a-b c", set(), "ABC"),
        ],
    )
    def test_generated(self, name: str, taken: set[str], key: str) -> None:
        assert names.project_key(name, taken) == key

    @given(
        st.text(max_size=40),
        st.sets(st.text(alphabet=string.ascii_uppercase, max_size=5), max_size=30),
    )
    def test_a_generated_key_is_free_and_valid(self, name: str, taken: set[str]) -> None:
        key = names.project_key(name, taken)
        assert key not in taken and names.check_project_key(key) == key

    @pytest.mark.parametrize("key", ["", "toolong", "a-b", "ü", "a b"])
    def test_bad_keys(self, key: str) -> None:
        with pytest.raises(InvalidArgument, match="key"):
            names.check_project_key(key)

    def test_keys_are_upper_cased(self) -> None:
        assert names.check_project_key("ab1") == "AB1"


class TestFields:
    def test_text_limits_and_nul(self) -> None:
        assert names.check_text("notes", "n" * 10, 10) == "n" * 10
        with pytest.raises(InvalidArgument, match="at most 10"):
            names.check_text("notes", "n" * 11, 10)
        with pytest.raises(InvalidArgument, match="NUL"):
            names.check_text("notes", "a\x00", 10)

    def test_labels_and_metadata(self) -> None:
        assert names.check_labels("labels", ["a", "b"]) == ["a", "b"]
        with pytest.raises(InvalidArgument, match="101 labels"):
            names.check_labels("labels", ["x"] * 101)
        with pytest.raises(InvalidArgument, match="bytes"):
            names.check_metadata("metadata", {"x": "y" * 300_000})
