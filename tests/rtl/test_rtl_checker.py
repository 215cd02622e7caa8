"""The hardware checker against golden.check, for every opcode, in both target profiles.

Random commands: a legal command of a random opcode (shapes consistent with that instruction's own rules,
types from its table entry), then 0-3 mutations of single fields towards the edges of the constraints
(reserved type codes, unaligned or out-of-range bases, valid > static, column-major tiles, wrong
shapes, immediates out of range, another opcode). The status must be identical for every command.

* ``test_checker_matches_golden``: the unit's checker (``ENGINES``): instructions with an engine get
  every check; the others answer UNSUPPORTED.
* ``test_common_checks_every_opcode``: the checks built from the instruction table (types, UB placement,
  layouts) for the instructions that have no engine yet too, against ``golden.check(..., special=False)``.
"""

import random

import pytest
from amaranth import C
from amaranth.sim import Simulator

from golden.check import check
from rtl.checker.checker import Checker
from rtl.config import preset
from rtl.isa import (Command, FRONT_END_OPCODES, decode, DType, DTYPE_BYTES, encode, EXPAND_BLOCK_BYTES, INSTRUCTIONS, Layout,
    OobMode, Opcode, Profile, Status, TILE_SLOTS, UB_ALIGN)
from rtl.top import ENGINES

ROUNDS = 2500
GM_LIMIT = 1 << preset("default").gm_addr_bits     # every preset has 32 address bits


def _tile(base, rows, cols, dtype, valid=None, layout=Layout.ROW_MAJOR):
    vr, vc = valid or (rows, cols)
    return {"base": base, "rows": rows, "cols": cols, "valid_rows": vr, "valid_cols": vc, "dtype": dtype,
            "layout": layout}


