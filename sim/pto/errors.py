"""Assembler errors: a message with the file, line and column it is about, and a caret line."""

from dataclasses import dataclass

__all__ = ["Loc", "AsmError", "InputError"]


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


class AsmError(Exception):
    """An error in a program: ``loc`` (a :class:`Loc` or None), ``message``, and for errors found by the golden
    model's checks the ``status`` (an ``rtl.isa.Status``) the hardware would answer.

    ``str()`` is ``file:line:col: error: message``, then the source line and a caret under the column."""

    def __init__(self, message, loc=None, status=None):
        self.message, self.loc, self.status = message, loc, status
        super().__init__(self.format())

    def format(self):
        where = str(self.loc) if self.loc is not None else "<program>"
        out = f"{where}: error: {self.message}"
        if self.loc is not None and self.loc.line and self.loc.text:
            text = self.loc.text.rstrip("\n").expandtabs(1)
            out += f"\n  {text}\n  {' ' * max(self.loc.col - 1, 0)}^"
        return out


class InputError(Exception):
    """Input data that does not fit the program's signature (missing, unknown, wrongly shaped or typed)."""
