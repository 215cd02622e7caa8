"""Instruction checking: which status an instruction gets before any engine touches anything."""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.checker.stages import (CONDITION_CYCLES, PRODUCT_CYCLES, SUM_CYCLES, checker_context, depth, dtype_in,
                                stage, tile_checks, uses_stage)
from rtl.isa import CHECK_ORDER, FRONT_END_OPCODES, INSTRUCTIONS, TILE_SLOTS, Command, DType, Layout, Opcode, Status
from rtl.lib.tile import dtype_valid

#: The depth of the range sums' results (``rtl.checker.stages.exceeds``): where a pipelined checker brings
#: every condition before the last register.
SUM_DEPTH = PRODUCT_CYCLES + SUM_CYCLES

__all__ = ["Checker"]


class Checker(wiring.Component):
    """Pipelined instruction checker.

    Parameters: ``config``; ``engines``, the engine classes of this configuration. Their ``opcodes``
    and the front end's own (:data:`rtl.isa.FRONT_END_OPCODES`: TSYNC, no operands, nothing to check)
    are supported (others answer ``UNSUPPORTED``). The checks common to every instruction come from the
    instruction table (:data:`rtl.isa.INSTRUCTIONS`): defined type codes, the types each slot
    accepts in ``config.profile`` and how they relate, UB alignment / range / valid <= static, and the
    slots that must be row-major. The per-tile checks are built once per operand slot, enabled for every
    supported opcode that uses the slot (not once per engine). Each engine adds only its instructions'
    own constraints through a static method ``add_checks(m, config, cmd, fail)`` that appends, per
    status, conditions that are true when the constraint fails (gated by its own opcodes); it cuts long
    arithmetic with :func:`stage`, multiplies with :func:`stage_product` and compares sums with a limit
    with :func:`exceeds`.

    Ports: ``cmd`` (in, :data:`Command`): the command, taken at every clock edge where ``load`` (in,
    default 1) is high and held inside while ``load`` is low (the front end drives ``cmd`` with
    ``s_axis_cmd.tdata`` and ``load`` with "idle", so the command is taken at the edge that accepts it);
    ``status`` (out): ``OK`` or the first failing check in :data:`CHECK_ORDER`; ``ok`` (out):
    ``status == OK``.

    ``pipelined`` (default False): the checker takes a command at every edge where ``load`` is high, one
    per cycle if need be, and ``status`` in the cycle after edge ``t + LATENCY`` is that of the command taken
    at edge ``t`` whatever came after it (the concurrent front end's check stage). Every condition's
    operands then come from one command: each value carries its depth (``rtl.checker.stages.depth``), the
    helpers :func:`rtl.checker.stages.align` shallower operands, an elaboration error names a condition
    that mixes depths, and every condition is delayed to the range sums' depth before the last register.
    Without it (the one-instruction-at-a-time unit) the command is held while it is checked, so a condition
    may mix depths and a plain one reaches its register sooner; its netlist is unchanged by the option.
    Pipelined, ``ok`` is a register of its own (the NOR of every condition, beside the per-status ones):
    in the concurrent front end it heads the speculative instruction's answer and release logic, where
    the NOR after the status registers was two LUT levels and a long wire more (docs/synthesis.md,
    "Concurrency control").

    Latency: ``LATENCY`` = 3. ``status`` and ``ok`` are valid from the third clock edge after the
    edge that took the command (and stay valid while ``load`` is low). Stage 1 is the edge that takes
    the command: the multiplies' operands into the DSP blocks' input registers (:func:`stage_product`)
    and the command's terms of the range sums (:func:`exceeds`); stage 2 the products (the blocks'
    output registers); stage 3 the range sums reduced to two vectors by carry-save adds, and the
    conditions of the command alone (decodes and compares, ORed per status); stage 4 every failing
    condition (a range sum's one carry chain, the registered conditions), one register per status. ``status`` is the priority encoding of those
    registers and ``ok`` their NOR, both a few LUT levels after a register. (With two stages the range
    sums after the products took 10.3 ns on an ECP5 alone: DSP output, routing, the adds.)
    """

    #: Clock edges from the edge that takes ``cmd`` to a valid ``status``: the products, the range sums,
    #: the failing conditions' registers (:mod:`rtl.checker.stages`).
    LATENCY = PRODUCT_CYCLES + SUM_CYCLES + CONDITION_CYCLES

    def __init__(self, config, engines, *, pipelined=False):
        self._config = config
        self._pipelined = pipelined
        self._engines = tuple(engines)
        self._supported = tuple(sorted({op for engine in self._engines for op in engine.opcodes} |
                                       FRONT_END_OPCODES, key=lambda op: op.value))
        super().__init__({"cmd": In(Command), "load": In(1, init=1), "status": Out(Status), "ok": Out(1)})

    def elaborate(self, platform):
        with checker_context(self.cmd, self.load, platform, pipelined=self._pipelined):
            return self._elaborate()

    def _elaborate(self):
        m = Module()
        # The command checked, taken at the last edge with ``load`` high and held. The products'
        # factors are taken from ``cmd`` directly at that edge (stage_product).
        cmd = Signal(Command, name="held", reset_less=True)
        with m.If(self.load):
            m.d.sync += cmd.eq(self.cmd)
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

        # the last stage: one register per status, then the priority encoder. A condition of the held
        # command alone (decodes, compares) has time: it gets a register of its own before (stage 3),
        # so its logic and the OR over the conditions are separate stages; a condition reading the
        # checker's registers (a range sum's carry chain) goes straight into the last stage.
        failing = {}
        every = []                             # (pipelined) every condition at the last stage's input
        for status in CHECK_ORDER:
            if fail[status]:
                if self._pipelined:
                    # every condition at the range sums' depth (one command per stage): the shallower
                    # ones delayed, a mixed one an error (stages.depth names it)
                    conds = []
                    for k, c in enumerate(fail[status]):
                        d = depth(c, f"a {status.name} condition")
                        if d > SUM_DEPTH:
                            raise ValueError(f"checker: a {status.name} condition is {d} stages after the "
                                             f"command, deeper than the range sums ({SUM_DEPTH})")
                        for j in range(SUM_DEPTH - d):
                            c = stage(m, c, f"cond_{status.name.lower()}_{k}_{d + j + 1}")
                        conds.append(c)
                    failing[status] = Signal(name=f"fail_{status.name.lower()}", reset_less=True)
                    m.d.sync += failing[status].eq(Cat(conds).any())
                    every += conds
                    continue
                plain = [c for c in fail[status] if not uses_stage(Value.cast(c))]
                late = [c for c in fail[status] if uses_stage(Value.cast(c))]
                early = [stage(m, c, f"cond_{status.name.lower()}_{k}") for k, c in enumerate(plain)]
                failing[status] = Signal(name=f"fail_{status.name.lower()}", reset_less=True)
                m.d.sync += failing[status].eq(Cat(early + late).any())
        m.d.comb += self.status.eq(Status.OK)
        for status in reversed(CHECK_ORDER):   # last assignment wins: walk from lowest priority up
            if status in failing:
                with m.If(failing[status]):
                    m.d.comb += self.status.eq(status)
        if self._pipelined:
            ok = Signal(name="pass_all", reset_less=True)
            m.d.sync += ok.eq(~Cat(every).any())
            m.d.comb += self.ok.eq(ok)
        else:
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
                tile_checks(m, self._config, fail, cmd, name, used)
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
