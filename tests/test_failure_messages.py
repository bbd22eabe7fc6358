"""Failures name what to look at: float values with hex (not bit patterns), and weight-table
entries by name and index."""
import pytest
import torch

from _exact import as_float32, assert_same_floats, float_differences
from course_lib.toys.weights import describe_table_differences


def test_same_floats_pass_bit_for_bit():
    want = [0.9546803832054138, 2.0966553688049316, -1.067393183708191]
    assert_same_floats(torch.tensor(want, dtype=torch.float32), want, "logits")
    assert_same_floats(torch.tensor(want, dtype=torch.float64), want, "logits")    # rounds to the same float32
    assert_same_floats([[1.5, -0.0]], [1.5, -0.0], "nested", float32=False)
    assert_same_floats(float("nan"), float("nan"), "nan")


def test_a_one_step_difference_prints_values_and_hex_not_bit_patterns():
    want = -1.067393183708191
    arm = -1.0673933029174805                  # a result one float32 step away, as an ARM CPU once gave
    with pytest.raises(AssertionError) as caught:
        assert_same_floats(torch.tensor([0.5, arm]), [0.5, want], "interface.toy.logits")
    text = str(caught.value)
    assert "interface.toy.logits[1]: computed -1.0673933029174805 (-0x1.1140b00000000p+0)" in text
    assert "article -1.067393183708191" in text and "(-0x1.1140ae0000000p+0)" in text
    assert "1 float32 step(s) apart" in text
    assert "[0]" not in text                                  # equal entries are not listed
    assert not any(str(bits) in text for bits in (-1081977854, -1081977855))   # no int32 patterns


def test_float64_mode_and_sizes():
    assert float_differences([0.1], [0.1 + 2 ** -56], "x", float32=True) == []
    assert "1 float64 step(s) apart" in float_differences([0.1], [0.1 + 2 ** -56], "x", float32=False)[0]
    assert float_differences([1.0, 2.0], [1.0], "x") == ["x: computed 2 values, article 1"]
    assert as_float32(0.1) == 0.10000000149011612
    assert "-0x0.0p+0" in float_differences([-0.0], [0.0], "z")[0]


def test_table_differences_name_table_and_entry():
    file = {"lm_head.bias": [0.5, -1.25, 0.0, -1.921], "blocks.0.mlp.down.weight": [[1.0, 0.0], [0.0, 1.0]]}
    derived = {"lm_head.bias": [0.5, -1.25, 0.0, -1.956], "blocks.0.mlp.down.weight": [[1.0, 0.0], [0.0, 1.5]]}
    assert describe_table_differences(file, file) == ""
    assert describe_table_differences(file, derived).splitlines() == [
        "lm_head.bias[3]: file -1.921, re-derived -1.956",
        "blocks.0.mlp.down.weight[1][1]: file 1.0, re-derived 1.5"]


def test_table_differences_report_shapes_missing_tables_and_stop_after_ten():
    text = describe_table_differences({"a": [1, 2], "b": [0]}, {"a": [1, 2, 3], "c": [0]})
    assert "a: file has 2 entries, re-derived 3" in text
    assert "b: in the file, not re-derived" in text and "c: re-derived, not in the file" in text
    many = describe_table_differences({"w": [[0.0] * 5] * 5}, {"w": [[1.0] * 5] * 5}).splitlines()
    assert len(many) == 11 and many[0] == "w[0][0]: file 0.0, re-derived 1.0" and many[-1] == "and 15 more"


def test_shipped_weight_files_agree_with_themselves():
    from course_lib.data import data_dir
    from course_lib.toys.weights import read_weight_file
    for name in ("five_token_model.json", "lab_model.json"):
        tables = read_weight_file(data_dir() / name, name)["tables"]
        assert describe_table_differences(tables, tables) == ""
