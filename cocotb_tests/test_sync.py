"""TSYNC, the barrier, on the whole unit: answered by the front end with ``OK`` and nothing touched, whatever
its other fields hold; after it, global memory holds every TSTORE issued before it; the unit takes the next
command. (Today's unit runs one instruction at a time, so a barrier has nothing to wait for: these tests
pin down its response and its neutrality, which stay when the pipes run at once.)
"""

import cocotb

from rtl.isa import DType, Opcode, Pipe, Status, gm_region, tile
from rtl.top import VectorUnit

from .harness import Harness

#: TSYNC goes to no engine: the transfer engine is enough for the commands around it.
UNIT_ENGINES = ("transfer",)

SRC, DST = 0x1_0000, 0x2_0000


@cocotb.test()
async def tsync_after_stores(dut):
    """TLOAD, TSTORE, TSYNC: the per-pipe busy counters take the load's and the store's cycles; the barrier
    answers OK in ``VectorUnit.REJECT_CYCLES`` (the checker's verdict
    and the response's register), after the store's GM bytes are written; a TSYNC with arbitrary other
    fields (a misaligned tile of a reserved type) is still OK and changes nothing; neither it nor a rejected
    command counts in any pipe; a TLOAD after them runs."""
    h = await Harness.start(dut, backpressure=True)
    h.gm_write(SRC, bytes(h.rng.randrange(256) for _ in range(1024)))
    t = tile(0x100, 4, 8, DType.INT16, valid=(3, 7))
    load = {"opcode": Opcode.TLOAD, "dst": t, "gm": gm_region(SRC, 3, 7, DType.INT16, 64)}
    store = {"opcode": Opcode.TSTORE, "src0": t, "gm": gm_region(DST + 2, 3, 7, DType.INT16, 40)}
    busy0 = await h.busy_counters()
    r_load, r_store = await h.run(load), await h.run(store)
    assert r_load["status"] == r_store["status"] == Status.OK
    # ``queued``: each engine started in the cycle after its command's acceptance
    assert r_load["queued"] == r_store["queued"] == 1, (r_load, r_store)
    busy1 = await h.busy_counters()
    # the per-pipe counters took each instruction's cycles in its own pipe
    assert {p: busy1[p] - busy0[p] for p in busy0} == {
        Pipe.GM_TO_UB.value: r_load["cycles"], Pipe.UB_TO_GM.value: r_store["cycles"], Pipe.VECTOR.value: 0,
        Pipe.MATRIX.value: 0}, (busy0, busy1)
    rsp = await h.run({"opcode": Opcode.TSYNC, "tag": 0x5A5A})
    assert rsp["status"] == Status.OK and rsp["tag"] == 0x5A5A
    assert rsp["cycles"] == VectorUnit.REJECT_CYCLES, rsp["cycles"]
    assert rsp["queued"] == rsp["cycles"], rsp          # no engine ran it: all of its cycles were a wait
    h.check_gm(DST, 256)                    # the store's bytes are in GM when the barrier answers
    junk = {"opcode": Opcode.TSYNC, "dst": dict(t, base=0x110, dtype=13), "gm": gm_region(SRC + 1, 9, 9, DType.FP32)}
    assert (await h.run(junk))["status"] == Status.OK
    for _ in range(3):                      # back to back
        assert (await h.run({"opcode": Opcode.TSYNC}))["status"] == Status.OK
    bad = await h.run(dict(store, gm=dict(store["gm"], base=DST + 1)))
    assert bad["status"] == Status.GM_MISALIGNED and bad["queued"] == bad["cycles"], bad
    assert await h.busy_counters() == busy1     # TSYNC and a rejected command count in no pipe
    assert (await h.run(dict(load, dst=dict(t, base=0x400))))["status"] == Status.OK
    await h.check_ub()
    h.check_gm(DST, 256)


@cocotb.test()
async def command_in_the_first_cycle_after_reset(dut):
    """A command offered from the first cycle the unit's reset is low (no harness: the ports driven by hand)
    is taken exactly once and answered: a unit whose parts leave reset in different cycles must not be ready
    before the part that takes commands is (a front end reset through a register of the unit's reset, tried
    in the twenty-third session, took the command in that cycle and lost it)."""
    from cocotb.clock import Clock
    from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge

    from rtl.isa import Command, Response, decode, encode
    for name in ("s_axis_cmd__tvalid", "ub_dbg__valid", "m_axi__arready", "m_axi__rvalid", "m_axi__awready",
                 "m_axi__wready", "m_axi__bvalid"):
        if hasattr(dut, name):
            getattr(dut, name).value = 0
    dut.rst.value = 1
    dut.m_axis_rsp__tready.value = 1
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start(start_high=False))
    await ClockCycles(dut.clk, 4)
    await FallingEdge(dut.clk)
    dut.rst.value = 0                       # the first cycle out of reset, and a command offered in it
    dut.s_axis_cmd__tdata.value = encode(Command, {"opcode": Opcode.TSYNC, "tag": 0x1234})
    dut.s_axis_cmd__tvalid.value = 1
    taken, answers = 0, []
    for _ in range(40):
        await RisingEdge(dut.clk)           # (values as the edge samples them)
        if dut.s_axis_cmd__tvalid.value and dut.s_axis_cmd__tready.value:
            taken += 1
            dut.s_axis_cmd__tvalid.value = 0
        if dut.m_axis_rsp__tvalid.value:
            answers.append(decode(Response, int(dut.m_axis_rsp__tdata.value)))
    assert taken == 1, taken
    assert [(a["tag"], a["status"]) for a in answers] == [(0x1234, Status.OK)], answers
