"""MGATHER's run resolution, stages 2a to 4 of :class:`rtl.engines.transfer.mgather.IndexLines`: a segment's
index lanes resolved against the table (out of bounds, WRAP's modulo), their table addresses, the segment
queue and the runs taken from it, and each run's read and line registered into the output queues.

Each function builds one stage into the module ``m`` of ``IndexLines.elaborate``, reading the setup's
namespace ``g`` (``IndexLines._setup``) and the previous stage's, and returns its own.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data

from rtl.engines.transfer.modulo import ModuloPipeline
from rtl.engines.transfer.walker import BurstLine, burst_chunk_beats, span_bits
from rtl.engines.transfer.widths import GM_STRIDE_BITS, INDEX_BITS, INDEX_BYTES_LOG2, PIECE_BITS, UB_ADDR_BITS
from rtl.fpga.dsp import product
from rtl.lib.contract import require
from rtl.lib.fifo import LutFifo, RegFifo

__all__ = ["GatherLine", "GatherRead", "resolve", "addresses", "segment_queue", "run_register", "line_register"]


def GatherLine(config):
    """What the data side gets per line (row mode) or *run* (element mode: up to one index word's worth of
    consecutive destination elements of one segment whose table elements share one bus beat, or are all
    ``zero``; one UB write).

    ``ub_addr``: row mode, the line's UB byte address; element mode, a UB byte address in the run's UB
    word (that of the segment's first element). ``delta`` (element mode): the lane of that word where
    index lane 0's element would go, so lane ``k``'s element goes to bytes ``delta + k * size`` (mod
    ``W``) on. ``src_off`` (row mode): the line's byte offset in its first beat.
    ``mask`` (element mode): the run's index lanes; ``offs[k]``: the byte offset in the beat of lane
    ``k``'s element. ``zero``: read nothing, write zeros; ``reuse``: take the previous non-zero run's beat
    again (no AR was issued); ``last``: the instruction's last line or run.
    """
    W = config.ub_word_bytes
    L = W >> INDEX_BYTES_LOG2
    return data.StructLayout({
        "ub_addr": UB_ADDR_BITS,
        "src_off": range(W),
        "delta":   range(W),
        "mask":    L,
        "offs":    data.ArrayLayout(range(W), L),
        "zero":    1,
        "reuse":   1,
        "last":    1,
    })


def GatherRead(config):
    """What the address side needs of a line (:func:`rtl.engines.transfer.walker.BurstLine`): the bytes to
    read; ``skip`` for a zero or reuse run; element runs are ``single`` (one beat)."""
    return BurstLine(config)



def _less(a, b, chunk=8):
    """``a < b`` for unsigned values of one width, as compares of ``chunk``-bit pieces combined by a
    priority over the pieces (short carry chains side by side instead of one long one)."""
    pieces = [(a[i:i + chunk] < b[i:i + chunk], a[i:i + chunk] == b[i:i + chunk])
              for i in range(0, len(a), chunk)]                  # (less, equal), low piece first
    while len(pieces) > 1:                                       # a balanced tree of pairs
        pairs = [pieces[i:i + 2] for i in range(0, len(pieces), 2)]
        pieces = [((hi[0] | (hi[1] & lo[0])), hi[1] & lo[1]) if len(p) == 2 else p[0]
                  for p in pairs for lo, hi in [p if len(p) == 2 else (p[0], p[0])]]
    return pieces[0][0]


def _lowest(x):
    """The lowest set bit of ``x``, one-hot (zero if none)."""
    return Cat(x[k] & ~x[:k].any() if k else x[0] for k in range(len(x)))


def _at_most_one(x):
    """``x`` has at most one bit set (pairwise: no pair of bits is set together)."""
    return ~Cat(x[i] & x[j] for i in range(len(x)) for j in range(i + 1, len(x))).any()


def _product_pieces(width):
    """The ``PIECE_BITS`` x ``PIECE_BITS`` pieces ``(i, j)`` of an index x stride product that reach its
    low ``width`` bits: bits ``i`` of the index times bits ``j`` of the stride, shifted by ``i + j``; each
    is one DSP block."""
    return [(i, j) for i in range(0, INDEX_BITS, PIECE_BITS) for j in range(0, GM_STRIDE_BITS, PIECE_BITS)
            if i + j < width]


def resolve(m, g, s1):
    """Stage 2a: every lane's index resolved against the table size (registered: the index and whether
    it is inside the table; the clamp to ``S - 1`` is applied on the way into 2b as ``r``). WRAP: one lane,
    through the :class:`ModuloPipeline` (its result is inside)."""
    L = g.L
    m.submodules.mod = mod = ModuloPipeline(INDEX_BITS, s1.Meta.size)
    m.d.comb += [mod.i_valid.eq(s1.valid & g.wrap), mod.i_u.eq(s1.word.word_select(s1.meta.lo, INDEX_BITS)),
                 mod.i_s.eq(g.size), mod.i_tag.eq(s1.meta)]
    v2a = Signal()
    u2a = [Signal(INDEX_BITS, name=f"u{k}", reset_less=True) for k in range(L)]
    inside = [Signal(name=f"inside{k}", reset_less=True) for k in range(L)]
    meta2a = Signal(s1.Meta, reset_less=True)
    seg2a = Signal(L, reset_less=True)
    wmeta = Signal(s1.Meta)
    m.d.comb += wmeta.eq(mod.o_tag)
    m.d.sync += v2a.eq(Mux(g.wrap, mod.o_valid, s1.valid))
    with m.If(g.wrap):
        m.d.sync += [meta2a.eq(wmeta), seg2a.eq(C(1, L) << wmeta.lo)]
        m.d.sync += [x.eq(mod.o_r) for x in u2a] + [x.eq(1) for x in inside]
    with m.Else():
        m.d.sync += [meta2a.eq(s1.meta), seg2a.eq(s1.seg)]
        m.d.sync += [u2a[k].eq(s1.u[k]) for k in range(L)] + [inside[k].eq(_less(s1.u[k], g.size)) for k in range(L)]
    r = [Mux(inside[k], u2a[k], g.size_m1) for k in range(L)]      # resolved table entry per lane
    return SimpleNamespace(mod=mod, valid=v2a, inside=inside, meta=meta2a, seg=seg2a, r=r)


def addresses(m, platform, g, s1, r2a):
    """Stage 2b: every lane's table address and zero flag (element mode), the row index x row stride in
    DSP pieces (row mode); the segment queue's entry (``Seg``: the lanes' beats or the row's partial
    products, offsets, zero flags, which lanes share the previous lane's run, the segment's lanes and
    meta). Returns the entry, its valid and the product ``terms``."""
    W, sh, L, A = g.W, g.sh, g.L, g.A
    gm = g.gm
    v2b = Signal()
    ea = [Signal(A, name=f"ea{k}", reset_less=True) for k in range(L)]
    zero_b = [Signal(name=f"zero_b{k}", reset_less=True) for k in range(L)]
    meta2b = Signal(s1.Meta, reset_less=True)
    seg2b = Signal(L, reset_less=True)
    m.d.sync += [v2b.eq(r2a.valid), meta2b.eq(r2a.meta), seg2b.eq(r2a.seg)]
    m.d.sync += [ea[k].eq(gm.base + (r2a.r[k] << g.esz)) for k in range(L)]
    m.d.sync += [zero_b[k].eq(g.zmode & ~r2a.inside[k]) for k in range(L)]

    # Row mode: the row index x the row stride, in PIECE_BITS x PIECE_BITS pieces, each a DSP block
    # (rtl.fpga.dsp.product) between registers: the index as read (stage 1; WRAP: the modulo pipeline's
    # result, which takes its place) is registered with stage 2a (in the fabric, below) and the
    # product is ready in stage 2b; the clamped row S - 1 has its own pieces (a constant of the
    # instruction, with the blocks' operand registers), chosen in stage 2b.
    # (The stride through a local register: the command is held from ``start``.)
    stride_r = Signal(GM_STRIDE_BITS, reset_less=True)
    m.d.sync += stride_r.eq(gm.row_stride)
    # (the index through a fabric register beside stage 2a's, the DSP blocks' operand registers
    # unused: the UB's read data -> lane select -> register stays next to the UB)
    u_row = Signal(INDEX_BITS, reset_less=True)
    m.d.sync += u_row.eq(Mux(g.wrap, r2a.mod.o_r, s1.word.word_select(s1.meta.lo, INDEX_BITS)))
    P = PIECE_BITS
    pieces = _product_pieces(A)
    terms = [(product(m, u_row[i:i + P], stride_r[j:j + P], platform=platform, in_reg=False,
                      name=f"row_prod{n}"),
              product(m, g.size_m1[i:i + P], stride_r[j:j + P], platform=platform, name=f"last_prod{n}"),
              i + j) for n, (i, j) in enumerate(pieces)]
    row_in = Signal(reset_less=True)   # stage 2b: the row index is inside the table
    m.d.sync += row_in.eq(Array(r2a.inside)[r2a.meta.lo])
    lane_bits = max(L * (A - sh), 2 * P * len(terms))
    Seg = data.StructLayout({
        "lanes": lane_bits,         # element mode: every lane's beat; row mode: the partial products
        "offs": data.ArrayLayout(range(W), L), "zero": L,
        "same": L,                  # lane k shares lane k - 1's run (same beat, or both zero)
        "seg": L, "meta": s1.Meta,
    })
    entry = Signal(Seg)
    m.d.comb += [entry.seg.eq(seg2b), entry.meta.eq(meta2b),
                 entry.lanes.eq(Mux(g.row, Cat(Mux(row_in, pu, pl) for pu, pl, _ in terms), Cat(x[sh:] for x in ea)))]
    for k in range(L):
        # (a zero lane's offset is 0: a zero run then needs no select on its way to stage 3)
        m.d.comb += [entry.offs[k].eq(Mux(zero_b[k], 0, ea[k][:sh])), entry.zero[k].eq(zero_b[k])]
        if k:
            m.d.comb += entry.same[k].eq((zero_b[k] & zero_b[k - 1]) |
                                         (~zero_b[k] & ~zero_b[k - 1] & (ea[k][sh:] == ea[k - 1][sh:])))
    return SimpleNamespace(Seg=Seg, valid=v2b, entry=entry, terms=terms)


def segment_queue(m, cfg, g, e, seg_depth, depth, groups):
    """Stage 2c: the segment queue and the run picker. Two queues, read together. The run control in a
    narrow one (``seg``, ``zero``, and the segment's run starts: ``first``, its first lane, and ``rest``,
    the lanes after it that begin a run of their own, ``seg & ~same & ~first``) whose head is loaded into
    registers (``cur``) that the runs then consume: each run starts at ``cur.h`` and ends before the
    lowest lane of ``cur.rest``, and whether it is the segment's last (``cur.last``: ``rest`` empty) is a
    register, so that the pop decision is a gate of registers, not the queue's LUT RAM read through the
    run logic (10.8 ns at `default`). The rest (lanes, offsets, meta) in a wide queue of its own, read
    asynchronously at its head, which is the control head's segment (it is popped with that segment's
    last run). The control fields go through one more register (stage 2b'), so that ``same``'s beat
    compares end in a register, not in the LUT RAM's write port; the data queue is written a cycle
    earlier and its entry is always there when the control entry reaches ``cur`` (the credit bounds
    both). An empty control queue passes stage 2b' straight into ``cur``, so the queue costs no cycle.

    Also creates the output queues ``q_ar`` / ``q_data`` (``depth`` entries, their memories in ``groups``
    slices) and ``room`` (driven by ``IndexLines._credits``).
    Returns the head segment's data fields, the run (``run``: its lanes, ``h``: its first lane), the
    emit / done decisions and the queues."""
    L, A, sh = g.L, g.A, g.sh
    Seg, entry = e.Seg, e.entry
    Ctl = data.StructLayout({"seg": L, "zero": L, "h": L, "rest": L, "last": 1})
    data_fields = ("lanes", "offs", "meta")
    m.submodules.q_seg = q_seg = LutFifo(Ctl.size, seg_depth)
    m.submodules.q_seg_data = q_seg_data = LutFifo(Seg.size - 3 * L, seg_depth)
    v2c = Signal()
    seg2c, zero2c, same2c, first2c = (Signal(L, name=f"{n}2c", reset_less=True)
                                      for n in ("seg", "zero", "same", "first"))
    m.d.sync += [v2c.eq(e.valid), seg2c.eq(entry.seg), zero2c.eq(entry.zero), same2c.eq(entry.same),
                 first2c.eq(_lowest(entry.seg))]
    ctl_in = Signal(Ctl)
    m.d.comb += [ctl_in.seg.eq(seg2c), ctl_in.zero.eq(zero2c), ctl_in.h.eq(first2c),
                 ctl_in.rest.eq(seg2c & ~same2c & ~first2c), ctl_in.last.eq(~ctl_in.rest.any())]
    head = Signal(Seg)              # (the data fields: the data queue's head)
    m.d.comb += [Cat(*(getattr(head, f) for f in data_fields)).eq(q_seg_data.r_data),
                 q_seg_data.w_data.eq(Cat(*(getattr(entry, f) for f in data_fields))),
                 q_seg_data.w_en.eq(e.valid)]
    beats = [head.lanes.word_select(k, A - sh) for k in range(L)]
    prods = [head.lanes.word_select(k, 2 * PIECE_BITS) << s for k, (_, _, s) in enumerate(e.terms)]

    cur = Signal(Ctl, reset_less=True)      # the head segment's control: its current run from ``h``
    cur_valid = Signal()
    q_ar = RegFifo(GatherRead(cfg).size, depth, direct_on_pop=False, groups=groups[0])
    q_data = RegFifo(GatherLine(cfg).size, depth, direct_on_pop=False, groups=groups[1])
    m.submodules.q_ar, m.submodules.q_data = q_ar, q_data
    room = Signal()                 # both output queues have room for a run in stage 3 and one more
    emit, done, load, bypass = Signal(), Signal(), Signal(), Signal()
    m.d.comb += [
        emit.eq(cur_valid & room), done.eq(emit & cur.last), load.eq(~cur_valid | done),
        bypass.eq(load & ~q_seg.r_rdy & v2c),
        q_seg.w_data.eq(ctl_in), q_seg.w_en.eq(v2c & ~bypass), q_seg.r_en.eq(load),
        q_seg_data.r_en.eq(done),
    ]
    nxt = _lowest(cur.rest)         # the next run's first lane
    with m.If(load):
        m.d.sync += [cur.eq(Mux(q_seg.r_rdy, q_seg.r_data, ctl_in)), cur_valid.eq(q_seg.r_rdy | v2c)]
    with m.Elif(emit):
        m.d.sync += [cur.h.eq(nxt), cur.rest.eq(cur.rest & ~nxt), cur.last.eq(_at_most_one(cur.rest))]
    h = cur.h
    # the run: the segment's lanes from ``h`` up to the next run's first lane
    run = Signal(L)
    m.d.comb += run.eq(Cat(cur.seg[k] & cur.h[:k + 1].any() & ~cur.rest[:k + 1].any() for k in range(L)))
    return SimpleNamespace(head=head, beats=beats, prods=prods, terms=e.terms, cur=cur, h=h, run=run,
                           emit=emit, done=done, room=room, q_ar=q_ar, q_data=q_data)


def run_register(m, cfg, g, q, start):
    """Stage 3: the run, registered (its first lane's beat, zero flag, lanes, offsets, meta; row mode:
    the row's address as base + the unshifted partial product and the others' sum, one add left);
    ``reuse`` (its beat is the last non-zero run's, a register, cleared at ``start``); the read
    (:func:`GatherRead`: the row's bytes and chunk span, or the run's one beat) and the line
    (:func:`GatherLine`) it makes."""
    W, sh, L, A = g.W, g.sh, g.L, g.A
    gm, h, head = g.gm, q.h, q.head
    last_run = q.cur.last

    def pick(values):               # the value of the run's first lane (an AND-OR of the lanes)
        out = 0
        for k, v in enumerate(values):
            out = out | (Value.cast(v) & h[k].replicate(len(Value.cast(v))))
        return out

    s3_valid = Signal()
    s3_beat = Signal(A - sh, reset_less=True)
    s3_zero = Signal(reset_less=True)
    s3_mask = Signal(L, reset_less=True)
    s3_offs = Signal(data.ArrayLayout(range(W), L), reset_less=True)
    s3_meta = Signal(head.meta.shape(), reset_less=True)
    # row mode: base + row index x row stride, and the row's last byte, as (base + the unshifted
    # partial product) + (the others' sum): one add left for stage 3
    s3_lo, s3_last_lo, s3_rest = Signal(A, reset_less=True), Signal(A, reset_less=True), Signal(A, reset_less=True)
    prods = q.prods
    m.d.sync += [
        s3_valid.eq(q.emit), s3_beat.eq(pick(q.beats)), s3_zero.eq((h & q.cur.zero).any()), s3_mask.eq(q.run),
        s3_offs.eq(head.offs), s3_meta.eq(head.meta), s3_meta.last.eq(head.meta.last & last_run),
        s3_lo.eq(gm.base + prods[0]), s3_last_lo.eq(g.gm_last0 + prods[0]),
        s3_rest.eq(sum(prods[1:]) if len(prods) > 1 else 0),
    ]
    last_beat = Signal(A - sh, reset_less=True)      # the beat of the last non-zero run
    have_beat = Signal()
    reuse = Signal()
    m.d.comb += reuse.eq(~g.row & ~s3_zero & have_beat & (s3_beat == last_beat))
    with m.If(s3_valid & ~s3_zero):
        m.d.sync += [last_beat.eq(s3_beat), have_beat.eq(1)]
    with m.If(start):
        m.d.sync += have_beat.eq(0)
    row_addr = Signal(A)
    row_last = Signal(A)
    m.d.comb += [row_addr.eq(s3_lo + s3_rest), row_last.eq(s3_last_lo + s3_rest)]
    # the chunks the row touches - 1: (its offset in the chunk + bytes - 1) / chunk (the offset from
    # the low bits only: the other partial products are shifted by PIECE_BITS or more)
    kc = (W * burst_chunk_beats(cfg)).bit_length() - 1
    require(q.terms[0][2] == 0 and all(t[2] >= kc for t in q.terms[1:]),
            f"IndexLines: a row's chunk span is taken from the unshifted partial product alone: the others "
            f"must be shifted by at least log2(chunk bytes) = {kc} (shifts {[t[2] for t in q.terms]})")
    row_span = Signal(span_bits(cfg))
    m.d.comb += row_span.eq((s3_lo[:kc] + g.line_m1) >> kc)

    rd = Signal(GatherRead(cfg))
    m.d.comb += [
        rd.gm_addr.eq(Mux(g.row, row_addr, s3_beat << sh)), rd.gm_last.eq(row_last),
        rd.span.eq(row_span), rd.one_chunk.eq(row_span == 0), rd.single.eq(~g.row), rd.skip.eq(s3_zero | reuse), rd.last.eq(s3_meta.last),
    ]
    line = Signal(GatherLine(cfg))
    m.d.comb += [
        line.ub_addr.eq(s3_meta.dptr), line.src_off.eq(row_addr[:sh]),
        line.delta.eq(s3_meta.dptr[:sh] - (s3_meta.lo << g.esz)),
        line.mask.eq(s3_mask), line.offs.eq(s3_offs), line.zero.eq(s3_zero), line.reuse.eq(reuse),
        line.last.eq(s3_meta.last),
    ]
    return SimpleNamespace(valid=s3_valid, rd=rd, line=line)


def line_register(m, cfg, s3, q, ar, data_out):
    """Stage 4: the read and the line, registered, into both output queues (``q_ar``, ``q_data``), whose
    heads are the ``ar`` and ``data`` streams. Returns the stage's ``valid`` and ``line``."""
    s4_valid = Signal()
    s4_rd = Signal(GatherRead(cfg), reset_less=True)
    s4_line = Signal(GatherLine(cfg), reset_less=True)
    q_ar, q_data = q.q_ar, q.q_data
    m.d.sync += [s4_valid.eq(s3.valid), s4_rd.eq(s3.rd), s4_line.eq(s3.line)]
    m.d.comb += [
        q_ar.w_data.eq(s4_rd), q_ar.w_en.eq(s4_valid), q_data.w_data.eq(s4_line), q_data.w_en.eq(s4_valid),
        ar.valid.eq(q_ar.r_rdy), ar.payload.eq(q_ar.r_data), q_ar.r_en.eq(ar.ready),
        data_out.valid.eq(q_data.r_rdy), data_out.payload.eq(q_data.r_data), q_data.r_en.eq(data_out.ready),
    ]
    return SimpleNamespace(valid=s4_valid, line=s4_line)

