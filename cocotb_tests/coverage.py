"""Functional coverage of the commands the testbench executes (issue #14), with cocotb-coverage.

Every command that :class:`cocotb_tests.harness.Harness` runs (``run``, ``run_masked``, ``run_axi_error``)
is sampled by :func:`sample` with the RTL's response status, before the golden machine executes it (the
float classes of the operands are read from the golden's UB then). The bins come from the instruction
table (``rtl.isa.INSTRUCTIONS``) for the configuration's profile; a command *executed* when it
passed the checks (status ``OK`` or one found during execution, ``EXEC_STATUSES``):

===============================  ========================================================================
item (``tilevec_<profile>.``)    bins (goal: every bin; a bin is hit by an executed command unless noted)
===============================  ========================================================================
``opcode_dtype.legal``           ``OP/DTYPE`` for every type the table accepts (main slot; GEMV: C)
``status.code``                  every ``Status`` code an instruction of the unit can answer, as the RTL answered it
``mgather.*``                    mode (ROW/ELEM) x ``OobMode`` x index type, and each alone
``trowexpand.*``                 opcode x mode (1/2) x expanded operand (src0/src1), and each alone
``tpart.*``                      opcode x validity pattern (:data:`TPART_PATTERNS`); layout mix dst/src0/src1
``gemv.*``                       variant x (C, A, B) triple of the profile
``float_classes.<family>``       ``DTYPE/slot/class``: a zero / subnormal / normal / inf / nan element in the
                                 slot's valid region, for the float types of the arithmetic families
``illegal.opcode_dtype``         every other ``OP/DTYPE`` (and ``OP/INVALID``), hit by any command that
                                 carries it: not part of the goal, listed separately by ``sim.coverage``
===============================  ========================================================================

The goal is the unit's: the bins of an opcode whose engine the unit lacks (``Config.engines``, or an
engine the configuration cannot have) are no goal, and UNSUPPORTED is one only on such a unit, whose
model has a root of its own (``tilevec_<profile>_without_<families>``). A regression run on a unit of
fewer engines (``sim.regress``) counts toward the goal of the configuration it stands for
(``TILEVEC_COVERAGE_CONFIG``, :func:`goal_config`).

At the end of the simulation (cocotb's shutdown, or ``atexit``) the database is written to
``coverage.yml`` in the run directory (beside ``TILEVEC_RECORDS``; the working directory otherwise);
``python -m sim.coverage`` merges every run's file into a report.
"""

import atexit
import logging
import os
import pathlib

import numpy as np

from rtl.isa import (DType, EXEC_STATUSES, instruction, INSTRUCTIONS, Layout, main_slot, OobMode, Opcode,
    Profile, Status)

__all__ = ["CoverageModel", "FLOAT_CLASSES", "TPART_PATTERNS", "GOAL_GROUPS", "command_features", "goal_bins",
           "illegal_bins", "sample", "model", "write", "FILE_NAME"]

#: The file each run writes into its run directory.
FILE_NAME = "coverage.yml"

#: Special float classes of an operand's valid region.
FLOAT_CLASSES = ("zero", "subnormal", "normal", "inf", "nan")

#: TPART* validity patterns (docs/semantics.md, "TPARTADD"): both sources full; the partial source with
#: fewer rows, fewer cols, fewer of both; an empty partial source; an empty dst valid region.
TPART_PATTERNS = ("full", "partial_rows", "partial_cols", "partial_both", "empty_src", "zero_dst")

_FLOATS = frozenset({DType.FP16, DType.BF16, DType.FP32, DType.FP8E4M3, DType.FP8E5M2})
_NO_INF = frozenset({DType.FP8E4M3})        # e4m3fn has no infinity
_LAYOUT = {Layout.ROW_MAJOR: "ROW", Layout.COL_MAJOR: "COL"}

log = logging.getLogger("cocotb.tilevec.coverage")


# ---- the table's bins --------------------------------------------------------------------------------------

def _trowexpand_ops():
    from golden.ops import TROWEXPAND_FUNCTIONS
    return [op for op in Opcode if op in TROWEXPAND_FUNCTIONS]


def _tpart_ops():
    from golden.ops import TPART_FUNCTIONS
    return [op for op in Opcode if op in TPART_FUNCTIONS]


def _gemv_ops():
    return [op for op, ins in INSTRUCTIONS.items() if ins.type_rule == "gemv"]


