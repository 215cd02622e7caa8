"""A generic testbench for PTO programs (``python -m sim run``; sim/programs/run.py).

``TILEVEC_PROGRAM`` names an image directory written by ``pto.image.Image.save`` (the assembled
program: concrete commands, the initial UB, the GM contents, where the outputs are); ``TILEVEC_RESULTS`` the
JSON file this test writes: per command the RTL's status and cycle count and the undefined bytes, then the
outputs' bytes (hex), or the first disagreement. Every command runs through ``Harness.run_masked``: shadowed
by the golden machine, statuses compared, and the whole UB compared after each one. Then (``pto_program``)
the commands run again from the initial state, back to back, for the program's total cycles
(``total_cycles``: the first command accepted to the last response), each command's ``schedule``
(the cycles it was accepted in, its engine started in and its response came in, in that run) and each pipe's ``busy`` cycles in that run (the unit's counters).
"""

import json
import os

import cocotb

from rtl.isa import Status
from pto.image import Image, gm_span, output_extent

from .harness import Harness


def _name(s):
    return s.name if isinstance(s, Status) else f"0x{int(s):02x}"


async def _run_image(h, image, results, save=None):
    """Load ``image`` (the whole UB, its GM data) into the running unit and its golden shadow, run its commands,
    read its outputs; fills ``results`` ({commands, outputs, error}), calling ``save`` after each command (what a
    simulator that dies mid-run leaves); raises AssertionError on a mismatch. The image's GM faults are set
    (``Harness.set_faults``) for its commands."""
    h.set_faults(image.faults)
    await h.ub_load(0, image.ub)
    for addr, data in image.gm:
        h.gm_write(addr, data)
    i = -1
    try:
        for i, (cmd, info) in enumerate(zip(image.commands, image.info)):
            rsp, undefined = await h.run_masked(cmd, label=f"{info['op']} line {info['line']}")
            results["commands"].append({"status": _name(rsp["status"]), "cycles": int(rsp["cycles"]),
                                        "undefined": undefined})
            if save:
                save()
        i = len(image.commands)
        for o in image.outputs:
            addr, n = output_extent(o)
            if o["space"] == "ub":
                raw = await h.ub_read(addr, n) if n else b""
            else:
                h.check_gm(addr, n)
                raw = h.driver.gm_read(addr, n) if n else b""
            results["outputs"][o["name"]] = bytes(raw).hex()
        await h.check_ub()
    except AssertionError as e:
        where = f"command {i} (line {image.info[i]['line']}, {image.info[i]['op']})" if i < len(image.info) \
            else "the outputs"
        results["error"] = f"{type(e).__name__} at {where}: {e}"
        raise


def _back_to_back():
    """``TILEVEC_MODE`` (``sim.programs.run``): run the commands back to back, compared at the end."""
    return os.environ.get("TILEVEC_MODE", "checked") == "back_to_back"


def _save(path, results):
    with open(path, "w") as f:
        json.dump(results, f)


async def _time_program(h, image):
    """The whole program's cycles: its commands again, from the initial UB and GM, queued back to back
    (``Driver.execute_back_to_back``: the first command accepted to the last response, as the unit runs a
    program when nothing pauses between commands); the checked run pauses after each command to compare
    the UB. Returns (total, statuses of the rerun, each command's (accepted, start, end) cycles: ``Driver.schedule``,
    each pipe's busy cycles over the rerun: the unit's counters' differences, its stalled-on-hazard cycles and
    its early starts: None for a unit without those counters)."""
    await h.ub_load(0, image.ub, shadow=False)
    for addr, data in image.gm:
        h.driver.gm_write(addr, data)
    before, stalls_before, early_before = await h.busy_counters(), await h.stall_counters(), await h.early_counters()
    responses, total = await h.driver.execute_back_to_back(image.commands)
    after, stalls_after, early_after = await h.busy_counters(), await h.stall_counters(), await h.early_counters()
    return (total, [_name(r["status"]) for r in responses], h.driver.schedule, _delta(before, after),
            _delta(stalls_before, stalls_after), _delta(early_before, early_after))


