"""The regression: every cocotb run of the project, for ``make sim`` and the pytest wrappers.

``python -m sim.regress [--sim icarus|verilator] [--config small] [--no-waves] [-k PATTERN] [-j N]``
builds once per configuration, runs every entry of :data:`REGRESSION` (in parallel), writes an FST and
a GTKWave save file per test under ``build/run/<sim>-<config>/<label>/``, prints a summary table
(test, instruction, shape, data type, cycles, result), writes ``build/sim-summary.csv`` and exits
non-zero when any test fails.
"""

import argparse
import concurrent.futures
import csv
import os
import sys
from dataclasses import dataclass

from rtl.isa import DType, INSTRUCTIONS

from sim.runner import BUILD, build, config_spec, list_testcases, run, testcase_label

__all__ = ["Entry", "REGRESSION", "run_entry", "run_group", "main"]


@dataclass(frozen=True)
class Entry:
    """One simulator run: ``testcase`` of ``cocotb_tests/<module>.py`` as cocotb names it (a
    ``@cocotb.parametrize`` case is ``<function>/<param>=<value>``, selected exactly, so every case is
    its own run), with ``params`` and a ``label`` (default: ``sim.runner.testcase_label(testcase)``,
    e.g. ``error_unknown_opcode`` for ``error/status=UNKNOWN_OPCODE``) that names its row, pytest id and
    run directory."""
    module: str                 # cocotb_tests/<module>.py
    testcase: str
    params: tuple = ()          # ((key, value), ...) -> TILEVEC_<KEY> in the simulation
    label: str = ""
    #: The engines the simulated unit is built with (``Config.engines``); default: the test module's
    #: ``UNIT_ENGINES`` (None there: the whole unit).
    engines: tuple = None

    @property
    def name(self):
        return self.label or testcase_label(self.testcase)

    @property
    def unit_engines(self):
        """The engines of the unit this entry simulates: :attr:`engines`, else the test module's
        ``UNIT_ENGINES``, else ``None`` (every engine the configuration has)."""
        if self.engines is not None:
            return self.engines
        import importlib
        return getattr(importlib.import_module(f"cocotb_tests.{self.module}"), "UNIT_ENGINES", None)

    def config_spec(self, config="small"):
        """The configuration spec this entry runs on: ``config`` with ``engines=`` the unit's engines (a
        unit of only what the test exercises simulates several times faster: Icarus evaluates every
        flip-flop of every engine in every cycle)."""
        engines = self.unit_engines
        return config if engines is None else f"{config},engines={'+'.join(engines)}"


def _regression():
    entries = [Entry("test_transfer", "roundtrip_smoke")]
    entries += [Entry("test_transfer", "roundtrip_random", (("dtype", d.name),), f"roundtrip_{d.name}")
                for d in DType]
    entries += [Entry("test_errors", t) for t in list_testcases("test_errors")]
    entries += [Entry("test_mgather", "mgather_random", (("dtype", d.name),), f"mgather_{d.name}")
                for d in DType]
    entries += [Entry("test_mgather", t) for t in list_testcases("test_mgather") if t != "mgather_random"]
    entries += [Entry("test_local_gather", "lg_dtype", (("dtype", d.name),), f"lg_{d.name}") for d in DType]
    entries += [Entry("test_local_gather", t) for t in list_testcases("test_local_gather") if t != "lg_dtype"]
    ew_types = sorted({d for op, ins in INSTRUCTIONS.items() if ins.family == "elementwise"
                       for types in ins.types.values() for d in types}, key=lambda d: d.value)
    entries += [Entry("test_elementwise", "ew_dtype", (("dtype", d.name),), f"ew_{d.name}") for d in ew_types]
    entries += [Entry("test_elementwise", t) for t in list_testcases("test_elementwise") if t != "ew_dtype"]
    entries += [Entry("test_gemv", "gemv_triples", (("group", g),), f"gemv_triples_{g}") for g in ("a2a3", "fp8")]
    entries += [Entry("test_gemv", t) for t in list_testcases("test_gemv") if t != "gemv_triples"]
    entries += [Entry("test_gm_model", "gm_latency_exact", (("latency", n),), f"gm_latency_{n}") for n in (32, 3)]
    entries += [Entry("test_ub_debug", t) for t in list_testcases("test_ub_debug")]
    return entries


