"""PTO-AS types: ``!pto.tile<...>`` / ``!pto.tile_buf<...>`` (a UB tile) and ``!pto.memref<...>`` (a GM region).

Element types use the MLIR spellings (``f16``, ``bf16``, ``f32``, ``i8``, ``ui8``, ``i16``, ``ui16``, ``i32``,
``ui32``, ``f8E4M3FN``, ``f8E5M2``) and map onto ``rtl.isa.DType``. A ``?`` dimension is bound at run time
(a tile's valid shape, a memref's shape): see docs/pto-as.md.
"""

import re
from dataclasses import dataclass

from rtl.isa import DTYPE_BYTES, DType, Layout

from pto.errors import AsmError, TokenCursor

__all__ = ["ELEMENT_TYPES", "TileType", "MemRefType", "parse_type", "element_type", "element_name", "tile", "memref"]

#: MLIR element spelling -> DType.
ELEMENT_TYPES = {
    "i8": DType.INT8, "ui8": DType.UINT8, "i16": DType.INT16, "ui16": DType.UINT16,
    "i32": DType.INT32, "ui32": DType.UINT32, "f16": DType.FP16, "bf16": DType.BF16, "f32": DType.FP32,
    "f8E4M3FN": DType.FP8E4M3, "f8E5M2": DType.FP8E5M2,
}
_BY_LOWER = {k.lower(): v for k, v in ELEMENT_TYPES.items()}
_NAME = {v: k for k, v in ELEMENT_TYPES.items()}
#: tile_buf locations (the seeds' TileType::Vec, and GEMV's Left/Right/Acc): all are UB tiles in this unit.
LOCATIONS = ("vec", "left", "right", "acc", "mat")


def element_type(name):
    """DType of an MLIR element spelling (case-insensitive for the fp8 names), or a DType / its name."""
    if isinstance(name, DType):
        return name
    if name in ELEMENT_TYPES:
        return ELEMENT_TYPES[name]
    if name.lower() in _BY_LOWER:
        return _BY_LOWER[name.lower()]
    if name.upper() in DType.__members__:
        return DType[name.upper()]
    raise KeyError(name)


def element_name(dtype):
    return _NAME[DType(dtype)]


def _dim(d):
    return "?" if d is None else str(d)


@dataclass(frozen=True)
class TileType:
    """A UB tile: static ``rows x cols``, ``valid`` = (valid rows, valid cols) with ``None`` for a ``?`` bound
    at run time, element ``dtype``, ``layout``. ``buf`` / ``loc``: spelled as ``!pto.tile_buf<loc, ...>``
    (the location does not change the tile: the unit has one UB)."""
    rows: int
    cols: int
    dtype: DType
    valid: tuple = None
    layout: Layout = Layout.ROW_MAJOR
    buf: bool = False
    loc: str = "vec"

    def __post_init__(self):
        if self.valid is None:
            object.__setattr__(self, "valid", (self.rows, self.cols))
        object.__setattr__(self, "valid", tuple(self.valid))

    kind = "tile"

    @property
    def static(self):
        """True when the valid shape is known (no ``?``)."""
        return None not in self.valid

    @property
    def nbytes(self):
        return self.rows * self.cols * DTYPE_BYTES[self.dtype]

    def key(self):
        """What makes two tile types the same tile (spelling and location aside)."""
        return (self.rows, self.cols, self.dtype, self.valid, self.layout)

    def same(self, other):
        return isinstance(other, TileType) and self.key() == other.key()

    def with_valid(self, valid):
        return TileType(self.rows, self.cols, self.dtype, tuple(valid), self.layout, self.buf, self.loc)

    def __str__(self):
        body = f"{self.rows}x{self.cols}x{element_name(self.dtype)}"
        if self.buf:
            body = f"{self.loc}, {body}"
        if self.valid != (self.rows, self.cols):
            body += f", valid={_dim(self.valid[0])}x{_dim(self.valid[1])}"
        if self.layout == Layout.COL_MAJOR:
            body += ", col_major"
        return f"!pto.{'tile_buf' if self.buf else 'tile'}<{body}>"


@dataclass(frozen=True)
class MemRefType:
    """A GM region: ``shape`` = (rows, cols) (``None`` = ``?``, bound from the input data), element ``dtype``,
    ``row_stride`` in elements (``None``: dense, = cols). Written ``!pto.memref<RxCxT>`` or
    ``!pto.memref<RxCxT, strided<[S, 1]>>``; a 1-D ``!pto.memref<NxT>`` is one row; more dimensions are
    accepted when all but the last two are 1 (the seeds' 5-D GlobalTensor shapes)."""
    shape: tuple
    dtype: DType
    row_stride: int = None

    kind = "memref"

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))

    @property
    def static(self):
        return None not in self.shape

    @property
    def rows(self):
        return self.shape[0]

    @property
    def cols(self):
        return self.shape[1]

    def stride(self):
        """Row stride in elements (dense when not given)."""
        return self.cols if self.row_stride is None else self.row_stride

    def nbytes(self):
        """Bytes from the first element to one past the last (static shape only)."""
        r, c = self.shape
        if r == 0 or c == 0:
            return 0
        return ((r - 1) * self.stride() + c) * DTYPE_BYTES[self.dtype]

    def key(self):
        return (self.shape, self.dtype, self.row_stride)

    def same(self, other):
        return isinstance(other, MemRefType) and self.key() == other.key()

    def with_shape(self, shape):
        return MemRefType(tuple(shape), self.dtype, self.row_stride)

    def __str__(self):
        body = f"{_dim(self.rows)}x{_dim(self.cols)}x{element_name(self.dtype)}"
        if self.row_stride is not None:
            body += f", strided<[{self.row_stride}, 1]>"
        return f"!pto.memref<{body}>"


