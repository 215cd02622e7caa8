"""rtl/concurrent.py's engine boundary (``_engine_port``) in Amaranth's simulator against a model, in every
cycle of a random run: an engine's ``done``, ``status`` and ``release`` reach the front end a cycle late
(``ENGINE_OUTPUT_REGISTER_CYCLES``), are cleared with the engine's reset (the front end's abort of a
speculative start: no stale ``done`` or ``release`` after it), and the registered ``release`` is masked in
a ``start`` cycle (where the engine has dropped its own ``release`` but the register still shows the cycle
before)."""

import random

from amaranth import *
from amaranth.hdl import ClockDomain
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from rtl.concurrent import ENGINE_OUTPUT_REGISTER_CYCLES, _engine_port
from rtl.isa import Status

#: The engine's side of the boundary (``rtl.engines.base.EngineSignature``'s members that it touches).
ENGINE = wiring.Signature({"cmd": In(8), "start": In(1), "go": In(1),
                           "done": Out(1), "status": Out(Status), "release": Out(1)})
#: The front end's side (``PipeFrontEnd.engines[k]``), seen from the front end.
PORT = wiring.Signature({"cmd": Out(8), "start": Out(1), "go": Out(1), "done": In(1), "status": In(Status)})


def test_engine_boundary_is_a_register_cleared_by_the_abort_and_masked_at_start():
    assert ENGINE_OUTPUT_REGISTER_CYCLES == 1          # the model below is one register deep
    m = Module()
    e, port, front_release, rst = ENGINE.create(), PORT.create(), Signal(), Signal()
    m.domains += ClockDomain("eng")
    m.d.comb += [ClockSignal("eng").eq(ClockSignal()), ResetSignal("eng").eq(rst)]
    _engine_port(m, e, "eng", port, front_release)
    rng = random.Random(33)
    statuses = list(Status)
    seen = {"masked": 0, "released": 0, "cleared": 0}

    async def bench(ctx):
        done_r, status_r, release_r = 0, Status(0), 0      # the model's registers (reset values)
        for cycle in range(3000):
            start, go, cmd = rng.random() < 0.2, rng.random() < 0.3, rng.getrandbits(8)
            done, release = rng.random() < 0.3, rng.random() < 0.6
            status, reset = rng.choice(statuses), rng.random() < 0.05
            ctx.set(port.start, start)
            ctx.set(port.go, go)
            ctx.set(port.cmd, cmd)
            ctx.set(e.done, done)
            ctx.set(e.release, release)
            ctx.set(e.status, status)
            ctx.set(rst, reset)
            # the commands pass through as they are, the engine's answers a register late
            assert (ctx.get(e.start), ctx.get(e.go), ctx.get(e.cmd)) == (start, go, cmd), cycle
            assert ctx.get(port.done) == done_r and ctx.get(port.status) == status_r, cycle
            assert ctx.get(front_release) == (release_r and not start), cycle
            seen["masked"] += release_r and start
            seen["released"] += release_r and not start
            seen["cleared"] += reset and (done or release)
            await ctx.tick()
            done_r, status_r, release_r = (0, Status(0), 0) if reset else (done, status, release)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert min(seen.values()) > 50, seen
