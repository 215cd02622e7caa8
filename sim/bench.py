"""Performance benchmark: cycle counts measured by the RTL, against the bound of the configured hardware.

``python -m sim.bench [--config default] [--sim icarus] [--latency 32] [--only elementwise]`` runs every entry of
:data:`BENCHES` (cocotb tests whose instructions carry a ``bench:<case>`` label), prints one table and
writes it to ``build/bench/bench.md`` and ``build/bench/bench.csv``. Columns: ``cycles`` (from the
unit's response), ``of bound`` (work per cycle against the bound), ``of bound+latency`` (against the
bound plus one memory latency), ``beyond`` (cycles beyond ``ceil(work / bound)`` plus the latency: for
the smallest case of an instruction, its fixed overhead).

Global memory is :class:`sim.gm.LatencyRam`: a fixed read latency (default 32 cycles from AR
acceptance to the first R beat), one AR accepted and one R beat returned per cycle; writes use
cocotbext-axi's stock ``AxiRam`` write side.

Adding rows: add a case to an existing bench module's ``CASES`` or a :class:`Bench` entry here with a
``bound`` function ``(record, config) -> (bound bytes per cycle, what the bound is)``.

A second table, **programs** (``build/bench/programs.md``), times the examples of :data:`PROGRAMS` (PTO-AS,
``examples/``) as the runner does (``python -m sim run``: every result checked against the golden model, then
the commands back to back): ``serial`` is the sum of the instructions' own cycles (each run alone, as the
runner's checked pass runs them), ``run`` the program's cycles back to back, ``pipes alone`` each pipe's sum
of its instructions' own cycles (issue #33's bound: what a machine running its pipes at once and each
instruction as fast as alone still needs), ``bound`` the largest pipe's least cycles on the configured unit
(:func:`pipe_bounds`: ``pipes alone``, but on an engine that overlaps consecutive instructions each after the
pipe's first costs only its narrowest resource, so the overlap cannot take ``run`` below it), ``of bound`` =
bound / run, ``chain bound`` (:func:`chain_bound`) the least cycles once the program's dependencies count too
(an instruction after one it has a hazard with starts only when that one has finished, and then takes its own
cycles), ``of chain bound`` = chain bound / run: what the program's order allows this hardware, so what is
left below 100% there is the unit's, not the program's; and
``speed-up`` = serial / run. ``pipes busy`` are the unit's per-pipe busy counters over the run, ``hazard
stalls`` its stalled-on-hazard counters and ``early starts`` the instructions that started while their pipe's
previous one was still in its engine (both ``Config.concurrent``). A unit that runs one instruction at a time
has ``run`` >= ``serial``; one whose pipes run at once can reach the bound. ``lanes bound`` (an example that
defines ``lanes_bound(config)``: tpartadd_stream, gemv_stream) is what its work needs on the engines' lanes, and ``of
lanes bound`` the run's share of it: what overlapping consecutive instructions of one pipe can gain; ``bus
bound`` / ``of bus bound`` the same for an example that defines ``bus_bound(config)`` (tload_stream,
tstore_stream, mgather_stream: their beats on the AXI bus).
"""

import argparse
import csv
import math
import re
import sys
from dataclasses import dataclass
from typing import Callable

from rtl.isa import DTYPE_BYTES, DType

from sim.runner import BUILD, config_spec, run

__all__ = ["Bench", "BENCHES", "main"]


def case_work(case):
    """The work a case names first: ``(amount, unit)`` from ``"<n> KiB ..."``, ``"<n> B ..."``,
    ``"<n> elem ..."`` or ``"<n> MAC ..."`` (multiply-adds)."""
    m = re.match(r"(\d+) (KiB|B|elem|MAC)\b", case)
    if not m:
        raise ValueError(f"bench case {case!r} must start with '<n> KiB', '<n> B', '<n> elem' or '<n> MAC'")
    n, unit = int(m.group(1)), m.group(2)
    return (n * 1024, "B") if unit == "KiB" else (n, unit)


