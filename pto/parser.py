"""The PTO-AS parser: text -> :class:`pto.program.Program` (through the same :class:`Builder` as Python).

Grammar (docs/pto-as.md)::

    program   := 'func.func' '@'name '(' [arg (',' arg)*] ')' ['->' results] ['attributes' attr-dict] '{' stmt* '}'
    arg       := value ':' type
    stmt      := value '=' op [value (',' value)*] [attr-dict] ':' sig          (synchronous / AS Level 1)
               | op value (',' value)* [attr-dict] ':' type (',' type)*        (no result: tstore %t, %m)
               | op [attr-dict] 'ins' '(' values [':' types] ')' 'outs' '(' value [':' type] ')' [attr-dict]  (Level 2)
               | value '=' 'pto.alloc_tile' ':' type
               | 'pto.tassign' value ',' ('@tile' | '@gm') '(' int ')'
               | 'return' [value (',' value)* [':' types]]
               | 'pto.tsync' [attr-dict] | 'tsync.op' attr                            (the barrier)
               | ('pto.record_event' | 'pto.wait_event') '[' attr ',' attr ',' attr ']'  (checked, dropped)
    sig       := '(' types ')' '->' type | types '->' type
    attr-dict := '{' name '=' attr (',' name '=' attr)* '}'     attr := int | "string" | #pto.kind<word> | word

Comments: ``//`` and ``#`` (when not ``#pto.``) to the end of the line.
"""

import pathlib
import re

from pto.errors import AsmError, Loc, TokenCursor
from pto.builder import Builder
from pto.program import lookup_op, signature
from pto.types import parse_type

__all__ = ["parse", "parse_file", "decode_source"]

_SPEC = [
    ("ws", r"[ \t\r\n]+"),
    ("comment", r"//[^\n]*|#(?!pto\.)[^\n]*"),
    ("type", r"!pto\.[A-Za-z_]+<"),
    ("attr", r"#pto\.[A-Za-z_]+<[^>\n]*>"),
    ("value", r"%[A-Za-z0-9_.$-]+"),
    ("sym", r"@[A-Za-z_][A-Za-z0-9_.$]*"),
    ("int", r"-?(?:0x[0-9a-fA-F]+|\d+)"),
    ("string", r'"[^"\n]*"'),
    ("arrow", r"->"),
    ("ident", r"[A-Za-z_][A-Za-z0-9_.]*"),
    ("punct", r"[(){}\[\],:=<>?]"),
]
_RE = re.compile("|".join(f"(?P<{k}>{v})" for k, v in _SPEC))


class _Tok:
    __slots__ = ("kind", "text", "loc")

    def __init__(self, kind, text, loc):
        self.kind, self.text, self.loc = kind, text, loc

    def __repr__(self):
        return f"{self.kind}:{self.text}"


def _lex(text, file):
    lines = text.split("\n")
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)

    def loc(pos):
        import bisect
        i = bisect.bisect_right(starts, pos) - 1
        return Loc(file, i + 1, pos - starts[i] + 1, lines[i])

    toks, pos = [], 0
    while pos < len(text):
        m = _RE.match(text, pos)
        if not m:
            raise AsmError(f"unexpected character {text[pos]!r}", loc(pos))
        kind = m.lastgroup
        if kind == "type":               # balanced <...> on one line
            depth, j = 0, m.start()
            while j < len(text):
                c = text[j]
                if c == "<":
                    depth += 1
                elif c == ">":
                    depth -= 1
                    if depth == 0:
                        break
                elif c == "\n":
                    j = len(text)
                    break
                j += 1
            if j >= len(text):
                raise AsmError("unterminated type (missing '>')", loc(m.start()))
            toks.append(_Tok("type", text[m.start():j + 1], loc(m.start())))
            pos = j + 1
            continue
        if kind not in ("ws", "comment"):
            toks.append(_Tok(kind, m.group(), loc(m.start())))
        pos = m.end()
    end = Loc(file, len(lines), len(lines[-1]) + 1, lines[-1])
    toks.append(_Tok("eof", "", end))
    return toks