def _mgather_ops():
    return [op for op, ins in INSTRUCTIONS.items() if ins.family == "mgather"]


#: The type column of an instruction without operands (TSYNC) in the ``OP/DTYPE`` bins.
NO_TYPE = "-"


def _type_names(op, profile):
    """The ``DTYPE`` parts of ``op``'s legal ``OP/DTYPE`` bins: its legal types', or :data:`NO_TYPE` alone
    for an instruction without operands."""
    if not instruction(op).slots:
        return [NO_TYPE]
    return [dt.name for dt in _sorted(legal_types(op, profile))]


def legal_types(op, profile):
    """The types the table accepts for ``op``'s main slot in ``profile`` (GEMV: the accumulator's)."""
    ins = instruction(op)
    if ins.type_rule == "gemv":
        return ins.allowed(ins.slot(main_slot(op)), profile)
    return ins.types[profile]


def _sorted(types):
    return sorted(types, key=lambda d: d.value)


def _float_slots(op, profile):
    """(slot name, float types) of the operands whose float classes are sampled: the sources of the
    arithmetic instructions (TROWEXPAND*, TPART*, GEMV)."""
    ins = instruction(op)
    out = []
    for s in ins.slots:
        if s.writes:
            continue
        types = ins.allowed(s, profile) if ins.type_rule == "gemv" else ins.types[profile]
        out.append((s.name, _sorted(types & _FLOATS)))
    return out


def _float_bins(ops, profile):
    bins = []
    for op in ops:
        for slot, types in _float_slots(op, profile):
            for dt in types:
                for cls in FLOAT_CLASSES:
                    b = f"{dt.name}/{slot}/{cls}"
                    if not (cls == "inf" and dt in _NO_INF) and b not in bins:
                        bins.append(b)
    return bins


def _layout_mixes(op, profile):
    ins = instruction(op)
    choices = [["ROW"] if profile in s.row_major else ["ROW", "COL"] for s in ins.slots]
    mixes = [""]
    for c in choices:
        mixes = [m + ("/" if m else "") + x for m in mixes for x in c]
    return mixes


def reachable_statuses(profile, supported=None):
    """The statuses some instruction can answer in ``profile`` on a unit that executes ``supported`` (the
    opcodes of its engines, ``rtl.top.supported_opcodes``; None: every opcode): their checks' statuses
    and declared execution statuses, OK and UNKNOWN_OPCODE, and UNSUPPORTED when the unit lacks an
    engine. A status no instruction can give (today INDEX_OUT_OF_RANGE, reserved) is not a goal."""
    from rtl.isa import INSTRUCTIONS
    supported = frozenset(Opcode) if supported is None else frozenset(supported)
    reach = {Status.OK, Status.UNKNOWN_OPCODE}
    if supported != frozenset(Opcode):
        reach.add(Status.UNSUPPORTED)
    for op, ins in INSTRUCTIONS.items():
        if op in supported:
            reach |= set(ins.statuses(profile)) | set(ins.exec_statuses)
    return [st.name for st in Status if st in reach]


