"""The elementwise engine's combiner: a full-operand word paired with the partial source's word or the
row's pattern, with the per-byte copy mask, into the operand registers of the lanes."""

from types import SimpleNamespace

from amaranth import *

from rtl.lib.contract import require

__all__ = ["combiner"]


def combiner(m, cfg, go, room, ctx, info_q, rd_a, rd_b, pat, *, odd_copies, settling=None, b_pattern=None):
    """Pairs each full-operand word (reader ``rd_a``) with the partial source's word (``rd_b``) or the
    row's pattern (``pat``), ordered as the lanes' ``a`` / ``b``, with the per-byte copy mask (TPART*:
    bytes outside the partial source's valid region, from the segment info queue ``info_q``), into the
    operand registers (``ElementwiseEngine.COMBINER_CYCLES`` = 1) that feed the lanes ``L`` bytes a
    beat. Nothing is taken before ``go``, nor while the output queue has no ``room`` (a register: the
    words of the beats in flight need its space). ``s``: the setup's signals; ``odd_copies``: copies of ``odd``
    for ``b``'s selects (``W = 16``). With overlap, ``settling`` (the pattern builder takes no word) and
    ``b_pattern`` (reader B's word is the pattern builder's: its instruction's, which may be the next one,
    :func:`rtl.engines.elementwise.overlap.pattern_context`; else the combiner's, a TPART*'s); without, a
    TROWEXPAND*'s reader B feeds the builder. Returns the operand registers, their valid bit and
    ``fin_beat`` (the instruction's last beat is in them)."""
    W, L = cfg.ub_word_bytes, cfg.ew_lane_bytes
    sh = W.bit_length() - 1
    K = W // L
    trow, p_is_a, p_is_b, c_trow, c_p_is_a = ctx.trow, ctx.p_is_a, ctx.p_is_b, ctx.c_trow, ctx.c_p_is_a
    q_i = info_q.q_i
    # The current segment's partial-source state is a register loaded from q_i when its first word
    # is due (prefetched: q_i's head is popped into it): ``cnt`` words fully inside (``f_all`` = cnt
    # != 0), then one word with ``rem`` bytes (``f_cur``), then none. The row's pattern stays at the
    # head of the pattern queue until the segment's last word.
    a_w, b_w = rd_a.words.payload, rd_b.words.payload
    info = Signal(info_q.InfoLayout)
    m.d.comb += info.eq(q_i.r_data)
    seg_v = Signal()
    cnt = Signal.like(info.words)
    f_all, f_cur = Signal(), Signal()
    rem = Signal(sh)
    odd = Signal()                      # W = 16: the segment's odd words use P[16:32]
    # copies for b's selects, a quarter of the word each (each toggles on its own output: not merged)
    odd_b = [Signal(reset_less=True, name=f"odd_b{k}") for k in range(odd_copies)]
    valid_r = Signal()
    fire, load = Signal(), Signal()
    take = Signal(init=1)               # the operand registers are free for a word (K > 1: a register)
    if K > 1:
        beat = Signal(range(K))
        m.d.sync += take.eq(~fire & (take | (beat == K - 2)))
    pat_ready = pat.words.ready if settling is None else pat.words.ready & ~settling
    m.d.comb += [
        fire.eq(go & room & seg_v & rd_a.words.valid & Mux(c_trow, pat.patterns.valid, rd_b.words.valid) & take),
        load.eq((~seg_v | (fire & a_w.last)) & q_i.r_rdy),
        q_i.r_en.eq(load),
        rd_a.words.ready.eq(fire),
        rd_b.words.ready.eq(Mux(c_trow, pat_ready, fire) if b_pattern is None else
                            Mux(b_pattern, pat_ready, fire & ~c_trow)),
        pat.patterns.ready.eq(fire & a_w.last & c_trow),
    ]
    seg_fin = Signal()                  # the current segment is the instruction's last
    with m.If(load):
        m.d.sync += [seg_v.eq(1), cnt.eq(info.words), f_all.eq(info.any), f_cur.eq(~info.any),
                     rem.eq(info.rem), odd.eq(0), seg_fin.eq(info.fin)] + [o.eq(0) for o in odd_b]
    with m.Elif(fire & a_w.last):
        m.d.sync += seg_v.eq(0)
    with m.Elif(fire):
        m.d.sync += [cnt.eq(cnt - f_all), f_all.eq(cnt[1:].any()), f_cur.eq(cnt == 1), odd.eq(~odd)]
        m.d.sync += [o.eq(~o) for o in odd_b]

    P = pat.patterns.payload
    PB = len(P) // 8
    if W >= PB:
        p_word = p_word_b = P.replicate(W // PB)
    else:
        require(2 * W == PB, f"a pattern of PATTERN_BYTES = {PB} takes two words (``odd``) when the word "
                f"is narrower: ub_word_bytes = {W}")
        p_word = Mux(odd, P[8 * W:16 * W], P[:8 * W])
        q = 8 * W // odd_copies         # bits per quarter word
        p_word_b = Cat(Mux(o, P[8 * W + k * q:8 * W + (k + 1) * q], P[k * q:(k + 1) * q])
                       for k, o in enumerate(odd_b))
    keep = Cat(~(f_all | (f_cur & (rem > b))) & ~trow for b in range(W))
    new_a = Mux(p_is_a, p_word, a_w.data)
    new_b = Mux(c_p_is_a, a_w.data, Mux(p_is_b, p_word_b, b_w.data))

    # The lanes take a word in K beats of L bytes (K = W / L, config.ew_lane_bytes). K = 1: the operand
    # registers load every cycle (``valid_r`` says whether they hold a word). K > 1: they load when
    # free (``take``: no word, or its last beat) and otherwise shift down by L bytes per beat.
    a_r, b_r = Signal(8 * W, reset_less=True), Signal(8 * W, reset_less=True)
    keep_r = Signal(W, reset_less=True)
    fin_r = Signal()                    # the operand registers hold the instruction's last word
    with m.If(fire):
        m.d.sync += fin_r.eq(a_w.last & seg_fin)
    if K == 1:
        m.d.sync += [a_r.eq(new_a), b_r.eq(new_b), keep_r.eq(keep), valid_r.eq(fire)]
        fin_beat = valid_r & fin_r
    else:
        with m.If(take):
            m.d.sync += [a_r.eq(new_a), b_r.eq(new_b), keep_r.eq(keep)]
        with m.Else():
            m.d.sync += [a_r.eq(a_r >> 8 * L), b_r.eq(b_r >> 8 * L), keep_r.eq(keep_r >> L)]
        with m.If(fire):
            m.d.sync += [valid_r.eq(1), beat.eq(0)]
        with m.Elif(valid_r & (beat == K - 1)):
            m.d.sync += valid_r.eq(0)
        with m.Elif(valid_r):
            m.d.sync += beat.eq(beat + 1)
        fin_beat = valid_r & fin_r & (beat == K - 1)
    return SimpleNamespace(a_r=a_r, b_r=b_r, keep_r=keep_r, valid_r=valid_r, fin_beat=fin_beat, take=take,
                           last_fire=fire & a_w.last & seg_fin)