def tile(rows, cols, dtype, valid=None, layout=Layout.ROW_MAJOR, buf=False, loc="vec"):
    """A :class:`TileType` (builder convenience): ``dtype`` an MLIR spelling or a DType; ``layout`` a Layout
    or ``"row_major"`` / ``"col_major"``; ``valid`` may contain None (``?``)."""
    if isinstance(layout, str):
        layout = Layout[layout.upper()]
    return TileType(rows, cols, element_type(dtype), valid, layout, buf, loc)


def memref(rows, cols, dtype, row_stride=None):
    """A :class:`MemRefType` (builder convenience); ``rows`` / ``cols`` may be None (``?``)."""
    return MemRefType((rows, cols), element_type(dtype), row_stride)


# ------------------------------------------------------------------------------------------------ parsing

_TOKEN = re.compile(r"(?P<int>\d+)|(?P<q>\?)|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<p>[<>\[\],=])")


class _TypeLexer(TokenCursor):
    """Tokens of a type body: integers, ``?``, identifiers and ``< > [ ] , =``; an ``x`` right after a number
    or a ``?`` is the shape separator (``16x16xf32`` lexes as 16 / x / 16 / x / f32)."""

    def __init__(self, text, loc, offset):
        self.text, self.loc, self.offset = text, loc, offset
        self.toks = []
        pos = 0
        while pos < len(text):
            if text[pos].isspace():
                pos += 1
                continue
            if text[pos] == "x" and self.toks and self.toks[-1][0] in ("int", "q"):
                self.toks.append(("p", "x", pos))
                pos += 1
                continue
            m = _TOKEN.match(text, pos)
            if not m:
                raise AsmError(f"unexpected character {text[pos]!r} in type", self._at(pos))
            self.toks.append((m.lastgroup, m.group(m.lastgroup), pos))
            pos = m.end()
        self.i = 0

    def _at(self, pos):
        return self.loc.shift(self.offset + pos) if self.loc else None

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "", len(self.text))

    def where(self, tok):
        return self._at(tok[2])

    def expect(self, val):
        t = self.next()
        if t[1] != val:
            self.error(f"expected {val!r} in type, found {t[1] or 'end of type'!r}", t)
        return t


def _split_shape(lx):
    """dims ('x' dim)* 'x' elemtype -> (dims, dtype). dims: ints or None."""
    dims = []
    while True:
        t = lx.next()
        if t[0] == "int":
            dims.append(int(t[1], 0))
        elif t[0] == "q":
            dims.append(None)
        elif t[0] == "id":
            # split "16xf32"-style identifiers are handled by the lexer; here an element type ends the shape
            try:
                return dims, element_type_strict(t[1])
            except KeyError:
                lx.error(f"unknown element type {t[1]!r} (one of {', '.join(ELEMENT_TYPES)})", t)
        else:
            lx.error(f"expected a dimension or an element type, found {t[1] or 'end of type'!r}", t)
        lx.expect("x")


def element_type_strict(name):
    if name in ELEMENT_TYPES:
        return ELEMENT_TYPES[name]
    if name.lower() in _BY_LOWER:
        return _BY_LOWER[name.lower()]
    raise KeyError(name)


def parse_type(text, loc=None):
    """Parse a whole type token (``!pto.tile<16x16xf32>``...) into a TileType or MemRefType. ``loc``: where
    the token starts (error columns point inside it)."""
    m = re.fullmatch(r"!pto\.([A-Za-z_]+)<(.*)>", text, re.S)
    if not m:
        raise AsmError(f"malformed type {text!r}", loc)
    kind, body = m.group(1), m.group(2)
    lx = _TypeLexer(body, loc, m.start(2))
    if kind == "tile":
        t = _tile_body(lx, buf=False)
    elif kind == "tile_buf":
        t = _tile_body(lx, buf=True)
    elif kind == "memref":
        t = _memref_body(lx)
    else:
        raise AsmError(f"unknown type !pto.{kind} (use !pto.tile, !pto.tile_buf or !pto.memref)", loc)
    if lx.peek()[0] != "end":
        lx.error(f"unexpected {lx.peek()[1]!r} in type")
    return t


