"""AXI4 and AXI4-Stream port signatures.

Member names are the AXI signal names, so a top-level port ``m_axi`` becomes ``m_axi__araddr`` etc., which
cocotbext-axi binds with ``from_prefix(dut, "m_axi", bus_separator="__")``.
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["AXLEN_BITS", "Axi4Signature", "AxiStreamSignature", "Burst", "Resp"]

#: AXI4's AxLEN: a burst's beats - 1 (up to 256 beats).
AXLEN_BITS = 8


class Burst:
    FIXED, INCR, WRAP = 0, 1, 2


class Resp:
    OKAY, EXOKAY, SLVERR, DECERR = 0, 1, 2, 3


class Axi4Signature(wiring.Signature):
    """A full AXI4 master interface (``Out`` = driven by the master)."""

    def __init__(self, *, addr_width, data_width, id_width):
        self.addr_width, self.data_width, self.id_width = addr_width, data_width, id_width
        members = {}
        for ch in ("aw", "ar"):
            members.update({
                f"{ch}id": Out(id_width), f"{ch}addr": Out(addr_width), f"{ch}len": Out(AXLEN_BITS),
                f"{ch}size": Out(3), f"{ch}burst": Out(2), f"{ch}lock": Out(1), f"{ch}cache": Out(4),
                f"{ch}prot": Out(3), f"{ch}valid": Out(1), f"{ch}ready": In(1),
            })
        members.update({
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wlast": Out(1),
            "wvalid": Out(1), "wready": In(1),
            "bid": In(id_width), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "rid": In(id_width), "rdata": In(data_width), "rresp": In(2), "rlast": In(1),
            "rvalid": In(1), "rready": Out(1),
        })
        super().__init__(members)


class AxiStreamSignature(wiring.Signature):
    """An AXI4-Stream source (``tdata``/``tvalid`` out, ``tready`` in); flip it for a sink.

    Top-level only: inside the unit every stream is an ``amaranth.lib.stream`` interface.
    """

    def __init__(self, width):
        self.width = width
        super().__init__({"tdata": Out(width), "tvalid": Out(1), "tready": In(1)})
