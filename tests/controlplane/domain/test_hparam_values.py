"""A trial's hyperparameters flattened into the rows the experiment list's hp filter searches."""

from __future__ import annotations

from controlplane.domain.hparam_values import NAME_CHARS, HparamValue, flatten_hparams


class TestFlattenHparams:
    def test_nested_maps_become_dotted_names(self) -> None:
        rows = flatten_hparams({"optimizer": {"lr": 0.01, "name": "adam"}, "layers": 3})
        assert rows == [
            HparamValue("layers", 3.0, "3"),
            HparamValue("optimizer.lr", 0.01, "0.01"),
            HparamValue("optimizer.name", None, "adam"),
        ]

    def test_bools_lists_and_nulls_are_text_only(self) -> None:
        rows = flatten_hparams({"bn": True, "sizes": [1, 2], "none": None, "empty": {}})
        assert rows == [
            HparamValue("bn", None, "true"),
            HparamValue("empty", None, "{}"),
            HparamValue("none", None, "null"),
            HparamValue("sizes", None, "[1,2]"),
        ]

    def test_names_no_filter_can_reach_are_left_out(self) -> None:
        assert flatten_hparams({"x" * (NAME_CHARS + 1): 1}) == []