def _delta(before, after):
    """Per pipe, what a counter gained between two reads (None for a unit without it)."""
    return None if after is None else {p: (after[p] - before[p]) % (1 << 32) for p in after}


@cocotb.test()
async def pto_program(dut):
    """One image (``TILEVEC_PROGRAM``; results to ``TILEVEC_RESULTS``): its commands one at a time, the UB
    compared after each, then again back to back for the cycles (:func:`_time_program`). ``TILEVEC_MODE`` =
    ``back_to_back``: only back to back, compared at the end (:func:`_run_back_to_back`: ``python -m sim run
    --back-to-back``, a failure that needs the pipes to overlap)."""
    image = Image.load(os.environ["TILEVEC_PROGRAM"])
    out_path = os.environ["TILEVEC_RESULTS"]
    results = {"commands": [], "outputs": {}, "error": None, "total_cycles": None, "schedule": None, "busy": None}
    h = await Harness.start(dut)
    if _back_to_back():
        try:
            await _run_back_to_back(h, image, results)
        finally:
            _save(out_path, results)
        return
    try:
        await _run_image(h, image, results, save=lambda: _save(out_path, results))
        total, statuses, schedule, busy, stalled, early = await _time_program(h, image)
        if statuses != [c["status"] for c in results["commands"]]:
            results["error"] = f"the timed rerun answered {statuses}, the checked run {results['commands']}"
            raise AssertionError(results["error"])
        results["total_cycles"] = total
        results["schedule"] = schedule
        results["busy"] = busy
        results["stalled"] = stalled
        results["early"] = early
    finally:
        _save(out_path, results)


