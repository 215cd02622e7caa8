"""How the command-line tools (``python -m sim run`` / ``asm`` / ``fuzz``) answer a user's mistake: every
problem with what the user gave -- a program or data file that is missing, a folder, not UTF-8 or not an
``.npz``; an output that cannot be written; a configuration that does not exist; an error in the program or its
inputs -- is a message naming the file or argument (an error in a program: ``file:line:col`` with the line and
a caret), on stderr, with exit code 2 and no traceback. Outputs are checked before anything runs."""

import functools
import os
import pathlib
import sys
import zipfile

from pto.errors import AsmError, InputError, UsageError

__all__ = ["EXIT_USER", "user_errors", "readable_file", "writable_file", "read_npz"]

#: Exit code of an error in what the user gave (the program, its inputs, an argument).
EXIT_USER = 2


def user_errors(main):
    """Wrap a command's ``main(argv)``: the user's mistakes (:class:`AsmError`, :class:`InputError`,
    :class:`UsageError`, and any ``OSError`` on a file the checks did not foresee) become a message on stderr
    and exit code 2."""
    @functools.wraps(main)
    def wrapper(argv=None):
        try:
            return main(argv)
        except AsmError as e:
            print(e.format(), file=sys.stderr)
        except (InputError, UsageError) as e:
            print(f"error: {e}", file=sys.stderr)
        except OSError as e:
            name = f"{e.filename}: " if e.filename else ""
            print(f"error: {name}{e.strerror or e}", file=sys.stderr)
        return EXIT_USER
    return wrapper


def readable_file(path, what):
    """``path`` as a Path when it is a file this process can read; else :class:`UsageError` naming ``what``
    (``"program"``, ``"--data"``) and the path."""
    p = pathlib.Path(path)
    if not p.exists():
        raise UsageError(f"{what} {path}: no such file")
    if p.is_dir():
        raise UsageError(f"{what} {path}: is a folder, not a file")
    if not os.access(p, os.R_OK):
        raise UsageError(f"{what} {path}: cannot be read (permission denied)")
    return p


def writable_file(path, what="--out"):
    """``path`` as a Path when a file can be written there (its folder exists and is writable, it is not a
    folder itself); else :class:`UsageError`. Called before a run, so that a long simulation does not end in
    an output that cannot be written."""
    p = pathlib.Path(path)
    if p.is_dir():
        raise UsageError(f"{what} {path}: is a folder; give a file name in it (e.g. {p / 'out.npz'})")
    parent = p.parent
    if not parent.exists():
        raise UsageError(f"{what} {path}: folder {parent} does not exist")
    if not parent.is_dir():
        raise UsageError(f"{what} {path}: {parent} is not a folder")
    if (p.exists() and not os.access(p, os.W_OK)) or not os.access(parent, os.W_OK):
        raise UsageError(f"{what} {path}: cannot be written (permission denied)")
    return p


def read_npz(path, what="--data"):
    """{name: array} of an ``.npz`` file (``numpy.savez``): :class:`UsageError` when the file cannot be read,
    :class:`InputError` when it is no ``.npz`` (a ``.npy``, text, a damaged archive) or holds an array that
    cannot be loaded without pickle."""
    import numpy as np
    p = readable_file(path, what)
    with open(p, "rb") as f:
        head = f.read(8)
    if head.startswith(b"\x93NUMPY"):
        raise InputError(f"{what} {path}: a .npy file (a single array); give an .npz with one array per input, "
                         f"named as the program's arguments: numpy.savez('in.npz', a=..., b=...)")
    if not head.startswith(b"PK"):
        kind = "an empty file" if not head else "text" if _is_text(p) else "not a zip archive"
        raise InputError(f"{what} {path}: not an .npz file ({kind}); give one written by numpy.savez, one array "
                         f"per input, named as the program's arguments")
    try:
        with np.load(p, allow_pickle=False) as z:
            out = {}
            for k in z.files:
                try:
                    out[k] = z[k]
                except ValueError as e:
                    raise InputError(f"{what} {path}: array '{k}' cannot be loaded without pickle ({e}); "
                                     f"save numeric arrays") from None
            return out
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as e:
        raise InputError(f"{what} {path}: not a readable .npz file ({e})") from None


def _is_text(p):
    try:
        p.read_bytes()[:4096].decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
