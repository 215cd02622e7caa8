"""Drive a float unit in Amaranth's Python simulator (small smoke checks only: ~10^4 ops/s).

Compiling a unit for the simulator takes longer than most of these checks simulate, so each unit instance
keeps its compiled simulator (reset between runs), and :func:`unit` gives the same instance for the same
class and arguments within a process (:func:`shared_unit`)."""

from amaranth.sim import Simulator

_UNITS = {}


def shared_unit(cls, *args, **kwargs):
    """``cls(*args, **kwargs)``, the same instance for the same arguments in this process (its compiled
    simulator is reused by :func:`run_unit` and :func:`first_valid_cycle`)."""
    key = (cls, args, tuple(sorted(kwargs.items())))
    if key not in _UNITS:
        _UNITS[key] = cls(*args, **kwargs)
    return _UNITS[key]


def _simulate(dut, bench):
    """Run ``bench`` (a testbench) on ``dut``'s simulator: compiled on first use, reset after (the
    testbench is a trampoline to the current ``bench``)."""
    state = getattr(dut, "_amsim", None)
    if state is None:
        sim = Simulator(dut)
        if dut.latency:
            sim.add_clock(1e-6)
        state = {"sim": sim, "bench": None, "used": False}

        async def trampoline(ctx):
            await state["bench"](ctx)
        sim.add_testbench(trampoline)
        dut._amsim = state
    state["bench"] = bench
    if state["used"]:
        state["sim"].reset()
    state["used"] = True
    state["sim"].run()


def run_unit(unit, a, b=None, en_pattern=None):
    """Feed operands one per cycle (with ``in_valid``) and collect ``result`` for each, checking
    that ``out_valid`` marks exactly the results and that they arrive ``unit.latency`` cycles later.
    ``en_pattern``: optional list of 0/1 per cycle driving ``en`` (pipelined units only); a cycle
    with en=0 neither accepts an operand nor advances the pipeline nor delivers a result.
    Returns the results as a list of ints."""
    a = [int(x) for x in a]
    b = None if b is None else [int(x) for x in b]
    out = []
    # operand ports of a structured layout (FPMul unpacked=True) are driven as their bits
    port_a = unit.a.as_value() if hasattr(unit.a, "as_value") else unit.a
    port_b = None if b is None else (unit.b.as_value() if hasattr(unit.b, "as_value") else unit.b)
    L = unit.latency

    if L == 0:
        async def bench(ctx):
            for i in range(len(a)):
                ctx.set(port_a, a[i])
                if b is not None:
                    ctx.set(port_b, b[i])
                ctx.set(unit.in_valid, 1)
                assert ctx.get(unit.out_valid) == 1
                out.append(ctx.get(unit.result))
    else:
        async def bench(ctx):
            i = 0
            cycle = 0
            valid_seen = 0
            while len(out) < len(a):
                en = 1 if en_pattern is None else en_pattern[cycle % len(en_pattern)]
                ctx.set(unit.en, en)
                if i < len(a):
                    ctx.set(port_a, a[i])
                    if b is not None:
                        ctx.set(port_b, b[i])
                    ctx.set(unit.in_valid, 1)
                else:
                    ctx.set(unit.in_valid, 0)
                if en and ctx.get(unit.out_valid):
                    out.append(ctx.get(unit.result))
                    valid_seen += 1
                if en and i < len(a):
                    i += 1
                await ctx.tick()
                cycle += 1
                assert cycle < 10 * (len(a) + L + 10), "pipeline never delivered"
    _simulate(unit, bench)
    return out


def first_valid_cycle(unit):
    """Cycles from the first operand to its ``out_valid`` (measures the latency)."""
    seen = []
    if unit.latency == 0:
        return 0

    async def bench(ctx):
        ctx.set(unit.in_valid, 1)
        await ctx.tick()
        ctx.set(unit.in_valid, 0)
        for c in range(1, 20):
            if ctx.get(unit.out_valid):
                seen.append(c)
                return
            await ctx.tick()
    _simulate(unit, bench)
    return seen[0] if seen else None