async def _run_back_to_back(h, image, results):
    """Load ``image`` and run its commands back to back (``Driver.execute_back_to_back``: no pause between
    them, as a host streams a program; once the pipes run at once, as they overlap), then compare with the
    golden machine running them one at a time: every status, the whole UB and the GM outputs. Bytes the
    golden calls undefined are not compared, and neither is anything computed from them: an instruction that
    reads an undefined byte (a source tile's span, GM it reads) makes its whole write footprint undefined
    (``golden.access``; conservative, and never cleared), and such an MGATHER may answer OK or AXI_READ_ERROR
    when the image has GM faults (its indices decide which table bytes it reads). Fills ``results`` like :func:`_run_image` plus
    ``schedule``, ``total_cycles`` and the pipes' counters over the run (``busy``, ``stalled``, ``early``); raises AssertionError on a mismatch. The image's GM faults are set
    (``Harness.set_faults``): the bytes an AXI error leaves undefined count as undefined."""
    import numpy as np
    from golden.access import access, overlap, tile_span
    from golden.check import tile_view
    from rtl.isa import EXEC_STATUSES, INSTRUCTIONS, Opcode
    from sim.failures import GmMismatch, StatusMismatch, UbMismatch
    h.set_faults(image.faults)
    await h.ub_load(0, image.ub)
    for addr, data in image.gm:
        h.gm_write(addr, data)
    before, stalls_before, early_before = await h.busy_counters(), await h.stall_counters(), await h.early_counters()
    responses, total = await h.driver.execute_back_to_back(image.commands)
    results["total_cycles"], results["schedule"] = total, h.driver.schedule
    results["busy"] = _delta(before, await h.busy_counters())
    results["stalled"] = _delta(stalls_before, await h.stall_counters())
    results["early"] = _delta(early_before, await h.early_counters())
    ub_undef = np.zeros(len(h.golden.ub), bool)
    gm_undef = []                                   # GM ranges (lo, hi) computed from undefined bytes
    try:
        for i, (cmd, rsp) in enumerate(zip(image.commands, responses)):
            want = h.golden.execute(cmd, on_undefined="mask")
            mask = h.golden.last_undefined
            gm_undef.extend(h.golden.last_gm_undefined)
            n_undef = (0 if mask is None else int(mask.sum())) + sum(hi - lo for lo, hi in h.golden.last_gm_undefined)
            results["commands"].append({"status": _name(rsp["status"]), "cycles": int(rsp["cycles"]),
                                        "undefined": n_undef})
            legal = want == Status.OK or want in EXEC_STATUSES
            tainted = False
            if legal:
                acc = access(cmd)
                sources = [tile_span(tile_view(cmd, s.name, s.role))
                           for s in INSTRUCTIONS[Opcode(cmd["opcode"])].slots if not s.writes]
                tainted = any(span and ub_undef[span[0]:span[1]].any() for span in sources) or \
                    overlap(acc.gm_reads, gm_undef)
            # An MGATHER whose indices are undefined bytes reads table elements the golden cannot know, so
            # with GM faults it may meet one the golden does not (or miss one): OK and AXI_READ_ERROR are both
            # right then, and its destination is undefined either way (below).
            either = {Status.OK, Status.AXI_READ_ERROR}
            undetermined = tainted and bool(h.golden.faults) and {rsp["status"], want} <= either and \
                Opcode(cmd["opcode"]) in (Opcode.MGATHER_ROW, Opcode.MGATHER_ELEM)
            if rsp["status"] != want and not undetermined:
                raise StatusMismatch(cmd, want, rsp["status"])
            results["commands"][-1]["undetermined"] = undetermined
            if mask is not None:
                ub_undef |= np.asarray(mask, bool)
            if not legal:
                continue                            # rejected: it touched nothing
            if tainted:
                for lo, hi in acc.ub_writes:
                    ub_undef[lo:hi] = True
                gm_undef.extend(acc.gm_writes)
        i = len(image.commands)
        got = np.frombuffer(await h.ub_image(), np.uint8)
        bad = UbMismatch.compare(0, h.golden.ub, got, care=~ub_undef, what="defined")
        if bad:
            raise bad
        for o in image.outputs:
            addr, n = output_extent(o)
            if o["space"] == "ub":
                raw = bytes(got[addr:addr + n])
            else:
                raw = h.driver.gm_read(addr, n) if n else b""
                care = np.ones(n, bool)
                for lo, hi in gm_undef:
                    care[max(lo - addr, 0):max(min(hi - addr, n), 0)] = False
                bad = GmMismatch.compare(addr, h.golden.gm.read(addr, n), raw, care=care) if n else None
                if bad:
                    raise bad
            results["outputs"][o["name"]] = bytes(raw).hex()
    except AssertionError as e:
        where = f"command {i} (line {image.info[i]['line']}, {image.info[i]['op']})" if i < len(image.info) \
            else "the end of the program"
        results["error"] = f"{type(e).__name__} at {where} (commands back to back): {e}"
        raise


@cocotb.test()
async def pto_programs(dut):
    """Several images in one simulator run (``TILEVEC_PROGRAMS``: a file naming one image directory a line;
    ``TILEVEC_RESULTS``: a JSON list, one results dict per image run), one after the other on the same unit:
    each image rewrites the whole UB (RTL and golden), and the GM the previous image used (``gm_span``) is
    zeroed first, so each program starts as in a run of its own. Stops at the first mismatch.
    ``TILEVEC_MODE`` = ``back_to_back``: each program's commands run back to back and are compared at the
    end (:func:`_run_back_to_back`) instead of one at a time with the UB compared after each."""
    with open(os.environ["TILEVEC_PROGRAMS"]) as f:
        dirs = [line.strip() for line in f if line.strip()]
    back_to_back = _back_to_back()
    out_path = os.environ["TILEVEC_RESULTS"]
    all_results = []
    h = await Harness.start(dut)
    try:
        used = (0, 0)
        for d in dirs:
            image = Image.load(d)
            if used[1] > used[0]:
                h.gm_write(used[0], bytes(used[1] - used[0]))
            results = {"commands": [], "outputs": {}, "error": None}
            all_results.append(results)
            await (_run_back_to_back if back_to_back else _run_image)(h, image, results)
            used = gm_span(image)
            _save(out_path, all_results)
    finally:
        _save(out_path, all_results)