def _place(rng, shapes):
    """UB bases for tiles of ``(rows, cols, dtype)``, aligned and apart (16 KiB region)."""
    bases, pos = [], rng.randrange(4) * UB_ALIGN
    for r, c, dt in shapes:
        bases.append(pos)
        pos += -(-(r * c * DTYPE_BYTES[dt]) // UB_ALIGN) * UB_ALIGN + rng.choice([0, UB_ALIGN])
    return bases


def _types(rng, ins, profile):
    allowed = sorted(ins.types[profile] or DType, key=lambda d: d.value)
    return rng.choice(allowed)


def _legal(rng, op, profile):
    """A legal command of ``op`` (legal in A5; in A2A3 its types may not be accepted)."""
    ins = INSTRUCTIONS[op]
    r, c = rng.randrange(1, 6), rng.randrange(1, 6)
    cmd = {"opcode": op}
    if op == Opcode.TSYNC:              # no operands: its other fields are left as random as _mutate makes them
        return cmd
    if op in (Opcode.TLOAD, Opcode.TSTORE):
        dt = rng.choice(list(DType))
        slot = "src0" if op == Opcode.TSTORE else "dst"
        cmd[slot] = _tile(64, r + rng.randrange(2), c, dt, (r, c), rng.choice(list(Layout)))
        cmd["gm"] = {"base": 0x1000, "rows": r, "cols": c, "row_stride": 64, "dtype": dt}
    elif op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):
        dt, row = rng.choice(list(DType)), op == Opcode.MGATHER_ROW
        it = rng.choice([DType.INT32, DType.UINT32])
        cmd.update(oob=rng.choice(list(OobMode)), dst=_tile(64, r, c, dt),
                   src0=_tile(1024, r, 1 if row else c, it),
                   gm={"base": 0x1000, "rows": 7, "cols": c, "row_stride": 64, "dtype": dt})
    elif op == Opcode.LOCAL_GATHER:
        dt = rng.choice(list(DType))
        R, X, nepi_log2 = 16 * rng.randrange(1, 3), rng.randrange(1, 3), rng.randrange(4)
        nv = rng.choice([0, rng.randrange(1, 16 * X + 1)])
        width = (nv or 16 * X) << nepi_log2
        b = _place(rng, [(R, width, dt), (R, 12, dt), (R, X, DType.UINT16)])
        cmd.update(nepi_log2=nepi_log2, num_valid=nv, dst=_tile(b[0], R, width, dt),
                   src0=_tile(b[1], R, 12, dt), src1=_tile(b[2], R, X, DType.UINT16))
    elif INSTRUCTIONS[op].golden.startswith("trowexpand"):
        dt = _types(rng, ins, profile)
        mode1 = rng.random() < 0.5
        e = (r, 1) if mode1 else (r, EXPAND_BLOCK_BYTES // DTYPE_BYTES[dt])
        lay = Layout.COL_MAJOR if mode1 else Layout.ROW_MAJOR
        b = _place(rng, [(r, c, dt), (r, c, dt), (r, e[1], dt)])
        full, exp = _tile(b[1], r, c, dt), _tile(b[2], r, e[1], dt, e, lay)
        first, second = (full, exp) if rng.random() < 0.5 else (exp, full)
        cmd.update(dst=_tile(b[0], r, c, dt), src0=first, src1=second)
    elif INSTRUCTIONS[op].golden.startswith("tpart"):
        dt = _types(rng, ins, profile)
        lay = rng.choice(list(Layout)) if profile == Profile.A5 else Layout.ROW_MAJOR
        b = _place(rng, [(r, c, dt)] * 3)
        part = (rng.randrange(r + 1), rng.randrange(c + 1))
        full, partial = _tile(b[1], r, c, dt, None, lay), _tile(b[2], r, c, dt, part, lay)
        first, second = (full, partial) if rng.random() < 0.5 else (partial, full)
        cmd.update(dst=_tile(b[0], r, c, dt, None, lay), src0=first, src1=second)
    else:
        ct, at, bt = rng.choice(sorted(ins.triples[profile], key=lambda t: [x.value for x in t]))
        K, N = rng.randrange(1, 9), rng.randrange(1, 9)
        shapes = [(1, N, ct), (1, K, at), (K, N, bt), (1, N, ct)]
        b = _place(rng, shapes)
        cmd.update(dst=_tile(b[0], 1, N, ct), src0=_tile(b[1], 1, K, at), src1=_tile(b[2], K, N, bt))
        if ins.slot("src2"):
            cmd["src2"] = _tile(b[3], 1, N, ct)
    return cmd


def _mutate(rng, cmd, ub_bytes):
    """``cmd`` with 0-3 single-field changes towards the edges of the constraints."""
    cmd = {k: dict(v) if isinstance(v, dict) else v for k, v in cmd.items()}
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        slots = [s for s in (*TILE_SLOTS, "gm") if s in cmd]
        what = rng.choice(slots + ["opcode", "imm", "edge"])
        if what == "edge":
            _edge(rng, cmd)
            continue
        if what == "opcode":
            cmd["opcode"] = rng.choice([0x05, 0x7F, *Opcode])
            continue
        if what == "imm":
            f = rng.choice(["nepi_log2", "num_valid", "oob"])
            cmd[f] = rng.randrange({"nepi_log2": 8, "num_valid": 8192, "oob": 4}[f])
            continue
        d = cmd[what]
        if what == "gm":
            f = rng.choice(["base", "rows", "cols", "dtype", "row_stride"])
        else:
            f = rng.choice(["base", "rows", "cols", "valid_rows", "valid_cols", "dtype", "dtype", "layout"])
        if f == "dtype":
            d["dtype"] = rng.choice([*DType, 11, 15])
        elif f == "layout":
            d["layout"] = 1 - Layout(d.get("layout", 0)).value
        elif f == "base":
            choices = [8, 40, ub_bytes - 32, 0x1001, 0x1002] if what != "gm" else [0x1001, 0x1002, (1 << 32) - 16]
            d["base"] = rng.choice(choices)
        elif f == "row_stride":
            d["row_stride"] = rng.choice([2, 3, 6, 1 << 30])
        else:
            d[f] = rng.choice([*range(9), 16, 17, 40000])
    return cmd


def _edge(rng, cmd):
    """A change that keeps the earlier checks passing but probes one instruction's own limits."""
    op = cmd["opcode"]
    if not isinstance(op, Opcode):
        return
    if any(s not in cmd for s in INSTRUCTIONS[op].slot_names):
        return                  # the opcode was mutated: its slots are not all there
    if op == Opcode.LOCAL_GATHER:
        X = cmd["src1"]["valid_cols"]
        f = rng.choice(["nepi", "nv", "rows"])
        if f in ("nepi", "nv"):  # keep dst's width consistent, so that only the parameter is wrong
            if f == "nepi":
                cmd["nepi_log2"] = rng.choice([5, 6, 7])
            else:
                cmd["num_valid"] = rng.choice([16 * X, 16 * X + 1, 4096, 4097])
            width = min((cmd.get("num_valid", 0) or 16 * X) << cmd.get("nepi_log2", 0), 65535)
            cmd["dst"].update(base=0, rows=cmd["dst"]["valid_rows"], cols=width, valid_cols=width,
                              dtype=DType.INT8, layout=Layout.ROW_MAJOR)
            cmd["src0"]["dtype"] = DType.INT8
        else:                   # the same valid rows everywhere, not a multiple of 16 (or 0)
            R = rng.choice([0, 1, 15, 17])
            for u in ("dst", "src0", "src1"):
                cmd[u]["valid_rows"] = R
    elif op in (Opcode.TGEMV, Opcode.TGEMV_ACC, Opcode.TGEMV_BIAS):
        cmd["dst"]["valid_rows"] = cmd["src0"]["valid_rows"] = rng.choice([0, 2])
    elif "gm" in cmd:
        if rng.random() < 0.5:
            cmd["gm"]["rows"] = rng.choice([0, 1, 1 << 31])
        else:
            _gm_end_edge(rng, cmd)


def _gm_end_edge(rng, cmd, choose=True):
    """A GM base that puts the last byte one element before, at or one element past the end of the
    address space (the range checks' multiplies and compares at their edge); ``choose``: first pick
    large rows, columns and stride (otherwise the command's are kept)."""
    op, gm = cmd["opcode"], cmd["gm"]
    dt = cmd["dst"]["dtype"] if op in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM) else gm["dtype"]
    if not isinstance(dt, DType):
        return
    size = DTYPE_BYTES[dt]
    if choose:
        gm["row_stride"] = size * rng.choice([1, 3, 1 << 10, (1 << 16) + 1, (1 << 26) - 1])
        if op == Opcode.MGATHER_ELEM:
            gm.update(rows=rng.choice([1, 7, 1 << 12, (1 << 16) + 3]), cols=rng.choice([1, 5, (1 << 14) + 1]))
        elif op == Opcode.MGATHER_ROW:
            gm["rows"] = rng.choice([1, 2, 1 << 10, (1 << 20) + 1])
    if op == Opcode.MGATHER_ELEM:
        span = gm["rows"] * gm["cols"] * size
    else:
        lines, elems = gm["rows"], gm["cols"]
        if op in (Opcode.TLOAD, Opcode.TSTORE):     # lines follow the tile's layout
            tile = cmd["src0" if op == Opcode.TSTORE else "dst"]
            if tile.get("layout", Layout.ROW_MAJOR) == Layout.COL_MAJOR:
                lines, elems = elems, lines
        span = (lines - 1) * gm["row_stride"] + elems * size
    gm["base"] = max(0, GM_LIMIT - span + size * rng.choice([-1, 0, 1]))


