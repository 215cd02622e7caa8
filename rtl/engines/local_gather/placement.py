"""The LOCAL_GATHER engine's data path after the read windows: placement (stages 1 and 2: a coarse and a
fine byte rotation that take each piece to its destination lanes, the pair merged per lane:
:func:`place`), packing into destination words (stage 3: :func:`pack`) and the write queue between
stage 3 and the UB write port (:func:`write_queue`)."""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data

from rtl.lib.contract import require
from rtl.lib.output_queue import OutputQueue

__all__ = ["FINE_BITS", "BYTE_LOG2", "place", "pack", "write_queue"]

#: Offset bits the second (fine) step of a byte rotation resolves (an 8:1 multiplexer per bit), as in
#: :func:`rtl.ub.byteshift.select_bytes`.
FINE_BITS = 3
#: log2 of the bits per byte (a byte amount shifted left by this is a bit amount).
BYTE_LOG2 = 3


def place(m, eng, sz, geo, pl, win):
    """Stages 1-2: place the piece(s). One stage before the data (stage ``STAGE_1 - 1``): which word of
    the window each byte position takes (a piece's byte at position i >= offset is in the first word,
    one below in the second), the rotation (offset - lane modulo W), and the lanes each piece covers
    and which belong to the current destination word. Stage 1: the window's words merged and rotated
    by a multiple of 8 bytes into a register (``coarse_a`` / ``coarse_b``); stage 2: rotated by 0-7
    bytes (the amount in one copy per ``FINE_LANES`` lanes) and the pair merged per lane into
    ``placed``. Returns the namespace of ``placed`` and its lane masks ``pcur`` (lanes of the current
    destination word) and ``pnext`` (of the next)."""
    W, sh, two = sz.W, sz.sh, sz.two
    d0, n0, d1, n1 = win.d0, win.n0, win.d1, win.n1
    pre = pl.st[eng.STAGE_1 - 1]
    mmA, mmB = Signal(W, name="wordsel_a", reset_less=True), Signal(W, name="wordsel_b", reset_less=True)
    rotA, rotB = Signal(sh, name="rot_a", reset_less=True), Signal(sh, name="rot_b", reset_less=True)
    m.d.sync += [
        mmA.eq(Cat(C(i, sh + 1) >= pre["offA"] for i in range(W))),
        mmB.eq(Cat(C(i, sh + 1) >= pre["offB"] for i in range(W))),
        rotA.eq(pre["offA"] - pre["lo"]),
        rotB.eq(pre["offB"] - pre["lo"] - geo.g_P),
    ]

    def rotate_coarse(word, amount, name):
        """Register: byte i = byte (i + 8 amount) modulo W of ``word``."""
        out = Signal(8 * W, name=name, reset_less=True)
        m.d.sync += out.eq(Cat(word, word).bit_select(Cat(C(0, BYTE_LOG2 + FINE_BITS), amount), 8 * W)
                           if len(amount) else word)
        return out

    def merged(first, second, sel):
        return Cat(Mux(sel[i], first.word_select(i, 8), second.word_select(i, 8)) for i in range(W))
    cA = rotate_coarse(merged(d0, n0, mmA), rotA[FINE_BITS:], "coarse_a")
    if two:
        cB = rotate_coarse(merged(d1, n1, mmB), rotB[FINE_BITS:], "coarse_b")

    # lanes of the slot (computed one stage before the data, registered for stage 1): rel = lane - lo
    # modulo W; piece A covers rel < P, piece B (paired) P <= rel < 2 P; lanes >= lo are the current
    # destination word, the others (wrapped around) the next one
    la1, lb1 = Signal(W, name="lanes_a1"), Signal(W, name="lanes_b1")
    ge1 = Signal(W, name="lanes_ge1", reset_less=True)
    lanes_a, lanes_b, ge = [], [], []
    for x in range(W):
        rel = Signal(sh, name=f"rel{x}")
        m.d.comb += rel.eq(x - pre["lo"])
        plog2 = geo.g_plog2_copies[x * len(geo.g_plog2_copies) // W]     # a copy per group of lanes
        lanes_a.append((rel >> plog2) == 0)
        lanes_b.append(pre["pair"] & ((rel >> plog2) == 1))
        ge.append(C(x, sh) >= pre["lo"])
    m.d.sync += [la1.eq(Cat(lanes_a) & pre["pc"].replicate(W)), lb1.eq(Cat(lanes_b) & pre["pc"].replicate(W)),
                 ge1.eq(Cat(ge))]
    vB = Signal(W, name="lanes_b2", reset_less=True)
    pcur2, pnext2 = Signal(W, name="cur_lanes2"), Signal(W, name="next_lanes2")
    m.d.sync += [vB.eq(lb1), pcur2.eq((la1 | lb1) & ge1), pnext2.eq((la1 | lb1) & ~ge1)]

    # The fine rotation amounts: one copy per group of lanes (the amount fans out to every bit's
    # multiplexer), each loaded only when its piece has a lane in the group (distinct enables keep
    # synthesis from merging the copies; a lane no piece uses is not written).
    GL = min(W, eng.FINE_LANES)

    def fine_amounts(rot, lanes, tag):
        out = []
        for g in range(W // GL):
            f = Signal(FINE_BITS, name=f"fine_{tag}{g}", reset_less=True)
            with m.If(lanes[GL * g:GL * (g + 1)].any()):
                m.d.sync += f.eq(rot[:FINE_BITS])
            out.append(f)
        return out

    def rotate_fine(word, amounts):
        """Lane x = byte (x + amount) modulo W of ``word``, one amount per group of GL lanes (a
        logarithmic shifter per group)."""
        ext = Cat(word, word[:8 * ((1 << FINE_BITS) - 1)])
        return Cat(ext[8 * GL * g:8 * (GL * (g + 1) + (1 << FINE_BITS) - 1)].bit_select(
                       Cat(C(0, BYTE_LOG2), f), 8 * GL) for g, f in enumerate(amounts))

    # stage 2: the fine rotation, the pair merged per lane
    placed = Signal(8 * W, name="placed", reset_less=True)
    fineA = rotate_fine(cA, fine_amounts(rotA, la1, "a"))
    if two:
        fineB = rotate_fine(cB, fine_amounts(rotB, lb1, "b"))
        m.d.sync += placed.eq(Cat(Mux(vB[x], fineB.word_select(x, 8), fineA.word_select(x, 8))
                                  for x in range(W)))
    else:
        m.d.sync += placed.eq(fineA)
    pcur, pnext = Signal(W, name="cur_lanes"), Signal(W, name="next_lanes")
    m.d.sync += [pcur.eq(pcur2), pnext.eq(pnext2)]
    return SimpleNamespace(placed=placed, pcur=pcur, pnext=pnext)


def write_queue(eng, sz):
    """The write queue (:class:`rtl.lib.output_queue.OutputQueue`, ``WRITE_QUEUE_DEPTH`` entries of LUT
    RAM): stage 3's words (``addr``, ``data``, ``be`` and ``last``, the instruction's last word) wait
    here while the UB write port refuses them. The pipeline cannot stop between its stages, so the
    control issues a slot that may write (a piece slot or a flush) only while the queue's ``room`` is
    high; a slot issued in cycle ``c`` reaches the queue ``PIPELINE`` cycles later (stage 3 is
    ``st[PIPELINE]``: ``st[t]`` is the slot issued ``t`` cycles ago), so that is the queue's latency.
    Built before the control (which reads ``room``); added to the module, and its latency checked
    against the pipeline, by :func:`pack`."""
    layout = data.StructLayout({"addr": sz.WA, "data": 8 * sz.W, "be": sz.W, "last": 1})
    return OutputQueue(layout, eng.WRITE_QUEUE_DEPTH, eng.WRITE_QUEUE_LATENCY,
                       passthrough=not eng._config.ub_write_queues)


def pack(m, eng, sz, pl, placed, wq):
    """Stage 3 (``PIPELINE``): pack into the write queue ``wq`` (:func:`write_queue`). Lanes at or above
    the slot's first lane belong to the current destination word, the lower ones (wrapped around) to the
    next; the current word goes to the queue (the pending bytes and the new ones, exact byte enables)
    when the slot says so (``wen``: the word is complete or the row's block ends), the rest stays
    pending (``pend``, ``pend_be``). A cycle without a slot (the control waited for ``go`` or for the
    queue's ``room``) is a bubble: nothing is queued, the pending bytes stay. The queue's output is
    ``ub_wr`` (``valid``, ``addr``, ``data``, ``be``; its ``ready``), through the queue's bypass while
    it holds nothing."""
    W = sz.W
    s3 = pl.st[eng.PIPELINE]
    pcur, pnext = placed.pcur, placed.pnext
    wr = eng.ub_wr
    require(wq.latency >= eng.PIPELINE,
            f"the write queue's room gates the control's issue, whose word enters the queue here, at stage 3, "
            f"PIPELINE = {eng.PIPELINE} cycles later: its latency (WRITE_QUEUE_LATENCY = {wq.latency}) must be "
            f"at least that, or a port that refuses words overflows the queue")
    m.submodules.write_queue = wq
    pend = Signal(8 * W, name="pend", reset_less=True)
    pend_be = Signal(W)
    # (``be`` counts only with ``valid``: the slot's ``wen`` is the queue's ``i_valid``, not a gate on it)
    m.d.comb += [
        wq.i_valid.eq(s3["wen"]),
        wq.i_payload.addr.eq(s3["waddr"]),
        wq.i_payload.data.eq(Cat(Mux(pcur[x], placed.placed.word_select(x, 8), pend.word_select(x, 8))
                                 for x in range(W))),
        wq.i_payload.be.eq(pend_be | pcur),
        wq.i_payload.last.eq(s3["fin"]),
        wr.valid.eq(wq.o.valid), wr.addr.eq(wq.o.payload.addr), wr.data.eq(wq.o.payload.data),
        wr.be.eq(wq.o.payload.be), wq.o.ready.eq(wr.ready),
    ]
    m.d.sync += [
        pend.eq(Cat(Mux(pcur[x] | pnext[x], placed.placed.word_select(x, 8), pend.word_select(x, 8))
                    for x in range(W))),
        pend_be.eq(Mux(s3["wen"], pnext, pend_be | pcur)),
    ]