#: Every cocotb run in the project; ``tests/test_cocotb_*.py`` parametrize over it.
REGRESSION = _regression()


def run_entry(entry, config="small", sim="icarus", waves=False):
    """Run one entry on ``config`` with the entry's engines (:meth:`Entry.config_spec`)."""
    return run(entry.module, entry.testcase, entry.config_spec(config), sim, waves=waves,
               params=dict(entry.params), label=entry.name, group=f"{sim}-{config_spec(config)[1]}",
               coverage_config=config)


def run_group(entries, config="small", sim="icarus", label=None):
    """Run several entries of one module, with the same engines and parameters, in *one* simulator run
    (no waves); returns ``(result, failures)``: the :class:`sim.runner.RunResult` and ``[(entry, why)]``
    for every entry that failed or did not run.

    Why: a simulator run costs ~3 s before its first cycle (Icarus loads the unit, Python imports numpy,
    Amaranth, the golden model), more than most error and shape tests simulate; ``make test`` runs such
    entries in groups. Each testcase still starts from reset, a zeroed UB (``Harness.start``), a fresh GM
    model and its own random seed (cocotb seeds each test from its name), so it computes what it computes
    alone. ``make sim`` keeps one run per entry (a waves file each)."""
    entries = list(entries)
    first = entries[0]
    for e in entries[1:]:
        if (e.module, e.unit_engines, e.params) != (first.module, first.unit_engines, first.params):
            raise ValueError(f"run_group: {e.name} differs from {first.name} in module, engines or parameters")
    spec = first.config_spec(config)
    if not config_spec(spec)[0].ub_debug_port:
        raise ValueError("run_group needs the UB debug port (Harness.start zeroes the UB between testcases)")
    label = label or f"group-{first.name}-{len(entries)}"
    result = run(first.module, [e.testcase for e in entries], spec, sim, params=dict(first.params), label=label,
                 group=f"{sim}-{config_spec(config)[1]}", coverage_config=config)
    cases = {c.name: c for c in result.cases}
    failures = []
    for e in entries:
        case = cases.get(e.testcase)
        if case is None:
            failures.append((e, f"did not run (see {result.log_file})"))
        elif case.result != "pass":
            failures.append((e, f"{case.result}: {case.message}"))
    return result, failures


def previous_seconds(entry, config="small", sim="icarus"):
    """Wall seconds of ``entry``'s last run on ``config`` (its results file under ``build/run/``), or None."""
    from sim.runner import parse_results
    try:
        cases = parse_results(BUILD / "run" / f"{sim}-{config_spec(config)[1]}" / entry.name / "results.xml")
    except (OSError, ValueError, SyntaxError):
        return None
    return sum(c.time for c in cases) or None


def longest_first(entries, config="small", sim="icarus"):
    """``entries`` ordered for a pool of workers: longest previous run first (entries never run first of
    all), so that no long run starts last and keeps one core busy alone at the end."""
    seconds = {e: previous_seconds(e, config, sim) for e in entries}
    return sorted(entries, key=lambda e: -(seconds[e] if seconds[e] is not None else float("inf")))


def _build(args):
    spec, sim, waves = args
    build(spec, sim, waves)


def _job(args):
    entry, config, sim, waves = args
    result = run_entry(entry, config, sim, waves)
    if waves and result.waves_file.exists():
        try:
            from sim.waves import write_gtkw
            write_gtkw(result.waves_file)
        except RuntimeError as e:       # no fst2vcd: waves still usable, just without a save file
            print(f"note: {e}", file=sys.stderr)
    return entry, result


