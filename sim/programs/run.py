"""Run an assembled PTO program on the golden model and / or the RTL; the ``python -m sim run`` command.

``python -m sim run PROGRAM.pto --data inputs.npz [--sim icarus|verilator|none] [--config NAME] [--waves]
[--out outputs.npz]``: assembles, binds the inputs, runs the program on the golden model (``--sim none``)
or on the RTL through one cocotb run of ``cocotb_tests/test_pto.py`` (which shadows every command with the
golden and compares the whole UB after each one), prints one row per instruction (line, op, shape, type,
status, cycles), writes the outputs, and exits non-zero on a mismatch, an error status (other than one an
``expect`` attribute asks for) or an error in the program or its inputs.
"""

import argparse
import json
import pathlib
import sys
import tempfile
from dataclasses import dataclass, field

import numpy as np

from rtl.config import PRESETS

from sim.programs.cli import read_npz, readable_file, user_errors, writable_file
from pto.errors import AsmError, Loc, UsageError
from pto.image import decode_output, output_extent

__all__ = ["Row", "Report", "run_golden", "run_rtl", "run_program", "run_images", "format_table", "main", "load_inputs"]


@dataclass
class Row:
    line: object
    op: str
    shape: str
    dtype: str
    expect: str
    status: str = "-"
    cycles: object = "-"
    golden: str = "-"
    undefined: int = 0
    #: (back to back, GM faults) its status depends on undefined bytes (an MGATHER's indices): either is right
    undetermined: bool = False

    @property
    def ok(self):
        return self.status == self.expect and (self.golden in ("-", self.status))


@dataclass
class Report:
    """What a run gave: ``rows`` (one per instruction), ``outputs`` {name: array} (only those the program
    computed), ``problems`` (why it failed), ``sim`` (``none`` or the simulator), ``log`` (the simulator log,
    RTL runs). ``errors``: an :class:`AsmError` per instruction that answered a status other than the one it
    expects (at its source line, with the golden's rule; their text is in ``problems`` too). ``missing``:
    {output name: why it was never computed} (an instruction on its way failed): left out of ``outputs``.
    ``total_cycles``: RTL runs, the whole program's cycles, the first command accepted to the last response
    with the commands back to back (``sum_cycles``: the instructions' own cycles added up), ``schedule``
    each instruction's ``(opcode, start, end)`` in that run, in cycles, from its engine's start to its
    response (``sim.timeline`` draws it; start = end for one no engine ran: rejected, TSYNC), and ``accepted``
    the cycle each was accepted in (the time between is the response's ``queued``); ``busy``
    ``{pipe name: cycles}`` over that run from the unit's per-pipe counters (``perf__busy__*``)."""
    rows: list
    outputs: dict
    problems: list = field(default_factory=list)
    sim: str = "none"
    log: str = ""
    waves: str = ""         #: the FST of an RTL run with ``waves`` (its GTKWave save file beside it)
    errors: list = field(default_factory=list)
    missing: dict = field(default_factory=dict)
    total_cycles: int = None
    schedule: list = None
    accepted: list = None
    busy: dict = None
    #: ``{pipe name: cycles}`` its next instruction waited on a hazard over that run (``perf__stalled__*``; a
    #: unit whose pipes run at once, ``Config.concurrent``), else None.
    stalled: dict = None
    #: ``{pipe name: instructions}`` that started while their pipe's previous instruction was still in its
    #: engine over that run (``perf__early__*``; a unit whose pipes run at once, else None)
    early: dict = None

    @property
    def sum_cycles(self):
        c = [r.cycles for r in self.rows if isinstance(r.cycles, int)]
        return sum(c) if c else None

    @property
    def ok(self):
        return not self.problems


def _supported(config):
    from rtl.top import supported_opcodes
    return supported_opcodes(config)


def image_machine(image, config, supported=None, faults=None):
    """A ``golden.Machine`` holding the image's initial UB and GM, with ``faults`` (default: the image's)."""
    from golden.machine import Machine
    m = Machine(config, supported=supported, faults=image.faults if faults is None else faults)
    m.ub[:] = np.frombuffer(image.ub, np.uint8)
    for addr, data in image.gm:
        m.gm.write(addr, data)
    return m


