"""Byte realignment of a line between two word-aligned address spaces."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl.engines.transfer.widths import UB_ADDR_BITS
from rtl.lib.fanout import select_copies
from rtl.lib.tile import LINE_BYTES_BITS

__all__ = ["Realigner"]


def _rotate(m, value, amounts, step, name):
    """``value`` (bytes) rotated towards higher lanes by ``amount * step`` bytes: lane ``l`` of the result is
    lane ``(l - amount * step) mod n`` of ``value``. ``amounts``: one amount (or a list of equal amounts,
    copies, each serving an equal share of the output lanes). One multiplexer level of
    ``2 ** len(amount)`` inputs per bit."""
    n = len(value) // 8
    if not isinstance(amounts, (list, tuple)):
        amounts = [amounts]
    per = -(-n // len(amounts))
    out = Signal(len(value), name=name)
    for l in range(n):
        amount = amounts[l // per]
        with m.Switch(amount):
            for a in range(1 << len(amount)):
                with m.Case(a):
                    m.d.comb += out.word_select(l, 8).eq(value.word_select((l - a * step) % n, 8))
    return out


class Realigner(wiring.Component):
    """Moves each line of ``length`` bytes from byte ``src_off`` of its first input word to byte
    ``dst_off`` of its first output word, for words of ``width`` bytes on both sides, and gives every
    output word its UB word address.

    A line takes ``ceil((src_off + length) / width)`` input words (none for a ``zero`` line: its bytes
    are zeros) and gives ``ceil((dst_off + length) / width)`` output words, each with a byte enable per
    byte (set exactly for the line's bytes), its index ``index`` within the line and its address
    ``addr`` (the line's ``addr`` plus the index). ``line_last`` marks the line's last word, ``last``
    the last word of a line marked ``last``. The next line starts in the cycle after the last input
    word of the previous one, so back-to-back lines lose no cycle unless the line needs one more output
    word than input words (then one cycle per such line). One-word lines always take one cycle.

    How: with ``s = (dst_off - src_off) mod width``, output lane ``l`` holds lane ``(l - s) mod width``
    of an input word (the current one for ``l >= s``, the previous one below), i.e. input lane ``j`` of
    the current word for ``j < width - s`` and of the previous word otherwise, rotated by ``s`` bytes.
    Three steps, each behind a register, so that no decision reaches a wide register and every select
    comes from a register of its own:

    - control (the cycle a word is taken): the active line's counters decide whether a word is taken
      and an output word formed; what the word needs (its lanes' choice between the current and the
      previous input word, the rotation, the byte enables, where its address comes from) is registered,
      decoded when the line was queued;
    - data (the next cycle): the current and previous input words (registers, or the caller's buffer)
      merged lane by lane and rotated by the multiple of 4 bytes in ``s`` (a 4:1 or 8:1 multiplexer per
      bit for 16 or 32-byte words), into the output register with the word's address (a running
      counter);
    - output: the rotation by ``s mod 4`` (4:1, one LUT level with the slice's multiplexer), so the
      output, which goes to the UB write port, is one multiplexer after a register.

    Ports
    -----
    line : stream in ``{src_off, dst_off, length, zero, addr, last}``; ``length`` must be non-zero. A
        line goes through an input register (``ready`` is "that register is free or moves on", from
        registers), where it is decoded into one of two slots (the active line and the next); moving
        to the next line flips a pointer.
    i : stream in of ``8 * width``-bit words. ``i.ready`` depends only on registers and ``enable`` (not
        on ``i.valid``). With ``buffered=True`` instead: ``i_avail`` in (a word can be taken now),
        ``i_take`` out (it is taken: from registers, ``enable`` and ``i_avail``), ``i_last`` /
        ``i_before`` in (the word taken last and the one before it, ``TAKE_TO_WORD`` = 1 cycle after the
        take: a :class:`rtl.lib.fifo.BeatBuffer`'s outputs).
    o : stream out ``{data, be, addr, index, line_last, last}``, always ready (no backpressure): a word
        is valid for exactly the cycle ``o.valid`` is high.
    enable : in (default 1), the control step may work in this cycle: while it is low no input word is
        taken and no word is formed (a zero line's, a flush word), so no word leaves ``LATENCY`` cycles
        later; lines still move into the slots. The caller whose port may refuse words holds the output
        in a queue and drives ``enable`` with its room (:class:`rtl.lib.output_queue.OutputQueue`); a
        word already formed leaves ``LATENCY`` cycles after it whatever ``enable`` does.

    Latency: ``LATENCY`` = 2: a word leaves two cycles after the input word that completes it is
    taken (for a ``zero`` line, after the cycle it is formed in). A line offered in cycle ``t`` takes
    its first input word (or forms its first zero word) in ``t + LINE_CYCLES`` = ``t + 2`` at the
    earliest (its input register, then its slot), so its first word leaves in ``t + 4``.
    """

    #: Cycles from taking an input word to the output word it completes: the data step's registers, then
    #: the output register.
    LATENCY = 2
    #: ``buffered``: cycles from ``i_take`` to the word taken on ``i_last`` (and the one before on
    #: ``i_before``), as a :class:`rtl.lib.fifo.BeatBuffer` gives them.
    TAKE_TO_WORD = 1
    #: Cycles from offering a line to the first cycle it can take an input word (or form a zero word):
    #: the input register, then its slot.
    LINE_CYCLES = 2
    #: Copies of the active slot's select that load the lane registers, each for a group of lanes.
    SLOT_SELECT_COPIES = 4
    #: Bits of the shift rotated after the output register (a 4:1 multiplexer per bit).
    FINE_ROTATE_BITS = 2

    def __init__(self, width, addr_bits=UB_ADDR_BITS, buffered=False):
        self._w = width
        self._buffered = buffered
        off = range(width)
        self.LineLayout = data.StructLayout({
            "src_off": off, "dst_off": off, "length": LINE_BYTES_BITS, "zero": 1, "addr": addr_bits, "last": 1,
        })
        self.OutLayout = data.StructLayout({
            "data": 8 * width, "be": width, "addr": addr_bits, "index": LINE_BYTES_BITS, "line_last": 1,
            "last": 1,
        })
        members = {
            "line": In(stream.Signature(self.LineLayout)),
            "o": Out(stream.Signature(self.OutLayout, always_ready=True)),
            "enable": In(1, init=1),
        }
        if buffered:
            members.update({"i_avail": In(1), "i_take": Out(1), "i_last": In(8 * width),
                            "i_before": In(8 * width)})
        else:
            members["i"] = In(stream.Signature(8 * width))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        sl = self._slots(m)
        c = self._control(m, sl)
        d = self._step_registers(m, sl, c)
        s1 = self._data(m, d)
        self._output(m, s1)
        return m

    def _slots(self, m):
        """The line's input register (``pre``: the line with the short adds done, the carries of its
        offsets into its words, so that the decode has one carry chain), then its decode (``Dec``) into
        one of two slots, each with its own counters (``State``), loaded when the line moves in."""
        W = self._w
        sh = W.bit_length() - 1
        lanes = range(W)
        addr_shape = self.LineLayout["addr"].shape

        # ---- the line's input register, then its decode into a slot ---------------------------------
        Dec = data.StructLayout({
            "n_in": LINE_BYTES_BITS + 1,     # input words
            "one_in": 1,                     # n_in == 1
            "lead": 1,                       # dst_off < src_off: the first input word gives no output
            "solo": 1,                       # lead with one input word: its output comes from it alone
            "flush": 1,                      # one more output word than the input words give
            "shift": range(W),               # (dst_off - src_off) mod W
            "cur": W,                        # input lanes j taken from the current word: j < W - shift
            "lo": W,                         # output lanes at or above dst_off (the first word's)
            "hi": W,                         # output lanes below the last word's end (all if it is W)
            "zero": 1, "addr": addr_shape, "last": 1,
        })
        # the input register holds the line with the short adds done (the carries of its offsets into
        # its words), so that the decode into the slot has one carry chain
        Pre = data.StructLayout({
            "q": LINE_BYTES_BITS - sh,       # whole words of the length
            "c_in": 2, "c_out": 2,           # ceil((src_off | dst_off + length mod W) / W): 0, 1 or 2
            "lead": 1, "shift": range(W), "end": range(W), "lo": range(W),
            "zero": 1, "addr": addr_shape, "last": 1,
        })
        pre = Signal(Pre, reset_less=True)
        pre_valid = Signal()
        slot = [Signal(Dec, name=f"slot{k}", reset_less=True) for k in range(2)]
        sv = [Signal(name=f"slot{k}_valid") for k in range(2)]
        rp, wp = Signal(), Signal()
        move = Signal()                      # the input register goes into slot ``wp`` now
        m.d.comb += [move.eq(pre_valid & ~Mux(wp, sv[1], sv[0])), self.line.ready.eq(~pre_valid | move)]
        lp = self.line.payload
        rl = lp.length[:sh]

        def extra(off):                      # ceil((off + rl) / W) - 0, 1 or 2
            a = off + rl
            return (a != 0) + (a > W)

        with m.If(self.line.ready):
            m.d.sync += [
                pre_valid.eq(self.line.valid),
                pre.q.eq(lp.length[sh:]), pre.c_in.eq(extra(lp.src_off)), pre.c_out.eq(extra(lp.dst_off)),
                pre.lead.eq(lp.dst_off < lp.src_off), pre.shift.eq(lp.dst_off - lp.src_off),
                pre.end.eq(lp.dst_off + rl), pre.lo.eq(lp.dst_off),
                pre.zero.eq(lp.zero), pre.addr.eq(lp.addr), pre.last.eq(lp.last),
            ]

        # words = whole words of the length + 0, 1 or 2 for its remainder and the offset
        p = pre
        dec = Signal(Dec)
        q, c_in, c_out, lead, shift, end = p.q, p.c_in, p.c_out, p.lead, p.shift, p.end
        one_in = ((q == 0) & (c_in == 1)) | ((q == 1) & (c_in == 0))
        solo = lead & one_in
        m.d.comb += [
            dec.n_in.eq(q + c_in), dec.one_in.eq(one_in), dec.lead.eq(lead), dec.solo.eq(solo),
            dec.flush.eq((c_out + lead > c_in) & ~solo),        # (n_out - n_in = c_out - c_in)
            dec.shift.eq(shift),
            # (each lane a compare of a register with a constant: no subtraction)
            dec.cur.eq(Cat(shift <= W - 1 - j for j in lanes)),
            dec.lo.eq(Cat(p.lo <= l for l in lanes)),
            dec.hi.eq(Cat((end == 0) | (end > l) for l in lanes)),
            dec.zero.eq(p.zero), dec.addr.eq(p.addr), dec.last.eq(p.last),
        ]
        # Two line slots, each with the decoded line and its own counters (set when the line moves in):
        # the active one (``rp``) works, the other waits, and moving to the next line only flips ``rp``
        # (nothing wide is loaded when a line ends).
        State = data.StructLayout({
            "in_left": LINE_BYTES_BITS + 1,  # input words not yet taken
            "in_last": 1,                    # the next input word is the line's last
            "first_in": 1,                   # no input word taken yet
            "first_out": 1,                  # no output word yet
            "flushing": 1,                   # the flush word is next
        })
        st = [Signal(State, name=f"state{k}") for k in range(2)]
        for k in range(2):
            with m.If(move & (wp == k)):
                m.d.sync += [slot[k].eq(dec), sv[k].eq(1),
                             st[k].in_left.eq(dec.n_in), st[k].in_last.eq(dec.one_in), st[k].first_in.eq(1),
                             st[k].first_out.eq(1), st[k].flushing.eq(0)]
        with m.If(move):
            m.d.sync += wp.eq(~wp)
        return SimpleNamespace(Dec=Dec, State=State, slot=slot, sv=sv, st=st, rp=rp, wp=wp, move=move, dec=dec)

    def _control(self, m, sl):
        """The active line (slot ``rp``): whether an input word is taken now (``take``, one LUT of
        registers: ``wants`` per slot, ``enable``), whether an output word is formed (``emit``), whether it
        is the line's last (``out_last``, ``line_done``); the slots' counters and the flip of ``rp``. While
        ``enable`` is low nothing is taken or formed and the counters hold."""
        slot, sv, st, rp, wp, move, dec = sl.slot, sl.sv, sl.st, sl.rp, sl.wp, sl.move, sl.dec
        # ---- control: the active line; take input words, decide the output word ----------------------
        cur = Signal(sl.Dec)                 # the line being worked on
        cs = Signal(sl.State)
        active = Signal()
        m.d.comb += [cur.eq(Mux(rp, slot[1], slot[0])), cs.eq(Mux(rp, st[1], st[0])),
                     active.eq(Mux(rp, sv[1], sv[0]))]
        flushing = Signal()
        m.d.comb += flushing.eq(cs.flushing & active)
        in_last, first_in, first_out = cs.in_last, cs.first_in, cs.first_out
        line_done = Signal()                 # the active line's last word is formed now

        # take an input word in this cycle (if one is there): active & ~flushing & ~cur.zero, kept per slot
        # in a register of its own (``wants``) beside the slot's state, so that the take (and the caller's
        # buffer pop behind it) is one LUT of registers (the flush flag through the slot select was
        # 11.6 ns, 3 LUTs, into the R beat buffer's pointers in `default` seed 3 at 23a2220)
        wants = [Signal(name=f"slot{k}_want") for k in range(2)]
        want = Signal()
        m.d.comb += want.eq(Mux(rp, wants[1], wants[0]))
        avail, take = Signal(), Signal()
        if self._buffered:
            m.d.comb += [avail.eq(self.i_avail), self.i_take.eq(take)]
        else:
            m.d.comb += [avail.eq(self.i.valid), self.i.ready.eq(want & self.enable)]
        # (``enable``, a register of the caller's, gates every step that leads to a word: the take, a
        # zero line's word, a flush word)
        en = self.enable
        m.d.comb += take.eq(want & avail & en)
        have = Signal()                      # an input word (or a zero word) is taken now
        m.d.comb += have.eq(active & ~flushing & (cur.zero | avail) & en)
        flush_now = Signal()                 # the flush word is formed now
        m.d.comb += flush_now.eq(flushing & en)
        emit = Signal()                      # an output word is formed now
        m.d.comb += emit.eq(flush_now | (have & (~(cur.lead & first_in) | cur.solo)))
        out_last = Signal()
        m.d.comb += out_last.eq(flushing | (in_last & ~cur.flush))
        m.d.comb += line_done.eq(flush_now | (have & in_last & ~cur.flush))
        for k in range(2):
            mine = rp == k
            with m.If(move & (wp == k)):            # (never in the cycle the same slot is active)
                m.d.sync += wants[k].eq(~dec.zero)
            with m.If(have & mine):
                m.d.sync += [st[k].in_left.eq(cs.in_left - 1), st[k].in_last.eq(cs.in_left == 2),
                             st[k].first_in.eq(0)]
                with m.If(in_last & cur.flush):
                    m.d.sync += [st[k].flushing.eq(1), wants[k].eq(0)]
            with m.If(emit & mine):
                m.d.sync += st[k].first_out.eq(0)
            with m.If(line_done & mine):
                m.d.sync += [sv[k].eq(0), st[k].flushing.eq(0), wants[k].eq(0)]
        with m.If(line_done):
            m.d.sync += rp.eq(~rp)
        return SimpleNamespace(cur=cur, take=take, emit=emit, first_out=first_out, out_last=out_last,
                               line_done=line_done)

    def _step_registers(self, m, sl, c):
        """The input words (the current one and the one before: registers loaded when a word is taken, or
        the caller's buffer), and what the data step needs of the word formed now, registered (no
        enable): per lane current / previous / zero and the byte enables (through ``SLOT_SELECT_COPIES``
        copies of ``rp``), the rotations' selects (``d_coarse`` copies, ``d_fine``), the address's source."""
        W = self._w
        sh = W.bit_length() - 1
        fine_bits = min(self.FINE_ROTATE_BITS, sh)   # the rotation after the output register: a 4:1 multiplexer
        addr_shape = self.LineLayout["addr"].shape
        slot, sv, st, cur = sl.slot, sl.sv, sl.st, c.cur
        # The input words: the current one and the one before (registers loaded when a word is taken,
        # or the caller's buffer), valid in the cycle after the take.
        if self._buffered:
            last, before = self.i_last, self.i_before
        else:
            last = Signal(8 * W, reset_less=True)
            before = Signal(8 * W, reset_less=True)
            with m.If(c.take):
                m.d.sync += [last.eq(self.i.payload), before.eq(last)]

        # What the word needs in the data step, registered (no enable): valid, the lanes taken from the
        # current word (all for a solo word, and for a flush word, whose "previous" word is the last one
        # taken), zeros, the rotation (copies: each drives a share of the lanes), byte enables, address.
        d_valid = Signal()
        # per lane: take the current word's byte, the previous word's, or (both low: a zero line) zero;
        # one register pair per lane, not one ``zero`` register driving every bit of the word
        d_cur = Signal(W, reset_less=True)
        d_prev = Signal(W, reset_less=True)
        d_be = Signal(W, reset_less=True)
        d_first = Signal(reset_less=True)
        d_addr = Signal(addr_shape, reset_less=True)
        d_line_last, d_last = Signal(reset_less=True), Signal(reset_less=True)
        # The lane registers take the line state through copies of ``rp``, one per group of lanes, each
        # selecting its own copy of the few shared flags (flushing, solo, zero, first / last word): one
        # select of the whole state drove all 3 W lane registers (11.7 ns in ``default`` seed 3 at
        # 283f27f). The copies toggle on their own outputs, so synthesis keeps them apart.
        NG = min(self.SLOT_SELECT_COPIES, W)
        rp_c = [Signal(name=f"rp_c{g}") for g in range(NG)]
        with m.If(c.line_done):
            m.d.sync += [r.eq(~r) for r in rp_c]
        for g in range(NG):
            cg, sg = Signal(sl.Dec, name=f"cur_g{g}"), Signal(sl.State, name=f"cs_g{g}")
            m.d.comb += [cg.eq(Mux(rp_c[g], slot[1], slot[0])), sg.eq(Mux(rp_c[g], st[1], st[0]))]
            flushing_g = sg.flushing & Mux(rp_c[g], sv[1], sv[0])
            out_last_g = flushing_g | (sg.in_last & ~cg.flush)
            for j in range(W * g // NG, W * (g + 1) // NG):
                m.d.sync += [
                    d_cur[j].eq((cg.cur[j] | flushing_g | cg.solo) & ~cg.zero),
                    d_prev[j].eq(~cg.cur[j] & ~(flushing_g | cg.solo | cg.zero)),
                    d_be[j].eq((~sg.first_out | cg.lo[j]) & (~out_last_g | cg.hi[j])),
                ]
        m.d.sync += [
            d_valid.eq(c.emit), d_first.eq(c.first_out), d_addr.eq(cur.addr),
            d_line_last.eq(c.out_last), d_last.eq(c.out_last & cur.last),
        ]
        coarse_sel = select_copies(m, cur.shift[fine_bits:], W // 4, "d_coarse") if sh > fine_bits else []
        fine_next = Signal(max(1, fine_bits))
        m.d.comb += fine_next.eq(cur.shift[:fine_bits] if fine_bits else 0)
        d_fine = Signal(max(1, fine_bits), reset_less=True)
        m.d.sync += d_fine.eq(fine_next)
        return SimpleNamespace(last=last, before=before, d_valid=d_valid, d_cur=d_cur, d_prev=d_prev, d_be=d_be,
                               d_first=d_first, d_addr=d_addr, d_line_last=d_line_last, d_last=d_last,
                               coarse_sel=coarse_sel, d_fine=d_fine, fine_bits=fine_bits)

    def _data(self, m, d):
        """The data step: the current and previous words merged lane by lane, rotated by the multiple of
        ``2 ** FINE_ROTATE_BITS`` bytes in the shift, into the output register (``s1``) with the word's
        address and index (running counters from the line's first word)."""
        W = self._w
        addr_shape = self.LineLayout["addr"].shape
        fine_bits = d.fine_bits
        # ---- data: merge, the coarse rotation, into the output register --------------------------------
        merged = Cat((d.d_cur[j].replicate(8) & d.last.word_select(j, 8))
                     | (d.d_prev[j].replicate(8) & d.before.word_select(j, 8)) for j in range(W))
        coarse = _rotate(m, merged, d.coarse_sel, 1 << fine_bits, "coarse") if d.coarse_sel else merged
        # the word's address and index: the line's first, or one more than the line's previous word
        a_next = Signal(addr_shape)          # the next word's address within the active line
        i_next = Signal(LINE_BYTES_BITS)
        w_addr = Signal(addr_shape)
        w_index = Signal(LINE_BYTES_BITS)
        m.d.comb += [w_addr.eq(Mux(d.d_first, d.d_addr, a_next)), w_index.eq(Mux(d.d_first, 0, i_next))]
        with m.If(d.d_valid):
            m.d.sync += [a_next.eq(w_addr + 1), i_next.eq(w_index + 1)]

        s1_valid = Signal()
        s1_word = Signal(8 * W, reset_less=True)
        s1_be = Signal(W, reset_less=True)
        s1_meta = Signal(data.StructLayout({"addr": addr_shape, "index": LINE_BYTES_BITS,
                                            "line_last": 1, "last": 1}), reset_less=True)
        m.d.sync += [
            s1_valid.eq(d.d_valid), s1_word.eq(coarse), s1_be.eq(d.d_be),
            s1_meta.addr.eq(w_addr), s1_meta.index.eq(w_index), s1_meta.line_last.eq(d.d_line_last),
            s1_meta.last.eq(d.d_last),
        ]
        fine_sel = select_copies(m, d.d_fine, W // 8, "s1_fine") if fine_bits else []
        return SimpleNamespace(valid=s1_valid, word=s1_word, be=s1_be, meta=s1_meta, fine_sel=fine_sel,
                               fine_bits=fine_bits)

    def _output(self, m, s1):
        """The output: the rotation by the shift's low ``FINE_ROTATE_BITS`` bits (a 4:1 multiplexer per
        bit, one LUT level with the slice's multiplexer) after the output register."""
        # ---- output: the fine rotation ----------------------------------------------------------------
        out = _rotate(m, s1.word, s1.fine_sel, 1, "fine") if s1.fine_bits else s1.word
        m.d.comb += [
            self.o.valid.eq(s1.valid),
            self.o.payload.data.eq(out), self.o.payload.be.eq(s1.be),
            self.o.payload.addr.eq(s1.meta.addr), self.o.payload.index.eq(s1.meta.index),
            self.o.payload.line_last.eq(s1.meta.line_last), self.o.payload.last.eq(s1.meta.last),
        ]