def goal_bins(profile, supported=None):
    """``{item: [bins]}`` of every coverpoint of the goal for ``profile`` on a unit that executes the
    opcodes ``supported`` (None: all; the opcodes of an engine the unit lacks answer UNSUPPORTED, so their
    bins are no goal), as crosses ``{cross: [tuples]}``, in the order they are reported. Families without
    a legal type in the profile, or without an engine, have no items."""
    has = (lambda op: True) if supported is None else (lambda op: op in supported)
    out = {"opcode_dtype.legal": [f"{op.name}/{dt}" for op in Opcode if has(op) for dt in _type_names(op, profile)],
           "status.code": reachable_statuses(profile, supported)}
    mg = [op for op in _mgather_ops() if legal_types(op, profile) and has(op)]
    if mg:
        idx = sorted({d.name for op in mg for d in instruction(op).index_types}, key=lambda n: DType[n].value)
        modes = [op.name.split("_")[-1] for op in mg]
        out["mgather.mode"] = modes
        out["mgather.oob"] = [m.name for m in OobMode]
        out["mgather.index_dtype"] = idx
        out["mgather.mode_x_oob_x_index"] = [(m, o.name, i) for m in modes for o in OobMode for i in idx]
    tr = [op for op in _trowexpand_ops() if legal_types(op, profile) and has(op)]
    if tr:
        out["trowexpand.opcode"] = [op.name for op in tr]
        out["trowexpand.mode"] = ["mode1", "mode2"]
        out["trowexpand.expanded"] = ["src0", "src1"]
        out["trowexpand.opcode_x_mode_x_expanded"] = [(op.name, m, e) for op in tr for m in ("mode1", "mode2")
                                                      for e in ("src0", "src1")]
    tp = [op for op in _tpart_ops() if legal_types(op, profile) and has(op)]
    if tp:
        out["tpart.opcode"] = [op.name for op in tp]
        out["tpart.pattern"] = list(TPART_PATTERNS)
        out["tpart.opcode_x_pattern"] = [(op.name, p) for op in tp for p in TPART_PATTERNS]
        out["tpart.layout"] = list(dict.fromkeys(m for op in tp for m in _layout_mixes(op, profile)))
    gv = [op for op in _gemv_ops() if has(op)]
    if gv:
        triples = sorted({t for op in gv for t in instruction(op).triples[profile]},
                         key=lambda t: tuple(d.value for d in t))
        names = ["/".join(d.name for d in t) for t in triples]
        out["gemv.variant"] = [op.name for op in gv]
        out["gemv.triple"] = names
        out["gemv.variant_x_triple"] = [(op.name, t) for op in gv for t in names]
    for family, ops in (("trowexpand", tr), ("tpart", tp), ("gemv", gv)):
        bins = _float_bins(ops, profile)
        if bins:
            out[f"float_classes.{family}"] = bins
    return out


def illegal_bins(profile):
    """``OP/DTYPE`` combinations the table does not accept in ``profile`` (``OP/INVALID``: a reserved code)."""
    ops = [op for op in Opcode if instruction(op).slots]     # TSYNC has no type to be illegal
    return [f"{op.name}/{dt.name}" for op in ops for dt in DType if dt not in legal_types(op, profile)] + \
           [f"{op.name}/INVALID" for op in ops]


#: The groups whose bins are the goal (``illegal`` is not).
GOAL_GROUPS = ("opcode_dtype", "status", "mgather", "trowexpand", "tpart", "gemv", "float_classes")


# ---- one command's features --------------------------------------------------------------------------------

def _status(status):
    try:
        return Status(int(status.value if hasattr(status, "value") else status))
    except ValueError:
        return None


def float_classes(values, dtype):
    """The subset of :data:`FLOAT_CLASSES` present in ``values`` (a numpy array of ``dtype``'s type)."""
    import ml_dtypes
    from golden.numerics import DTYPE_NUMPY
    with np.errstate(invalid="ignore"):          # NaN payloads of the narrow types
        a = np.asarray(values).astype(np.float64).ravel()
    if a.size == 0:
        return set()
    tiny = float(ml_dtypes.finfo(DTYPE_NUMPY[dtype]).smallest_normal)
    mag = np.abs(a)
    found = {"zero": (a == 0).any(), "nan": np.isnan(a).any(), "inf": np.isinf(a).any(),
             "subnormal": ((mag > 0) & (mag < tiny)).any(), "normal": (np.isfinite(a) & (mag >= tiny)).any()}
    return {k for k, v in found.items() if v}


def _tpart_pattern(dst, s0, s1):
    R, C = dst.vr, dst.vc
    if R == 0 or C == 0:
        return "zero_dst"
    v0, v1 = (s0.vr, s0.vc), (s1.vr, s1.vc)
    other = v1 if v0 == (R, C) else v0
    if other == (R, C):
        return "full"
    if other[0] == 0 or other[1] == 0:
        return "empty_src"
    if other[1] == C:
        return "partial_rows"
    if other[0] == R:
        return "partial_cols"
    return "partial_both"


