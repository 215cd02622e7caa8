"""Instruction checking: which status an instruction gets before any engine touches anything."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .instructions import CHECK_ORDER, INSTRUCTIONS, TILE_SLOTS
from .isa import Command, DType, Layout, Opcode, UB_ALIGN
from .status import Status
from .tile import dtype_valid, elem_log2

__all__ = ["Checker", "CHECK_ORDER", "tile_checks", "dtype_in", "stage", "stage_product", "exceeds"]


def dtype_in(dtype, allowed):
    """True when ``dtype`` (a ``DType`` field) holds one of the types in ``allowed``."""
    if not allowed:
        return C(0, 1)
    return Cat(dtype.as_value() == d.value for d in sorted(allowed, key=lambda d: d.value)).any()


def stage(m, value, name=None):
    """``value`` registered once: a pipeline register inside the checker. The command is held stable
    while it is checked, so a registered intermediate is simply the value one cycle late; use it to cut
    a check's long paths (a multiply before the add and compare that use its product). Every check must
    pass through at most one ``stage`` before its condition (which the checker registers again)."""
    value = Value.cast(value)
    reg = Signal(value.shape(), name=name)
    m.d.sync += reg.eq(value)
    return reg


def stage_product(m, a, b, name=None):
    """``a * b`` for unsigned ``a`` and ``b`` of any width, as a list of registered partial products
    whose sum is the product: a factor wider than a DSP block's 18 bits is cut into 16-bit pieces, each
    pair of pieces multiplied in one DSP block (MULT18X18D), registered (:func:`stage`) and shifted into
    place. A 16 x 32 multiply done whole is two DSPs and a wide add in one cycle (~17 ns on an ECP5);
    its pieces are one DSP each (~5 ns with the wires). Give the list to :func:`exceeds` as terms: it
    adds them."""
    a, b = Value.cast(a), Value.cast(b)
    assert not a.shape().signed and not b.shape().signed, "stage_product: unsigned factors only"

    def pieces(v):
        if len(v) <= 18:
            return [(0, v)]
        return [(lo, v[lo:lo + 16]) for lo in range(0, len(v), 16)]

    terms = []
    for lo_a, pa in pieces(a):
        for lo_b, pb in pieces(b):
            k = len(terms)
            piece = stage(m, pa * pb, None if name is None else f"{name}_pp{k}")
            lo = lo_a + lo_b
            terms.append(piece if lo == 0 else Cat(C(0, lo), piece))
    return terms


def exceeds(m, terms, limit, name=None):
    """``sum(terms) > limit`` for non-negative ``terms``, with short carry chains: every term is first
    saturated to ``2 * 2**ceil(log2(limit + 1))`` (if one term alone is that large the sum exceeds the
    limit anyway), so the add is only a few bits wider than ``limit`` instead of as wide as the widest
    term (a 64-bit GM base plus a 48-bit span would be a 113-bit chain)."""
    bits = max(1, int(limit).bit_length())      # 2**bits > limit
    cap = 1 << (bits + 1)
    sat = []
    for t in terms:
        t = Value.cast(t)
        if t.shape().signed:
            t = t.as_unsigned()
        if len(t) <= bits:
            sat.append(t)
            continue
        clipped = Signal(bits + 2, name=None if name is None else f"{name}_sat{len(sat)}")
        m.d.comb += clipped.eq(Mux(t[bits + 1:].any(), cap, t[:bits + 1]))
        sat.append(clipped)
    total = Signal(bits + 2 + len(terms).bit_length(), name=name)
    while len(sat) > 1:         # a balanced tree of adds: log2(terms) carry chains in a row, not terms - 1
        sat = [sat[i] + sat[i + 1] if i + 1 < len(sat) else sat[i] for i in range(0, len(sat), 2)]
    m.d.comb += total.eq(sat[0])
    return total > limit


def tile_checks(m, config, fail, tile, enable):
    """Checks every tile operand gets: base alignment, UB range of the static extent, valid <= static.
    Appends conditions to ``fail`` (status -> list of conditions); returns log2 of the element size.
    The static extent's multiply is registered (:func:`stage`) before the add and compare."""
    esz = elem_log2(m, tile.dtype)
    size = stage(m, (tile.rows * tile.cols) << esz)
    fail[Status.UB_MISALIGNED].append(enable & (tile.base[:UB_ALIGN.bit_length() - 1] != 0))
    fail[Status.UB_OUT_OF_RANGE].append(enable & exceeds(m, [tile.base, size], config.ub_bytes))
    fail[Status.VALID_EXCEEDS_STATIC].append(
        enable & ((tile.valid_rows > tile.rows) | (tile.valid_cols > tile.cols)))
    return esz


