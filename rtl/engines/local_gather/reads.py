"""The LOCAL_GATHER engine's reads: the block's index tables (two LUT-RAM banks), the D stage that adds a
chunk's scaled index to its source pointer and registers the UB read addresses
(:func:`read_addresses`), and stage 1's input registers, which capture the read windows and write the
index reads' words into the tables (:func:`input_registers`)."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import memory

from rtl.engines.local_gather.geometry import GROUP, INDEX_BITS, INDEX_BYTES_LOG2
from rtl.lib.contract import require
from rtl.ub.buffer import UnifiedBuffer, read_window

__all__ = ["read_addresses", "input_registers"]


def read_addresses(m, eng, sz, geo, pl):
    """D: the chunks' scaled indices added; read addresses into registers. The 16 scaled indices of the
    block: two banks (even and odd ``k``) of LUT RAM (asynchronous reads, one write each per cycle), one
    copy per read (piece A, piece B). In an index slot the addend is 0 on port 0 and the index stride on
    port 1. The sums' word addresses drive ``ub_rd`` from registers (``READ_STAGE``), their byte offsets
    go to that stage's ``offA`` / ``offB``. Returns the namespace of the ``banks`` and the address
    registers ``raddr0`` / ``raddr1`` (``None`` with one port)."""
    W, sh, two, UA, WA, IW = sz.W, sz.sh, sz.two, sz.UA, sz.WA, sz.IW
    d, st = pl.d, pl.st
    d_kA, d_kB, d_srpA, d_srpB = pl.d_kA, pl.d_kB, pl.d_srpA, pl.d_srpB
    rd0 = eng.ub_rd[0]
    rd1 = eng.ub_rd[1] if two else None
    ready = eng.STAGE_1 + eng.INDEX_WRITE - eng.D_STAGE
    require(eng.INDEX_MIN_CYCLES >= ready,
            f"a block's first piece slot reads its first index from the bank in its D stage: it may follow "
            f"the index read by INDEX_MIN_CYCLES = {eng.INDEX_MIN_CYCLES} cycles only if the index is there, "
            f"STAGE_1 + INDEX_WRITE - D_STAGE = {ready} cycles after the read")
    banks = []
    for name in ("even", "odd"):
        mem = memory.Memory(shape=IW, depth=GROUP // 2, init=[])
        m.submodules[f"index_{name}"] = mem
        banks.append(mem)

    esz_d = Signal(len(geo.g_esz), name="esz_d", reset_less=True)     # a copy near the adders
    m.d.sync += esz_d.eq(geo.g_esz)

    def index_of(k, tag, in_index_slot):
        """The scaled index of chunk ``k``, or ``in_index_slot`` in an index slot (the addend of an index
        read's address: 0 on port 0, the index stride on port 1)."""
        ports = [b.read_port(domain="comb") for b in banks]
        out = Signal(UA, name=f"index_{tag}")
        for rp in ports:
            m.d.comb += rp.addr.eq(k[1:])
        m.d.comb += out.eq(Mux(d["cap"], in_index_slot, Mux(k[0], ports[1].data, ports[0].data) << esz_d))
        return out
    sumA, sumB = Signal(UA), Signal(UA)
    m.d.comb += sumA.eq(d_srpA + index_of(d_kA, "a", 0))
    if two:
        m.d.comb += sumB.eq(d_srpB + index_of(d_kB, "b", geo.g_idx_stride))
    addrA, addrB = sumA, (sumB if two else d_srpB)
    raddr0, ren0 = Signal(WA, reset_less=True), Signal()
    m.d.sync += [raddr0.eq(addrA[sh:]), ren0.eq(d["cap"] | d["pc"]), st[eng.READ_STAGE]["offA"].eq(addrA[:sh])]
    m.d.comb += [rd0.addr.eq(raddr0), rd0.en.eq(ren0)]
    raddr1 = None
    if two:
        raddr1, ren1 = Signal(WA, reset_less=True), Signal()
        m.d.sync += [raddr1.eq(addrB[sh:]), ren1.eq(d["cap"] | (d["pc"] & d["pair"])),
                     st[eng.READ_STAGE]["offB"].eq(addrB[:sh])]
        m.d.comb += [rd1.addr.eq(raddr1), rd1.en.eq(ren1)]
    return SimpleNamespace(banks=banks, raddr0=raddr0, raddr1=raddr1)


def input_registers(m, eng, sz, pl, rd):
    """Stage 1: the input registers and the index capture. The UB's words pass the engine's input
    register first: they come from across the die, and stage 1's selects (the index half-word, the
    merge and the coarse rotation) are the engine's registers (10.3-10.4 ns, 90% routing, in `default`
    seed 1 at 32c38fc and at 6c333bc with HeAP, when the rotation read the port directly). The registers
    load only when this engine's reads arrive (``IN_EN_COPIES`` copies of that flag per port): the ports
    are shared, and other engines' reads must not move the shifters behind them. (Ordered from the UB's
    even / odd bank words, with copies of each read's parity of the engine's own:
    :func:`rtl.ub.buffer.read_window`.) An index slot's window holds its index half-word, written into
    its bank (``r`` even: index ``r`` from port 0, ``r + 1`` from port 1). Returns the namespace of the
    windows' words: ``d0`` / ``n0`` (port 0's word at the address and the next one), ``d1`` / ``n1``."""
    W, two, IW = sz.W, sz.two, sz.IW
    st = pl.st
    s1 = st[eng.STAGE_1]
    # read_window wants "this engine's read is here" READ_LATENCY - 1 cycles after the read's en
    # (READ_STAGE); it registers it, so that the window register loads as the port holds the words
    arrive_stage = eng.READ_STAGE + UnifiedBuffer.READ_LATENCY - 1
    require(arrive_stage + 1 + eng.INPUT_REGISTER == eng.STAGE_1,
            f"read_window's register holds a read's words at stage {arrive_stage + 1 + eng.INPUT_REGISTER} "
            f"(READ_STAGE + READ_LATENCY + INPUT_REGISTER), stage 1 reads them at STAGE_1 = {eng.STAGE_1}")
    arrive = st[arrive_stage]["cap"] | st[arrive_stage]["pc"]      # registered in read_window

    def inreg(port, raddr, name):   # (the read's parity in stage 2, the read)
        w = read_window(m, port, raddr[0], arrive, eng.IN_EN_COPIES, name)
        return w[:8 * W], w[8 * W:]
    d0, n0 = inreg(eng.ub_rd[0], rd.raddr0, "in0")
    d1, n1 = inreg(eng.ub_rd[1], rd.raddr1, "in1") if two else (C(0, 8 * W), C(0, 8 * W))

    def scaled(word, off):
        return word.word_select(off[INDEX_BYTES_LOG2:], INDEX_BITS)[:IW]
    wp_even, wp_odd = rd.banks[0].write_port(), rd.banks[1].write_port()
    m.d.comb += [wp_even.addr.eq(s1["r"][1:]), wp_odd.addr.eq(s1["r"][1:]),
                 wp_even.data.eq(scaled(d0, s1["offA"]))]
    if two:             # r is even: index r from port 0, r + 1 from port 1
        m.d.comb += [wp_odd.data.eq(scaled(d1, s1["offB"])), wp_even.en.eq(s1["cap"]), wp_odd.en.eq(s1["cap"])]
    else:
        m.d.comb += [wp_odd.data.eq(wp_even.data),
                     wp_even.en.eq(s1["cap"] & ~s1["r"][0]), wp_odd.en.eq(s1["cap"] & s1["r"][0])]
    return SimpleNamespace(d0=d0, n0=n0, d1=d1, n1=n1)
