"""Global-memory faults: address windows whose AXI accesses the memory rejects (SLVERR / DECERR), and
which instructions they hit (docs/semantics.md, "AXI errors").

A read moves whole bus words: an instruction's read of the GM bytes ``[lo, hi)`` reads every
``bus_bytes``-aligned word that holds one of them (the hardware's bursts cover exactly those words), so a
read window hits it when it overlaps that hull. A write carries byte strobes: only the bytes written
count. ``bus_bytes`` is the AXI data width in bytes (``Config.axi_data_bytes``).
"""

from dataclasses import dataclass

__all__ = ["GmFaults", "bus_hull"]


def bus_hull(lo, hi, bus_bytes):
    """The bus words holding the bytes ``[lo, hi)``, as a byte range (empty stays empty)."""
    if hi <= lo:
        return lo, lo
    return lo - lo % bus_bytes, -(-hi // bus_bytes) * bus_bytes


def _hits(windows, spans):
    return any(a < hi and lo < b for lo, hi in spans for a, b in windows)


@dataclass(frozen=True)
class GmFaults:
    """Windows ``(lo, hi)`` (byte ranges, ``hi`` exclusive) where global memory rejects reads (``read``)
    and writes (``write``). ``Machine.faults`` takes one."""
    read: tuple = ()
    write: tuple = ()

    def __post_init__(self):
        for name in ("read", "write"):
            windows = tuple((int(lo), int(hi)) for lo, hi in getattr(self, name))
            for lo, hi in windows:
                if not 0 <= lo < hi:
                    raise ValueError(f"GmFaults.{name}: window [{lo:#x}, {hi:#x}) is empty or negative")
            object.__setattr__(self, name, windows)

    def read_hit(self, spans, bus_bytes):
        """Does reading the byte ranges ``spans`` ((lo, hi), ...) touch a read window (whole bus words)?"""
        return _hits(self.read, [bus_hull(lo, hi, bus_bytes) for lo, hi in spans])

    def write_hit(self, spans):
        """Does writing exactly the byte ranges ``spans`` touch a write window?"""
        return _hits(self.write, spans)

    def to_json(self):
        return {"read": [list(w) for w in self.read], "write": [list(w) for w in self.write]}

    @classmethod
    def from_json(cls, j):
        return cls(tuple(map(tuple, j.get("read", ()))), tuple(map(tuple, j.get("write", ()))))

    def __bool__(self):
        return bool(self.read or self.write)
