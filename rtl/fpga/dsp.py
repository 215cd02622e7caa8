"""Registered multiplies for DSP blocks: the same function in every flow, the ECP5's own registers when
the design is built for an ECP5.

On an ECP5 a multiply in a MULT18X18D block costs ~3 ns inside the block and ~4 ns of routing on each
side in a design the size of the unit, so a fabric register -> DSP -> fabric register path takes
11-12 ns (docs/synthesis.md). The block has registers of its own on its inputs and on its output;
with them the routing into the block, the multiply and the routing out are three register-to-register
paths. Yosys does not move fabric registers into the ECP5's DSP blocks, so :func:`product` instantiates
the block with its registers when it elaborates for :data:`ECP5` (the platform ``flow.synth`` and
``tilevec-export --target ecp5`` pass), and writes the registers and the multiply in plain Amaranth
otherwise (simulation, the generic Verilog export, any other FPGA or ASIC flow). Both forms compute
the same thing with the same latency:

    p(t + L) = a(t) * b(t),  L = in_reg + 1 clock edges where ``en`` is high (the registers hold
    while it is low).
"""

from amaranth.hdl import ClockSignal, Const, Instance, Signal, Value

from rtl.fpga import ECP5, Ecp5Platform, is_ecp5

__all__ = ["ECP5", "Ecp5Platform", "product", "product_latency", "MAX_WIDTH"]

#: Widest unsigned operand one block multiplies (MULT18X18D, SIGNEDA = SIGNEDB = 0).
MAX_WIDTH = 18


def product_latency(in_reg=True):
    """Clock edges from the operands to the product of :func:`product`: the operand registers (with
    ``in_reg``) and the product's."""
    return int(bool(in_reg)) + 1


def product(m, a, b, *, platform=None, en=None, in_en=None, in_reg=True, name="prod"):
    """``a * b`` (unsigned, each at most :data:`MAX_WIDTH` bits) through a DSP block's registers.

    ``in_reg`` True: ``a`` and ``b`` are registered, then the product is registered: the result is
    two clock edges after the operands. False: only the product is registered (one edge; use it when
    ``a`` and ``b`` come straight from registers). ``en`` (default: always) enables every register;
    ``in_en`` (default: ``en``) the operand registers alone (e.g. operands taken at one edge and held).
    Returns the ``len(a) + len(b)``-bit result signal. With ``platform`` :data:`rtl.fpga.ECP5` one block with REG_INPUTA/B (if ``in_reg``) and
    REG_OUTPUT on CLK0 (CE1 for the operand registers, CE0 for the product's); otherwise Amaranth
    registers and ``*``.
    """
    a, b = Value.cast(a), Value.cast(b)
    assert not a.shape().signed and not b.shape().signed, "product: unsigned operands"
    assert len(a) <= MAX_WIDTH and len(b) <= MAX_WIDTH, f"product: operands of at most {MAX_WIDTH} bits"
    width = len(a) + len(b)
    out = Signal(width, name=name)
    ce = Const(1, 1) if en is None else Value.cast(en)
    ce_in = ce if in_en is None else Value.cast(in_en)
    if is_ecp5(platform):
        p = Signal(36, name=f"{name}_p")
        a18, b18 = a.as_unsigned(), b.as_unsigned()
        ports = {f"i_A{k}": (a18[k] if k < len(a18) else Const(0, 1)) for k in range(18)}
        ports.update({f"i_B{k}": (b18[k] if k < len(b18) else Const(0, 1)) for k in range(18)})
        ports.update({f"i_C{k}": Const(0, 1) for k in range(18)})
        ports.update({f"o_P{k}": p[k] for k in range(36)})
        reg = "CLK0" if in_reg else "NONE"
        m.submodules[name] = Instance(
            "MULT18X18D",
            p_REG_INPUTA_CLK=reg, p_REG_INPUTA_CE="CE1", p_REG_INPUTA_RST="RST0",
            p_REG_INPUTB_CLK=reg, p_REG_INPUTB_CE="CE1", p_REG_INPUTB_RST="RST0",
            p_REG_INPUTC_CLK="NONE", p_REG_PIPELINE_CLK="NONE",
            p_REG_OUTPUT_CLK="CLK0", p_REG_OUTPUT_CE="CE0", p_REG_OUTPUT_RST="RST0",
            p_SOURCEB_MODE="B_INPUT", p_MULT_BYPASS="DISABLED", p_GSR="DISABLED", p_RESETMODE="SYNC",
            i_SIGNEDA=Const(0, 1), i_SIGNEDB=Const(0, 1), i_SOURCEA=Const(0, 1), i_SOURCEB=Const(0, 1),
            i_CLK0=ClockSignal(), i_CLK1=Const(0, 1), i_CLK2=Const(0, 1), i_CLK3=Const(0, 1),
            i_CE0=ce, i_CE1=ce_in, i_CE2=Const(0, 1), i_CE3=Const(0, 1),
            i_RST0=Const(0, 1), i_RST1=Const(0, 1), i_RST2=Const(0, 1), i_RST3=Const(0, 1),
            **ports)
        m.d.comb += out.eq(p[:width])
        return out
    if in_reg:
        ra = Signal(len(a), name=f"{name}_a", reset_less=True)
        rb = Signal(len(b), name=f"{name}_b", reset_less=True)
        with m.If(ce_in):
            m.d.sync += [ra.eq(a), rb.eq(b)]
        a, b = ra, rb
    reg = Signal(width, name=f"{name}_r", reset_less=True)
    with m.If(ce):
        m.d.sync += reg.eq(a * b)
    m.d.comb += out.eq(reg)
    return out
