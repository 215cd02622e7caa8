"""Assembler errors: a message with the file, line and column it is about, and a caret line."""

from dataclasses import dataclass

__all__ = ["Loc", "AsmError", "InputError", "UsageError", "TokenCursor", "caret"]


@dataclass(frozen=True)
class Loc:
    """A place in a source: ``file``, 1-based ``line`` and ``col``, and the text of that line."""
    file: str = "<builder>"
    line: int = 0
    col: int = 0
    text: str = ""

    def __str__(self):
        return f"{self.file}:{self.line}:{self.col}" if self.line else self.file

    def shift(self, n):
        """The location ``n`` columns to the right (inside a token)."""
        return Loc(self.file, self.line, self.col + n, self.text)

    def to_json(self):
        return [self.file, self.line, self.col, self.text]

    @classmethod
    def from_json(cls, j):
        return None if j is None else cls(*j)


def caret(loc, kind, message):
    """``file:line:col: kind: message``, then the source line and a caret under the column (when the line is
    known)."""
    out = f"{loc if loc is not None else '<program>'}: {kind}: {message}"
    if loc is not None and loc.line and loc.text:
        text = loc.text.rstrip("\n").expandtabs(1)
        out += f"\n  {text}\n  {' ' * max(loc.col - 1, 0)}^"
    return out


class AsmError(Exception):
    """An error in a program: ``loc`` (a :class:`Loc` or None), ``message``, and for errors found by the golden
    model's checks the ``status`` (an ``rtl.isa.Status``) the hardware would answer. ``notes``: [(message,
    Loc)] of other places the error comes from (e.g. the ``pto.tassign`` of a misaligned tile).

    ``str()`` is ``file:line:col: error: message``, then the source line and a caret under the column, then each
    note the same way (``file:line:col: note: ...``)."""

    def __init__(self, message, loc=None, status=None, notes=()):
        self.message, self.loc, self.status, self.notes = message, loc, status, list(notes)
        super().__init__(message)

    def __str__(self):
        return self.format()

    def format(self):
        return "\n".join([caret(self.loc, "error", self.message)]
                         + [caret(loc, "note", msg) for msg, loc in self.notes])


class InputError(Exception):
    """Input data that does not fit the program's signature (missing, unknown, wrongly shaped or typed), or an
    inputs file that cannot be read as one (not an ``.npz``); the message names the file or input."""


class UsageError(ValueError):
    """A command-line argument the tools cannot use: a file that is missing, unreadable or of the wrong kind, an
    output that cannot be written, a configuration that does not exist; the message names the argument. (A
    ``ValueError``, which is what the API raised for these before.)"""


class TokenCursor:
    """A position ``i`` in a list of tokens, for the parsers: :meth:`next` takes the token :meth:`peek`
    shows, :meth:`error` raises an :class:`AsmError` at a token (the current one by default). A subclass
    defines ``peek`` (what lies past the end) and ``where`` (a token's :class:`Loc`)."""

    i = 0

    def next(self):
        t = self.peek()
        self.i += 1
        return t

    def error(self, msg, tok=None):
        raise AsmError(msg, self.where(tok or self.peek()))