def _commands(rng, ops, profile, ub_bytes, n=ROUNDS):
    return [decode(Command, encode(Command, _mutate(rng, _legal(rng, rng.choice(ops), profile), ub_bytes)))
            for _ in range(n)]


def _compare(dut, cmds, want_of):
    """Drive every command into the checker; its status must be ``want_of(cmd)``. Returns the statuses."""
    seen = set()

    async def bench(ctx):
        for cmd in cmds:
            # as the front end drives it: the command on ``cmd`` at the edge that takes it (``load``
            # high), then held inside (``cmd`` changes, ``load`` low) for the checker's pipeline
            ctx.set(dut.load, 1)
            ctx.set(dut.cmd.as_value(), encode(Command, cmd))
            await ctx.tick()
            ctx.set(dut.load, 0)
            ctx.set(dut.cmd.as_value(), 0)
            await ctx.tick().repeat(Checker.LATENCY)        # the checker's pipeline
            got, ok, want = ctx.get(dut.status), ctx.get(dut.ok), want_of(cmd)
            assert got == want, f"checker {got}, golden {want} for {cmd}"
            assert ok == (want == Status.OK)
            seen.add(want)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return seen


def _compare_pipelined(dut, cmds, want_of, seed):
    """Drive the commands into a pipelined checker (``Checker(pipelined=True)``) as the concurrent front end
    does at full rate: one per cycle, with a gap of 1-3 cycles now and then (``load`` low, junk on ``cmd``);
    the status in the cycle after edge ``t + LATENCY`` must be that of the command taken at edge ``t``."""
    rng = random.Random(seed)
    taken = []                    # per cycle: the command taken at that cycle's edge, or None

    async def feed(ctx):
        for cmd in cmds:
            while rng.random() < 0.15:
                ctx.set(dut.load, 0)
                ctx.set(dut.cmd.as_value(), rng.getrandbits(Command.size))
                taken.append(None)
                await ctx.tick()
            ctx.set(dut.load, 1)
            ctx.set(dut.cmd.as_value(), encode(Command, cmd))
            taken.append(cmd)
            await ctx.tick()
        ctx.set(dut.load, 0)
        for _ in range(Checker.LATENCY + 1):
            taken.append(None)
            await ctx.tick()

    checked = []

    async def watch(ctx):
        cycle = 0
        while cycle < len(cmds) * 4:
            await ctx.tick()
            # now in the cycle after edge ``cycle``: the verdict on the command of edge ``cycle - LATENCY``
            k = cycle - Checker.LATENCY
            if 0 <= k < len(taken) and taken[k] is not None:
                cmd = taken[k]
                got, ok, want = ctx.get(dut.status), ctx.get(dut.ok), want_of(cmd)
                assert got == want, f"pipelined checker {got}, golden {want} for {cmd}"
                assert ok == (want == Status.OK)
                checked.append(want)
            cycle += 1
            if len(checked) == len(cmds):
                return

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(feed)
    sim.add_testbench(watch, background=True)
    sim.run()
    assert len(checked) == len(cmds)
    return set(checked)


