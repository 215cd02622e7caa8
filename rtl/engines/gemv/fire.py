"""The GEMV engine's fire logic (:class:`rtl.engines.gemv.engine.GemvEngine`, built into its module): when
a product fires (:func:`fire_logic`), the product counter and its flags, the reducer bank credits and the
dummy steps' position with every product (:func:`count`), and the step into the MAC array with its tag
(:func:`issue`)."""

from types import SimpleNamespace

from amaranth import *

from rtl.engines.base import GO_DELAY
from rtl.engines.gemv.mac import MacTag, ring_length
from rtl.engines.gemv.operands import ELEM_BITS
from rtl.engines.gemv.params import COUNT_BITS
from rtl.engines.gemv.reduce import Reducer
from rtl.lib.contract import require
from rtl.lib.fanout import variant_copies

__all__ = ["fire_logic", "count", "issue"]


def fire_logic(m, eng, parts, ser):
    """Section 3, fire: the product counter ``k`` and its flags, the reducer bank ``credits``, the
    dummy steps' position (``P < ADD_DEPTH``), ``go``'s local copies and ``fire`` per group (one gate
    over four registers). Returns them (their next values are driven by :func:`count`)."""
    P, R = parts.cfg.gemv_partial_sums, ring_length(parts.cfg)
    G = ser.G
    # The product counter k and its flags are registers, updated with every product; so is ``ok``, the
    # part of the fire condition that is the engine's own state (a block may start: a reducer bank is
    # free; not a dummy step), computed from the next state: fire is one gate over four registers.
    k = Signal(COUNT_BITS, reset_less=True)
    k0 = Signal(reset_less=True)            # k == 0: a block starts (needs a free reducer bank)
    first = Signal(reset_less=True)         # k < P
    final = Signal(reset_less=True)         # k >= K - P
    bank = Signal()
    credits = Signal(range(Reducer.BANKS + 1), init=Reducer.BANKS)   # reducer banks free for a new block
    fire, dummy = Signal(), Signal()
    k0_n, credits_n, in_dummy_n = Signal(), Signal(range(Reducer.BANKS + 1)), Signal()
    # ``go`` through local copies, a cycle late (the front end's register drove every group from
    # across the die): the first product needs the first B word and A element, which come later than
    # that (``FIRST_STEP`` >= ``GO_DELAY`` + ``GO_COPY_CYCLES``), so no cycle is lost; after ``done``
    # nothing is left to fire.
    require(eng.FIRST_STEP >= GO_DELAY + eng.GO_COPY_CYCLES,
            f"GemvEngine: the first product (FIRST_STEP = {eng.FIRST_STEP} cycles after start) comes no "
            f"earlier than go's local copies (GO_DELAY + GO_COPY_CYCLES = {GO_DELAY} + {eng.GO_COPY_CYCLES}, "
            f"rtl.engines.base); else cycles() is not exact")
    go = variant_copies(m, "go", eng.go, G)
    gpos = in_dummy = None
    if R > P:
        gpos = Signal(range(R), reset_less=True)    # position in the group of R steps
        in_dummy = Signal(reset_less=True)          # gpos >= P: the group's dummy steps
        m.d.comb += dummy.eq(go[0] & in_dummy)
    fires = [go[x] & ser.cur_valid[x] & parts.rd_b.words.valid & ser.ok[x] for x in range(G)]
    m.d.comb += fire.eq(fires[0])
    return SimpleNamespace(k=k, k0=k0, first=first, final=final, bank=bank, credits=credits, fire=fire,
                           dummy=dummy, k0_n=k0_n, credits_n=credits_n, in_dummy_n=in_dummy_n, fires=fires,
                           gpos=gpos, in_dummy=in_dummy)


def count(m, parts, setup, ser, fire):
    """Section 3, the counters' next state with every product: B's reader advances, ``k`` and its
    flags (``k0``, ``first``, ``final``, ``last_k``), the block parity ``bank``, the reducer bank
    credits (one taken by a block's first product, one back with ``bank_free``), the dummy steps'
    position, and ``ok`` (a product may fire next cycle)."""
    P, R = parts.cfg.gemv_partial_sums, ring_length(parts.cfg)
    prm, K = setup.prm, setup.K
    f, last_k = fire, ser.last_k
    m.d.comb += parts.rd_b.words.ready.eq(f.fire)
    m.d.comb += [f.k0_n.eq(Mux(f.fire, last_k[0], f.k0)),
                 f.credits_n.eq(f.credits - (f.fire & f.k0) + parts.red.bank_free)]
    with m.If(ser.starting):
        m.d.comb += ser.last_k_n.eq(K == 1)
    with m.Elif(f.fire):
        m.d.comb += ser.last_k_n.eq(Mux(last_k[0], prm.K == 1, f.k == prm.km2))
    with m.Else():
        m.d.comb += ser.last_k_n.eq(last_k[0])
    with m.If(f.fire):
        with m.If(last_k[0]):
            m.d.sync += [f.k.eq(0), f.first.eq(1), f.final.eq(prm.kfin1 < 0), f.bank.eq(~f.bank)]
        with m.Else():
            m.d.sync += [f.k.eq(f.k + 1), f.first.eq(f.k < P - 1), f.final.eq(f.k.as_signed() >= prm.kfin1)]
    if R > P:
        with m.If(f.fire):
            m.d.sync += f.gpos.eq(Mux(last_k[0], 0, f.gpos + 1))
            m.d.comb += f.in_dummy_n.eq(~last_k[0] & (f.gpos == P - 1))
        with m.Elif(f.dummy):
            m.d.sync += f.gpos.eq(Mux(f.gpos == R - 1, 0, f.gpos + 1))
            m.d.comb += f.in_dummy_n.eq(f.gpos != R - 1)
        with m.Else():
            m.d.comb += f.in_dummy_n.eq(f.in_dummy)
        m.d.sync += f.in_dummy.eq(f.in_dummy_n)
    m.d.sync += [f.k0.eq(f.k0_n), f.credits.eq(f.credits_n)]
    going = (~f.k0_n | (f.credits_n != 0)) & ~f.in_dummy_n
    hold = setup.hold           # (None, or with overlap: the fire side has no instruction next cycle)
    m.d.comb += ser.ok_n.eq(Mux(ser.starting, f.credits_n != 0, going if hold is None else going & ~hold))


def issue(m, parts, ser, fire):
    """Section 3, a step into the MAC array (a product, or a dummy step) with its tag, and the MAC
    array's finished partial sums into the reducer."""
    P, R = parts.cfg.gemv_partial_sums, ring_length(parts.cfg)
    mac, red, f = parts.mac, parts.red, fire
    tag = Signal(MacTag)
    m.d.comb += [
        tag.real.eq(f.fire), tag.first.eq(f.first), tag.final.eq(f.final),
        tag.last.eq(f.fire & ser.last_k[0]), tag.q.eq(f.k[:max(1, P.bit_length() - 1)] if P > 1 else 0),
        tag.bank.eq(f.bank),
        mac.valid.eq(f.fire | f.dummy if R > P else f.fire), mac.tag.eq(tag), mac.a.eq(ser.cur[:ELEM_BITS]),
        mac.b.eq(parts.rd_b.words.payload.data),
    ]
    m.d.comb += [red.fin_valid.eq(mac.fin_valid), red.fin_q.eq(mac.fin_q), red.fin_bank.eq(mac.fin_bank),
                 red.fin_last.eq(mac.fin_last), red.fin_data.eq(mac.fin_data)]