def run_golden(image, config, supported=None):
    """(statuses, undefined byte counts, outputs) of the image on ``golden.Machine`` (with the image's GM
    faults: the AXI errors they cause and the bytes those leave undefined, UB and GM, are counted)."""
    m = image_machine(image, config, supported)
    statuses, undefined = [], []
    for cmd in image.commands:
        statuses.append(m.execute(cmd, on_undefined="mask"))
        undefined.append((0 if m.last_undefined is None else int(m.last_undefined.sum())) +
                         sum(hi - lo for lo, hi in m.last_gm_undefined))
    outputs = {}
    for o in image.outputs:
        addr, n = output_extent(o)
        raw = bytes(m.ub[addr:addr + n]) if o["space"] == "ub" else m.gm.read(addr, n)
        outputs[o["name"]] = decode_output(o, raw)
    return statuses, undefined, outputs


def run_rtl(image, config_name, sim="icarus", waves=False, label=None, workdir=None, back_to_back=False):
    """One cocotb run of ``cocotb_tests/test_pto.py`` on ``image`` (``back_to_back``: its commands only back to
    back, compared at the end); returns (results dict, RunResult)."""
    from sim.runner import BUILD, run
    if config_name.split(",")[0] not in PRESETS:
        raise UsageError(f"the RTL is built for preset configurations (with overrides: NAME,field=value) only "
                         f"({', '.join(PRESETS)}), not {config_name!r}; use --sim none for other configurations")
    label = label or "pto"
    workdir = pathlib.Path(workdir) if workdir else pathlib.Path(tempfile.mkdtemp(prefix=f"{label}-", dir=_tmp(BUILD)))
    image.save(workdir / "image")
    results_file = workdir / "results.json"
    if results_file.exists():
        results_file.unlink()
    result = run("test_pto", "pto_program", config_name, sim, waves=waves, label=label,
                 params={"program": str(workdir / "image"), "results": str(results_file),
                         "mode": _mode(back_to_back)})
    results = json.loads(results_file.read_text()) if results_file.exists() else None
    return results, result


def _mode(back_to_back):
    """``TILEVEC_MODE`` for ``cocotb_tests/test_pto.py``: the commands back to back, or checked one at a time."""
    return "back_to_back" if back_to_back else "checked"


def _tmp(build):
    d = build / "pto"
    d.mkdir(parents=True, exist_ok=True)
    return d


def load_inputs(path):
    """{name: array} from an ``.npz`` file (:func:`sim.programs.cli.read_npz`: ``InputError`` / ``UsageError``
    naming the file when it is none)."""
    return read_npz(path)


def run_program(program, inputs, *, sim="none", config=None, waves=False, label=None, faults=None,
                back_to_back=False):
    """Assemble ``program`` (a Program, PTO-AS text file path, or an Assembly), bind ``inputs`` and run it.
    ``faults``: a function of the bound :class:`pto.image.Image` giving its GM faults (``Image.faults``).
    ``back_to_back`` (RTL runs): the commands streamed without a pause, as a host sends a program (the pipes
    of a concurrent unit overlap), and compared with the golden at the end (every status, the UB, the
    outputs), instead of one at a time with the UB compared after each and then timed back to back.
    Raises AsmError / InputError for the program or its inputs; returns a :class:`Report`."""
    from pto.parser import parse_file
    from pto.assembly import Assembly
    if isinstance(program, (str, pathlib.Path)):
        program = parse_file(program)
    asm = program if isinstance(program, Assembly) else program.assemble(config)
    spec = asm.spec or "small"
    image = asm.bind(inputs)
    if faults is not None:
        image.faults = faults(image)
    rows = _rows(image)
    if sim == "none":
        statuses, undefined, outputs = run_golden(image, asm.config)
        for r, s, u in zip(rows, statuses, undefined):
            r.status, r.undefined = s.name, u
            if image.faults:
                r.golden = s.name       # (a status the faults cause is the golden's, see _expect_problems)
        rep = Report(rows, outputs, sim="none")
        supported = None
    else:
        supported = _supported(asm.config)
        config_name = spec
        golden = run_golden(image, asm.config, _supported(asm.config))
        results, result = run_rtl(image, config_name, sim, waves, label=label or f"pto_{_stem(asm.program)}",
                                  back_to_back=back_to_back)
        rep = _rtl_report(image, rows, golden, results, result, sim)
        if waves and result.waves_file.exists():
            rep.waves = str(result.waves_file)
            try:
                from sim.waves import write_gtkw
                write_gtkw(result.waves_file)
            except RuntimeError as e:       # no fst2vcd: the FST is still there, just no save file
                print(f"note: {e}", file=sys.stderr)
        if not result.passed and not rep.problems:
            rep.problems.append(f"the cocotb run failed: {result.summary()} (log: {result.log_file})")
    _expect_problems(rep, image, asm.config, supported)
    return rep


