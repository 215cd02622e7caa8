"""Constrained-random PTO programs over every instruction: legal and illegal instructions (an illegal one carries
``expect = #pto.status<...>`` with the status the checks answer, so the program still assembles), overlapping
tiles (explicit ``pto.tassign`` at a source's address: identical in-place operands and partial overlaps with
undefined results), edge shapes (1 x 1, empty valid regions, full static shapes, both layouts), chained
results.

``python -m sim fuzz [--seed S] [--count N] [--sim none|icarus|verilator] [--config small] [--out DIR]``: runs
``N`` programs; every failing one is written as ``DIR/fuzz_<seed>.pto`` with its inputs ``fuzz_<seed>.npz``, which
``python -m sim run DIR/fuzz_<seed>.pto --data DIR/fuzz_<seed>.npz`` replays. Exits non-zero when any failed.
``--faults``: GM windows that answer AXI errors in 2 of 3 programs (:func:`place_faults`; the golden predicts the
statuses and what they leave undefined); such a program replays as ``python -m sim fuzz --seed S --count 1
--faults`` with the same other options. A program that fails in a ``--back-to-back`` stream replays as the
batch it ran in, from the batch's first seed as far as that program (the line a failure prints: what ran
before it in the same simulation is part of the failure).
"""

import argparse
import pathlib
import random
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from rtl.isa import DType, DTYPE_BYTES, INSTRUCTIONS, Layout, LOCAL_GATHER_GROUP, OobMode, Opcode, Status
from golden.numerics import DTYPE_NUMPY

from sim.programs.cli import user_errors
from pto.errors import AsmError
from pto.builder import Builder
from pto.program import config_from_spec, mnemonic
from pto.types import MemRefType, TileType

__all__ = ["random_program", "place_faults", "run_one", "stream", "StreamResult", "dependencies", "possible_dependencies",
           "dependency_summary", "main"]

ROW, COL = Layout.ROW_MAJOR, Layout.COL_MAJOR


