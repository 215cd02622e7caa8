"""The contract between the command front end and an engine."""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.isa import Command, Status
from rtl.lib.axi import Axi4Signature
from rtl.ub.buffer import UbReadSignature, UbWriteSignature

__all__ = ["EngineSignature"]


class EngineSignature(wiring.Signature):
    """What every engine exposes, as seen from the engine.

    ``cmd`` is the accepted instruction, held stable from ``start`` until ``done``. ``start`` is a
    one-cycle pulse; the engine answers with a one-cycle ``done`` pulse and ``status`` valid in that
    cycle. ``ub_rd``/``ub_wr`` and ``axi`` reach the shared resources, which the front end hands to one
    engine at a time, from the ``start`` cycle on (so a UB read may be issued with ``start``); an
    engine's UB write enables must be zero while it is idle.

    Speculative start: ``start`` comes while the checker is still deciding (it needs
    ``Checker.LATENCY`` cycles), so that the engine's first UB reads and address arithmetic overlap the
    check. ``go`` rises when the checker has passed the command and stays high until ``done``. Before
    ``go`` an engine may read the UB and compute, but must not write the UB or raise ``arvalid`` /
    ``awvalid`` / ``wvalid`` (the engine bench in tests/rtl checks this on every command). If the
    checker rejects the command, the front end resets the engine instead of raising ``go``: each engine
    runs in a clock domain of its own (``DomainRenamer``: the unit's clock, a reset that is one register
    of the unit's reset or the abort, distributed over a global network on an ECP5), so the whole engine
    returns to idle. An engine may also finish (``done``) before
    ``go``, e.g. on an empty region, provided it wrote nothing.
    """

    def __init__(self, config, *, ub_read_ports=0, ub_write=False, axi=False):
        members = {"cmd": In(Command), "start": In(1), "go": In(1), "done": Out(1), "status": Out(Status)}
        if ub_read_ports:
            members["ub_rd"] = Out(UbReadSignature(config)).array(ub_read_ports)
        if ub_write:
            members["ub_wr"] = Out(UbWriteSignature(config))
        if axi:
            members["axi"] = Out(Axi4Signature(addr_width=config.gm_addr_bits,
                                               data_width=config.axi_data_bits,
                                               id_width=config.axi_id_bits))
        super().__init__(members)