def run_images(images, config, config_name, sim="verilator", label="pto_batch", workdir=None, back_to_back=False):
    """Several bound images (``Assembly.bind``) in one simulator run (``cocotb_tests/test_pto.py``
    ``pto_programs``: one after the other on the same unit, each shadowed by the golden as in
    :func:`run_program`), so the per-run start-up is paid once. ``back_to_back``: each image's commands run
    back to back and are compared with the golden at the end (every status, the UB, the outputs), and its
    report has the ``schedule``. Returns (reports, RunResult): a :class:`Report` per image the run reached
    (it stops after the first that failed)."""
    from sim.runner import BUILD, run
    if config_name.split(",")[0] not in PRESETS:
        raise UsageError(f"the RTL is built for preset configurations (with overrides: NAME,field=value) only "
                         f"({', '.join(PRESETS)}), not {config_name!r}")
    workdir = pathlib.Path(workdir) if workdir else pathlib.Path(tempfile.mkdtemp(prefix=f"{label}-", dir=_tmp(BUILD)))
    dirs = [str(image.save(workdir / f"image{k}")) for k, image in enumerate(images)]
    listing, results_file = workdir / "programs.txt", workdir / "results.json"
    listing.write_text("\n".join(dirs) + "\n")
    if results_file.exists():
        results_file.unlink()
    result = run("test_pto", "pto_programs", config_name, sim, label=label,
                 params={"programs": str(listing), "results": str(results_file),
                         "mode": _mode(back_to_back)})
    all_results = json.loads(results_file.read_text()) if results_file.exists() else []
    reports = []
    for k, image in enumerate(images):
        results = all_results[k] if k < len(all_results) else None
        if results is None and any(not r.ok for r in reports):
            break
        golden = run_golden(image, config, _supported(config))
        rep = _rtl_report(image, _rows(image), golden, results, result, sim)
        _expect_problems(rep, image, config, _supported(config))
        reports.append(rep)
        if not rep.ok:
            break
    if not result.passed and reports and all(r.ok for r in reports):
        reports[-1].problems.append(f"the cocotb run failed: {result.summary()} (log: {result.log_file})")
    return reports, result


def _rows(image):
    return [Row(i["line"] if i["line"] else "-", i["op"], i["shape"], i["dtype"], i["expect"]) for i in image.info]


def _rtl_report(image, rows, golden, results, result, sim):
    """The Report of an RTL run of ``image``: ``golden`` = :func:`run_golden`'s answer, ``results`` what the
    testbench wrote for it (None: nothing), ``result`` the RunResult."""
    statuses, undefined, golden_out = golden
    rep = Report(rows, {}, sim=sim, log=str(result.log_file))
    for r, s in zip(rows, statuses):
        r.golden = s.name
    if results is None:
        rep.problems.append(f"the simulation left no results (see {result.log_file})")
        return rep
    for r, c in zip(rows, results["commands"]):
        r.status, r.cycles, r.undefined = c["status"], c["cycles"], c["undefined"]
        r.undetermined = c.get("undetermined", False)
    rep.total_cycles = results.get("total_cycles")
    rep.busy = results.get("busy")
    rep.stalled = results.get("stalled")
    rep.early = results.get("early")
    if results.get("schedule"):
        rep.schedule = [(c["opcode"], start, end) for c, (_, start, end) in zip(image.commands, results["schedule"])]
        rep.accepted = [a for a, _, _ in results["schedule"]]
    if results["error"]:
        rep.problems.append(results["error"] + f" (log: {result.log_file})")
    outs = {o["name"]: o for o in image.outputs}
    for name, hx in results["outputs"].items():
        rep.outputs[name] = decode_output(outs[name], bytes.fromhex(hx))
    if not any(r.undefined for r in rows):
        for name, arr in rep.outputs.items():
            if arr.tobytes() != golden_out[name].tobytes():
                rep.problems.append(f"output '{name}': RTL and golden differ")
    return rep