def command_features(cmd, status, machine=None):
    """What the coverpoints see of one command: a dict (missing keys match no bin). ``status``: the RTL's
    answer; ``machine``: the golden machine *before* it executes the command (float classes), or None."""
    from golden.check import normalize, tile_view
    from golden.ops import trowexpand_roles
    cmd = normalize(cmd)
    st = _status(status)
    f = {"status": st.name if st is not None else None}
    op = cmd["opcode"]
    if not isinstance(op, Opcode):
        return f
    ins = INSTRUCTIONS[op]
    if main_slot(op) is None:
        dt = NO_TYPE
    else:
        main = tile_view(cmd, main_slot(op))
        dt = main.dtype.name if isinstance(main.dtype, DType) else "INVALID"
    f["opcode_dtype_any"] = f"{op.name}/{dt}"
    if st is None or not (st == Status.OK or st in EXEC_STATUSES):
        return f
    f["opcode_dtype"] = f["opcode_dtype_any"]
    t = {s.name: tile_view(cmd, s.name) for s in ins.slots}
    if ins.family == "mgather":
        f["mgather"] = (op.name.split("_")[-1], cmd["oob"].name, t["src0"].dtype.name)
    elif ins.type_rule == "gemv":
        f["gemv"] = (op.name, "/".join(t[s].dtype.name for s in ("dst", "src0", "src1")))
    elif ins.family == "elementwise":
        dst, s0, s1 = t["dst"], t["src0"], t["src1"]
        if op in _trowexpand_ops():
            role = trowexpand_roles((dst.vr, dst.vc), (s0.vr, s0.vc), (s1.vr, s1.vc))
            exp = (s1, s0)[role]
            f["trowexpand"] = (op.name, "mode1" if exp.layout == Layout.COL_MAJOR else "mode2", exp.slot)
        else:
            f["tpart"] = (op.name, _tpart_pattern(dst, s0, s1))
            f["tpart_layout"] = "/".join(_LAYOUT[t[s].layout] for s in ("dst", "src0", "src1"))
    if machine is not None and (ins.family == "elementwise" or ins.type_rule == "gemv"):
        classes = set()
        for s in ins.slots:
            tile = t[s.name]
            if s.writes or tile.dtype not in _FLOATS or not tile.vr or not tile.vc:
                continue
            values = machine.read_tile(tile)[:tile.vr, :tile.vc]
            classes |= {f"{tile.dtype.name}/{s.name}/{c}" for c in float_classes(values, tile.dtype)}
        family = "gemv" if ins.type_rule == "gemv" else ("trowexpand" if "trowexpand" in f else "tpart")
        f["float_classes"] = (family, classes)
    return f


# ---- the cocotb-coverage model ----------------------------------------------------------------------------

def _pick(key, index=None):
    def xf(f):
        v = f.get(key)
        return v if v is None or index is None else v[index]
    return xf


def _member(f_result, b):
    return f_result is not None and b in f_result


class CoverageModel:
    """The coverpoints and crosses of :func:`goal_bins` (and ``illegal.opcode_dtype``) for ``profile``,
    registered in cocotb-coverage's ``coverage_db`` under ``root`` (default ``tilevec_<profile>``).
    ``sample(cmd, status, machine)`` samples one command."""

    def __init__(self, profile=Profile.A5, root=None, supported=None):
        from cocotb_coverage import coverage
        self.profile = Profile(profile)
        self.supported = None if supported is None or frozenset(supported) == frozenset(Opcode) \
            else frozenset(supported)
        # a unit without some engines has a goal of its own: its own root, so runs never merge into another's
        lacks = "" if self.supported is None else "_without_" + "_".join(
            sorted({INSTRUCTIONS[op].family for op in Opcode if op not in self.supported}))
        self.root = root or f"tilevec_{self.profile.value}{lacks}"
        self.bins = goal_bins(self.profile, self.supported)
        self.samples = 0
        name = lambda item: f"{self.root}.{item}"
        points = []          # decorators, outermost first (crosses last: they read the points' new hits)
        for item, bins in self.bins.items():
            group, leaf = item.split(".")
            if "_x_" in leaf:
                continue
            if item == "opcode_dtype.legal":
                xf = _pick("opcode_dtype")
            elif item == "status.code":
                xf = _pick("status")
            elif group == "float_classes":
                fam = leaf
                xf = lambda f, fam=fam: f["float_classes"][1] if f.get("float_classes", ("",))[0] == fam else None
                points.append(coverage.CoverPoint(name(item), xf=xf, bins=bins, rel=_member, inj=False))
                continue
            elif item == "tpart.layout":
                xf = _pick("tpart_layout")
            else:
                pos = {"mode": 0, "oob": 1, "index_dtype": 2, "opcode": 0, "variant": 0, "triple": 1,
                       "pattern": 1, "expanded": 2}[leaf]
                if group == "trowexpand" and leaf == "mode":
                    pos = 1
                xf = _pick(group, pos)
            points.append(coverage.CoverPoint(name(item), xf=xf, bins=bins))
        points.append(coverage.CoverPoint(name("illegal.opcode_dtype"), xf=_pick("opcode_dtype_any"),
                                          bins=illegal_bins(self.profile)))
        crosses = {"mgather.mode_x_oob_x_index": ["mgather.mode", "mgather.oob", "mgather.index_dtype"],
                   "trowexpand.opcode_x_mode_x_expanded": ["trowexpand.opcode", "trowexpand.mode",
                                                           "trowexpand.expanded"],
                   "tpart.opcode_x_pattern": ["tpart.opcode", "tpart.pattern"],
                   "gemv.variant_x_triple": ["gemv.variant", "gemv.triple"]}
        for item, items in crosses.items():
            if item in self.bins:
                points.append(coverage.CoverCross(name(item), items=[name(i) for i in items]))

        def _sample(features):
            pass
        for deco in reversed(points):
            _sample = deco(_sample)
        self._sample = _sample

    def sample(self, cmd, status, machine=None):
        """Sample one command with the RTL's ``status`` (``machine``: the golden, before executing it)."""
        self.samples += 1
        self._sample(command_features(cmd, status, machine))

    def items(self):
        """``{item: {bin: hits}}`` of this model (goal items, then ``illegal.opcode_dtype``)."""
        from cocotb_coverage.coverage import coverage_db
        names = list(self.bins) + ["illegal.opcode_dtype"]
        return {n: dict(coverage_db[f"{self.root}.{n}"].detailed_coverage) for n in names}

    def export(self, path):
        """Write cocotb-coverage's whole database (every model of this process) as YAML to ``path``."""
        from cocotb_coverage.coverage import coverage_db
        coverage_db.export_to_yaml(str(path))