@pytest.mark.parametrize("profile", ["default", "a2a3"])
def test_pipelined_checker_matches_golden(profile):
    """The concurrent front end's checker (``pipelined``) at a command per cycle: every status equals
    golden.check's, the sweep's commands back to back (so each stage holds another command)."""
    cfg = preset(profile)
    supported = [op for engine in ENGINES for op in engine.opcodes] + sorted(FRONT_END_OPCODES, key=lambda o: o.value)
    rng = random.Random(f"pipelined-{profile}")
    cmds = _commands(rng, list(Opcode), cfg.profile, cfg.ub_bytes, n=1500)
    for op in (Opcode.TLOAD, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM):     # the GM range sums at their edge
        for _ in range(40):
            cmd = _legal(rng, op, cfg.profile)
            _gm_end_edge(rng, cmd)
            cmds.append(decode(Command, encode(Command, cmd)))
    rng.shuffle(cmds)
    seen = _compare_pipelined(Checker(cfg, ENGINES, pipelined=True), cmds, lambda cmd: check(cmd, cfg, supported),
                              profile)
    expected = {Status.OK, Status.UNKNOWN_OPCODE, Status.GM_OUT_OF_RANGE, Status.UB_OUT_OF_RANGE}
    for op in supported:
        expected |= set(INSTRUCTIONS[op].statuses(cfg.profile))
    assert expected <= seen, f"never produced: {sorted(s.name for s in expected - seen)}"


def test_pipelined_checker_names_a_mixed_condition():
    """An engine check whose condition mixes a staged value with the command (fine while the command is
    held) is an elaboration error in a pipelined checker, naming the status; the same check builds in a
    checker that holds its command."""
    from rtl.checker.stages import stage

    class Mixed:
        opcodes = (Opcode.TLOAD,)

        @staticmethod
        def add_checks(m, config, cmd, fail):
            fail[Status.SHAPE_MISMATCH].append(stage(m, cmd.dst.rows == 0) & (cmd.dst.cols == 0))

    from amaranth.back import rtlil
    rtlil.convert(Checker(preset("small"), (Mixed,)))
    with pytest.raises(ValueError, match="SHAPE_MISMATCH condition mixes"):
        rtlil.convert(Checker(preset("small"), (Mixed,), pipelined=True))


