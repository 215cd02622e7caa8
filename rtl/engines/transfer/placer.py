"""MGATHER element mode: a run's elements from one bus beat placed into one UB word.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.transfer.mgather import GatherLine
from rtl.engines.transfer.widths import ESZ_BITS
from rtl.lib.fanout import select_copies

__all__ = ["ElementPlacer"]


class ElementPlacer(wiring.Component):
    """Element mode's data path: places a run's elements from one bus beat into one UB word.

    Run (:func:`GatherLine`): index lane ``k`` of the run's ``mask`` holds an element at byte ``offs[k]``
    of the beat, which goes to UB bytes ``delta + k * size`` (mod ``W``, ``size = 2 ** esz``) on of the
    word ``ub_addr / W``; ``be`` covers exactly those bytes; a ``zero`` run writes zeros.

    Three steps, each behind a register, so that every select comes from a register next to its
    multiplexers and the crossbar is one multiplexer deep:

    - the run and the element size, registered in the cycle it is offered (``fire``; the size in
      copies, each serving a share of the bytes);
    - the cycle after, with the beat: for each index lane, the aligned 4-byte word of the beat holding its
      element (a ``W / 4``:1 multiplexer per bit; zeros for a zero run) and which of its bytes make the
      element replicated to 4 bytes (for ``size`` 1 or 2); for each UB byte the index lane it takes its
      byte from and whether it is written (from ``delta``, ``esz``, ``mask``);
    - each lane's replicated element (a 4:1 byte multiplexer), registered; then each UB byte picks its
      lane (a ``W / 4``:1 multiplexer per bit) on the way out.

    Ports: ``fire``, ``line`` (:func:`GatherLine`), ``esz`` (log2 element bytes) in; ``beat`` in,
    ``BEAT_DELAY`` = 1 cycle after ``fire`` (a :class:`rtl.lib.fifo.BeatBuffer`'s ``last``); ``valid``,
    ``addr`` (UB word), ``data``, ``be``, ``last`` out, ``LATENCY`` = 3 cycles after ``fire`` (``data`` one
    multiplexer after registers, the others registers).
    """

    #: Cycles from ``fire`` to the word on the outputs: the run's register, step A's, step B's.
    LATENCY = 3
    #: Cycles from ``fire`` to the beat on ``beat`` (step A takes it with the registered run).
    BEAT_DELAY = 1

    def __init__(self, config):
        self._config = config
        W = config.ub_word_bytes
        super().__init__({
            "fire": In(1), "line": In(GatherLine(config)), "esz": In(ESZ_BITS), "beat": In(8 * W),
            "valid": Out(1), "addr": Out(range(config.ub_words)), "data": Out(8 * W), "be": Out(W),
            "last": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        W = self._config.ub_word_bytes
        sh = W.bit_length() - 1
        L = W // 4
        Lb = L.bit_length() - 1

        # ---- the run, registered ------------------------------------------------------------------------
        line = Signal(GatherLine(self._config), reset_less=True)
        r_valid = Signal()
        m.d.sync += [line.eq(self.line), r_valid.eq(self.fire)]
        esz_c = select_copies(m, self.esz, 4, "esz")            # one per quarter of the bytes
        delta_c = select_copies(m, self.line.delta, 4, "delta")

        # ---- step A, with the beat -------------------------------------------------------------------
        lane_word = [Signal(32, name=f"lw{k}", reset_less=True) for k in range(L)]
        lane_sel = [[Signal(2, name=f"ls{k}_{b}", reset_less=True) for b in range(4)] for k in range(L)]
        src = [Signal(max(1, Lb), name=f"src{j}", reset_less=True) for j in range(W)]   # lane of UB byte j
        be = Signal(W, reset_less=True)
        last, valid = Signal(reset_less=True), Signal()
        addr = Signal(len(self.addr), reset_less=True)
        for k in range(L):
            # the aligned 4-byte word holding the element (zeros for a zero run), and for each of its 4
            # bytes in the replicated element (size 1: b b b b, size 2: b0 b1 b0 b1) the byte it is
            so = line.offs[k][:2]
            esz = esz_c[k * 4 // L]
            m.d.sync += lane_word[k].eq(Mux(line.zero, 0, self.beat.word_select(line.offs[k][2:], 32)))
            for b in range(4):
                with m.Switch(esz):
                    with m.Case(0):
                        m.d.sync += lane_sel[k][b].eq(so)
                    with m.Case(1):
                        m.d.sync += lane_sel[k][b].eq(Cat(C(b & 1, 1), so[1]))
                    with m.Default():
                        m.d.sync += lane_sel[k][b].eq(b)
        for j in range(W):
            pos = Signal(sh, name=f"pos{j}")
            m.d.comb += pos.eq(j - delta_c[j * 4 // W])
            e = Signal(sh, name=f"e{j}")
            m.d.comb += e.eq(pos >> esz_c[j * 4 // W])
            inside = (e >> Lb) == 0 if Lb < sh else C(1, 1)
            m.d.sync += [src[j].eq(e[:max(1, Lb)]), be[j].eq(inside & line.mask.bit_select(e[:max(1, Lb)], 1))]
        m.d.sync += [last.eq(line.last), valid.eq(r_valid), addr.eq(line.ub_addr[sh:])]

        # ---- step B: each lane's element bytes, registered; each UB byte picks its lane on the way out ----
        rep = [[Signal(8, name=f"rep{k}_{b}", reset_less=True) for b in range(4)] for k in range(L)]
        for k in range(L):
            for b in range(4):
                m.d.sync += rep[k][b].eq(lane_word[k].word_select(lane_sel[k][b], 8))
        b_src = [Signal.like(x, name=f"b_src{j}") for j, x in enumerate(src)]
        o_valid = Signal()
        o_addr, o_be, o_last = (Signal.like(x, name=f"o_{n}", reset_less=True) for x, n in
                                ((addr, "addr"), (be, "be"), (last, "last")))
        m.d.sync += [o_valid.eq(valid), o_addr.eq(addr), o_be.eq(be), o_last.eq(last),
                     *[x.eq(y) for x, y in zip(b_src, src)]]
        data_out = Cat(Array(rep[k][j % 4] for k in range(L))[b_src[j]] for j in range(W))
        m.d.comb += [self.valid.eq(o_valid), self.addr.eq(o_addr), self.data.eq(data_out), self.be.eq(o_be),
                     self.last.eq(o_last)]
        return m
