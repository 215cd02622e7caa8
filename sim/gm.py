"""Global-memory models built on cocotbext-axi.

- :class:`ErrorRam`: cocotbext-axi's ``AxiRam`` plus address windows that answer SLVERR, for the AXI
  error tests (cocotbext-axi answers SLVERR when the backing read or write raises).
- :class:`LatencyRam`: the benchmark's memory. A fixed read latency (default 32 cycles) from AR
  acceptance to the first R beat, one AR accepted per cycle, one R beat per cycle, so that outstanding
  reads matter as in a real SoC. cocotbext-axi's ``AxiRamRead`` serves one burst at a time, so its
  read side is replaced here by a pipelined one using cocotbext-axi's own channel models and memory.
"""

import cocotb
from cocotb.triggers import RisingEdge
from cocotbext.axi import AxiRam
from cocotbext.axi.axi_channels import AxiARSink, AxiRSource
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
    """``AxiRam`` with a pipelined read side of fixed latency (cycles from AR handshake to first R beat)."""

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
        self._cycle = 0
        self._pending = []
        cocotb.start_soon(self._count())
        cocotb.start_soon(self._accept())
        cocotb.start_soon(self._respond())

    async def _count(self):
        while True:
            await RisingEdge(self.clock)
            self._cycle += 1

    async def _accept(self):
        while True:
            ar = await self.read_if.ar_channel.recv()
            self._pending.append((self._cycle + self.latency, ar))

    async def _respond(self):
        lanes = self.read_if.byte_lanes
        while True:
            await RisingEdge(self.clock)
            while self._pending and self._pending[0][0] <= self._cycle:
                _, ar = self._pending.pop(0)
                addr = (int(ar.araddr) // lanes) * lanes
                for n in range(int(ar.arlen) + 1):
                    r = self.read_if.r_channel._transaction_obj()
                    r.rid = int(getattr(ar, "arid", 0))
                    r.rlast = n == int(ar.arlen)
                    r.rresp = AxiResp.OKAY
                    r.rdata = int.from_bytes(self.read(addr + n * lanes, lanes), "little")
                    await self.read_if.r_channel.send(r)
