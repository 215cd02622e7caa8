"""A generic testbench for PTO programs (``python -m sim run``; sim/pto/run.py).

``TILEVEC_PROGRAM`` names an image directory written by ``sim.pto.image.Image.save`` (the assembled
program: concrete commands, the initial UB, the GM contents, where the outputs are); ``TILEVEC_RESULTS`` the
JSON file this test writes: per command the RTL's status and cycle count and the undefined bytes, then the
outputs' bytes (hex), or the first disagreement. Every command runs through ``Harness.run_masked``: shadowed
by the golden machine, statuses compared, and the whole UB compared after each one.
"""

import json
import os

import cocotb

from rtl.status import Status
from sim.pto.image import Image, output_extent

from .harness import Harness


def _name(s):
    return s.name if isinstance(s, Status) else f"0x{int(s):02x}"


@cocotb.test()
async def pto_program(dut):
    image = Image.load(os.environ["TILEVEC_PROGRAM"])
    out_path = os.environ["TILEVEC_RESULTS"]
    results = {"commands": [], "outputs": {}, "error": None}

    def save():
        with open(out_path, "w") as f:
            json.dump(results, f)

    h = await Harness.start(dut)
    await h.ub_load(0, image.ub)
    for addr, data in image.gm:
        h.gm_write(addr, data)
    i = -1
    try:
        for i, (cmd, info) in enumerate(zip(image.commands, image.info)):
            rsp, undefined = await h.run_masked(cmd, label=f"{info['op']} line {info['line']}")
            results["commands"].append({"status": _name(rsp["status"]), "cycles": int(rsp["cycles"]),
                                        "undefined": undefined})
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
        save()
        raise
    save()