# ---- the harness hook ------------------------------------------------------------------------------------

_models = {}
_state = {"registered": False, "disabled": False}


def model(profile, supported=None):
    """This process's :class:`CoverageModel` for ``profile`` and the ``supported`` opcodes (created on
    first use)."""
    key = (Profile(profile), None if supported is None else frozenset(supported))
    if key not in _models:
        _models[key] = CoverageModel(key[0], supported=key[1])
    return _models[key]


def goal_config(config):
    """The configuration whose coverage goal a run counts toward: ``TILEVEC_COVERAGE_CONFIG`` when the
    runner set it (the regression runs each test on a unit of only the engines it exercises, and counts
    its hits toward the goal of the configuration ``make sim`` names), else the run's own ``config``."""
    spec = os.environ.get("TILEVEC_COVERAGE_CONFIG")
    if not spec:
        return config
    from sim.runner import config_spec
    return config_spec(spec)[0]


def output_path():
    """``coverage.yml`` in the run directory: beside ``TILEVEC_RECORDS`` (set by ``sim.runner.run``), else
    in the working directory (the simulator runs in the run directory)."""
    records = os.environ.get("TILEVEC_RECORDS")
    base = pathlib.Path(records).parent if records else pathlib.Path.cwd()
    return base / FILE_NAME


def write(path=None):
    """Write the database when anything was sampled (called at the end of the simulation)."""
    if not _models:
        return None
    path = pathlib.Path(path or output_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    next(iter(_models.values())).export(path)
    return path


def _register():
    if _state["registered"]:
        return
    _state["registered"] = True
    atexit.register(write)
    try:                                    # cocotb's own end-of-simulation callbacks (before the simulator exits)
        import cocotb._shutdown
        cocotb._shutdown.register(write)
    except (ImportError, AttributeError):
        pass


def sample(harness, cmd, status):
    """The harness hook: sample ``cmd`` answered with ``status`` by the RTL, reading the operands from
    ``harness.golden`` (which has not executed it yet). Never fails the test: a problem (cocotb-coverage
    not installed, a bug here) is logged once and coverage is switched off for the run."""
    if _state["disabled"] or os.environ.get("TILEVEC_NO_COVERAGE"):
        return
    try:
        from rtl.top import supported_opcodes
        goal = goal_config(harness.config)
        m = model(goal.profile, supported_opcodes(goal))
        _register()
        m.sample(cmd, status, harness.golden)
    except Exception as e:                  # coverage must never break a test
        _state["disabled"] = True
        log.warning("functional coverage disabled for this run: %s: %s", type(e).__name__, e)
