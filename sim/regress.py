"""The regression: every cocotb run of the project, for ``make sim`` and the pytest wrappers.

``python -m sim.regress [--sim icarus|verilator] [--config small] [--no-waves] [-k PATTERN] [-j N]``
builds once per configuration, runs every entry of :data:`REGRESSION` (in parallel; entries that take no
parameters four to a simulator run, :func:`batches`), writes an FST and a GTKWave save file per test under
``build/run/<sim>-<config>/<label>/`` (a grouped test's FST is a link to its run's, and its save file
opens on its own part of it), prints a summary table (test, instruction, shape, data type, cycles,
result), writes ``build/sim-summary.csv`` and exits non-zero when any test fails.
"""

import argparse
import concurrent.futures
import csv
import json
import os
import shutil
import sys
from dataclasses import dataclass
from xml.etree import ElementTree

from sim.runner import BUILD, RunResult, build, config_spec, list_testcases, run, testcase_label

__all__ = ["Entry", "REGRESSION", "GROUP_SIZE", "batches", "run_entry", "run_group", "main"]


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
    def per_type(module, function, prefix):
        """``function``'s cases (``@cocotb.parametrize(dtype=...)``), labelled ``<prefix>_<DTYPE>``."""
        return [Entry(module, t, label=f"{prefix}_{t.rsplit('=', 1)[1]}") for t in list_testcases(module)
                if t.startswith(f"{function}/dtype=")]

    def others(module, *functions):
        return [Entry(module, t) for t in list_testcases(module) if t.split("/")[0] not in functions]

    entries = [Entry("test_transfer", "roundtrip_smoke")]
    entries += per_type("test_transfer", "roundtrip_random", "roundtrip")
    entries += [Entry("test_errors", t) for t in list_testcases("test_errors")]
    entries += [Entry("test_sync", t) for t in list_testcases("test_sync")]
    entries += per_type("test_mgather", "mgather_random", "mgather")
    entries += others("test_mgather", "mgather_random")
    entries += per_type("test_local_gather", "lg_dtype", "lg")
    entries += others("test_local_gather", "lg_dtype")
    entries += per_type("test_elementwise", "ew_dtype", "ew")
    entries += others("test_elementwise", "ew_dtype")
    entries += [Entry("test_gemv", "gemv_triples", (("group", g),), f"gemv_triples_{g}") for g in ("a2a3", "fp8")]
    entries += others("test_gemv", "gemv_triples")
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


#: Entries per simulator run (:func:`batches`): a run costs ~3 s before its first cycle; four entries to a
#: run keep enough runs to share 2 cores.
GROUP_SIZE = 4


def batches(entries, size=GROUP_SIZE):
    """``entries`` as simulator runs (lists, in order): consecutive entries of one module and engines that
    take no parameters in runs of at most ``size`` (:func:`run_group`); every other entry alone."""
    out, batch = [], []
    for entry in entries:
        if batch and (len(batch) == size or (entry.module, entry.unit_engines)
                      != (batch[0].module, batch[0].unit_engines)):
            out.append(batch)
            batch = []
        if entry.params:
            out.append([entry])
        else:
            batch.append(entry)
    if batch:
        out.append(batch)
    return out


def run_group(entries, config="small", sim="icarus", label=None, waves=False):
    """Run several entries of one module, with the same engines and parameters, in *one* simulator run;
    returns ``(result, failures)``: the group's :class:`sim.runner.RunResult` and ``[(entry, why)]`` for
    every entry that failed or did not run. Each entry also gets the directory a run of its own would have
    (:func:`entry_result` reads it): its testcase's results file and records, and with ``waves`` a link to
    the run's FST and a save file that opens on the testcase's part of it.

    Why: a simulator run costs ~3 s before its first cycle (Icarus loads the unit, Python imports numpy,
    Amaranth, the golden model), more than most error and shape tests simulate. Each testcase still starts
    from reset, a zeroed UB (``Harness.start``), a fresh GM model and its own random seed (cocotb seeds
    each test from its name), so it computes what it computes alone."""
    entries = list(entries)
    first = entries[0]
    for e in entries[1:]:
        if (e.module, e.unit_engines, e.params) != (first.module, first.unit_engines, first.params):
            raise ValueError(f"run_group: {e.name} differs from {first.name} in module, engines or parameters")
    spec = first.config_spec(config)
    if not config_spec(spec)[0].ub_debug_port:
        raise ValueError("run_group needs the UB debug port (Harness.start zeroes the UB between testcases)")
    label = label or f"group-{first.name}-{len(entries)}"
    result = run(first.module, [e.testcase for e in entries], spec, sim, waves=waves, params=dict(first.params),
                 label=label, group=f"{sim}-{config_spec(config)[1]}", coverage_config=config)
    cases = {c.name: c for c in result.cases}
    failures = []
    for e in entries:
        case = cases.get(e.testcase)
        if case is None:
            failures.append((e, f"did not run (see {result.log_file})"))
        elif case.result != "pass":
            failures.append((e, f"{case.result}: {case.message}"))
    _entry_views(result, entries, config, sim, waves)
    return result, failures