@pytest.mark.parametrize("profile", ["default", "a2a3"])
def test_checker_matches_golden(profile):
    cfg = preset(profile)
    supported = [op for engine in ENGINES for op in engine.opcodes] + sorted(FRONT_END_OPCODES, key=lambda o: o.value)
    rng = random.Random(profile)
    seen = _compare(Checker(cfg, ENGINES), _commands(rng, list(Opcode), cfg.profile, cfg.ub_bytes),
                    lambda cmd: check(cmd, cfg, supported))
    # The sweep must reach every status the supported instructions can answer, not just the first checks.
    expected = {Status.OK, Status.UNKNOWN_OPCODE}
    if set(supported) != set(Opcode):
        expected.add(Status.UNSUPPORTED)
    for op in supported:
        expected |= set(INSTRUCTIONS[op].statuses(cfg.profile))
    assert expected <= seen, f"never produced: {sorted(s.name for s in expected - seen)}"


class _TableOnly:
    """A stand-in engine for the instructions without one: only the table's common checks apply."""
    opcodes = tuple(op for op in Opcode if op not in {o for e in ENGINES for o in e.opcodes} | FRONT_END_OPCODES)

    @staticmethod
    def add_checks(m, config, cmd, fail):
        pass


@pytest.mark.parametrize("profile", ["default", "a2a3"])
def test_common_checks_every_opcode(profile):
    cfg = preset(profile)
    if not _TableOnly.opcodes:
        pytest.skip("every opcode has an engine")
    engine_ops = {o for e in ENGINES for o in e.opcodes}
    rng = random.Random(f"common-{profile}")
    cmds = _commands(rng, list(_TableOnly.opcodes), cfg.profile, cfg.ub_bytes)

    def want(cmd):
        special = isinstance(cmd["opcode"], Opcode) and cmd["opcode"] in engine_ops
        return check(cmd, cfg, special=special)

    seen = _compare(Checker(cfg, (*ENGINES, _TableOnly)), cmds, want)
    common = {Status.OK, Status.DTYPE_INVALID, Status.DTYPE_UNSUPPORTED, Status.DTYPE_MISMATCH,
              Status.UB_MISALIGNED, Status.UB_OUT_OF_RANGE, Status.VALID_EXCEEDS_STATIC,
              Status.LAYOUT_UNSUPPORTED}
    assert common <= seen, f"never produced: {sorted(s.name for s in common - seen)}"


def test_table_covers_every_opcode():
    """Every opcode has a table entry whose slots are command fields, and whose statuses are in order."""
    from rtl.isa import CHECK_ORDER
    for op, ins in INSTRUCTIONS.items():
        assert ins.opcode == op
        assert all(s.name in TILE_SLOTS for s in ins.slots), op
        st = ins.statuses()
        assert list(st) == sorted(st, key=CHECK_ORDER.index)


@pytest.mark.parametrize("op", [Opcode.TLOAD, Opcode.TSTORE, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM])
def test_gm_range_at_the_edge(op):
    """The GM range checks (the registered partial products of ``rtl.checker.stages.stage_product`` and the
    saturating adds of ``exceeds``) at the end of the address space: every factor at the 16-bit piece
    boundaries and beyond, the last byte one element before, at and past the limit."""
    cfg = preset("default")
    supported = [o for engine in ENGINES for o in engine.opcodes]
    rng = random.Random(str(op))
    cmds = []
    for dt in (DType.INT8, DType.FP16, DType.FP32):
        for _ in range(60):
            cmd = _legal(rng, op, cfg.profile)
            cmd["src0" if op == Opcode.TSTORE else "dst"]["dtype"] = dt   # MGATHER's src0: the indices
            cmd["gm"]["dtype"] = dt
            gm = cmd["gm"]
            if op == Opcode.MGATHER_ELEM:
                gm.update(rows=rng.choice([1, 3, 0xFFFF, 1 << 16, (1 << 16) + 1, (1 << 31) + 5]),
                          cols=rng.choice([1, 0xFFFF, 1 << 16, (1 << 30) - 1, 1 << 30]))
            elif op == Opcode.MGATHER_ROW:
                gm.update(rows=rng.choice([1, 2, 0xFFFF, 1 << 16, (1 << 16) + 2, (1 << 31) + 1]),
                          row_stride=DTYPE_BYTES[dt] * rng.choice([1, 0xFFFF, 1 << 16, (1 << 29) - 1]))
            else:
                gm["row_stride"] = DTYPE_BYTES[dt] * rng.choice([1, 0xFFFF, 1 << 16, (1 << 29) - 1])
            _gm_end_edge(rng, cmd, choose=False)
            cmds.append(decode(Command, encode(Command, cmd)))
    seen = _compare(Checker(cfg, ENGINES), cmds, lambda cmd: check(cmd, cfg, supported))
    assert {Status.OK, Status.GM_OUT_OF_RANGE} <= seen