def _valid_dims(lx):
    t = lx.next()
    a = None if t[0] == "q" else int(t[1], 0) if t[0] == "int" else lx.error("expected a valid row count or ?", t)
    lx.expect("x")
    t = lx.next()
    b = None if t[0] == "q" else int(t[1], 0) if t[0] == "int" else lx.error("expected a valid column count or ?", t)
    return a, b


def _layout(lx, t):
    v = t[1].lower()
    if v in ("row_major", "rowmajor"):
        return Layout.ROW_MAJOR
    if v in ("col_major", "colmajor"):
        return Layout.COL_MAJOR
    lx.error(f"unknown layout {t[1]!r} (row_major or col_major)", t)


def _tile_body(lx, buf):
    start = lx.peek()
    loc = "vec"
    kv = {}
    rows = cols = dtype = None
    valid = None
    layout = Layout.ROW_MAJOR
    # keyword form: loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, ...
    if start[0] == "id" and len(lx.toks) > lx.i + 1 and lx.toks[lx.i + 1][1] == "=":
        vr = vc = "static"
        while True:
            key = lx.next()
            if key[0] != "id":
                lx.error("expected a parameter name", key)
            lx.expect("=")
            val = lx.next()
            k = key[1]
            if k == "loc":
                loc = val[1]
            elif k == "dtype":
                try:
                    dtype = element_type_strict(val[1])
                except KeyError:
                    lx.error(f"unknown element type {val[1]!r}", val)
            elif k in ("rows", "cols"):
                if val[0] != "int":
                    lx.error(f"{k} must be an integer", val)
                rows, cols = (int(val[1], 0), cols) if k == "rows" else (rows, int(val[1], 0))
            elif k in ("v_row", "v_col"):
                v = None if val[0] == "q" else int(val[1], 0) if val[0] == "int" else lx.error(f"{k}: integer or ?", val)
                vr, vc = (v, vc) if k == "v_row" else (vr, v)
            elif k == "blayout":
                layout = _layout(lx, val)
            elif k == "valid":
                lx.i -= 1
                vr, vc = _valid_dims(lx)
            elif k in ("slayout", "fractal", "pad"):
                pass                # accepted, no meaning in this unit (no fractal layouts)
            else:
                lx.error(f"unknown tile parameter {k!r}", key)
            if lx.peek()[1] != ",":
                break
            lx.next()
        if rows is None or cols is None or dtype is None:
            lx.error("a keyword tile_buf needs dtype=, rows= and cols=", start)
        valid = (rows if vr == "static" else vr, cols if vc == "static" else vc)
    else:
        if buf and start[0] == "id" and start[1] in LOCATIONS:
            loc = lx.next()[1]
            lx.expect(",")
        dims, dtype = _split_shape(lx)
        if len(dims) != 2 or None in dims:
            lx.error("a tile has a static 2-D shape RxCxT", start)
        rows, cols = dims
        while lx.peek()[1] == ",":
            lx.next()
            t = lx.next()
            if t[1] == "valid":
                lx.expect("=")
                valid = _valid_dims(lx)
            elif t[1] == "blayout":
                lx.expect("=")
                layout = _layout(lx, lx.next())
            elif t[1] == "loc":
                lx.expect("=")
                loc = lx.next()[1]
            elif t[0] == "id" and t[1].lower() in ("row_major", "col_major", "rowmajor", "colmajor"):
                layout = _layout(lx, t)
            else:
                lx.error(f"unknown tile parameter {t[1]!r} (valid=RxC, row_major, col_major, loc=...)", t)
    if loc not in LOCATIONS:
        lx.error(f"unknown tile location {loc!r} (one of {', '.join(LOCATIONS)})", start)
    return TileType(rows, cols, dtype, valid, layout, buf, loc)


def _memref_body(lx):
    start = lx.peek()
    dims, dtype = _split_shape(lx)
    if not dims:
        lx.error("a memref needs a shape", start)
    if len(dims) == 1:
        dims = [1] + dims
    if len(dims) > 2:
        if any(d != 1 for d in dims[:-2]):
            lx.error("a memref of more than 2 dimensions must have all but the last two equal to 1", start)
        dims = dims[-2:]
    stride = None
    while lx.peek()[1] == ",":
        lx.next()
        t = lx.next()
        if t[1] == "strided":
            lx.expect("<")
            lx.expect("[")
            vals = []
            while True:
                v = lx.next()
                if v[0] != "int":
                    lx.error("strides are integers", v)
                vals.append(int(v[1], 0))
                if lx.peek()[1] != ",":
                    break
                lx.next()
            lx.expect("]")
            lx.expect(">")
            if vals[-1] != 1:
                lx.error("the innermost stride must be 1", t)
            stride = vals[-2] if len(vals) >= 2 else None
        else:
            lx.error(f"unknown memref parameter {t[1]!r} (strided<[S, 1]>)", t)
    return MemRefType(tuple(dims), dtype, stride)
