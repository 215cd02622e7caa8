"""The GEMV engine's port 1 side (:class:`rtl.engines.gemv.engine.GemvEngine`, built into its module):
the (A line, init line) pairs into port 1's reader and its words dispatched (:func:`port1_dispatch`), the
init assembler (:func:`init_assembler`), and the A serializer that gives the MAC array ``A[0, k]``, one
element per product (:func:`a_serializer`, :func:`advance_a`)."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import fifo

from rtl.engines.gemv.mac import SUM_BITS
from rtl.engines.gemv.operands import ESZ_MAX
from rtl.lib.contract import require
from rtl.lib.fanout import variant_copies

__all__ = ["port1_dispatch", "init_assembler", "a_serializer", "advance_a", "PORT1_LINES"]

#: With overlap: port 1's lines issued whose last word has not come yet, at most (the FIFO that says what
#: follows each; a line waits for room there). Port 1's reader has at most its buffer's depth of words read
#: and not taken (its credits), each line at least one, beside the line it walks and the one it holds next,
#: so a FIFO of its depth + 2 never holds a line back.
PORT1_LINES = 16


def port1_dispatch(m, parts, setup, walk):
    """Port 1's lines and words: the A line, then (TGEMV_ACC / TGEMV_BIAS) the init line of each pair in
    the pair FIFO into the reader; its words go to the A serializer or (``out_i``) the init assembler,
    in the same order. Returns ``in_i``, ``out_i`` (loaded at ``start``), ``word`` (the reader's word)
    and ``a_take`` / ``i_take`` (a word taken by either, driven by them)."""
    rd_a, prm, q_p = parts.rd_a, setup.prm, walk.q_p
    # port 1: A line then (ACC / BIAS) the init line of each pair; words dispatched in the same order
    head = Signal(walk.Pair)
    m.d.comb += head.eq(q_p.r_data)
    per_line = "h" in walk.Pair.members         # overlap: each pair carries its instruction's ``has_init``
    has_init = head.h if per_line else prm.has_init
    in_i = Signal()                     # the next line to issue is the pair's init line
    issue_ok = q_p.r_rdy
    if per_line:
        # what follows each line issued, in issue order: its pair's init line (an A line with an init) or
        # not; taken at the line's last word, when ``prm`` may already be a later instruction's
        require(PORT1_LINES >= rd_a._depth + 2,
                f"GemvEngine: PORT1_LINES ({PORT1_LINES}) covers port 1's lines in flight (its reader's depth "
                f"{rd_a._depth} + 2), else the FIFO of what follows each line holds lines back")
        q_f = fifo.SyncFIFO(width=1, depth=PORT1_LINES)
        m.submodules.q_follow = q_f
        issue_ok = q_p.r_rdy & q_f.w_rdy
        m.d.comb += [q_f.w_data.eq(~in_i & has_init), q_f.w_en.eq(rd_a.lines.valid & rd_a.lines.ready)]
    m.d.comb += [rd_a.lines.valid.eq(issue_ok), rd_a.lines.payload.eq(Mux(in_i, head.i, head.a))]
    with m.If(rd_a.lines.valid & rd_a.lines.ready):
        m.d.comb += q_p.r_en.eq(in_i | ~has_init)
        m.d.sync += in_i.eq(~in_i & has_init)
    out_i = Signal()                    # the words on rd_a are the init line's
    a_take, i_take = Signal(), Signal()
    word = rd_a.words.payload
    with m.If(rd_a.words.valid & rd_a.words.ready & word.last):
        if per_line:
            m.d.comb += q_f.r_en.eq(1)
            m.d.sync += out_i.eq(q_f.r_data)
        else:
            m.d.sync += out_i.eq(~out_i & prm.has_init)
    return SimpleNamespace(in_i=in_i, out_i=out_i, a_take=a_take, i_take=i_take, word=word)


def init_assembler(m, parts, port1, depth):
    """The init assembler: an init line's words (``dst_off`` 0) into one vector of ``lanes x SUM_BITS``,
    then into the init FIFO (``depth`` vectors) that the reducer reads; ``ipend``: the vector is complete
    and waits for room there. Returns ``ipend``."""
    cfg, rd_a, red = parts.cfg, parts.rd_a, parts.red
    W, HL = cfg.ub_word_bytes, cfg.gemv_lanes
    word, i_take = port1.word, port1.i_take
    # init assembler: an init line's words (dst_off 0) into one vector of lanes x 32 bits, then into the
    # init FIFO (``ipend``: the vector is complete and waits for room there)
    q_init = fifo.SyncFIFO(width=SUM_BITS * HL, depth=depth)
    m.submodules.q_init = q_init
    NWI = -(-(SUM_BITS // 8) * HL // W)     # words of an init line
    ivec = Signal(SUM_BITS * HL, reset_less=True)
    iw = Signal(range(NWI + 1))
    ipend = Signal()
    m.d.comb += i_take.eq(rd_a.words.valid & port1.out_i & ~ipend)
    with m.If(i_take):
        if NWI == 1:
            m.d.sync += ivec.eq(word.data[:SUM_BITS * HL])
        else:
            m.d.sync += [ivec.word_select(iw, 8 * W).eq(word.data), iw.eq(Mux(word.last, 0, iw + 1))]
        with m.If(word.last):
            m.d.sync += ipend.eq(1)
    with m.Elif(q_init.w_rdy):
        m.d.sync += ipend.eq(0)
    m.d.comb += [q_init.w_data.eq(ivec), q_init.w_en.eq(ipend)]
    m.d.comb += [red.init.valid.eq(q_init.r_rdy), red.init.payload.eq(q_init.r_data),
                 q_init.r_en.eq(red.init.ready)]
    return ipend


def a_serializer(m, parts, setup, port1, ipend, G):
    """The A serializer's registers: ``cur`` (the current A word, its next element in the low bits),
    ``nxt`` (the following word), their flags in ``G`` copies each (fan-out) with the flags' next values
    to drive (``*_n``), the elements used ``e``; and the reader's word taken into ``nxt``
    (``a_take``) or by the init assembler, its ``ready`` from registers only. Returns them."""
    W, rd_a, prm = parts.cfg.ub_word_bytes, parts.rd_a, setup.prm
    out_i, a_take = port1.out_i, port1.a_take
    # A serializer: ``cur`` holds the current A word, its next element in the low bits (it shifts by
    # one element per product: no element select); ``nxt`` the following word, so that taking a word
    # from the reader depends on registers only, never on ``fire``. Every word goes through ``nxt``:
    # the reader's head is LUT RAM read asynchronously, too slow to reach ``cur``'s multiplexers
    # in the same cycle (10.5 ns in default, seed 2, at 3d1e861). (W >= 16: a word holds >= 4
    # elements, so a word just loaded never holds its last element.) ``cur`` is driven in G byte
    # groups, each from its own copies of the registers its enable and select come from (fan-out).
    starting = Signal()                 # IDLE and start
    cur = Signal(8 * W, reset_less=True)
    nxt = Signal(8 * W, reset_less=True)
    cur_valid_n, nxt_valid_n, last_e_n, last_k_n, ok_n = Signal(), Signal(), Signal(), Signal(), Signal()
    cur_valid = variant_copies(m, "cur_valid", cur_valid_n, G)
    nxt_valid = variant_copies(m, "nxt_valid", nxt_valid_n, G)
    last_e = variant_copies(m, "last_e", last_e_n, G)      # the element in ``cur``'s low bits is its last
    last_k = variant_copies(m, "last_k", last_k_n, G)      # k == K - 1 (below)
    ok = variant_copies(m, "ok", ok_n, G)                  # a product may fire (below)
    # constant during the instruction; registered copies, so with overlap from the value ``prm.esz`` takes
    # next (the fire side's copy changes between instructions and the first product may come a cycle later)
    esz_g = variant_copies(m, "esz", setup.esz_next, G)
    e = Signal(range(W), reset_less=True)           # elements of ``cur`` used
    # the reader's ready comes from registers only (a wide buffer hangs on it)
    a_room = Signal()
    m.d.comb += [a_room.eq(~(cur_valid[0] & nxt_valid[0])), a_take.eq(rd_a.words.valid & ~out_i & a_room),
                 rd_a.words.ready.eq(Mux(out_i, ~ipend, a_room))]
    return SimpleNamespace(G=G, gb=8 * W // G, starting=starting, cur=cur, nxt=nxt, cur_valid_n=cur_valid_n,
                           nxt_valid_n=nxt_valid_n, last_e_n=last_e_n, last_k_n=last_k_n, ok_n=ok_n,
                           cur_valid=cur_valid, nxt_valid=nxt_valid, last_e=last_e, last_k=last_k, ok=ok,
                           esz_g=esz_g, e=e)


def advance_a(m, parts, setup, port1, ser, fire):
    """The A serializer's next state: ``cur`` moves on when it is empty or with every product (``fire``
    reaches it as a clock enable only), per group of bytes: to the next word (``nxt``, or the reader's
    word when both are empty) after its last element or the block's last product, else by one element;
    a word from the reader goes into ``nxt`` unless both are empty."""
    W, prm, s = parts.cfg.ub_word_bytes, setup.prm, ser
    cur, nxt, gb = s.cur, s.nxt, s.gb
    # ``cur`` moves on when it is empty or with every product (``fire`` reaches it as a clock enable
    # only): to the next word (``nxt``, or the reader's word when both are empty) after its last
    # element or the block's last product, else by one element. A word from the reader goes into
    # ``nxt`` unless both are empty.
    for x in range(s.G):
        part = slice(gb * x, gb * (x + 1))
        shifted = Signal(8 * W, name=f"shifted{x}")
        with m.Switch(s.esz_g[x]):
            for z in range(ESZ_MAX + 1):
                with m.Case(z):
                    m.d.comb += shifted.eq(cur >> (8 << z))
        with m.If(fire.fires[x] | ~s.cur_valid[x]):
            with m.If(~s.cur_valid[x] | s.last_e[x] | s.last_k[x]):
                m.d.sync += cur[part].eq(nxt[part])
            with m.Else():
                m.d.sync += cur[part].eq(shifted[part])
    cur_ce, endw = Signal(), Signal()
    m.d.comb += [cur_ce.eq(fire.fire | ~s.cur_valid[0]), endw.eq(~s.cur_valid[0] | s.last_e[0] | s.last_k[0])]
    with m.If(port1.a_take):
        m.d.sync += nxt.eq(port1.word.data)
    with m.If(cur_ce & endw):          # the next word (if any) into cur; a word taken now goes to nxt
        m.d.comb += [s.cur_valid_n.eq(s.nxt_valid[0]), s.nxt_valid_n.eq(port1.a_take), s.last_e_n.eq(0)]
        m.d.sync += s.e.eq(0)
    with m.Else():
        m.d.comb += [s.cur_valid_n.eq(s.cur_valid[0]), s.nxt_valid_n.eq(s.nxt_valid[0] | port1.a_take),
                     s.last_e_n.eq(Mux(cur_ce, s.e == prm.pw2, s.last_e[0]))]
        with m.If(cur_ce):
            m.d.sync += s.e.eq(s.e + 1)
