"""A small AXI4 slave for Amaranth-simulator block tests: byte memory, random stalls on every channel,
and protocol checks (INCR only, size = bus width, no 4 KiB crossing, WLAST on the last beat).

``AxiSlaveModel(axi, width_bytes, *, seed, stall, latency, max_burst)`` serves the master port ``axi``
(add ``read_side`` and ``write_side`` as simulator processes): ``mem`` is 1 MiB of GM from address 0;
``stall`` is the probability that a ready/valid it drives stays low in a cycle (RNG ``seed``); an R
burst starts ``latency`` cycles after its AR at the earliest. ``ar``/``aw`` log (address, beats) of
every AR/AW handshake; ``errors`` collects protocol violations (tests assert it stays empty);
``write_faults``: GM windows whose writes are answered SLVERR."""

import random


class AxiSlaveModel:
    def __init__(self, axi, width_bytes, *, seed=0, stall=0.3, latency=3, max_burst=256, write_faults=(),
                 b_stall=0.0, read_faults=()):
        self.axi, self.W = axi, width_bytes
        self.mem = bytearray(1 << 20)
        self.rng = random.Random(seed)
        self.stall, self.latency, self.max_burst = stall, latency, max_burst
        #: GM windows ``(lo, hi)`` whose writes fail: a burst that writes (strobes) a byte in one is answered
        #: SLVERR (its bytes are still stored: the golden machine calls them undefined). As
        #: ``golden.faults.GmFaults.write``.
        self.write_faults = list(write_faults)
        #: GM windows ``(lo, hi)`` whose reads fail: a beat whose bus word holds a byte of one is answered
        #: SLVERR (with its data). As ``golden.faults.GmFaults.read``.
        self.read_faults = list(read_faults)
        #: The probability that a B response not yet shown waits another cycle (0: each comes in the cycle
        #: after its burst's last W beat, as before; draws from the RNG only when non-zero).
        self.b_stall = b_stall
        #: B handshakes so far.
        self.b_count = 0
        self.ar, self.aw = [], []
        self.errors = []

    def _check_burst(self, addr, length, size, burst):
        W = self.W
        if burst != 1:
            self.errors.append(f"burst type {burst} != INCR")
        if 1 << size != W:
            self.errors.append(f"size {size} is not the bus width")
        if addr % W:
            self.errors.append(f"unaligned burst address {addr:#x}")
        if length + 1 > self.max_burst:
            self.errors.append(f"burst of {length + 1} beats > {self.max_burst}")
        if addr // 4096 != (addr + (length + 1) * W - 1) // 4096:
            self.errors.append(f"burst at {addr:#x} of {length + 1} beats crosses 4 KiB")

    def _ready(self):
        return self.rng.random() >= self.stall

    async def read_side(self, ctx):
        a = self.axi
        pending = []    # [cycle ready, addr, beats]
        cycle = 0
        while True:
            ctx.set(a.arready, self._ready())
            beat = None
            if pending and pending[0][0] <= cycle and self._ready():
                _, addr, left, n = pending[0]
                beat = (addr, left == 1)
                ctx.set(a.rvalid, 1)
                ctx.set(a.rdata, int.from_bytes(self.mem[addr:addr + self.W], "little"))
                ctx.set(a.rlast, left == 1)
                ctx.set(a.rresp, 2 if any(lo < addr + self.W and addr < hi for lo, hi in self.read_faults) else 0)
            else:
                ctx.set(a.rvalid, 0)
            _, _, arv, arr, addr, length, size, burst, rv, rr = await ctx.tick().sample(
                a.arvalid, a.arready, a.araddr, a.arlen, a.arsize, a.arburst, a.rvalid, a.rready)
            cycle += 1
            if arv and arr:
                self._check_burst(addr, length, size, burst)
                self.ar.append((addr, length + 1))
                pending.append([cycle + self.latency, addr, length + 1, 0])
            if rv and rr:
                p = pending[0]
                p[1] += self.W
                p[2] -= 1
                if p[2] == 0:
                    pending.pop(0)

    async def write_side(self, ctx):
        a = self.axi
        bursts, bq = [], []
        shown = False           # bvalid is up (it stays up until its handshake)
        while True:
            ctx.set(a.awready, self._ready())
            ctx.set(a.wready, self._ready() and bool(bursts))
            shown = bool(bq) and (shown or not self.b_stall or self.rng.random() >= self.b_stall)
            ctx.set(a.bvalid, shown)
            ctx.set(a.bresp, bq[0] if bq else 0)
            _, _, awv, awr, addr, length, size, burst, wv, wr, data, strb, last, bv, br = await ctx.tick().sample(
                a.awvalid, a.awready, a.awaddr, a.awlen, a.awsize, a.awburst,
                a.wvalid, a.wready, a.wdata, a.wstrb, a.wlast, a.bvalid, a.bready)
            if bv and br:
                bq.pop(0)
                shown = False
                self.b_count += 1
            if wv and wr:
                b = bursts[0]
                for k in range(self.W):
                    if strb >> k & 1:
                        self.mem[b[0] + k] = data >> (8 * k) & 0xFF
                        b[2] |= any(lo <= b[0] + k < hi for lo, hi in self.write_faults)
                b[0] += self.W
                b[1] -= 1
                if bool(last) != (b[1] == 0):
                    self.errors.append(f"WLAST={last} with {b[1]} beats left")
                if b[1] == 0:
                    bursts.pop(0)
                    bq.append(2 if b[2] else 0)     # SLVERR, or OKAY
            if awv and awr:
                self._check_burst(addr, length, size, burst)
                self.aw.append((addr, length + 1))
                bursts.append([addr, length + 1, False])