def _lg_mutate(rng, cmd):
    """``cmd`` with a few fields bent towards the edges of LOCAL_GATHER's constraints."""
    cmd = {**cmd, **{s: dict(cmd[s]) for s in ("dst", "src0", "src1")}}
    for _ in range(rng.choice([1, 1, 2, 3])):
        slot = rng.choice(["dst", "src0", "src1"])
        t = cmd[slot]
        f = rng.choice(["dtype", "layout", "base", "rows", "cols", "valid_rows", "valid_cols", "nepi_log2",
                        "num_valid", "shape16", "rows16"])
        if f == "dtype":
            t["dtype"] = rng.choice([*DType, 11, 15])
        elif f == "layout":
            t["layout"] = 1
        elif f == "base":
            t["base"] = rng.choice([t["base"] + 16, t["base"] + 8, (1 << 24) - 32, 4096 - 32, 1 << 20])
        elif f in ("rows", "cols", "valid_rows", "valid_cols"):
            t[f] = rng.choice([0, 1, 15, 16, 17, 32, 257, t[f] + 1, max(t[f] - 1, 0), rng.randrange(65536)])
        elif f == "nepi_log2":
            cmd["nepi_log2"] = rng.randrange(8)
        elif f == "num_valid":
            cmd["num_valid"] = rng.choice([1, 4095, 4096, 4097, 8191, 16 * t["valid_cols"],
                                           16 * t["valid_cols"] + 1, rng.randrange(8192)]) % 8192
        elif f == "rows16":     # the same valid rows everywhere, not a multiple of 16 (or 0)
            R = rng.choice([0, 1, 15, 17, 31])
            for u in ("dst", "src0", "src1"):
                cmd[u]["valid_rows"] = R
                cmd[u]["rows"] = max(cmd[u]["rows"], R)
        else:       # a consistent shape with many indices per group
            X = rng.choice([255, 256, 257, 300])
            cmd["num_valid"] = rng.choice([0, 0, 4096])
            n = cmd["num_valid"] or 16 * X
            cmd["src1"].update(cols=X, valid_cols=X)
            width = min(n << cmd["nepi_log2"], 65535)
            cmd["dst"].update(cols=width, valid_cols=width)
    return cmd


def test_checker_local_gather_edges():
    """LOCAL_GATHER's own limits, probed harder: the checker equals golden.check on near-legal commands
    from the local_gather block test's generator, bent by :func:`_lg_mutate`."""
    from test_rtl_local_gather import _tile, random_command
    supported = [op for e in ENGINES for op in e.opcodes]
    for preset_name in ("small", "a2a3"):
        config = preset(preset_name)
        rng = random.Random(7)
        cmds = []
        while len(cmds) < 1500:
            c = random_command(rng, config.ub_bytes)
            if c is not None:
                cmds.append(_lg_mutate(rng, c[0]) if rng.random() < 0.9 else c[0])
        for X, nv, R in ((256, 0, 0), (257, 0, 0), (256, 4096, 0), (257, 4097, 0), (257, 4096, 0), (256, 0, 16)):
            n = nv or 16 * X
            cmds.append({"opcode": Opcode.LOCAL_GATHER, "nepi_log2": 0, "num_valid": nv,
                         "dst": _tile(0, max(R, 1), n, DType.INT8, (R, n)),
                         "src0": _tile(8192, max(R, 1), 64, DType.INT8, (R, 64)),
                         "src1": _tile(16384, max(R, 1), X, DType.UINT16, (R, X))})
        seen = _compare(Checker(config, ENGINES), cmds, lambda cmd: check(cmd, config, supported))
        missing = {Status.OK, Status.DTYPE_INVALID, Status.DTYPE_MISMATCH, Status.INDEX_DTYPE, Status.UB_MISALIGNED,
                   Status.UB_OUT_OF_RANGE, Status.VALID_EXCEEDS_STATIC, Status.LAYOUT_UNSUPPORTED,
                   Status.SHAPE_MISMATCH, Status.PARAM_INVALID, Status.DIM_OUT_OF_RANGE} - seen
        assert not missing, f"statuses never produced: {missing}"