class _Parser(TokenCursor):
    def __init__(self, text, file):
        self.toks = _lex(text, file)
        self.i = 0
        self.file = file

    # ---- tokens
    def peek(self, k=0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    @staticmethod
    def where(tok):
        return tok.loc

    def _desc(self, t):
        return "end of file" if t.kind == "eof" else repr(t.text)

    def expect(self, text, what=None):
        t = self.next()
        if t.text != text:
            self.error(f"expected {what or repr(text)}, found {self._desc(t)}", t)
        return t

    def accept(self, text):
        if self.peek().text == text:
            return self.next()
        return None

    def value_tok(self):
        t = self.next()
        if t.kind != "value":
            self.error(f"expected a %value, found {self._desc(t)}", t)
        return t

    def type_tok(self):
        t = self.next()
        if t.kind != "type":
            self.error(f"expected a type (!pto.tile<...>, !pto.tile_buf<...> or !pto.memref<...>), found "
                       f"{self._desc(t)}", t)
        return parse_type(t.text, t.loc), t.loc

    def types(self):
        out = [self.type_tok()]
        while self.accept(","):
            out.append(self.type_tok())
        return out

    def attr_dict(self):
        attrs, locs = {}, {}
        if not self.accept("{"):
            return attrs, locs
        if self.accept("}"):
            return attrs, locs
        while True:
            k = self.next()
            if k.kind != "ident":
                self.error(f"expected an attribute name, found {self._desc(k)}", k)
            self.expect("=")
            v = self.next()
            if v.kind == "int":
                val = int(v.text, 0)
            elif v.kind == "string":
                val = v.text[1:-1]
            elif v.kind == "attr":
                m = re.fullmatch(r"#pto\.([A-Za-z_]+)<\s*([^>]*?)\s*>", v.text)
                val = (m.group(1), m.group(2))
            elif v.kind == "ident":
                val = v.text
            else:
                self.error(f"expected an attribute value, found {self._desc(v)}", v)
            if k.text in attrs:
                self.error(f"attribute {k.text!r} given twice", k)
            attrs[k.text], locs[k.text] = val, v.loc
            if not self.accept(","):
                break
        self.expect("}", "',' or '}'")
        return attrs, locs

    # ---- program
    def program(self):
        t = self.next()
        if t.text not in ("func.func", "func"):
            self.error(f"a program starts with 'func.func @name(...)', found {self._desc(t)}", t)
        name = self.next()
        if name.kind != "sym":
            self.error(f"expected the function name (@name), found {self._desc(name)}", name)
        b = self.b = Builder(name.text[1:], file=self.file, locate=False)
        self.expect("(")
        if not self.accept(")"):
            while True:
                v = self.value_tok()
                self.expect(":")
                ty, _ = self.type_tok()
                b.arg(v.text[1:], ty, v.loc)
                if not self.accept(","):
                    break
            self.expect(")", "',' or ')'")
        self.results = None
        if self.accept("->"):
            if self.accept("("):
                self.results = [] if self.peek().text == ")" else self.types()
                self.expect(")", "',' or ')'")
            else:
                self.results = [self.type_tok()]
        if self.peek().text == "attributes":
            self.next()
            attrs, locs = self.attr_dict()
            for k, v in attrs.items():
                if k != "config" or not isinstance(v, str):
                    raise AsmError(f"unknown function attribute {k!r} (config = \"NAME[,field=value...]\")", locs[k])
                b.attrs[k], b.attr_locs[k] = v, locs[k]
        self.expect("{", "'{'")
        returned = False
        while self.peek().text != "}":
            if self.peek().kind == "eof":
                self.error("missing '}' at the end of the function")
            if returned:
                self.error("statement after return")
            returned = self.statement()
        self.next()
        if not returned:
            b.ret()
            if self.results:
                self.error(f"missing return of {len(self.results)} value(s)", self.toks[self.i - 1])
        if self.peek().kind != "eof":
            self.error(f"unexpected {self._desc(self.peek())} after the function")
        return b.build()

    def statement(self):
        b = self.b
        t = self.peek()
        if t.text == "return":
            self.next()
            vals = []
            if self.peek().kind == "value":
                vals = [self.value_tok()]
                while self.accept(","):
                    vals.append(self.value_tok())
            values = [b.value(v.text[1:], v.loc) for v in vals]
            if self.accept(":"):
                tys = self.types()
                if len(tys) != len(values):
                    self.error(f"{len(tys)} types for {len(values)} returned values", t)
                for v, (ty, tl) in zip(values, tys):
                    if not v.type.same(ty):
                        raise AsmError(f"type mismatch: %{v.name} is {v.type}, annotated {ty}", tl)
            if self.results is not None:
                if len(self.results) != len(values):
                    raise AsmError(f"return of {len(values)} value(s), the function declares {len(self.results)}", t.loc)
                for v, (ty, tl) in zip(values, self.results):
                    if not v.type.same(ty):
                        raise AsmError(f"returned %{v.name} is {v.type}, the function declares {ty}", tl)
            b.ret(*values, loc=t.loc)
            return True
        if t.text == "pto.tassign":
            self.next()
            v = self.value_tok()
            self.expect(",")
            s = self.next()
            if s.text not in ("@tile", "@gm"):
                self.error(f"expected @tile(addr) or @gm(addr), found {self._desc(s)}", s)
            self.expect("(")
            a = self.next()
            if a.kind != "int":
                self.error(f"expected an address, found {self._desc(a)}", a)
            self.expect(")")
            b.tassign(b.value(v.text[1:], v.loc), int(a.text, 0), loc=a.loc, space="ub" if s.text == "@tile" else "gm")
            return False
        if t.text.removeprefix("pto.") in ("record_event", "wait_event"):
            self.event(self.next())
            return False
        if t.text.removeprefix("pto.") == "tsync.op":      # PTO's one-op barrier: here a barrier on everything
            op = self.next()
            a = self.next()
            if a.kind != "attr" or not a.text.startswith("#pto.op<"):
                self.error(f"expected the op of the barrier (#pto.op<TADD>), found {self._desc(a)}", a)
            self.b.op("tsync", [], loc=op.loc, form="ssa")
            return False
        if t.kind == "value":
            res = self.next()
            self.expect("=")
            op = self.next()
            if op.kind != "ident":
                self.error(f"expected an op name, found {self._desc(op)}", op)
            if op.text == "pto.alloc_tile":
                self.attr_dict()
                self.expect(":")
                ty, _ = self.type_tok()
                b.alloc_tile(res.text[1:], ty, res.loc)
                return False
            self.ssa(op, res)
            return False
        if t.kind == "ident":
            op = self.next()
            if self.peek().text == "ins" or (self.peek().text == "{" and self._dps_after_attrs()):
                self.dps(op)
            else:
                self.ssa(op, None)
            return False
        self.error(f"expected a statement, found {self._desc(t)}", t)

    def _dps_after_attrs(self):
        depth, k = 0, 0
        while True:
            t = self.peek(k)
            if t.kind == "eof":
                return False
            if t.text == "{":
                depth += 1
            elif t.text == "}":
                depth -= 1
                if depth == 0:
                    return self.peek(k + 1).text == "ins"
            k += 1

    def _check_op(self, op):
        if lookup_op(op.text) is None:
            self.b.op(op.text, [], loc=op.loc)        # raises "unknown op"

    def event(self, op):
        """``pto.record_event [#pto.pipe_event_type<SRC>, #pto.pipe_event_type<DST>, #pto.event<EVENT_IDn>]`` (or
        ``wait_event``): checked by ``Builder.sync_event``, no instruction."""
        self.expect("[", "'[' and the event's pipes and id")
        parts = []
        for k, kind in enumerate(("pipe_event_type", "pipe_event_type", "event")):
            if k:
                self.expect(",", "','")
            a = self.next()
            m = re.fullmatch(r"#pto\.([A-Za-z_]+)<\s*([A-Za-z0-9_]*)\s*>", a.text) if a.kind == "attr" else None
            if m is None or m.group(1) != kind:
                self.error(f"expected #pto.{kind}<...>, found {self._desc(a)}", a)
            parts.append((m.group(2), a.loc))
        self.expect("]", "']'")
        kind = op.text.removeprefix("pto.").split("_")[0]
        (src, _), (dst, _), (event, eloc) = parts
        self.b.sync_event(kind, src, dst, event, loc=op.loc)

    def ssa(self, op, res):
        self._check_op(op)
        if signature(lookup_op(op.text)).output is None:     # tsync: no operands, no result
            if res is not None:
                self.error(f"{op.text} has no result", res)
            if self.peek().kind == "value" and self.peek(1).text != "=":     # (not the next "%r = ...")
                self.error(f"{op.text} takes no operands here: the unit orders its pipes itself, so the barrier "
                           f"waits for everything before it and needs no event tokens", self.peek())
            attrs, alocs = self.attr_dict()
            self.b.op(op.text, [], attrs=attrs, attr_locs=alocs, loc=op.loc,
                      form="ssa" if op.text.startswith("pto.") else "sync")
            return
        operands = []
        if self.peek().kind == "value":
            operands = [self.value_tok()]
            while self.accept(","):
                operands.append(self.value_tok())
        attrs, alocs = self.attr_dict()
        self.expect(":", "':' and the types")
        if self.accept("("):
            tys = [] if self.peek().text == ")" else self.types()
            self.expect(")", "',' or ')'")
        else:
            tys = self.types()
        rtype = rloc = None
        if self.accept("->"):
            rtype, rloc = self.type_tok()
        elif res is not None:
            self.error("expected '->' and the result type")
        vals = [self.b.value(v.text[1:], v.loc) for v in operands]
        self.b.op(op.text, vals, None if res is None and rtype is None else rtype,
                  name=res.text[1:] if res is not None else None, name_loc=res.loc if res is not None else None,
                  attrs=attrs, attr_locs=alocs, loc=op.loc, form="ssa" if op.text.startswith("pto.") else "sync",
                  operand_locs=[v.loc for v in operands], types=[t for t, _ in tys],
                  types_locs=[l for _, l in tys], out_type_loc=rloc)

    def dps(self, op):
        self._check_op(op)
        attrs, alocs = self.attr_dict()
        self.expect("ins", "'ins('")
        self.expect("(")
        ins = []
        if self.peek().kind == "value":
            ins = [self.value_tok()]
            while self.accept(","):
                ins.append(self.value_tok())
        tys = []
        if self.accept(":"):
            tys = self.types()
        self.expect(")", "')'")
        self.expect("outs", "'outs('")
        self.expect("(")
        out = self.value_tok()
        oty = oloc = None
        if self.accept(":"):
            oty, oloc = self.type_tok()
        self.expect(")", "')'")
        a2, l2 = self.attr_dict()
        for k in a2:
            if k in attrs:
                raise AsmError(f"attribute {k!r} given twice", l2[k])
        attrs.update(a2)
        alocs.update(l2)
        vals = [self.b.value(v.text[1:], v.loc) for v in ins]
        name = out.text[1:]
        common = dict(attrs=attrs, attr_locs=alocs, loc=op.loc, form="dps", operand_locs=[v.loc for v in ins],
                      types=[t for t, _ in tys] if tys else None, types_locs=[l for _, l in tys] or None,
                      out_type_loc=oloc)
        if name in self.b.scope:
            self.b.op(op.text, vals, oty, out=self.b.scope[name], **common)
        else:
            if oty is None:
                raise AsmError(f"outs(%{name}) is a new value: give its type (outs(%{name} : !pto.tile_buf<...>))",
                               out.loc)
            self.b.op(op.text, vals, oty, name=name, name_loc=out.loc, **common)


def parse(text, file="<string>"):
    """Parse PTO-AS text into a :class:`Program`; raises :class:`AsmError` (file:line:col and a caret)."""
    return _Parser(text, file).program()


def parse_file(path):
    """:func:`parse` of a file's text (UTF-8; a byte that is not: an :class:`AsmError` at it)."""
    data = pathlib.Path(path).read_bytes()
    return parse(decode_source(data, str(path)), str(path))


def decode_source(data, file):
    """``data`` (bytes) as UTF-8 text; :class:`AsmError` at the line and column of the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1
        end = data.find(b"\n", e.start)
        line = data[start:end if end >= 0 else len(data)].decode("utf-8", errors="replace")
        col = len(data[start:e.start].decode("utf-8", errors="replace")) + 1
        raise AsmError(f"not UTF-8 text: byte {data[e.start]:#04x} cannot be decoded (a PTO-AS file is UTF-8)",
                       Loc(file, data.count(b"\n", 0, e.start) + 1, col, line)) from None