def _expect_problems(rep, image, config, supported=None):
    """Every instruction that answered a status other than the one it expects: an :class:`AsmError` at its
    source line (the golden's rule for it, the shapes bound at run time, and notes at the ``pto.tassign`` s that
    cause it), as the static checks report it; then the outputs those failures leave uncomputed, dropped from
    ``rep.outputs`` into ``rep.missing``."""
    from golden.check import check_strict
    from golden.errors import IsaError
    from rtl.isa import Status
    faulted = {Status.AXI_READ_ERROR.name, Status.AXI_WRITE_ERROR.name} if image.faults else set()
    for k, (r, info, cmd) in enumerate(zip(rep.rows, image.info, image.commands)):
        if r.status == "-" or r.status == r.expect:
            continue
        if r.status in faulted and (r.golden == r.status or r.undetermined):
            continue        # the image's GM faults cause it, as the golden says, or may (its indices undefined)
        try:
            check_strict(cmd, config, supported)
            reason = ""
        except IsaError as e:
            reason = e.message
        head = f"{r.op}: {r.status}" if r.expect == "OK" else f"{r.op}: expected {r.expect}, answered {r.status}"
        msg = head + (f": {reason}" if reason else "") + \
            (f" (shapes bound at run time: {info['bound']})" if info.get("bound") else "")
        loc = Loc.from_json(info.get("loc")) or Loc(f"{image.file or '<program>'}, instruction {k + 1}")
        notes = [(m, Loc.from_json(l)) for m, l in info.get("notes", {}).get(r.status, [])]
        err = AsmError(msg, loc, status=Status.__members__.get(r.status), notes=notes)
        rep.errors.append(err)
        rep.problems.append(err.format())
    rep.missing = uncomputed(rep.rows, image)
    for name in rep.missing:
        rep.outputs.pop(name, None)


def uncomputed(rows, image):
    """{output name: why}: the outputs a failed instruction left uncomputed. An instruction that did not answer
    OK (an error, an ``expect``-ed error, or one the run never reached) computes nothing, and neither does one
    that reads a value nothing computed; an instruction that succeeds on computed values computes its result
    again."""
    bad = {}
    for r, info in zip(rows, image.info):
        w = info.get("writes")
        if w is None:
            continue
        if r.status != "OK":
            bad[w] = (f"line {r.line}: {r.op} answered {r.status}" if r.status != "-" else
                      f"line {r.line}: {r.op} did not run")
            continue
        cause = next((bad[x] for x in info.get("reads", ()) if x in bad), None)
        if cause is not None:
            bad[w] = cause
        else:
            bad.pop(w, None)
    return {o["name"]: bad[o["buffer"]] for o in image.outputs if o.get("buffer") in bad}


def _stem(program):
    return pathlib.Path(program.file).stem if program.file and not program.file.startswith("<") else program.name


def format_table(rows, sim="none"):
    head = ["line", "op", "shape (valid/static)", "type", "status", "cycles"]
    if sim != "none":
        head.append("golden")
    if any(r.undefined for r in rows):
        head.append("undefined bytes")
    data = []
    for r in rows:
        status = r.status + ("" if r.expect == "OK" else f" (expect {r.expect})")
        row = [str(r.line), r.op, r.shape, r.dtype, status, str(r.cycles)]
        if sim != "none":
            row.append(r.golden)
        if "undefined bytes" in head:
            row.append(str(r.undefined))
        data.append(row)
    widths = [max(len(x) for x in col) for col in zip(head, *data)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*head), "  ".join("-" * w for w in widths)] + [fmt.format(*d) for d in data]
    return "\n".join(lines)


def npz_safe(arrays):
    """The arrays with bfloat16 / fp8 ones (ml_dtypes, which .npz files cannot describe) as unsigned integers
    of the same bits; the runner's inputs accept those bits for bf16 / fp8 arguments."""
    out = {}
    for k, v in arrays.items():
        v = np.asarray(v)
        if type(v.dtype).__module__.startswith("ml_dtypes") or v.dtype.type.__module__.startswith("ml_dtypes"):
            v = v.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[v.dtype.itemsize])
        out[k] = v
    return out


def save_outputs(path, outputs):
    """Write ``outputs`` to exactly ``path`` (an ``.npz``; numpy would add the suffix to a name without it)."""
    with open(path, "wb") as f:
        np.savez(f, **npz_safe(outputs))