@pytest.mark.parametrize("limit", [1 << 32, 4096, 65536, 12345])
def test_exceeds_saturating_sum(limit):
    """``rtl.checker.stages.exceeds`` (the range checks' carry-save compare) equals ``sum(terms) > limit`` at and
    around the limit and for terms far beyond it, two clock edges after the terms (the command's terms
    are registered in stage 1, a term that is already a stage-1 register, here ``c``, is not; the
    carry-save vectors in stage 2)."""
    from amaranth import Module, Signal
    from rtl.checker.stages import exceeds, stage
    m = Module()
    a, b, c_in = Signal(64), Signal(48), Signal(20)
    c = stage(m, c_in)
    out = Signal()
    m.d.comb += out.eq(exceeds(m, [a, b, c], limit))
    rng = random.Random(5)
    near = [0, 1, limit - 1, limit, limit + 1, (1 << 33) - 1, 1 << 33, (1 << 34) + 5]
    cases = [(rng.choice(near + [rng.randrange(1 << 64)]) % (1 << 64), rng.choice(near) % (1 << 48),
              rng.randrange(1 << 20)) for _ in range(400)]
    cases += [(limit - 10, 4, 6), (limit - 10, 4, 7), (0, 0, 0), ((1 << 64) - 1, (1 << 48) - 1, (1 << 20) - 1)]

    cases += [(limit - 1, 0, 0), (limit, 0, 0), (limit + 1, 0, 0), (0, limit % (1 << 48), 1),
              (limit // 2, limit - limit // 2, 0), (limit // 2, limit - limit // 2, 1)]

    async def bench(ctx):
        for x, y, z in cases:
            ctx.set(a, x)
            ctx.set(b, y)
            ctx.set(c_in, z)
            await ctx.tick().repeat(2)          # stage 1: the terms; stage 2: the carry-save vectors
            assert ctx.get(out) == (x + y + z > limit), (x, y, z)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.parametrize("wa, wb", [(16, 32), (17, 16), (32, 32)])
def test_stage_product_terms(wa, wb):
    """``rtl.checker.stages.stage_product``: the registered partial products of a ``wa`` x ``wb`` multiply sum
    to the product two clock edges later (operands, products), and ``exceeds`` over them (with other
    terms) is the range check of the whole sum one edge after that (how the GM range checks use them)."""
    from amaranth import Module, Signal
    from rtl.checker.stages import checker_context, exceeds, stage_product
    limit = 1 << 32
    m = Module()
    a, b, base = Signal(wa), Signal(wb), Signal(40)
    with checker_context(None, C(1, 1)):      # the factors are the functions' own signals here
        terms = stage_product(m, lambda _: a, lambda _: b)
    assert len(terms) == (1 if wa <= 18 else wa // 16) * (1 if wb <= 18 else wb // 16)
    total = Signal(wa + wb)
    m.d.comb += total.eq(sum(terms))
    over = Signal()
    m.d.comb += over.eq(exceeds(m, [base, *terms], limit))   # the command's base: exceeds registers it
    rng = random.Random(7)
    def edge(w):
        return [0, 1, (1 << w) - 1, 1 << (w - 1), 0xFFFF & ((1 << w) - 1), rng.randrange(1 << w)]
    cases = [(rng.choice(edge(wa)), rng.choice(edge(wb)),
              rng.choice([0, limit - 1, limit, rng.randrange(1 << 40)])) for _ in range(300)]
    # around the limit: base + a * b = limit - 1, limit, limit + 1
    for _ in range(50):
        x, y = rng.randrange(1, 1 << wa), rng.randrange(1, 1 << wb)
        p = x * y
        if p < limit:
            cases += [(x, y, limit - p + d) for d in (-1, 0, 1)]

    async def bench(ctx):
        for x, y, z in cases:
            ctx.set(a, x)
            ctx.set(b, y)
            ctx.set(base, z)
            await ctx.tick().repeat(2)
            assert ctx.get(total) == x * y, (x, y)            # the operands, then the products
            await ctx.tick()
            assert ctx.get(over) == (z + x * y > limit), (x, y, z)    # the sum's vectors

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