def _summarize(rows):
    """One line per (test, instruction, dtype): shapes run, cycle range, statuses."""
    groups = {}
    for entry, result in rows:
        recs = [r for r in result.records if r["label"] not in ("ub fill", "ub readback")]
        if not recs:
            groups[(entry.name, "-", "-")] = {"shapes": set(), "cycles": [], "status": set(), "ok": result.passed}
        for r in recs:
            g = groups.setdefault((entry.name, r["instruction"], r["dtype"]),
                                  {"shapes": set(), "cycles": [], "status": set(), "ok": result.passed})
            g["shapes"].add(r["shape"])
            g["cycles"].append(r["cycles"])
            g["status"].add(r["status"])
    table = []
    for (test, instr, dt), g in groups.items():
        shapes = sorted(g["shapes"])
        shape = shapes[0] if len(shapes) == 1 else (f"{len(shapes)} shapes" if shapes else "-")
        cyc = g["cycles"]
        cycles = "-" if not cyc else (str(cyc[0]) if min(cyc) == max(cyc) else f"{min(cyc)}-{max(cyc)}")
        status = ",".join(sorted(g["status"])) or "-"
        table.append((test, instr, shape, dt, cycles, status, "PASS" if g["ok"] else "FAIL"))
    return table


#: Widest status cell on the terminal (the CSV keeps every status): the table fits 120 columns.
STATUS_WIDTH = 24


def _short_status(text, width=STATUS_WIDTH):
    """``"OK,SHAPE_MISMATCH,UB_MISALIGNED,..."`` cut to ``width``: as many whole statuses as fit, then
    ``+N``."""
    parts = text.split(",")
    if len(text) <= width or len(parts) == 1:
        return text
    for k in range(len(parts) - 1, 0, -1):
        cell = ",".join(parts[:k]) + f" +{len(parts) - k}"
        if len(cell) <= width:
            return cell
    return f"{parts[0][:width - 4]} +{len(parts) - 1}"


def _print_table(table):
    head = ("test", "instruction", "shape (valid/static)", "dtype", "cycles", "status", "result")
    table = [(*row[:5], _short_status(row[5]), *row[6:]) for row in table]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*head))
    print("  ".join("-" * w for w in widths))
    for row in table:
        print(line.format(*row))


def main(argv=None):
    p = argparse.ArgumentParser(description="Run the cocotb regression and print a summary.")
    p.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    p.add_argument("--config", default="small")
    p.add_argument("--no-waves", action="store_true", help="skip FST and .gtkw output")
    p.add_argument("-k", default="", help="only tests whose name contains this")
    p.add_argument("-j", type=int, default=os.cpu_count() or 1, help="parallel simulator runs")
    args = p.parse_args(argv)
    waves = not args.no_waves
    entries = [e for e in REGRESSION if args.k in e.name]
    specs = list(dict.fromkeys(e.config_spec(args.config) for e in entries))
    print(f"building {args.sim}{' with waves' if waves else ''}: {', '.join(specs)} ...", flush=True)
    # results come back in REGRESSION order (the table and the CSV); the pool takes the longest first
    order = longest_first(entries, args.config, args.sim)
    jobs = [(e, args.config, args.sim, waves) for e in order]
    rows = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.j) as pool:
        list(pool.map(_build, [(spec, args.sim, waves) for spec in specs]))
        for entry, result in pool.map(_job, jobs):
            print(f"  {'PASS' if result.passed else 'FAIL'}  {entry.name}", flush=True)
            rows.append((entry, result))
    rows.sort(key=lambda row: entries.index(row[0]))
    table = _summarize(rows)
    print()
    _print_table(table)
    BUILD.mkdir(exist_ok=True)
    with open(BUILD / "sim-summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "label", "instruction", "shape", "dtype", "cycles", "status", "result"])
        for entry, result in rows:
            for r in result.records:
                w.writerow([entry.name, r["label"], r["instruction"], r["shape"], r["dtype"], r["cycles"],
                            r["status"], "PASS" if result.passed else "FAIL"])
    failed = [e.name for e, r in rows if not r.passed]
    where = f"build/run/{args.sim}-{args.config}/<test>/"
    print(f"\n{len(rows) - len(failed)} passed, {len(failed)} failed")
    if waves:
        print(f"waves: {where}<test>.fst with <test>.gtkw  (make waves TEST=<test>)")
    if failed:
        print("failed: " + ", ".join(failed) + f"  (logs: {where}sim.log)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
