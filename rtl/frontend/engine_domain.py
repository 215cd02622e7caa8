"""An engine in a clock domain of its own, so that the front end can return it to idle in one step: the
speculative start (an engine starts while the checker decides, ``rtl.engines.base.EngineSignature``) is
undone by resetting the engine when the checker rejects the command. Both front ends use it
(``rtl.top.VectorUnit``, ``rtl.frontend.pipe_front.PipeFrontEnd`` through ``rtl.concurrent``)."""

from amaranth import *
from amaranth.hdl import ClockDomain, DomainRenamer

from rtl.fpga import global_net

__all__ = ["ABORT_RESET_CYCLES", "RESET_REGISTER_CYCLES", "engine_domain", "front_domain"]

#: Cycles from the unit's reset to an engine's and to the concurrent front end's: each domain's reset is
#: a register of its own (on an ECP5 over a global network), so they leave reset together, this many
#: cycles after the unit.
RESET_REGISTER_CYCLES = 1

#: Edges from the cycle an ``abort`` is high to the first cycle the engine is in reset: ``abort`` through a
#: register of its own, then the reset register. An engine given ``start`` in that cycle or later starts
#: from idle; the front end must not give it ``start`` for the cycle between (the abort register's).
ABORT_RESET_CYCLES = 2


def engine_domain(m, engine, name, abort, platform):
    """``engine`` in a clock domain of its own (``<name>``: the unit's clock, its own reset), returned for
    ``m.submodules``. The reset is one register, ``rst_<name>`` = the unit's reset or ``abort`` (the checker
    rejected the command the engine started on: the engine has only read the UB), through a register of its
    own, so the engine is in reset :data:`ABORT_RESET_CYCLES` cycles after the cycle of ``abort``, and
    :data:`RESET_REGISTER_CYCLES` after the unit. That register reaches every resettable flip-flop of the
    engine, thousands: on an ECP5 it drives them over a global network (:func:`rtl.fpga.global_net`)."""
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


def front_domain(m, front, platform):
    """The concurrent unit's front end (``rtl.frontend.pipe_front.PipeFrontEnd``) in a clock domain of its own,
    ``front`` (the unit's clock), returned for ``m.submodules`` with the register of its reset, ``rst_front``:
    the unit's reset through that register (:data:`RESET_REGISTER_CYCLES`), on an ECP5 over a global network,
    so that it leaves reset in the same cycle as the engines. The unit's reset reached the front end's
    flip-flops over the fabric from wherever the reset comes from (12.5 ns, 0 logic, at a placement seed of
    ``ecp5_concurrent``). In the cycle after the unit's reset the front end is still in reset: the unit's
    command port must not take a command while ``rst_front`` is high."""
    rst = Signal(init=1, reset_less=True, name="rst_front")
    m.d.sync += rst.eq(ResetSignal())
    m.domains += ClockDomain("front")
    m.d.comb += [ClockSignal("front").eq(ClockSignal()),
                 ResetSignal("front").eq(global_net(m, rst, platform, "rst_front_net"))]
    return DomainRenamer({"sync": "front"})(front), rst