def axi_bound(record, config):
    """Bytes moved over the AXI data bus: one beat per cycle. Elements (MGATHER_ELEM): one UB write per
    cycle, holding at most one index word's indices (``W / 4``) and at most a word of elements
    (``W / size``): ``min(W / 4, W / size)`` elements per cycle. (Random indices need a bus beat per
    element, so they stay near one per cycle; neighbours that share a beat approach the bound.)"""
    if case_work(record["label"][len("bench:"):])[1] == "elem":
        W = config.ub_word_bytes
        size = DTYPE_BYTES[DType[record["dtype"]]]
        n = min(W // 4, W // size)
        return n, f"{n} elements/cycle (one UB write of <= {W // 4} indices, <= {W // size} elements)"
    return config.axi_data_bytes, f"AXI {config.axi_data_bits}-bit, 1 beat/cycle"


def ub_port_bound(record, config):
    """LOCAL_GATHER: bytes written to dst through the UB write port, one word per cycle."""
    return config.ub_word_bytes, f"UB port {config.ub_word_bytes} B/cycle to dst"


def lane_bound(record, config):
    """The elementwise family: destination bytes per cycle, the narrower of the UB write port (one word
    per cycle) and the arithmetic lanes (``ew_lane_bytes`` per cycle); the cases' destination rows are
    word-aligned, so bytes / W is the number of words."""
    n = min(config.ub_word_bytes, config.ew_lane_bytes)
    what = "UB port" if n == config.ub_word_bytes else "lanes (ew_lane_bytes)"
    return n, f"{what} {n} B/cycle to dst"


def aws_local_gather(record, config):
    """AWS's published cost of nki.isa.local_gather for the same (n, nepi, dtype) (all 128 partitions
    in parallel on 8 GpSimd cores): ``150 + (n * nepi) / C``, ``C = ((28 + t nepi) / (t nepi)) /
    min(4 / size, nepi)``, t = 4, as printed, and the reading in which C multiplies (``150 + n nepi C``)."""
    m = re.search(r"(\w+) nepi (\d+) .*\bn (\d+)", record["label"])
    size = {"int8": 1, "fp8": 1, "fp16": 2, "bf16": 2, "fp32": 4}[m.group(1)]
    nepi, n, t = int(m.group(2)), int(m.group(3)), 4
    c = ((28 + t * nepi) / (t * nepi)) / min(4 / size, nepi)
    return {"AWS printed": f"{150 + n * nepi / c:.0f}", "AWS C multiplies": f"{150 + n * nepi * c:.0f}"}


def _gemv_case(record):
    """K, N and B's type of a GEMV case label (``bench_gemv``: ``<K*N> MAC <C/A/B> K<k> N<n> ...``)."""
    m = re.search(r"MAC (\w+)/(\w+)/(\w+) K(\d+) N(\d+)", record["label"])
    return int(m.group(4)), int(m.group(5)), DType[m.group(3)]


def gemv_bound(record, config):
    """TGEMV*: multiply-adds per cycle, one per MAC lane: ``GemvEngine.lanes`` = ``min(W / size(B),
    gemv_lanes)``."""
    from rtl.engines.gemv.engine import GemvEngine
    K, N, b = _gemv_case(record)
    L = GemvEngine.lanes(config, b)
    return L, f"{L} MAC lanes ({b.name} B, P = {config.gemv_partial_sums})"


def gemv_cycles_bound(record, config):
    """TGEMV*: ``K * ceil(N / lanes)`` cycles, one B row of a block of ``lanes`` columns per cycle (a
    partial last block still takes its K cycles)."""
    from rtl.engines.gemv.engine import GemvEngine
    K, N, b = _gemv_case(record)
    return K * -(-N // GemvEngine.lanes(config, b))


def gemv_pipeline(config):
    """TGEMV*: the engine's fixed latency, start to done beyond the blocks' steps (``GemvEngine.latency``):
    "of bound+latency" then shows the streaming rate."""
    from rtl.engines.gemv.engine import GemvEngine
    return GemvEngine.latency(config)


def gemv_extra(record, config):
    """The cycle bound (:func:`gemv_cycles_bound`; "of bound" is it over the cycles) and the MAC
    utilization ``K * N / (lanes * cycles)`` (below "of bound" when the last block is partial)."""
    K, N, _ = _gemv_case(record)
    return {"bound cycles": gemv_cycles_bound(record, config),
            "MAC util": f"{100 * K * N / (gemv_bound(record, config)[0] * record['cycles']):.1f}%"}


#: The examples the programs table times (``examples/<name>.pto`` with its input generator). A program that
#: does not fit a configuration's UB is left out of its table (tpartadd_stream needs 24 KiB).
PROGRAMS = ("double_buffer", "double_buffer_32", "gather_scale_gemv", "tpartadd_stream", "tload_stream",
            "tstore_stream", "gemv_stream", "mgather_stream")


def _pipe_cost(config):
    """``cost(op, before, cmd, cycles)``: what an instruction of opcode ``op`` after its pipe's ``before`` (an
    opcode, or None) costs its pipe on the configured unit (:func:`pipe_bounds`): its engine's ``bound`` where
    the engine takes it early (``Engine.OVERLAP`` in a concurrent unit with ``Config.pipe_overlap``, both
    opcodes of its ``overlap_opcodes``), else its own ``cycles``."""
    from rtl.concurrent import concurrent_engines
    from rtl.top import ENGINES
    overlap = config is not None and config.concurrent and config.pipe_overlap
    # (a concurrent unit runs the transfer engine as its two halves)
    classes = concurrent_engines(ENGINES) if overlap else ENGINES

    def cost(op, before, cmd, cycles):
        cls = next(e for e in classes if op in e.opcodes)
        early = overlap and cls.OVERLAP and {op, before} <= set(cls.overlap_opcodes())
        return cls.bound(config, cmd) if early else cycles
    return cost


def pipe_bounds(rows, commands, config=None):
    """Per pipe (``rtl.isa.Pipe``): ``(alone, bound)``. ``alone``: its instructions' own cycles (each run alone)
    added up. ``bound``: the least its instructions can take on the configured unit: ``alone``, except on an
    engine that takes its next instruction before the previous one is done (``Engine.OVERLAP`` in a
    concurrent unit with ``Config.pipe_overlap``), where an instruction after the pipe's first costs its
    engine's ``bound`` (its narrowest resource: the words of consecutive instructions pass the lanes one
    after another, the fill overlaps) if both it and the pipe's instruction before it are of the engine's
    ``overlap_opcodes`` (every opcode of the engines that overlap today). ``rows``: the report's rows (``cycles``), ``commands``: the image's
    (only their ``opcode`` without ``config``, which means no overlap)."""
    from rtl.isa import INSTRUCTIONS, Opcode, Pipe
    cost = _pipe_cost(config)
    alone, bound, before = {p: 0 for p in Pipe}, {p: 0 for p in Pipe}, {}
    for r, cmd in zip(rows, commands):
        op = Opcode(cmd["opcode"])
        p = INSTRUCTIONS[op].pipe
        if p is None or not isinstance(r.cycles, int):
            continue
        alone[p] += r.cycles
        bound[p] += cost(op, before.get(p), cmd, r.cycles)
        before[p] = op
    return {p: (alone[p], bound[p]) for p in Pipe}


def chain_bound(rows, commands, config):
    """The least cycles the program can take on the configured unit given its dependencies too (a list
    schedule, in program order): an instruction finishes no sooner than its pipe's previous one plus its cost
    in :func:`pipe_bounds` (its ``bound`` when its engine takes it early, else its own cycles), and no sooner
    than the last older instruction it has a hazard with (``golden.access.hazards``: RAW, WAR, WAW on UB or
    GM bytes, which the unit keeps) plus its *own* cycles: it cannot start before that one has finished, and
    alone it takes them. So it is at least every pipe's ``bound`` and every dependency chain's length. None
    without a ``config`` or with a row without cycles."""
    from golden.access import access, hazards
    from golden.check import check
    from rtl.isa import INSTRUCTIONS, Opcode, Status
    if config is None:
        return None
    cost = _pipe_cost(config)
    ended, last, end = [], {}, 0             # (access, finish) of the older ones; pipe -> (finish, opcode)
    for r, cmd in zip(rows, commands):
        op = Opcode(cmd["opcode"])
        p = INSTRUCTIONS[op].pipe
        if p is None:
            continue
        if not isinstance(r.cycles, int):
            return None
        if check(cmd, config) != Status.OK:       # answered by the checker: no engine, no hazard
            continue
        a = access(cmd)
        ready = max((f for b, f in ended if hazards(b, a)), default=0)
        before, before_op = last.get(p, (0, None))
        if not config.concurrent:
            before = end                          # one instruction at a time
        finish = max(ready + r.cycles, before + cost(op, before_op, cmd, r.cycles))
        ended.append((a, finish))
        last[p] = (finish, op)
        end = max(end, finish)
    return end


def program_row(name, rep, lanes_bound=None, commands=None, config=None, bus_bound=None):
    """The programs table's row of a :class:`sim.programs.run.Report` of an RTL run (see the module
    docstring). ``lanes_bound``: the cycles the program's work needs on the engines' lanes (an example's
    ``lanes_bound(config)``), reported with the run's share of it; ``bus_bound`` likewise, its AXI beats.
    ``commands`` (the program's) and ``config``: for :func:`pipe_bounds`'s bound (without them, each pipe's
    instructions alone)."""
    serial, run_cycles = rep.sum_cycles, rep.total_cycles
    if commands is None:                        # (the schedule's opcodes: each pipe's instructions alone)
        commands, config = [{"opcode": op} for op, _, _ in rep.schedule], None
    both = pipe_bounds(rep.rows, commands, config)
    alone, bounds = {p: a for p, (a, _) in both.items()}, {p: b for p, (_, b) in both.items()}
    pipe, bound = max(bounds.items(), key=lambda kv: kv[1])
    chain = chain_bound(rep.rows, commands, config)
    return {"program": name, "instructions": len(rep.rows), "serial": serial, "run": run_cycles,
            "bound": bound, "bound pipe": pipe.value, "of bound": f"{100 * bound / run_cycles:.1f}%",
            **({"chain bound": chain, "of chain bound": f"{100 * chain / run_cycles:.1f}%"} if chain else {}),
            "speed-up": f"{serial / run_cycles:.2f}",
            "pipes alone": ", ".join(f"{p.value} {n}" for p, n in alone.items()),
            "pipes busy": ", ".join(f"{p} {n}" for p, n in rep.busy.items()),
            **({"hazard stalls": ", ".join(f"{p} {n}" for p, n in rep.stalled.items())}
               if getattr(rep, "stalled", None) else {}),
            **({"early starts": ", ".join(f"{p} {n}" for p, n in rep.early.items())}
               if getattr(rep, "early", None) else {}),
            **({"lanes bound": lanes_bound, "of lanes bound": f"{100 * lanes_bound / run_cycles:.1f}%"}
               if lanes_bound else {}),
            **({"bus bound": bus_bound, "of bus bound": f"{100 * bus_bound / run_cycles:.1f}%"}
               if bus_bound else {})}


def program_rows(config, sim, log=print):
    """Rows of the programs table for configuration spec ``config``; None when a program fails."""
    from sim.examples import EXAMPLES, example_module
    from sim.programs.run import run_program
    from pto.errors import AsmError
    from pto.parser import parse_file
    rows = []
    for name in PROGRAMS:
        try:
            asm = parse_file(EXAMPLES / f"{name}.pto").assemble(config)
        except AsmError as e:
            if "UB overflow" not in e.message:
                raise
            log(f"{name}: left out (does not fit the UB of {config})")
            continue
        mod = example_module(name)
        rep = run_program(asm, mod.inputs(), sim=sim, config=config, label=f"bench-{name}")
        if not rep.ok or rep.busy is None:
            log(f"{name}: FAILED: {'; '.join(rep.problems)}")
            return None
        lanes, bus = getattr(mod, "lanes_bound", None), getattr(mod, "bus_bound", None)
        cfg = _spec_config(config)
        rows.append(program_row(name, rep, lanes(cfg) if lanes else None, asm.bind(mod.inputs()).commands, cfg,
                                bus_bound=bus(cfg) if bus else None))
    return rows


def _spec_config(spec):
    """The :class:`rtl.config.Config` of a configuration spec (``preset[,field=value...]``)."""
    from pto.program import config_from_spec
    return config_from_spec(spec)


def _table(rows):
    """(columns, rows with every column, the text lines: header, rule, one per row)."""
    head = list(dict.fromkeys(k for r in rows for k in r))
    rows = [{k: r.get(k, "") for k in head} for r in rows]
    widths = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in head}
    lines = [" | ".join(f"{k:<{widths[k]}}" for k in head), "-|-".join("-" * widths[k] for k in head)]
    return head, rows, lines + [" | ".join(f"{str(r[k]):<{widths[k]}}" for k in head) for r in rows]


def _write(out, stem, title, head, rows, lines):
    (out / f"{stem}.md").write_text(f"{title}\n\n" + "\n".join(f"| {l} |" for l in lines) + "\n")
    with open(out / f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=head)
        w.writeheader()
        w.writerows(rows)


@dataclass(frozen=True)
class Bench:
    module: str
    testcase: str
    bound: Callable
    goal: float = 0.90          # fraction of the bound the unit is meant to reach (large transfers)
    gm_latency: bool = True     # the instruction waits for GM (the "of bound+latency" column adds it)
    extra: Callable = None      # optional (record, config) -> {column: text} printed beside ours
    cycles_bound: Callable = None   # optional (record, config) -> cycles: then "of bound" is bound / cycles
    pipeline: Callable = None   # optional config -> cycles of pipeline latency added in "of bound+latency"
    overrides: tuple = ()       # "field=value" on top of --config (a build of its own)
    params: tuple = ()          # ((key, value), ...) for the testcase (TILEVEC_<KEY>)

    def engines(self):
        """``["engines=..."]`` for the bench module's ``UNIT_ENGINES`` (the unit it simulates: only what
        it measures; the cycles do not depend on the engines left out), or ``[]`` for the whole unit."""
        import importlib
        engines = getattr(importlib.import_module(f"cocotb_tests.{self.module}"), "UNIT_ENGINES", None)
        return [] if engines is None else [f"engines={'+'.join(engines)}"]


#: The benchmark's rows come from these runs.
BENCHES = [Bench("bench_transfer", "bench_transfer", axi_bound),
           Bench("bench_mgather", "bench_mgather", axi_bound),
           Bench("bench_local_gather", "bench_local_gather", ub_port_bound, gm_latency=False,
                 extra=aws_local_gather),
           Bench("bench_elementwise", "bench_elementwise", lane_bound, goal=0.95, gm_latency=False),
           Bench("bench_gemv", "bench_gemv", gemv_bound, goal=0.97, gm_latency=False, extra=gemv_extra,
                 cycles_bound=gemv_cycles_bound, pipeline=gemv_pipeline),
           # P below the adder's depth: P / ADD_DEPTH of the rate (rtl.engines.gemv.mac; Config.gemv_partial_sums)
           Bench("bench_gemv", "bench_gemv", gemv_bound, goal=0.97, gm_latency=False, extra=gemv_extra,
                 cycles_bound=gemv_cycles_bound, pipeline=gemv_pipeline, overrides=("gemv_partial_sums=2",),
                 params=(("subset", "p"),))]


def main(argv=None):
    p = argparse.ArgumentParser(description="RTL cycle counts against the hardware bound.")
    p.add_argument("--config", default="default")
    p.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    p.add_argument("--latency", type=int, default=32, help="GM read latency in cycles")
    p.add_argument("--only", metavar="NAME", help="run only the benches whose module contains NAME "
                                                   "(e.g. elementwise), or only the programs table (programs)")
    args = p.parse_args(argv)
    config = config_spec(args.config)[0]
    rows, skipped = [], []
    for bench in BENCHES:
        if args.only and args.only not in bench.module:
            continue
        spec = ",".join([args.config, *bench.overrides, *bench.engines()])
        result = run(bench.module, bench.testcase, spec, args.sim,
                     params={"latency": args.latency, **dict(bench.params)}, label=f"bench-{bench.testcase}")
        bench_config = config_spec(spec)[0]
        if not result.passed:
            print(f"{bench.testcase}: FAILED (see {result.results_xml.parent / 'sim.log'})")
            return 1
        for r in result.records:
            if not r["label"].startswith("bench:"):
                continue
            case = r["label"][len("bench:"):]
            if r["status"] != "OK":      # e.g. a 32 KiB case on the 4 KiB `small` UB: not a measurement
                skipped.append(f"{r['instruction']} {case}: {r['status']}")
                continue
            work, unit = case_work(case)
            bound, what = bench.bound(r, bench_config)
            per_cycle = work / r["cycles"]
            waits = bench.gm_latency and r["instruction"] != "TSTORE"
            with_latency = work / bound + (args.latency if waits else 0)
            # Cycles beyond the bound and the memory latency: for the smallest cases, the fixed
            # overhead per instruction (front end, pipeline fill, response).
            beyond = r["cycles"] - math.ceil(work / bound) - (args.latency if waits else 0)
            of_bound = per_cycle / bound
            if bench.cycles_bound:      # a bound in cycles (GEMV: partial blocks cost whole cycles)
                need = bench.cycles_bound(r, bench_config)
                of_bound, with_latency, beyond = need / r["cycles"], need, r["cycles"] - need
                if bench.pipeline:      # the streaming rate: the bound plus the pipeline's fill and drain
                    with_latency += bench.pipeline(bench_config)
            rows.append({
                "instruction": r["instruction"], "case": case, "work": f"{work} {unit}", "cycles": r["cycles"],
                "per cycle": f"{per_cycle:.2f}", "bound": f"{bound}", "of bound": f"{100 * of_bound:.1f}%",
                "of bound+latency": f"{100 * with_latency / r['cycles']:.1f}%",
                "beyond": beyond if unit == "B" or bench.cycles_bound else "",  # elements: the bound is not a floor
                "bound is": what,
                **(bench.extra(r, bench_config) if bench.extra else {}),
            })
    out = BUILD / "bench"
    out.mkdir(parents=True, exist_ok=True)
    title = (f"config {args.config}: {config.axi_data_bits}-bit AXI, {config.max_outstanding_reads} reads "
             f"outstanding, GM read latency {args.latency} cycles ({args.sim})")
    if rows:
        head, rows, lines = _table(rows)
        print(title)
        if skipped:
            print(f"skipped {len(skipped)} cases this configuration rejects: " + "; ".join(skipped))
        print("\n".join(lines))
        _write(out, "bench", title, head, rows, lines)
        print(f"\nwritten to {out / 'bench.md'} and {out / 'bench.csv'}")
    if not args.only or args.only == "programs":
        prog = program_rows(args.config, args.sim)
        if prog is None:
            return 1
        head, prog, lines = _table(prog)
        ptitle = (f"programs, config {args.config} ({args.sim}; GM: the runner's model): serial = sum of the "
                  f"instructions' cycles, run = back to back, bound = the largest pipe's sum of its instructions' own cycles")
        print(f"\n{ptitle}\n" + "\n".join(lines))
        _write(out, "programs", ptitle, head, prog, lines)
        print(f"\nwritten to {out / 'programs.md'} and {out / 'programs.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
