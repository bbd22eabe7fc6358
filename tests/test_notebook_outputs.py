"""No stored notebook output prints a number whose text depends on the CPU.

A float64 printed in full (17 significant digits) shows exactly the last bits that differ
between CPU kernels; so does the sign of a value that is zero in exact arithmetic ("-0.0000").
Full-precision numbers in the outputs must be float32 values (the float32 rounding of a float64
result, the same on every IEEE machine; ``course_lib.figures.margins``).
"""
import json
import re
from pathlib import Path

import numpy
import pytest

ROOT = Path(__file__).resolve().parent.parent
# every notebook: both editions (notebooks/zh/ is the Chinese one) and the solutions
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
LONG_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d{10,}(?:e[-+]?\d+)?")
NEGATIVE_ZERO = re.compile(r"(?<![\w.])-0\.0+(?![\d])")


def output_texts(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", [])) + "".join(output.get("data", {}).get("text/plain", []))
            if text:
                yield index, text


def is_float32_repr(token: str) -> bool:
    value = float(token)
    return repr(float(numpy.float32(value))) == token


def problems_in(path) -> list[str]:
    found = []
    for index, text in output_texts(path):
        for token in LONG_NUMBER.findall(text):
            significant = len(token.lstrip("-").split("e")[0].replace(".", "").lstrip("0"))
            if significant >= 12 and not is_float32_repr(token):
                found.append(f"cell {index}: {token} is a float64 printed in full (show float32 or fewer digits)")
        for token in NEGATIVE_ZERO.findall(text):
            found.append(f"cell {index}: {token} prints the sign of a value that is zero up to rounding")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_no_output_prints_cpu_dependent_digits(path):
    assert not problems_in(path), "\n".join(problems_in(path))


def test_the_scan_sees_a_float64_and_a_negative_zero(tmp_path):
    nb = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "stream", "text": ["z = 0.9546803832054138 ok, then 0.95468035191062301 and -0.0000\n"]}]}]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    found = problems_in(path)
    assert len(found) == 2 and "0.95468035191062301" in found[0] and "-0.0000" in found[1]
