"""An engine in a clock domain of its own, so that the front end can return it to idle in one step: the
speculative start (an engine starts while the checker decides, ``rtl.engines.base.EngineSignature``) is
undone by resetting the engine when the checker rejects the command. Both front ends use it
(``rtl.top.VectorUnit``, ``rtl.frontend.pipe_front.PipeFrontEnd`` through ``rtl.concurrent``)."""

from amaranth import *
from amaranth.hdl import ClockDomain, DomainRenamer

from rtl.fpga import global_net

__all__ = ["ABORT_RESET_CYCLES", "engine_domain"]

#: Edges from the cycle an ``abort`` is high to the first cycle the engine is in reset: ``abort`` through a
#: register of its own, then the reset register. An engine given ``start`` in that cycle or later starts
#: from idle; the front end must not give it ``start`` for the cycle between (the abort register's).
ABORT_RESET_CYCLES = 2


def engine_domain(m, engine, name, abort, platform):
    """``engine`` in a clock domain of its own (``<name>``: the unit's clock, its own reset), returned for
    ``m.submodules``. The reset is one register, ``rst_<name>`` = the unit's reset or ``abort`` (the checker
    rejected the command the engine started on: the engine has only read the UB), through a register of its
    own, so the engine is in reset :data:`ABORT_RESET_CYCLES` cycles after the cycle of ``abort``, and one
    cycle after the unit. That register reaches every resettable flip-flop of the engine, thousands: on an
    ECP5 it drives them over a global network (:func:`rtl.fpga.global_net`)."""
    # the abort through a register of its own first: the verdict (the checker's failure registers, their
    # NOR, the select) and the reset register's reach across the die were one 10.1 ns path (small, seed 2).
    # The engine is reset a cycle later; it has still only read the UB then (no ``go``), and the front end
    # ignores its ``done`` then.
    abort_r = Signal(name=f"abort_r_{name}")
    rst = Signal(init=1, reset_less=True, name=f"rst_{name}")
    m.d.sync += [abort_r.eq(abort), rst.eq(ResetSignal() | abort_r)]
    m.domains += ClockDomain(name)
    m.d.comb += [ClockSignal(name).eq(ClockSignal()),
                 ResetSignal(name).eq(global_net(m, rst, platform, f"rst_{name}_net"))]
    return DomainRenamer({"sync": name})(engine)