class Checker(wiring.Component):
    """Pipelined instruction checker.

    Parameters: ``config``; ``engines``, the engine classes of this configuration. Their ``opcodes``
    are supported (others answer ``UNSUPPORTED``). The checks common to every instruction come from the
    instruction table (:data:`rtl.instructions.INSTRUCTIONS`): defined type codes, the types each slot
    accepts in ``config.profile`` and how they relate, UB alignment / range / valid <= static, and the
    slots that must be row-major. The per-tile checks are built once per operand slot, enabled for every
    supported opcode that uses the slot (not once per engine). Each engine adds only its instructions'
    own constraints through a static method ``add_checks(m, config, cmd, fail)`` that appends, per
    status, conditions that are true when the constraint fails (gated by its own opcodes); it cuts long
    arithmetic with :func:`stage`.

    Ports: ``cmd`` (in, :data:`Command`, held stable while it is checked); ``status`` (out): ``OK`` or the
    first failing check in :data:`CHECK_ORDER`; ``ok`` (out): ``status == OK``.

    Latency: :attr:`LATENCY` = 2. ``status`` and ``ok`` are valid from the second clock edge after
    ``cmd`` took its value (the checker keeps no other state: while ``cmd`` holds they stay valid).
    Stage 1 registers the products (:func:`stage`), stage 2 every failing condition; ``status`` is the
    priority encoding of those registers and ``ok`` their NOR, both a few LUT levels after a register.
    """

    #: Clock edges from a new ``cmd`` to a valid ``status``.
    LATENCY = 2

    def __init__(self, config, engines):
        self._config = config
        self._engines = tuple(engines)
        self._supported = tuple(sorted({op for engine in self._engines for op in engine.opcodes},
                                       key=lambda op: op.value))
        super().__init__({"cmd": In(Command), "status": Out(Status), "ok": Out(1)})

    def elaborate(self, platform):
        m = Module()
        cmd = self.cmd
        op = cmd.opcode
        fail = {status: [] for status in CHECK_ORDER}
        known = Cat(op == member for member in Opcode).any()
        fail[Status.UNKNOWN_OPCODE].append(~known)
        is_op = {o: Signal(name=f"is_{o.name.lower()}") for o in self._supported}
        for o, sig in is_op.items():
            m.d.comb += sig.eq(op == o)
        supported = Cat(is_op.values()).any() if is_op else C(0, 1)
        fail[Status.UNSUPPORTED].append(known & ~supported)

        self._common_checks(m, cmd, is_op, fail)
        for engine in self._engines:
            engine.add_checks(m, self._config, cmd, fail)

        # stage 2: one register per status (the OR of its conditions), then the priority encoder
        failing = {}
        for status in CHECK_ORDER:
            if fail[status]:
                failing[status] = Signal(name=f"fail_{status.name.lower()}")
                m.d.sync += failing[status].eq(Cat(fail[status]).any())
        m.d.comb += self.status.eq(Status.OK)
        for status in reversed(CHECK_ORDER):   # last assignment wins: walk from lowest priority up
            if status in failing:
                with m.If(failing[status]):
                    m.d.comb += self.status.eq(status)
        m.d.comb += self.ok.eq(~Cat(failing.values()).any())
        return m

    def _common_checks(self, m, cmd, is_op, fail):
        """Steps 2-9 from the instruction table (``golden.check._common`` computes the same)."""
        profile = self._config.profile
        any_of = lambda ops: Cat(is_op[o] for o in ops).any()
        # once per slot: defined type code, UB alignment and range, valid <= static
        for name in TILE_SLOTS:
            users = [o for o in self._supported if INSTRUCTIONS[o].slot(name)]
            if users:
                tile = getattr(cmd, name)
                used = Signal(name=f"uses_{name}")
                m.d.comb += used.eq(any_of(users))
                fail[Status.DTYPE_INVALID].append(used & ~dtype_valid(tile.dtype))
                tile_checks(m, self._config, fail, tile, used)
        gm_users = [o for o in self._supported if INSTRUCTIONS[o].gm_typed]
        if gm_users:
            fail[Status.DTYPE_INVALID].append(any_of(gm_users) & ~dtype_valid(cmd.gm.dtype))

        for o in self._supported:
            ins, en = INSTRUCTIONS[o], is_op[o]
            dt = lambda slot: getattr(cmd, slot.name).dtype
            if ins.type_rule == "gemv":
                for slot in ins.slots:
                    fail[Status.DTYPE_UNSUPPORTED].append(en & ~dtype_in(dt(slot), ins.allowed(slot, profile)))
                c, a, b = (cmd.dst.dtype, cmd.src0.dtype, cmd.src1.dtype)
                triple = Cat((c == tc) & (a == ta) & (b == tb) for tc, ta, tb in sorted(
                    ins.triples[profile], key=lambda t: [x.value for x in t])).any()
                fail[Status.DTYPE_MISMATCH].append(en & ~triple)
                init = ins.slot("src2")
                if init:
                    fail[Status.DTYPE_MISMATCH].append(en & (cmd.src2.dtype != c))
            else:
                typed = [dt(s) for s in ins.data_slots()] + ([cmd.gm.dtype] if ins.gm_typed else [])
                allowed = ins.types[profile]
                if allowed != frozenset(DType):
                    for t in typed:
                        fail[Status.DTYPE_UNSUPPORTED].append(en & ~dtype_in(t, allowed))
                for t in typed[1:]:
                    fail[Status.DTYPE_MISMATCH].append(en & (t != typed[0]))
                for slot in ins.slots:
                    if slot.kind == "index":
                        fail[Status.INDEX_DTYPE].append(en & ~dtype_in(dt(slot), ins.index_types))
            for slot in ins.slots:
                if profile in slot.row_major:
                    fail[Status.LAYOUT_UNSUPPORTED].append(
                        en & (getattr(cmd, slot.name).layout != Layout.ROW_MAJOR))