def _entry_dir(entry, config, sim):
    return BUILD / "run" / f"{sim}-{config_spec(config)[1]}" / entry.name


def _entry_views(result, entries, config, sim, waves):
    """Each grouped entry's own directory: ``results.xml`` with its testcase alone, ``records.jsonl`` with
    its commands, ``sim.log`` linked to the run's; with waves, ``<name>.fst`` linked to the run's FST and
    ``<name>.gtkw`` on the testcase's window of simulated time (cocotb's results give each testcase's)."""
    tree = ElementTree.parse(result.results_xml) if result.results_xml.exists() else None
    windows = {case.name: case.sim_window_ns for case in result.cases}
    for e in entries:
        d = _entry_dir(e, config, sim)
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        (d / "sim.log").symlink_to(os.path.relpath(result.log_file, d))
        if tree is not None:
            root = ElementTree.Element("testsuites")
            suite = ElementTree.SubElement(root, "testsuite", name=f"group {result.testcase}")
            suite.extend(c for c in tree.getroot().iter("testcase") if c.get("name") == e.testcase)
            ElementTree.ElementTree(root).write(d / "results.xml")
        name = testcase_label(e.testcase)
        (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in result.records if r["test"] == name))
        if waves and result.waves_file.exists():
            fst = d / f"{e.name}.fst"
            fst.symlink_to(os.path.relpath(result.waves_file, d))
            _save_file(fst, windows.get(e.testcase))


def entry_result(entry, config="small", sim="icarus"):
    """The :class:`sim.runner.RunResult` in ``entry``'s own directory (a run of its own, or its view of a
    :func:`run_group`)."""
    d = _entry_dir(entry, config, sim)
    return RunResult(entry.name, d / "results.xml", d / "records.jsonl", d / f"{entry.name}.fst")


def previous_seconds(entry, config="small", sim="icarus"):
    """Wall seconds of ``entry``'s last run on ``config`` (its results file under ``build/run/``), or None."""
    from sim.runner import parse_results
    try:
        cases = parse_results(BUILD / "run" / f"{sim}-{config_spec(config)[1]}" / entry.name / "results.xml")
    except (OSError, ValueError, SyntaxError):
        return None
    return sum(c.time for c in cases) or None


def longest_first(runs, config="small", sim="icarus"):
    """``runs`` (entries, or lists of entries run together) ordered for a pool of workers: longest previous
    run first (a run with an entry never run before first of all), so that no long run starts last and keeps
    one core busy alone at the end."""
    def seconds(run):
        times = [previous_seconds(e, config, sim) for e in (run if isinstance(run, list) else [run])]
        return float("inf") if None in times else sum(times)
    return sorted(runs, key=lambda run: -seconds(run))


def _build(args):
    spec, sim, waves = args
    build(spec, sim, waves)


def _save_file(fst, window_ns=None):
    try:
        from sim.waves import write_gtkw
        write_gtkw(fst, window_ns=window_ns)
    except RuntimeError as e:       # no fst2vcd: waves still usable, just without a save file
        print(f"note: {e}", file=sys.stderr)


def _job(args):
    """One simulator run of a batch; ``[(entry, result)]``, each entry's :class:`sim.runner.RunResult`."""
    batch, config, sim, waves = args
    if len(batch) == 1:
        result = run_entry(batch[0], config, sim, waves)
        if waves and result.waves_file.exists():
            _save_file(result.waves_file)
        return [(batch[0], result)]
    run_group(batch, config, sim, waves=waves)
    return [(e, entry_result(e, config, sim)) for e in batch]


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
    # the table and the CSV keep REGRESSION order; the pool takes the longest runs first
    order = longest_first(batches(entries), args.config, args.sim)
    jobs = [(batch, args.config, args.sim, waves) for batch in order]
    rows = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.j) as pool:
        list(pool.map(_build, [(spec, args.sim, waves) for spec in specs]))
        for done in pool.map(_job, jobs):
            for entry, result in done:
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
