"""The UB debug port (``ub_dbg__*``) and the harness features built on it.

- ``ub_debug_roundtrip``: random bytes loaded through the port, read back through TSTORE and through
  the port; partial, unaligned loads (byte enables); everything against the golden machine.
- ``ub_debug_while_busy``: port accesses issued while a TLOAD runs wait until the unit is idle and
  disturb neither the instruction nor each other.
- ``ub_readback_timing``: wall-clock and CPU seconds of a whole-UB readback through TSTORE and through
  the port, for a low-variety and a random UB image (logged; ``TILEVEC_TIMING_OUT`` names a JSON-lines
  file to append the figures to).
- ``harness_options``: ``Harness.start(config=..., timeout_cycles=...)``: a wrong configuration is
  refused, a command longer than the limit fails with ``HangError``.
"""

import json
import time

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge

from rtl.isa import DType, gm_region, Opcode, Status, tile

from sim.failures import HangError, UbMismatch
from .harness import Harness, params, resolve_config

#: The engines of the unit these tests simulate (``Config.engines``; sim.regress builds it): a
#: unit of only what the tests exercise simulates several times faster.
UNIT_ENGINES = ('transfer',)

GM_IMAGE = 0x0001_0000


@cocotb.test()
async def ub_debug_roundtrip(dut):
    """A random whole-UB image through the port; TSTORE and the port read the same bytes back; then
    partial loads at unaligned addresses keep their neighbours (byte enables), ub_read slices exactly."""
    h = await Harness.start(dut)
    n = h.config.ub_bytes
    image = h.rng.randbytes(n)
    await h.ub_load(0, image)                       # shadowed into the golden UB
    via_port = await h.ub_image(via="port")
    via_tstore = await h.ub_image(via="tstore")
    for how, got in (("port", via_port), ("TSTORE", via_tstore)):
        bad = UbMismatch.compare(0, image, got, context=f"read back through {how}")
        if bad:
            raise bad
    for _ in range(40):
        address = h.rng.randrange(n)
        length = h.rng.randrange(min(n - address, 3 * h.config.ub_word_bytes) + 1)
        await h.ub_load(address, h.rng.randbytes(length))
        start = h.rng.randrange(n)
        size = h.rng.randrange(min(n - start, 100) + 1)
        assert await h.ub_read(start, size) == bytes(h.golden.ub[start:start + size]), (start, size)
    await h.check_ub()
    await h.check_ub(via="tstore")
    # the UB as an instruction sees it: a TLOAD'ed tile, a TSTORE of what the port loaded
    t = tile(0x200, 4, 64, DType.UINT8)
    h.gm_write(GM_IMAGE, h.rng.randbytes(256))
    await h.run({"opcode": Opcode.TLOAD, "dst": t, "gm": gm_region(GM_IMAGE, 4, 64, DType.UINT8)})
    assert await h.ub_read(0x200, 256) == bytes(h.golden.ub[0x200:0x300])
    await h.ub_load(0x400, bytes(range(256)))
    await h.run({"opcode": Opcode.TSTORE, "src0": tile(0x400, 4, 64, DType.UINT8),
                 "gm": gm_region(GM_IMAGE + 0x1000, 4, 64, DType.UINT8)})
    h.check_gm(GM_IMAGE + 0x1000, 256)
    assert h.driver.gm_read(GM_IMAGE + 0x1000, 256) == bytes(range(256))


