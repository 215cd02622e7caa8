"""The engine plug-in base's rules (rtl/engines/base.py): what a subclass that breaks one is told."""

import pytest

from rtl.engines.base import Engine
from rtl.engines.elementwise.engine import ElementwiseEngine
from rtl.engines.transfer.pipes import GmToUbEngine, UbToGmEngine
from rtl.isa import Opcode


def test_overlap_opcodes():
    """``Engine.overlap_opcodes``: all of ``opcodes`` unless ``OVERLAP_OPCODES`` names some (no engine of the
    unit does since the twelfth session, when GM -> UB's MGATHERs began to overlap; a subclass that names some
    gets those)."""
    assert GmToUbEngine.overlap_opcodes() == GmToUbEngine.opcodes
    assert UbToGmEngine.overlap_opcodes() == UbToGmEngine.opcodes
    assert ElementwiseEngine.overlap_opcodes() == ElementwiseEngine.opcodes

    class LoadsOnly(GmToUbEngine):
        OVERLAP_OPCODES = (Opcode.TLOAD,)
    assert LoadsOnly.overlap_opcodes() == (Opcode.TLOAD,)


def test_engine_rules_are_named():
    with pytest.raises(TypeError, match="OVERLAP_OPCODES must be some of opcodes"):
        class Bad(Engine):
            name, opcodes, AXI, OVERLAP_OPCODES = "bad", (Opcode.TLOAD,), True, (Opcode.TSTORE,)

            @classmethod
            def bound(cls, config, cmd):
                return 1
    with pytest.raises(TypeError, match="bound"):
        class NoBound(Engine):
            name, opcodes, AXI = "nobound", (Opcode.TLOAD,), True