class _Gen:
    def __init__(self, seed, config, ops, n_instrs, dense=False, balanced=False):
        self.dense = dense
        self.balanced = balanced
        self.earlier_tiles, self.earlier_mems = [], []     # (dense) operands and results so far
        self.rng = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.config, self.ops, self.n = config, ops, n_instrs
        self.b = Builder(f"fuzz_{seed}", check=False, locate=False)
        self.inputs = {}
        self.values = []          # (Value) tiles produced so far
        self.k = 0

    # ---- helpers
    def name(self, p):
        self.k += 1
        return f"{p}{self.k}"

    def types(self, op):
        return sorted(INSTRUCTIONS[op].types[self.config.profile], key=lambda d: d.value)

    def bits(self, dtype, shape):
        size = DTYPE_BYTES[dtype]
        u = {1: np.uint8, 2: np.uint16, 4: np.uint32}[size]
        raw = self.np.integers(0, 1 << (8 * size), shape, dtype=np.uint64).astype(u)
        return raw.view(DTYPE_NUMPY[dtype])

    def dim(self, lo=1, hi=8):
        r = self.rng.random()
        return lo if r < 0.15 else hi if r < 0.3 else self.rng.randint(lo, hi)

    def tile_arg(self, t, data=None):
        """An input tile (or, 1 in 4, an earlier result of the same type)."""
        same = [v for v in self.values if v.type.same(t)]
        if same and data is None and self.rng.random() < 0.25:
            return self.rng.choice(same)
        v = self.b.arg(self.name("in"), t)
        self.inputs[v.name] = data if data is not None else self.bits(t.dtype, t.valid)
        return v

    def mem_arg(self, m, data=None):
        v = self.b.arg(self.name("gm"), m)
        self.inputs[v.name] = data if data is not None else self.bits(m.dtype, m.shape)
        return v

    def tile(self, R, C, dt, layout=ROW, static=None):
        """A tile type with valid shape (R, C); its static shape is (R, C) or larger (1 in 3)."""
        if static is None:
            static = (R, C) if self.rng.random() < 0.67 else (R + self.rng.randint(0, 3), C + self.rng.randint(0, 5))
        return TileType(max(static[0], 1), max(static[1], 1), dt, (R, C), layout)

    # ---- one instruction per family: returns (op name, operands, result type, attrs)
    def g_tload(self, op, bad):
        dt = self.rng.choice(self.types(op))
        R, C = self.dim(0 if self.rng.random() < 0.1 else 1), self.dim(1, 24)
        lay = self.rng.choice([ROW, COL])
        ln = C if lay == ROW else R          # line length: a column-major tile's GM lines are its columns
        stride = None if self.rng.random() < 0.6 else ln + self.rng.randint(0, 4)
        m = MemRefType((R, C), dt, stride)   # the tile's valid shape, whatever the layout (docs/pto-as.md)
        if bad == "shape":
            m = MemRefType((R + 1, C), dt, stride)
        if bad == "dtype":
            m = MemRefType(m.shape, self.rng.choice([d for d in DType if d != dt]), stride)
        return "tload", [self.mem_arg(m)], self.tile(R, C, dt, lay), {}

    def g_tstore(self, op, bad):
        dt = self.rng.choice(self.types(op))
        R, C = self.dim(), self.dim(1, 24)
        src = self.tile_arg(self.tile(R, C, dt, self.rng.choice([ROW, COL])))
        m = MemRefType((R, C) if bad != "shape" else (R, C + 1), dt, None)
        return "tstore", [src], m, {}

    def g_mgather(self, op, bad):
        row = op == Opcode.MGATHER_ROW
        dt = self.rng.choice(self.types(op) or [DType.FP32])
        R, C = self.dim(), self.dim(1, 16)
        T = self.rng.choice([1, 2, 7, 16, 33])
        oob = self.rng.choice(list(OobMode))
        size = T if row else T * C
        ishape = (R, 1) if row else (R, C)
        idx = self.np.integers(0, size, ishape)
        if oob != OobMode.UNDEFINED or self.rng.random() < 0.3:
            mask = self.np.random(ishape) < 0.2
            idx[mask] = self.np.integers(size, 2 ** 32 - 1, int(mask.sum()))
        itype = self.rng.choice([DType.INT32, DType.UINT32])
        if bad == "index":
            itype = DType.INT16
        data = idx.astype(np.uint32).view(DTYPE_NUMPY[itype]) if itype != DType.INT16 else idx.astype(np.int16)
        ilay = COL if bad == "layout" else ROW
        it = TileType(ishape[0], ishape[1], itype, ishape, ilay)
        table = MemRefType((T, C if bad != "shape" else C + 1), dt, None)
        dst = TileType(R, C, dt, (R, C), ROW) if not row else self.tile(R, C, dt)
        return mnemonic(op), [self.mem_arg(table), self.tile_arg(it, data)], dst, {"oob": oob}

    def g_local_gather(self, op, bad):
        dt = self.rng.choice(self.types(op))
        groups = self.rng.choice([1, 1, 2])
        R = LOCAL_GATHER_GROUP * groups
        nepi = self.rng.choice([1, 2, 4])
        C = nepi * self.rng.randint(1, 4) + self.rng.randint(0, 2)
        X = self.rng.randint(1, 2)
        n = self.rng.choice([None, self.rng.randint(1, 16 * X)])
        nn = n or 16 * X
        while nn * nepi * R * DTYPE_BYTES[dt] > 1024 and nepi > 1:
            nepi //= 2
        while nn * nepi * R * DTYPE_BYTES[dt] > 1024:
            n = nn = max(1, nn // 2)
        offs = self.np.integers(0, C - nepi + 1, (R, X)).astype(np.uint16)
        if self.rng.random() < 0.1:
            offs[0, 0] = C              # out of range: undefined columns
        attrs = {"num_elem_per_idx": nepi}
        if n:
            attrs["num_valid_indices"] = n
        if bad == "param":
            attrs["num_elem_per_idx"] = 64
        if bad == "rows":
            R -= 1
            offs = offs[:R]
        src = self.tile_arg(TileType(R, C, dt, (R, C)))
        idx = self.tile_arg(TileType(R, X, DType.UINT16, (R, X)), offs)
        dst = TileType(R, nn * nepi + (1 if bad == "shape" else 0), dt)
        return "local_gather", [src, idx], dst, attrs

    def g_trowexpand(self, op, bad):
        dt = self.rng.choice(self.types(op))
        R, C = self.dim(), self.dim(1, 20)
        mode = self.rng.choice([1, 2])
        exp = TileType(R, 1, dt, (R, 1), COL) if mode == 1 else TileType(R, 32 // DTYPE_BYTES[dt], dt)
        if bad == "shape":
            exp = TileType(exp.rows, exp.cols + 1, dt, (R, exp.cols + 1), exp.layout)
        full = self.tile(R, C, dt)
        a, b = self.tile_arg(full), self.tile_arg(exp)
        srcs = [a, b] if self.rng.random() < 0.6 else [b, a]
        dlay = COL if bad == "layout" else ROW
        return mnemonic(op), srcs, self.tile(R, C, dt, dlay), {}

    def g_tpart(self, op, bad):
        dt = self.rng.choice(self.types(op))
        R, C = self.dim(0 if self.rng.random() < 0.1 else 1), self.dim(1, 20)
        lay = lambda: self.rng.choice([ROW, COL])
        full = self.tile(R, C, dt, lay())
        pr, pc = self.rng.randint(0, R), self.rng.randint(0, C)
        if bad == "pattern" and R and C:
            full = full.with_valid((max(R - 1, 0), C))
            pr, pc = R, max(C - 1, 0)
        part = TileType(max(R, 1), max(C, 1), dt, (pr, pc), lay())
        a, b = self.tile_arg(full), self.tile_arg(part)
        srcs = [a, b] if self.rng.random() < 0.5 else [b, a]
        return mnemonic(op), srcs, self.tile(R, C, dt, lay()), {}

    def g_gemv(self, op, bad):
        triples = sorted(INSTRUCTIONS[op].triples[self.config.profile], key=lambda t: tuple(d.value for d in t))
        c, a, b = self.rng.choice(triples)
        K, N = self.dim(1, 16), self.dim(1, 16)
        A = self.tile_arg(TileType(1, K, a), self._gemv_data(a, (1, K)))
        B = self.tile_arg(TileType(K + (1 if bad == "shape" else 0), N, b), self._gemv_data(b, (K + (bad == "shape"), N)))
        ops = [A, B]
        if op == Opcode.TGEMV_ACC:
            ops = [self.tile_arg(TileType(1, N, c), self._gemv_data(c, (1, N)))] + ops
        if op == Opcode.TGEMV_BIAS:
            ops = ops + [self.tile_arg(TileType(1, N, c), self._gemv_data(c, (1, N)))]
        return mnemonic(op), ops, TileType(1, N, c), {}

    def _gemv_data(self, dt, shape):
        np_dt = DTYPE_NUMPY[dt]
        return self.np.integers(-4, 5, shape).astype(np.float32).astype(np_dt) if dt not in (DType.INT8, DType.INT32) \
            else self.np.integers(-4, 5, shape).astype(np_dt)

    def draw_opcode(self):
        """One of ``ops``, uniformly; ``balanced``: its pipe first, uniformly over the pipes ``ops`` has opcodes
        in, then an opcode of that pipe (TSYNC, in no pipe, as often as uniformly). Uniform over every opcode,
        10 of the 18 are the vector pipe's and 1 is UB -> GM's, so most neighbours share a pipe and cannot run
        beside each other; balanced, each pipe is drawn as often as the others."""
        if not self.balanced:
            return self.rng.choice(self.ops)
        piped = [op for op in self.ops if INSTRUCTIONS[op].pipe is not None]
        if not piped or self.rng.random() < (len(self.ops) - len(piped)) / len(self.ops):
            return self.rng.choice([op for op in self.ops if op not in piped])
        pipe = self.rng.choice(sorted({INSTRUCTIONS[op].pipe for op in piped}, key=lambda p: p.value))
        return self.rng.choice([op for op in piped if INSTRUCTIONS[op].pipe == pipe])

    # ---- program
    def build(self):
        fams = {Opcode.TLOAD: self.g_tload, Opcode.TSTORE: self.g_tstore, Opcode.MGATHER_ROW: self.g_mgather,
                Opcode.MGATHER_ELEM: self.g_mgather, Opcode.LOCAL_GATHER: self.g_local_gather}
        bads = {"tload": ["shape", "dtype"], "tstore": ["shape"], "mgather": ["index", "layout", "shape"],
                "local_gather": ["param", "rows", "shape"], "trowexpand": ["shape", "layout"], "tpart": ["pattern"],
                "gemv": ["shape"]}
        for _ in range(self.n):
            op = self.draw_opcode()
            fam = INSTRUCTIONS[op].family
            if op == Opcode.TSYNC:              # the barrier: no operands, nothing to get wrong
                self.b.tsync()
                continue
            if op in fams:
                gen = fams[op]
            elif fam == "elementwise":
                gen = self.g_tpart if Status.VALIDITY_PATTERN in INSTRUCTIONS[op].special else self.g_trowexpand
            else:
                gen = self.g_gemv
            key = {"mgather": "mgather"}.get(fam, fam)
            if gen == self.g_tpart:
                key = "tpart"
            elif gen == self.g_trowexpand:
                key = "trowexpand"
            elif op in (Opcode.TLOAD, Opcode.TSTORE):
                key = op.name.lower()
            bad = self.rng.choice(bads.get(key, [None])) if self.rng.random() < 0.2 else None
            name, operands, rtype, attrs = gen(op, bad)
            v = self.b.op(name, operands, rtype, name=self.name("r"), attrs=attrs)
            if isinstance(rtype, TileType):
                self.values.append(v)
                self._overlap(v, operands)
            if self.dense:
                self._dense(v, operands)
        outs = [v for v in self.values[-2:]] + [i.out for i in self.b.instrs if i.out is not None and i.out.type.kind == "memref"]
        self.b.ret(*outs)
        return self.b.build()

    def _overlap(self, v, operands):
        """1 in 6: place the result over a source (identical, or shifted: a partial overlap), or misaligned."""
        if self.rng.random() > 1 / 6:
            return
        srcs = [o for o in operands if o.type.kind == "tile" and o.buffer.arg and o.buffer.addr is None
                and o.buffer is not v.buffer]
        if not srcs:
            return
        s = self.rng.choice(srcs)
        size = max(s.type.nbytes, v.type.nbytes)
        base = self.rng.randrange(0, max(self.config.ub_bytes // 2 - size, 1), 32)
        self.b.tassign(s, base)
        shift = self.rng.choice([0, 0, 32, 16])
        self.b.tassign(v, base + shift)

    def _dense(self, v, operands):
        """(dense programs) Make this instruction depend on earlier ones through shared bytes, 3 in 5 each: its
        new UB result placed at (or 32 bytes past) the address of an earlier instruction's tile (a write over
        what another pipe read or wrote: WAR / WAW, and RAW for whoever reads it next); its new GM inputs
        (TLOAD's region, MGATHER's table) and its new TSTORE destination placed over an earlier GM region
        (RAW / WAR / WAW through GM). Sequentially this is still one well-defined program: the golden model
        is the reference."""
        earlier = [x for x in self.earlier_tiles if x.buffer.addr is not None or x.buffer.arg]
        for o in operands:              # a new input tile over an earlier tile: reads what another pipe wrote
            if (o.type.kind == "tile" and o.buffer.arg and o.buffer.addr is None and earlier
                    and o not in self.earlier_tiles and self.rng.random() < 0.5):
                e = self.rng.choice([x for x in earlier if x.buffer is not o.buffer] or [None])
                if e is not None:
                    if e.buffer.addr is None:
                        size = max(e.type.nbytes, o.type.nbytes)
                        self.b.tassign(e, self.rng.randrange(0, max(self.config.ub_bytes // 2 - size, 1), 32))
                    self.b.tassign(o, e.buffer.addr)
        tiles = [x for x in self.earlier_tiles if x.buffer is not v.buffer and x not in operands]
        if v.type.kind == "tile" and v.buffer.addr is None and tiles and self.rng.random() < 0.6:
            e = self.rng.choice(tiles)
            if e.buffer.addr is None:
                size = max(e.type.nbytes, v.type.nbytes)
                self.b.tassign(e, self.rng.randrange(0, max(self.config.ub_bytes // 2 - size, 1), 32))
            self.b.tassign(v, e.buffer.addr + self.rng.choice([0, 0, 32]))
        new_mems = [o for o in operands if o.type.kind == "memref" and o.buffer.addr is None]
        if v.type.kind == "memref" and v.buffer.addr is None:
            new_mems.append(v)
        for m in new_mems:
            mems = [x for x in self.earlier_mems if x.buffer is not m.buffer]
            if mems and self.rng.random() < 0.6:
                e = self.rng.choice(mems)
                if e.buffer.addr is None:
                    self.b.tassign(e, DENSE_GM_BASE + 0x1000 * self.rng.randrange(16))
                self.b.tassign(m, e.buffer.addr + self.rng.choice([0, 0, 64]))
        self.earlier_tiles += [o for o in operands if o.type.kind == "tile"] + ([v] if v.type.kind == "tile" else [])
        self.earlier_mems += [o for o in operands if o.type.kind == "memref"] + ([v] if v.type.kind == "memref" else [])


#: (dense) Where explicitly placed GM regions go: apart from the assembler's automatic placement (GM_BASE up).
DENSE_GM_BASE = 0x4000_0000


def random_program(seed, config="small", ops=None, n_instrs=5, dense=False, balanced=False):
    """(Program, inputs) for ``seed``: ``n_instrs`` random instructions over ``ops`` (default: every opcode),
    each illegal one marked with the ``expect`` status the checks give. Retries internally (other sub-seeds)
    when a draw does not fit the UB. ``dense``: also place results and GM regions over earlier instructions'
    (``_Gen._dense``), for dependencies between pipes. ``balanced``: each instruction's pipe drawn first, each
    pipe as often as the others (``_Gen.draw_opcode``)."""
    cfg = config_from_spec(config)
    ops = list(ops or Opcode)
    for attempt in range(50):
        g = _Gen(seed * 1000 + attempt, cfg, ops, n_instrs, dense, balanced)
        try:
            p = g.build()
        except AsmError:
            continue
        p.name = f"fuzz_{seed}"
        p.attrs["config"] = config if isinstance(config, str) else "small"
        try:
            _assemble_expect(p, cfg)
        except AsmError:
            continue
        return p, g.inputs
    raise RuntimeError(f"seed {seed}: no program fits the UB in 50 attempts")


def _assemble_expect(p, cfg):
    """Assemble, first marking every instruction the checks reject with ``expect`` = that status."""
    from pto.assembly import Assembly
    while True:
        try:
            return Assembly(p, cfg)
        except AsmError as e:
            if e.status is None:
                raise
            ins = next(i for i in p.instrs if i.loc is e.loc or (e.loc is None and "expect" not in i.attrs))
            if "expect" in ins.attrs:
                raise
            ins.attrs["expect"] = e.status


#: GM transfers a fault window can be placed in (the testbench's memory answers SLVERR there).
_FAULTABLE = (Opcode.TLOAD, Opcode.TSTORE, Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)


def place_faults(image, config, seed):
    """A :class:`golden.faults.GmFaults` for ``image`` (``Image.faults``), drawn from ``seed``: in 2 of 3 programs
    one or two windows of 1 to 2 bus words' bytes, each inside the GM range of one of its legal transfers (a
    TLOAD's or MGATHER's read: a read window; a TSTORE's lines: a write window), so an AXI error lands mid-program
    and the pipes that follow must go on. An MGATHER table window may miss every row the indices select (then
    nothing fails). Windows the golden cannot decide (``golden.errors.AmbiguousFault``: an MGATHER with an
    undefined result) are dropped."""
    from golden.access import access
    from golden.check import check
    from golden.errors import AmbiguousFault
    from golden.faults import GmFaults
    from sim.programs.run import image_machine
    rng = random.Random(f"faults-{seed}")
    cands = [c for c in image.commands
             if isinstance(c.get("opcode"), Opcode) and c["opcode"] in _FAULTABLE and check(c, config) == Status.OK]
    cands = [(c, span) for c in cands for span in (lambda a: a.gm_reads + a.gm_writes)(access(c)) if span[1] > span[0]]
    if not cands or rng.random() < 1 / 3:
        return GmFaults()
    W = config.axi_data_bytes
    read, write = [], []
    for _ in range(rng.choice((1, 2))):
        c, (lo, hi) = rng.choice(cands)
        at = rng.randrange(lo, hi)
        window = (at, at + rng.randrange(1, 2 * W + 1))
        trial = GmFaults(tuple(read) + ((window,) if c["opcode"] != Opcode.TSTORE else ()),
                         tuple(write) + ((window,) if c["opcode"] == Opcode.TSTORE else ()))
        m = image_machine(image, config, faults=trial)
        try:
            for cmd in image.commands:
                m.execute(cmd, on_undefined="mask")
        except AmbiguousFault:
            continue
        read, write = list(trial.read), list(trial.write)
    return GmFaults(tuple(read), tuple(write))


def _prepare(seed, config, ops, n_instrs, dense=False, balanced=False):
    """(program text, the program parsed back from it, inputs, problems): generate and round-trip through the
    text (parse(print(p)) must equal p)."""
    from pto.parser import parse
    p, inputs = random_program(seed, config, ops, n_instrs, dense, balanced)
    text = p.text()
    q = parse(text, f"fuzz_{seed}.pto")
    problems = [] if q.signature_key() == p.signature_key() else ["the printed program parses to a different program"]
    return text, q, inputs, problems


def _write_failure(out_dir, seed, text, inputs):
    """``out_dir/fuzz_<seed>.pto`` and its inputs ``fuzz_<seed>.npz``; returns the .pto path."""
    from sim.programs.run import npz_safe
    d = pathlib.Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"fuzz_{seed}.pto"
    path.write_text(text)
    np.savez(d / f"fuzz_{seed}.npz", **npz_safe(inputs))
    return path


def run_one(seed, config="small", sim="none", ops=None, n_instrs=5, out_dir=None, dense=False, faults=False,
            balanced=False):
    """Generate, round-trip through the text (parse(print(p)) must equal p), run (``faults``: with
    :func:`place_faults`' windows); on failure write the ``.pto`` and ``.npz`` to ``out_dir``. Returns (ok, report
    or message, program path or None)."""
    from sim.programs.run import run_program
    text, problems, rep, inputs = None, [], None, None
    cfg = config_from_spec(config)
    try:
        text, q, inputs, problems = _prepare(seed, config, ops, n_instrs, dense, balanced)
        rep = run_program(q, inputs, sim=sim, label=f"pto_fuzz_{seed}",
                          faults=(lambda image: place_faults(image, cfg, seed)) if faults else None)
        problems += rep.problems
    except Exception as e:                      # noqa: BLE001 - any failure is a finding
        problems.append(f"{type(e).__name__}: {e}")
    path = None
    if problems and out_dir is not None and text is not None:
        path = _write_failure(out_dir, seed, text, inputs)
    return not problems, (rep, problems), path


def dependencies(commands, config):
    """``Counter`` of ``(older pipe, younger pipe, kind)`` over every ordered pair of ``commands`` (one program's,
    in order) that the checks pass, ``kind`` a hazard of ``golden.access.hazards`` (RAW, WAR, WAW on UB or GM
    bytes): the dependencies a machine running its pipes at once must keep. TSYNC (no pipe) is left out."""
    from collections import Counter
    from golden.access import access, hazards
    from golden.check import check
    out, seen = Counter(), []
    for cmd in commands:
        pipe = INSTRUCTIONS[Opcode(cmd["opcode"])].pipe if isinstance(cmd["opcode"], Opcode) else None
        if pipe is None or check(cmd, config) != Status.OK:
            continue
        a = access(cmd)
        for older_pipe, older in seen:
            for kind in hazards(older, a):
                out[(older_pipe, pipe, kind)] += 1
        seen.append((pipe, a))
    return out


def possible_dependencies():
    """The (older pipe, younger pipe, kind) combinations between two different pipes that can occur at all,
    from what each pipe's instructions read and write (``rtl.isa.INSTRUCTIONS``; a destination counts as
    read, as in ``golden.access``): e.g. nothing but a TSTORE writes GM, so no other pipe has a WAW with it."""
    from rtl.isa import Pipe
    spaces = {}
    for ins in INSTRUCTIONS.values():
        if ins.pipe is None:
            continue
        r, w = spaces.setdefault(ins.pipe, (set(), set()))
        if ins.slots:
            r.add("UB")
        if ins.destination is not None:
            w.add("UB")
        if ins.gm:
            (w if ins.gm_writes else r).add("GM")
    out = set()
    for a in Pipe:
        for b in Pipe:
            if a == b:
                continue
            (ra, wa), (rb, wb) = spaces[a], spaces[b]
            for kind, x, y in (("RAW", wa, rb), ("WAR", ra, wb), ("WAW", wa, wb)):
                if x & y:
                    out.add((a, b, kind))
    return out


def dependency_summary(counts):
    """One line on :func:`dependencies`' counts: each kind's total, and how many of the combinations of
    :func:`possible_dependencies` occurred (the others: a list)."""
    possible = possible_dependencies()
    missing = sorted(f"({a.value}, {b.value}) {k}" for a, b, k in possible if not counts.get((a, b, k)))
    kinds = ", ".join(f"{k} {sum(n for (_, _, kk), n in counts.items() if kk == k)}" for k in ("RAW", "WAR", "WAW"))
    return (f"dependencies {kinds}; across pipes: {len(possible) - len(missing)} of the {len(possible)} possible "
            f"(pipe pair, kind) combinations" + (f" (not met: {'; '.join(missing)})" if missing else ""))


_AXI_ERRORS = (Status.AXI_READ_ERROR.name, Status.AXI_WRITE_ERROR.name)


@dataclass
class StreamResult:
    """What :func:`stream` ran: ``instructions`` (commands executed and compared), ``programs``, ``skipped``
    (seeds whose draws never fitted the UB), ``failures`` [(seed, problems, .pto path)], ``seconds`` (wall),
    ``next_seed``, ``dependencies`` (:func:`dependencies` summed over the programs)."""
    instructions: int = 0
    programs: int = 0
    skipped: int = 0
    failures: list = field(default_factory=list)
    seconds: float = 0.0
    next_seed: int = 0
    dependencies: dict = field(default_factory=dict)
    #: back to back: instructions (in a pipe) that ran while another pipe ran, of ``timed`` (sim.timeline.overlapping)
    overlapped: int = 0
    timed: int = 0
    #: back to back, a unit whose pipes run at once: instructions that started while their pipe's previous one
    #: was still in its engine (``perf__early__*``: ``Config.pipe_overlap``), per pipe
    early: dict = field(default_factory=dict)
    #: instructions that answered an AXI error (``faults``: a GM window placed by :func:`place_faults`)
    faulted: int = 0
    #: per failing seed of a simulator batch: (the batch's first seed, the batch's commands up to and with the
    #: failing program's), what re-runs that batch as far as the failure (:func:`replay_line`)
    batches: dict = field(default_factory=dict)

    @property
    def ok(self):
        return not self.failures


def stream(instructions, seed=0, config="small", sim="verilator", ops=None, n_instrs=8, out_dir=None, batch=1000,
           log=None, dense=False, back_to_back=False, faults=False, balanced=False):
    """Random programs from ``seed`` on until at least ``instructions`` commands have run and been compared.
    With a simulator, the programs go ``batch`` instructions at a time through one simulator run each
    (:func:`sim.programs.run.run_images`: one build, one start-up per batch, each program shadowed by the golden and
    the whole UB compared after every command; ``back_to_back``: each program's commands streamed without a
    pause and compared at the end, and the share of them that overlapped another pipe counted). Stops after
    the batch in which a program failed; failing programs are written to ``out_dir`` as ``.pto`` + ``.npz``.
    ``faults``: each program with :func:`place_faults`' windows (``faulted`` counts the AXI errors answered).
    Returns a :class:`StreamResult`."""
    from sim.programs.run import run_images, run_program
    from sim.timeline import overlapping
    cfg = config_from_spec(config)
    res = StreamResult(next_seed=seed)
    t0 = time.monotonic()
    while res.instructions < instructions and res.ok:
        pending, count = [], 0         # [(seed, text, inputs, image)]
        while count < min(batch, instructions - res.instructions):
            s = res.next_seed
            res.next_seed += 1
            try:
                text, q, inputs, problems = _prepare(s, config, ops, n_instrs, dense, balanced)
            except RuntimeError:                # no draw of this seed fits the UB
                res.skipped += 1
                continue
            if problems:
                res.failures.append((s, problems, _write_failure(out_dir, s, text, inputs) if out_dir else None))
                continue
            image = q.assemble(config).bind(inputs)
            if faults:
                image.faults = place_faults(image, cfg, s)
            for key, n in dependencies(image.commands, cfg).items():
                res.dependencies[key] = res.dependencies.get(key, 0) + n
            if sim == "none":
                rep = run_program(q, inputs, sim="none", faults=(lambda _, f=image.faults: f) if faults else None)
                res.faulted += sum(r.status in _AXI_ERRORS for r in rep.rows)
                res.programs += 1
                res.instructions += len(rep.rows)
                count += len(rep.rows)
                if not rep.ok:
                    res.failures.append((s, rep.problems, _write_failure(out_dir, s, text, inputs) if out_dir else None))
                continue
            pending.append((s, text, inputs, image))
            count += len(image.commands)
        if pending:
            name = config if isinstance(config, str) else "small"
            reports, result = run_images([x[3] for x in pending], cfg, name, sim,
                                         label=f"pto_fuzz_stream_{pending[0][0]}", back_to_back=back_to_back)
            through = 0
            for (s, text, inputs, image), rep in zip(pending, reports):
                through += len(image.commands)
                res.programs += 1
                res.instructions += sum(r.status != "-" for r in rep.rows)
                res.faulted += sum(r.status in _AXI_ERRORS for r in rep.rows)
                if rep.schedule:
                    hit, n = overlapping(rep.schedule)
                    res.overlapped, res.timed = res.overlapped + hit, res.timed + n
                for pipe, n in (rep.early or {}).items():
                    res.early[pipe] = res.early.get(pipe, 0) + n
                if not rep.ok:
                    res.failures.append((s, rep.problems, _write_failure(out_dir, s, text, inputs) if out_dir else None))
                    res.batches[s] = (pending[0][0], through)
            if not reports:
                res.failures.append((pending[0][0], [f"the simulation ran nothing: {result.summary()}"], None))
        if log:
            log(f"{res.instructions} instructions, {res.programs} programs, {len(res.failures)} failed, "
                f"{time.monotonic() - t0:.0f} s")
    res.seconds = time.monotonic() - t0
    return res


def replay_line(a, s, path, batch=None):
    """The command that replays seed ``s``'s failure in a stream run with the options ``a``: back to back, the
    batch it failed in from its first seed as far as the failing program (``batch``:
    ``StreamResult.batches``), since what ran before it in the same simulation is part of what failed (a
    program alone does not always fail again), and, without ``faults``, the written program alone back to
    back (``python -m sim run --back-to-back``, with waves); with ``faults`` the seed alone (the faults are
    drawn from it: the .pto does not have them); else the written program."""
    flags = (f" --instrs {a.instrs} --sim {a.sim} --config {a.config}" + (" --faults" if a.faults else "")
             + (" --dense" if a.dense else "") + (" --balanced" if a.balanced else "")
             + (f" --ops {a.ops}" if a.ops else ""))
    if a.back_to_back and batch is not None:
        first, through = batch
        alone = "" if a.faults or not path else (
            f"; the program alone (it may pass): python -m sim run {path} --data {path.with_suffix('.npz')}"
            f" --back-to-back --sim {a.sim} --config {a.config} --waves")
        return (f" -> replay: python -m sim fuzz --seed {first} --instructions {through} --batch {a.batch}"
                f" --back-to-back" + flags + alone)
    if a.faults:
        return f" -> replay: python -m sim fuzz --seed {s} --count 1" + flags
    return f" -> replay: python -m sim run {path} --data {path.with_suffix('.npz')}" if path else ""


@user_errors
def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m sim fuzz")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--count", type=int, default=20, help="programs (one simulator run each)")
    ap.add_argument("--instructions", type=int, help="instead of --count: programs until at least this many "
                    "instructions have run, --batch instructions per simulator run; stops at the first failure")
    ap.add_argument("--batch", type=int, default=1000, help="with --instructions: instructions per simulator run")
    ap.add_argument("--instrs", type=int, default=5, help="instructions per program")
    ap.add_argument("--sim", default="none", choices=["none", "icarus", "verilator"])
    ap.add_argument("--config", default="small")
    ap.add_argument("--out", default="build/pto/fuzz", help="where failing programs are written")
    ap.add_argument("--dense", action="store_true", help="place results and GM regions over earlier ones: "
                    "dependencies between pipes in every program")
    ap.add_argument("--back-to-back", action="store_true", help="with --instructions: stream each program's "
                    "commands without a pause and compare at its end (statuses, UB, outputs), and report the share "
                    "of instructions that ran while another pipe ran")
    ap.add_argument("--balanced", action="store_true", help="draw each instruction's pipe first, every pipe as "
                    "often as the others, then its opcode (uniform over opcodes, 10 of 18 are the vector pipe's): "
                    "more instructions running beside another pipe's")
    ap.add_argument("--faults", action="store_true", help="GM windows that answer AXI errors in 2 of 3 programs "
                    "(the golden predicts the statuses and what they leave undefined)")
    ap.add_argument("--ops", help="draw only these opcodes (names, comma-separated, e.g. TLOAD,TSTORE,TPARTADD): "
                    "a mix that meets one engine's or pipe's cases more often")
    a = ap.parse_args(argv)
    config_from_spec(a.config, source=f"--config {a.config!r}")
    ops = None
    if a.sim != "none":
        from rtl.top import supported_opcodes
        ops = sorted(supported_opcodes(config_from_spec(a.config)), key=lambda op: op.value)
    if a.ops:
        names = [n.strip().upper() for n in a.ops.split(",") if n.strip()]
        unknown = [n for n in names if n not in Opcode.__members__]
        if unknown or not names:
            ap.error(f"--ops {a.ops!r}: {', '.join(unknown) or 'no name'} is no opcode; opcodes: "
                     f"{', '.join(Opcode.__members__)}")
        chosen = [Opcode[n] for n in names]
        if ops is not None and any(op not in ops for op in chosen):
            ap.error(f"--ops {a.ops!r}: {', '.join(op.name for op in chosen if op not in ops)} not supported by "
                     f"--config {a.config}")
        ops = chosen
    if a.instructions is not None:
        res = stream(a.instructions, a.seed, a.config, a.sim, ops, a.instrs, a.out, a.batch,
                     log=lambda m: print(m, flush=True), dense=a.dense, back_to_back=a.back_to_back,
                     faults=a.faults, balanced=a.balanced)
        for s, problems, path in res.failures:
            print(f"seed {s}: FAIL: {'; '.join(problems)}" + replay_line(a, s, path, res.batches.get(s)))
        print(f"{res.instructions} instructions in {res.programs} programs (seeds {a.seed}..{res.next_seed - 1}, "
              f"{res.skipped} skipped: no draw fits the UB) on {a.sim}/{a.config}: {len(res.failures)} mismatches, "
              f"{res.seconds:.0f} s wall")
        print(dependency_summary(res.dependencies))
        if a.faults:
            print(f"AXI errors answered: {res.faulted} instructions")
        if a.back_to_back:
            share = res.overlapped / res.timed if res.timed else 0.0
            print(f"back to back: {res.overlapped} of {res.timed} instructions ({100 * share:.1f}%) ran while "
                  f"another pipe ran")
            if res.early:
                print("started while their pipe's previous instruction was still in its engine: "
                      + (", ".join(f"{pipe} {n}" for pipe, n in res.early.items() if n) or "none"))
        return 0 if res.ok and res.instructions >= a.instructions else 1
    failed = 0
    for s in range(a.seed, a.seed + a.count):
        ok, (rep, problems), path = run_one(s, a.config, a.sim, ops, a.instrs, a.out, a.dense, a.faults,
                                            a.balanced)
        print(f"seed {s}: {'PASS' if ok else 'FAIL'}" + ("" if ok else f": {'; '.join(problems)} -> {path}"),
              flush=True)
        failed += not ok
    print(f"{a.count - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
