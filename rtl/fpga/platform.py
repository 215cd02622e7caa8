"""FPGA primitives the unit uses when it is built for an ECP5, and their portable equivalents.

Elaboration sees the target through ``platform``: :data:`ECP5` (an :class:`Ecp5Platform`) is what the
ECP5 flows pass (``flow.synth``, ``flow.area``, ``tilevec-export --target ecp5``); anything else
(``None`` in simulation and the generic Verilog export) gets plain logic with the same behaviour.
"""

from amaranth.hdl import Const, Instance, Signal, Value

__all__ = ["Ecp5Platform", "ECP5", "is_ecp5", "global_net"]


class Ecp5Platform:
    """Marker platform for an ECP5 build: MULT18X18D blocks with their internal registers
    (:func:`rtl.fpga.dsp.product`) and global buffers for high-fan-out resets (:func:`global_net`). It has
    no resources or toolchain; the flows pass it to the RTLIL / Verilog conversion as ``platform``."""
    dsp = "MULT18X18D"


#: The platform object of the ECP5 flows.
ECP5 = Ecp5Platform()


def is_ecp5(platform):
    return getattr(platform, "dsp", None) == "MULT18X18D"


def global_net(m, value, platform, name):
    """``value`` (one bit, from a register) distributed over a global (primary clock) network on an
    ECP5, through a DCCA buffer: nextpnr routes a plain net with thousands of loads (an engine's reset
    reaches every resettable flip-flop in it) across the die in 10-12 ns, a global one in ~1 ns to the
    buffer. Elsewhere the value itself. Returns the signal to use."""
    out = Signal(name=name)
    if is_ecp5(platform):
        m.submodules[f"{name}_dcca"] = Instance("DCCA", i_CLKI=Value.cast(value), i_CE=Const(1, 1), o_CLKO=out)
    else:
        m.d.comb += out.eq(value)
    return out
