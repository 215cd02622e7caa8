"""The GEMV engine's setup (:class:`rtl.engines.gemv.engine.GemvEngine`, section 1, built into its module):
the per-instruction parameters derived from the command and registered at ``start``
(:func:`setup_params`), and the widths of the engine's counters, addresses and results."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data

from rtl.engines.gemv.mac import SUM_BITS
from rtl.engines.gemv.operands import operand_kind
from rtl.isa import GEMV_MAX_DIM, DType, Opcode, TileDesc
from rtl.lib.tile import ESZ_BITS, ESZ_MAX, LINE_BYTES_BITS, elem_log2

__all__ = ["setup_params", "COUNT_BITS", "ESZ_BITS", "PITCH_BITS", "SUM_BYTES", "SUM_LOG2"]

#: Width of a row, product or block counter (K, N and ``ceil(N / lanes)`` are at most ``GEMV_MAX_DIM``)
#: with a spare top bit: the product counter is compared as a signed number with ``K - P - 1``.
COUNT_BITS = GEMV_MAX_DIM.bit_length() + 1
#: Width of B's row pitch in bytes (its ``cols`` << ``esz``).
PITCH_BITS = TileDesc["cols"].width + ESZ_MAX
#: Bytes of a result (C, C_in and bias elements: fp32 / int32) and its log2.
SUM_BYTES = SUM_BITS // 8
SUM_LOG2 = SUM_BYTES.bit_length() - 1


def setup_params(m, eng, parts):
    """Section 1, setup: everything derived from the command (geometry, the constants the counters
    compare with, the operand kinds), registered at ``start`` into ``prm``; the MAC array's and the
    reducer's per-instruction inputs. Returns ``prm``, ``esz`` (combinational, for the start cycle),
    ``K``, the kinds, and the fields the fire side reads beside ``prm`` (``esz_next``, ``hold``)."""
    cfg, mac, red = parts.cfg, parts.mac, parts.red
    W, HL, P = cfg.ub_word_bytes, cfg.gemv_lanes, cfg.gemv_partial_sums
    cmd = eng.cmd
    c, a, b, i = cmd.dst, cmd.src0, cmd.src1, cmd.src2
    UB_ADDR = TileDesc["base"].shape
    Params = data.StructLayout({
        "esz": ESZ_BITS, "lc": range(HL + 1), "lc_bytes": range(W + 1), "pitch": PITCH_BITS,
        "K": COUNT_BITS,
        "km2": COUNT_BITS,              # K - 2: the row before the last
        "kfin1": signed(COUNT_BITS + 1),    # K - P - 1: the product before the first final one
        "pw2": range(W),                # (W >> esz) - 2: the element before a word's last
        "b_base": UB_ADDR, "a_base": UB_ADDR, "c_base": UB_ADDR, "i_base": UB_ADDR, "a_bytes": LINE_BYTES_BITS,
        "has_init": 1, "acc_int": 1, "present": P,
        "last_n": range(HL + 1),        # the last block's columns: N mod lc, or lc
    })
    setup = Signal(Params)
    prm = Signal(Params, reset_less=True)
    esz = elem_log2(m, b.dtype)
    lc = Signal(range(HL + 1))
    pw2 = Signal(range(W))
    with m.Switch(esz):
        for e in range(ESZ_MAX + 1):
            with m.Case(e):
                m.d.comb += [lc.eq(min(W >> e, HL)), pw2.eq((W >> e) - 2)]
    K = b.valid_rows
    m.d.comb += [
        setup.esz.eq(esz), setup.lc.eq(lc), setup.lc_bytes.eq(lc << esz), setup.pw2.eq(pw2),
        setup.pitch.eq(b.cols << esz), setup.K.eq(K), setup.km2.eq(K - 2), setup.kfin1.eq(K - P - 1),
        setup.b_base.eq(b.base), setup.a_base.eq(a.base), setup.c_base.eq(c.base), setup.i_base.eq(i.base),
        setup.a_bytes.eq(K << esz),
        setup.has_init.eq(cmd.opcode != Opcode.TGEMV), setup.acc_int.eq(c.dtype == DType.INT32),
        setup.present.eq(Cat(K > q for q in range(P))),
        setup.last_n.eq(Mux((b.valid_cols & (lc - 1)) == 0, lc, b.valid_cols & (lc - 1))),
    ]
    a_kind = Signal.like(mac.a_kind, reset_less=True)
    b_kind = Signal.like(mac.b_kind, reset_less=True)
    with m.If(eng.start):
        m.d.sync += [prm.eq(setup), a_kind.eq(operand_kind(m, a.dtype)), b_kind.eq(operand_kind(m, b.dtype))]
    # the MAC array's own copy of ``acc_int`` (a cycle late: its first step is a UB read after
    # ``start``): it selects every lane's 32-bit sum, which the reducer's LUT RAM stores; one register
    # for both was the worst path of `small` at seeds 1 and 2 (9.4-10.0 ns, docs/synthesis.md)
    if not eng._overlap:
        # (with overlap the MAC array takes the fire side's copies, loaded when its products begin, and the
        # reducer its contexts per block: overlap.fire_setup, overlap.block_contexts)
        acc_int_mac = Signal(reset_less=True)
        m.d.sync += acc_int_mac.eq(prm.acc_int)
        m.d.comb += [mac.a_kind.eq(a_kind), mac.b_kind.eq(b_kind), mac.acc_int.eq(acc_int_mac)]
        m.d.comb += [red.acc_int.eq(prm.acc_int), red.has_init.eq(prm.has_init), red.present.eq(prm.present)]
    # (the fire side's fields, as ``overlap.fire_setup`` gives them: the serial engine fires from ``prm``
    # itself, whose element size is constant from ``start``, and never holds the fire logic back)
    return SimpleNamespace(prm=prm, esz=esz, K=K, a_kind=a_kind, b_kind=b_kind, esz_next=prm.esz, hold=None)