@user_errors
def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m sim run", description="Run a PTO-AS program on the RTL and / or "
                                "the golden model. Exit code 0: pass; 1: a mismatch, an RTL failure or an error "
                                "status; 2: an error in the program, its inputs or the arguments.")
    p.add_argument("program", help="a .pto file")
    p.add_argument("--data", help="inputs .npz (one array per function argument, by name)")
    p.add_argument("--sim", default="icarus", choices=["icarus", "verilator", "none"],
                   help="simulator, or none: the golden model alone")
    p.add_argument("--config", help="configuration preset (default: the program's config attribute, else small); "
                   "with --sim none also NAME,field=value,...")
    p.add_argument("--waves", action="store_true", help="write an FST of the RTL run and its GTKWave save file")
    p.add_argument("--out", help="write the outputs to this .npz")
    p.add_argument("--timeline", metavar="PNG", help="draw the RTL run's instructions as bars in their pipes' "
                   "lanes over cycles, with each pipe's utilization (sim/timeline.py)")
    p.add_argument("--back-to-back", action="store_true", help="stream the commands without a pause (the pipes of "
                   "a concurrent configuration overlap) and compare statuses, the whole UB and the outputs with "
                   "the golden at the end, instead of one command at a time with the UB compared after each "
                   "(what a fuzz failure back to back needs; the waves are of that run)")
    a = p.parse_args(argv)
    # everything the user named, checked before anything runs (a long simulation must not end in an unwritable
    # --out)
    program = readable_file(a.program, "program")
    if a.out:
        writable_file(a.out, "--out")
    if a.timeline:
        writable_file(a.timeline, "--timeline")
        if a.sim == "none":
            raise UsageError("--timeline draws an RTL run: give --sim icarus or verilator, not none")
    if a.back_to_back and a.sim == "none":
        raise UsageError("--back-to-back streams the commands into the RTL: give --sim icarus or verilator, not "
                         "none (the golden model runs one instruction at a time)")
    if a.config:
        from pto.program import config_from_spec
        config_from_spec(a.config, source=f"--config {a.config!r}")
    inputs = load_inputs(a.data) if a.data else {}
    rep = run_program(program, inputs, sim=a.sim, config=a.config, waves=a.waves, back_to_back=a.back_to_back)
    print(format_table(rep.rows, rep.sim))
    if rep.total_cycles is not None:
        print(f"total {rep.total_cycles} cycles, first command accepted to last response, commands back to back "
              f"(sum of instruction cycles {rep.sum_cycles}" + ("; compared at the end" if a.back_to_back else "")
              + ")")
    if rep.busy:
        print("busy cycles per pipe (the unit's counters perf__busy__*): "
              + ", ".join(f"{pipe} {n}" for pipe, n in rep.busy.items()))
    if rep.stalled:
        print("stalled-on-hazard cycles per pipe (perf__stalled__*): "
              + ", ".join(f"{pipe} {n}" for pipe, n in rep.stalled.items()))
    if rep.early:
        print("instructions started while their pipe's previous one was still in its engine (perf__early__*): "
              + ", ".join(f"{pipe} {n}" for pipe, n in rep.early.items()))
    if a.timeline and rep.schedule:
        from sim.timeline import draw
        util = draw(rep.schedule, a.timeline, title=pathlib.Path(program).name, labels=[r.op for r in rep.rows],
                    accepted=rep.accepted)
        print(f"timeline -> {a.timeline}: " + ", ".join(f"{pipe.value} {100 * u:.0f}%" for pipe, u in util.items()))
    if a.out:
        save_outputs(a.out, rep.outputs)
        print(f"outputs: {', '.join(f'{k} {v.shape} {v.dtype}' for k, v in rep.outputs.items()) or 'none'} "
              f"-> {a.out}")
    for name, why in rep.missing.items():
        print(f"not computed: {name} ({why})" + (f": left out of {a.out}" if a.out else ""))
    if rep.log:
        print(f"simulator log: {rep.log}")
    if rep.waves:
        gtkw = pathlib.Path(rep.waves).with_suffix(".gtkw")
        print(f"waves: {rep.waves}" + (f" (GTKWave save file {gtkw}: gtkwave {rep.waves} {gtkw})" if gtkw.exists() else ""))
    sys.stdout.flush()
    located = {e.format() for e in rep.errors}
    for prob in rep.problems:
        print(prob if prob in located else f"FAIL: {prob}", file=sys.stderr)
    print("PASS" if rep.ok else "FAIL")
    return 0 if rep.ok else 1