@cocotb.test()
async def ub_debug_while_busy(dut):
    """Port accesses started while a TLOAD runs (under backpressure) wait for the idle unit: the TLOAD's
    tile, the port's writes elsewhere and the port's reads all end as the golden machine says."""
    h = await Harness.start(dut, backpressure=True)
    n = h.config.ub_bytes
    await h.ub_load(0, h.rng.randbytes(n))
    t = tile(0, 8, 128, DType.UINT8)                  # the first 1 KiB
    h.gm_write(GM_IMAGE, h.rng.randbytes(1024))
    busy = []

    async def watch():
        while True:
            await RisingEdge(dut.clk)
            if dut.ub_dbg__valid.value and not dut.ub_dbg__ready.value:
                busy.append(1)
    watcher = cocotb.start_soon(watch())
    for _ in range(3):
        load = cocotb.start_soon(h.run({"opcode": Opcode.TLOAD, "dst": t,
                                        "gm": gm_region(GM_IMAGE, 8, 128, DType.UINT8)}))
        await ClockCycles(dut.clk, 3)   # the command is in flight
        extra = h.rng.randbytes(512)
        await h.ub_load(n // 2, extra)                   # waits for the idle unit
        assert load.done(), "a debug write went through while the TLOAD was running"
        assert await h.ub_read(n // 2, 512) == extra
        await load
    watcher.cancel()
    assert busy, "the port was never held off"
    await h.check_ub()


@cocotb.test()
async def ub_readback_timing(dut):
    """Seconds of a whole-UB readback through TSTORE and through the port, low-variety and random
    images (the figures are logged; ``TILEVEC_TIMING_OUT``: a file to append them to as JSON)."""
    h = await Harness.start(dut)
    n = h.config.ub_bytes
    figures = {"ub_bytes": n}
    for name, image in (("words", bytes(range(h.config.ub_word_bytes)) * (n // h.config.ub_word_bytes)),
                        ("random", h.rng.randbytes(n))):
        clock = []                       # (wall, CPU) seconds: CPU time is what a busy machine does not skew
        clock.append((time.perf_counter(), time.process_time()))
        await h.ub_load(0, image)
        clock.append((time.perf_counter(), time.process_time()))
        via_tstore = await h.ub_image(via="tstore")
        clock.append((time.perf_counter(), time.process_time()))
        via_port = await h.ub_image(via="port")
        clock.append((time.perf_counter(), time.process_time()))
        assert via_tstore == image and via_port == image
        spans = [[round(b[k] - a[k], 3) for k in (0, 1)] for a, b in zip(clock, clock[1:])]
        figures[name] = dict(zip(("load_port", "readback_tstore", "readback_port"), spans))
        dut._log.info("UB %d B, %s image (wall / CPU s): load through the port %.2f / %.2f, readback "
                      "through TSTORE %.2f / %.2f, through the port %.2f / %.2f", n, name, *sum(spans, []))
    out = params().get("timing_out")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(figures) + "\n")


@cocotb.test()
async def harness_options(dut):
    """``config`` is checked against the unit; ``timeout_cycles`` bounds a command (``HangError``)."""
    import os
    built = os.environ.get("TILEVEC_CONFIG", "small")
    # the check reads port widths: compare with the other preset (an engine subset has the same ports)
    other = "default" if built.split(",")[0] == "small" else "small"
    try:
        await Harness.start(dut, config=other)
    except ValueError as e:
        assert "does not match the simulated unit" in str(e), e
    else:
        raise AssertionError(f"Harness.start accepted config {other!r} on a {built!r} unit")
    h = await Harness.start(dut, config=resolve_config(built), timeout_cycles=20)
    assert h.timeout_cycles == 20
    n = h.config.ub_bytes
    cmd = {"opcode": Opcode.TLOAD, "dst": tile(0, n // 256, 256, DType.UINT8),
           "gm": gm_region(GM_IMAGE, n // 256, 256, DType.UINT8)}
    try:
        await h.driver.execute(cmd)
    except HangError as e:
        assert e.cycles == 20 and e.command["opcode"] == Opcode.TLOAD, (e.cycles, e.command)
        assert "no response within 20 cycles" in str(e) and "TLOAD" in str(e), str(e)
    else:
        raise AssertionError("a whole-UB TLOAD answered within 20 cycles")
    h.timeout_cycles = 100_000
    await h.driver.rsp_sink.recv()          # the TLOAD's response, late
    assert (await h.driver.execute(cmd))["status"] == Status.OK
