"""The elementwise engine's instructions in flight when it takes the next one before the last is done
(``overlap=True``, the concurrent unit: issue #33, item 5): each instruction's flags for the combiner, the
pattern builder and the lanes, held from its setup until the combiner has taken its last word
(:func:`overlap_context`), and when the engine takes the next command (:func:`release_and_empty`)."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data

from rtl.engines.done_order import empty_done_in_order
from rtl.engines.elementwise.lanes import LaneOp
from rtl.isa import DType
from rtl.lib.tile import ESZ_BITS

__all__ = ["ContextLayout", "overlap_context", "release_and_empty", "tag_b_lines", "pattern_context"]

#: What the stages behind the walker need of an instruction: TROWEXPAND* (``trow``) and where its pattern
#: goes (``p_is_a``: the lanes' ``a``, ``p_is_b``: their ``b``), the pattern builder's mode and element size,
#: the lanes' type and op.
ContextLayout = data.StructLayout({"trow": 1, "p_is_a": 1, "p_is_b": 1, "mode1": 1, "esz": ESZ_BITS,
                                   "dtype": DType, "op": LaneOp, "par": 1})


def overlap_context(m, d, s, push, pop, par):
    """Two context registers: ``cur``, the instruction the combiner is on, and ``nxt``, the one set up after
    it (the setup's walker has finished with ``cur``'s instruction, so the engine took the next command).
    ``push``: the setup's PARAMS cycle (the walker's ``start``: :func:`rtl.engines.elementwise.setup.decode`'s
    registers ``d`` and the DECODE registers of ``s`` hold the new instruction); ``pop``: the combiner takes
    the last word of ``cur``'s instruction; ``par``: the pushed instruction's parity, which its lines for
    reader B carry (the engine's ``b_parity`` after the push). A push never finds both full: the engine
    releases the command only while ``nxt`` is empty (``full``).

    Returns the combiner's flags (as the serial engine's setup names them), ``dtype`` / ``op`` for the
    lanes (the engine registers them with the operand registers), ``full`` (``nxt`` holds an instruction),
    and for the pattern builder's own context (:func:`pattern_context`) the registers ``cur``, ``nxt``,
    ``nxt_v`` and ``change`` (``cur`` takes another instruction at this edge). The parities keep the two
    instructions' words in reader B apart: before them a TROWEXPAND* released the engine only once its last
    word had reached the lanes, so that no later word could reach reader B ahead of the pattern builder."""
    new = Signal(ContextLayout)
    m.d.comb += [new.trow.eq(d.trow), new.p_is_a.eq(s.p_is_a), new.p_is_b.eq(s.p_is_b), new.mode1.eq(s.other_cm),
                 new.esz.eq(d.esz), new.dtype.eq(d.dtype), new.op.eq(d.op), new.par.eq(par)]
    cur, nxt = Signal(ContextLayout, name="ctx_cur"), Signal(ContextLayout, name="ctx_nxt")
    cur_v, nxt_v = Signal(name="ctx_cur_valid"), Signal(name="ctx_nxt_valid")
    with m.If(~cur_v | pop):
        with m.If(nxt_v):
            m.d.sync += [cur.eq(nxt), cur_v.eq(1), nxt.eq(new), nxt_v.eq(push)]
        with m.Elif(push):
            m.d.sync += [cur.eq(new), cur_v.eq(1)]
        with m.Else():
            m.d.sync += cur_v.eq(0)
    with m.Elif(push):
        m.d.sync += [nxt.eq(new), nxt_v.eq(1)]
    change = Signal(name="ctx_change")           # ``cur`` takes another instruction at this edge
    m.d.comb += change.eq((~cur_v | pop) & (nxt_v | push))
    return SimpleNamespace(trow=cur.trow, p_is_a=cur.p_is_a, p_is_b=cur.p_is_b, c_trow=cur.trow,
                           c_p_is_a=cur.p_is_a, dtype=cur.dtype, op=cur.op, full=nxt_v,
                           cur=cur, nxt=nxt, nxt_v=nxt_v, change=change)


def release_and_empty(m, engine, d, s, ctx, last_taken, empty_done, max_in_flight):
    """The engine's ``release`` and an empty region's ``done`` (``empty_done``, a register) with overlap.

    Dones come in start order: an empty region's waits until no older instruction is in flight
    (``outstanding``: started with words, last word not yet taken by the writer: ``last_taken``). The engine
    takes the next command while its setup is idle or its walker runs (RUN without a command ``pending``:
    the setup has finished with the held command; the next one's DECODE waits for the walker's last
    segment), when the instruction ahead of the combiner's is not yet set up (``ctx.full``), no empty
    region waits and fewer than ``max_in_flight`` are in flight (whatever the combiner is on: reader B's
    words carry their instruction's parity, :func:`overlap_context`). ``engine``: its ``start`` and ``release`` ports; ``d``: the decodes
    (``empty``); ``s``: the setup (its state machine, ``pending``); ``ctx``: :func:`overlap_context`'s."""
    start = engine.start
    order = empty_done_in_order(m, start, d.empty, last_taken, empty_done, max_in_flight)
    outstanding, waiting = order.outstanding, order.waiting
    setup_free = s.fsm.ongoing("IDLE") | (s.fsm.ongoing("RUN") & ~s.pending)
    m.d.comb += engine.release.eq(setup_free & ~start & ~ctx.full & ~waiting & (outstanding < max_in_flight))


def tag_b_lines(m, start, pre_en, pre_line, b_line, q_b, rd_b, b_par):
    """Reader B's line queue ``q_b`` written with each line's instruction parity (``rd_b`` built with
    ``tag_bits=1``): ``b_par`` flips at the walker's ``start``, the cycle that queues the new instruction's
    first expanded line (``pre_en``: ``pre_line``, so it takes the new parity); its segments' lines
    (``b_line``) follow with it."""
    entry = Signal(rd_b.LineLayout, name="q_b_entry")
    m.d.comb += [entry.eq(Mux(pre_en, pre_line, b_line)), entry.tag.eq(Mux(pre_en, ~b_par, b_par)),
                 q_b.w_data.eq(entry)]
    with m.If(start):
        m.d.sync += b_par.eq(~b_par)


def pattern_context(m, ctx, rd_b, pat_busy):
    """The pattern builder's own instruction, so that it builds the next TROWEXPAND*'s first patterns while
    the combiner is still on the current instruction's last rows (the patterns queue up behind the current
    one's; the combiner takes them in order). The builder is on the combiner's instruction (``ctx.cur``) or,
    once reader B's next word is of the next one's parity and the next one is a TROWEXPAND* (``ctx.nxt``),
    on that one (``pb_next``, a register: it moves on when it has no scalar of the current one left,
    ``pat_busy``: its mode-1 word). A change of ``ctx.cur`` while the builder was on it (the pop of an
    instruction whose successor's words the builder had not reached) changes its mode and size as the serial
    engine's next instruction does: it takes no word in the cycle after (``settling``). Returns ``mode1``,
    ``esz`` (the builder's inputs), ``mine`` (reader B's word is the builder's to take, not the combiner's)
    and ``settling``.

    Before the tenth session the builder followed the combiner: each later TROWEXPAND* paid its first
    pattern (the line's words and ``PatternBuilder.LATENCY``) after the previous one's last row."""
    cur, nxt = ctx.cur, ctx.nxt
    pb_next = Signal(name="pattern_on_next")
    settling = Signal(name="pattern_settling")
    tag = rd_b.words.payload.tag
    move = Signal(name="pattern_move")
    m.d.comb += move.eq(~pb_next & ctx.nxt_v & nxt.trow & rd_b.words.valid & (tag == nxt.par) & ~pat_busy
                        & ~ctx.change)
    # (a move needs no settling cycle: the builder is idle then, its last word taken a cycle or more before
    # and its last scalar emitted, ``pat_busy``; what it registers of the mode and size, ``m1`` and the
    # ``esz`` copies, serves the writes and emits of words taken from the cycle after the move on, which are
    # the new instruction's. The pop keeps the serial engine's rule.)
    m.d.sync += settling.eq(ctx.change & ~pb_next)
    with m.If(ctx.change):
        m.d.sync += pb_next.eq(0)                # (on the next one: it is the combiner's now)
    with m.Elif(move):
        m.d.sync += pb_next.eq(1)
    mode1, esz, par, trow = Signal(name="pattern_mode1"), Signal.like(cur.esz, name="pattern_esz"), Signal(), Signal()
    m.d.comb += [mode1.eq(Mux(pb_next, nxt.mode1, cur.mode1)), esz.eq(Mux(pb_next, nxt.esz, cur.esz)),
                 par.eq(Mux(pb_next, nxt.par, cur.par)), trow.eq(Mux(pb_next, nxt.trow, cur.trow))]
    mine = Signal(name="pattern_mine")
    m.d.comb += mine.eq(trow & (tag == par))
    return SimpleNamespace(mode1=mode1, esz=esz, mine=mine, settling=settling)
