"""The :class:`Image` of a bound program (everything a run needs, concrete; saved as a directory for the
testbench), and the outputs' extents and decoding."""

from dataclasses import dataclass, field

import numpy as np

from rtl.isa import DTYPE_BYTES, DType, Layout, OobMode, Opcode
from golden.faults import GmFaults
from golden.numerics import DTYPE_NUMPY

__all__ = ["Image", "cmd_to_json", "cmd_from_json", "gm_span", "output_extent", "decode_output"]


_ENUMS = {"opcode": Opcode, "oob": OobMode, "dtype": DType, "layout": Layout}


def cmd_to_json(cmd):
    out = {}
    for k, v in cmd.items():
        if isinstance(v, dict):
            out[k] = cmd_to_json(v)
        elif k in _ENUMS and isinstance(v, _ENUMS[k]):
            out[k] = v.name
        else:
            out[k] = int(v)
    return out


def cmd_from_json(d):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = cmd_from_json(v)
        elif k in _ENUMS and isinstance(v, str):
            out[k] = _ENUMS[k][v]
        else:
            out[k] = v
    return out


@dataclass
class Image:
    """Everything a run needs, concrete: ``commands`` (Command dicts), ``info`` (per command: line, op, shape,
    dtype, expect), ``ub`` (the initial UB, whole), ``gm`` ([(address, bytes)]), ``outputs`` ([{name, space
    ``ub``/``gm``, desc}]), ``faults`` (a :class:`golden.faults.GmFaults`: GM windows whose AXI accesses
    the testbench's memory rejects, empty by default; ``python -m sim fuzz --faults`` places them). Saved as
    a directory (``image.json``, ``ub.bin``, ``gm<i>.bin``) for the testbench (``TILEVEC_PROGRAM``)."""
    config: str
    commands: list
    info: list
    ub: bytes
    gm: list
    outputs: list
    file: str = ""
    faults: GmFaults = field(default_factory=GmFaults)

    def save(self, directory):
        import json
        import pathlib
        d = pathlib.Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "ub.bin").write_bytes(self.ub)
        gm = []
        for i, (addr, data) in enumerate(self.gm):
            (d / f"gm{i}.bin").write_bytes(data)
            gm.append({"addr": addr, "file": f"gm{i}.bin"})
        (d / "image.json").write_text(json.dumps({
            "config": self.config, "file": self.file, "commands": [cmd_to_json(c) for c in self.commands],
            "info": self.info, "gm": gm,
            "outputs": [{**o, "desc": cmd_to_json(o["desc"])} for o in self.outputs],
            "faults": self.faults.to_json()}, indent=1))
        return d

    @classmethod
    def load(cls, directory):
        import json
        import pathlib
        d = pathlib.Path(directory)
        j = json.loads((d / "image.json").read_text())
        return cls(j["config"], [cmd_from_json(c) for c in j["commands"]], j["info"], (d / "ub.bin").read_bytes(),
                   [(g["addr"], (d / g["file"]).read_bytes()) for g in j["gm"]],
                   [{**o, "desc": cmd_from_json(o["desc"])} for o in j["outputs"]], j.get("file", ""),
                   GmFaults.from_json(j.get("faults", {})))


def gm_span(image):
    """(lo, hi): a byte range of GM that holds every region the image's commands and outputs name and its
    initial GM data (conservative: each region as a square of its larger dimension, whatever its layout);
    (0, 0) when it names none. The batch testbench clears it between programs."""
    spans = [(a, a + len(d)) for a, d in image.gm]
    for d in [c["gm"] for c in image.commands if "gm" in c] + [o["desc"] for o in image.outputs if o["space"] == "gm"]:
        size = DTYPE_BYTES[DType(d["dtype"])]
        n = max(d["rows"], d["cols"])
        spans.append((d["base"], d["base"] + n * max(d["row_stride"], n * size) + n * size))
    spans = [s for s in spans if s[1] > s[0]]
    return (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else (0, 0)


def output_extent(out):
    """(address, length) of the bytes holding an output: the tile's static extent, or the GM region."""
    d = out["desc"]
    size = DTYPE_BYTES[DType(d["dtype"])]
    if out["space"] == "ub":
        return d["base"], d["rows"] * d["cols"] * size
    if d["rows"] == 0 or d["cols"] == 0:
        return d["base"], 0
    return d["base"], (d["rows"] - 1) * d["row_stride"] + d["cols"] * size


def decode_output(out, raw):
    """The output array from the bytes of :func:`output_extent`."""
    d = out["desc"]
    dt = DTYPE_NUMPY[DType(d["dtype"])]
    size = dt.itemsize
    if out["space"] == "ub":
        flat = np.frombuffer(bytes(raw), dt)
        if d["layout"] == Layout.COL_MAJOR:
            full = flat.reshape(d["cols"], d["rows"]).T
        else:
            full = flat.reshape(d["rows"], d["cols"])
        return np.ascontiguousarray(full[:d["valid_rows"], :d["valid_cols"]])
    rows = [np.frombuffer(bytes(raw[r * d["row_stride"]:r * d["row_stride"] + d["cols"] * size]), dt)
            for r in range(d["rows"])]
    return np.stack(rows) if rows else np.zeros((0, d["cols"]), dt)
