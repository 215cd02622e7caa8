"""Global-memory models built on cocotbext-axi.

- :class:`ErrorRam`: cocotbext-axi's ``AxiRam`` plus address windows that answer SLVERR, for the AXI
  error tests (cocotbext-axi answers SLVERR when the backing read or write raises).
- :class:`LatencyRam`: the benchmark's memory. A fixed read latency (default 32 cycles) from AR
  acceptance to the first R beat, one AR accepted per cycle, one R beat per cycle, so that outstanding
  reads matter as in a real SoC. cocotbext-axi's ``AxiRamRead`` serves one burst at a time, so its
  read side is replaced here by a pipelined one using cocotbext-axi's own channel models and memory.
"""

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge
from cocotbext.axi import AxiRam
from cocotbext.axi.constants import AxiResp

__all__ = ["ErrorRam", "LatencyRam"]


class ErrorRam(AxiRam):
    """``AxiRam`` whose reads or writes touching a registered window raise, i.e. answer SLVERR."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read_errors = []     # (start, end) byte ranges
        self.write_errors = []
        ram = self
        orig_read, orig_write = self.read_if._read, self.write_if._write

        async def read(address, length):
            if any(a < address + length and address < b for a, b in ram.read_errors):
                raise IOError(f"injected read error at 0x{address:x}")
            return await orig_read(address, length)

        async def write(address, data):
            if any(a < address + len(data) and address < b for a, b in ram.write_errors):
                raise IOError(f"injected write error at 0x{address:x}")
            return await orig_write(address, data)

        self.read_if._read, self.write_if._write = read, write


class LatencyRam(AxiRam):
    """``AxiRam`` with a pipelined read side of fixed latency: the first R beat of a burst is taken
    ``latency`` clock edges after its AR handshake (``latency >= 2``), later only while ``rready`` is
    low or an earlier burst still streams; one beat per cycle."""

    def __init__(self, bus, clock, reset=None, *, latency=32, **kwargs):
        super().__init__(bus, clock, reset, **kwargs)
        self.latency = latency
        self.clock = clock
        read_if = self.read_if
        # Stop the stock one-burst-at-a-time reader; keep its channel objects.
        if read_if._process_read_cr is not None:
            read_if._process_read_cr.kill()
        read_if._handle_reset = lambda state: None
        read_if.ar_channel.queue_occupancy_limit = 1 << 20
        read_if.r_channel.queue_occupancy_limit = 1 << 20
        self._pending = []
        cocotb.start_soon(self._serve())

    #: Edges between putting a beat into cocotbext-axi's R source queue and the DUT sampling it: the
    #: source drives it after the next edge, the DUT takes it at the one after.
    _R_SOURCE_DELAY = 2

    async def _serve(self):
        """Once per edge, after every model has seen it: AR handshakes of this edge get their due edge,
        and bursts that are due go into the R source queue, so that the first R beat is taken exactly
        ``latency`` edges after its AR (cocotb_tests/test_gm_model.py measures it at the unit's ports)."""
        lanes = self.read_if.byte_lanes
        ar_channel, r_channel = self.read_if.ar_channel, self.read_if.r_channel
        cycle = 0
        while True:
            await RisingEdge(self.clock)
            await ReadOnly()
            cycle += 1
            while not ar_channel.empty():
                self._pending.append((cycle + self.latency - self._R_SOURCE_DELAY, ar_channel.recv_nowait()))
            while self._pending and self._pending[0][0] <= cycle:
                _, ar = self._pending.pop(0)
                addr = (int(ar.araddr) // lanes) * lanes
                for n in range(int(ar.arlen) + 1):
                    r = r_channel._transaction_obj()
                    r.rid = int(getattr(ar, "arid", 0))
                    r.rlast = n == int(ar.arlen)
                    r.rresp = AxiResp.OKAY
                    r.rdata = int.from_bytes(self.read(addr + n * lanes, lanes), "little")
                    r_channel.send_nowait(r)
