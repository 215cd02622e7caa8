"""The documents carry tables generated from rtl/ (encoding, operand slots, where each instruction lives):
they must not drift, and every instruction with an engine must have all its files."""

import importlib
import pathlib

import pytest

from rtl.isa import INSTRUCTIONS
from rtl.top import ENGINES
from flow.docs import GENERATED, render

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name,doc", [(n, d) for n, (_, docs) in GENERATED.items() for d in docs])
def test_generated_tables_match_rtl(name, doc):
    text = (ROOT / doc).read_text()
    assert render(text, name) == text, f"{doc}: regenerate with: python -m flow.docs --write"


@pytest.mark.parametrize("op", sorted({op for e in ENGINES for op in e.opcodes}, key=lambda o: o.value),
                         ids=lambda o: o.name)
def test_instruction_files_exist(op):
    """An instruction with an engine has its golden function, cocotb testbench and block test, findable by
    its name (the instruction table's family)."""
    ins = INSTRUCTIONS[op]
    assert callable(getattr(importlib.import_module("golden.ops"), ins.golden))
    for path in (f"cocotb_tests/test_{ins.family}.py", f"tests/rtl/test_rtl_{ins.family}.py"):
        assert (ROOT / path).exists(), path
