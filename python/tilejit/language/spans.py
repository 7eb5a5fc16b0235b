"""Where in the author's program a front-end call comes from.

Every T.* call and every rewritten construct records the position of the
author's code that made it: the innermost frame outside the tilejit package
(the rewritten body keeps the author's file name and each node's line and
column, rewrite.py), read from the frame's current instruction, so a
statement on one line with two calls gets two columns. Errors of the front
end begin with that span, "file.py:12:8: T.copy: ...", and lose tilejit's own
frames from their traceback.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
import types
from typing import Dict, List, Optional, Tuple

Span = Tuple[str, int, int]  # (file, line, 1-based column)

# Frames of files under this directory are tilejit's own.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NO_SPAN: Span = ("", 0, 0)


def _is_internal(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR)


def user_frame() -> Optional[types.FrameType]:
    f = sys._getframe(1)
    while f is not None and _is_internal(f.f_code.co_filename):
        f = f.f_back
    return f


# (line, col) per instruction, per code object: walking co_positions()
# up to the current instruction at each call would cost more than the call.
_positions: Dict[types.CodeType, List[Tuple[Optional[int], Optional[int]]]] = {}


def user_span() -> Span:
    """The author's file, line and column of the call being made now."""
    f = user_frame()
    if f is None:
        return _NO_SPAN
    code = f.f_code
    table = _positions.get(code)
    if table is None:
        table = [(p[0], p[2]) for p in code.co_positions()]
        _positions[code] = table
    index = f.f_lasti // 2
    line, col = table[index] if index < len(table) else (None, None)
    return (code.co_filename, line if line is not None else f.f_lineno,
            (col if col is not None else 0) + 1)


def span_text(span: Span) -> str:
    file, line, col = span
    return f"{file}:{line}:{col}"


def annotated_parameter(span: Span) -> Optional[Tuple[str, str]]:
    """(function, parameter) whose annotation holds the call at `span`, read
    from the author's source: an annotation is evaluated when the ``def``
    runs, before any decorator can say which parameter it belongs to. None
    where the source is not at hand or the call is elsewhere."""
    file, line, col = span
    source = "".join(linecache.getlines(file))
    if line == 0 or not source:
        return None
    try:
        tree = ast.parse(source, filename=file)
    except (SyntaxError, ValueError):
        return None
    at = (line, col - 1)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs:
            ann = arg.annotation
            if ann is not None and ((ann.lineno, ann.col_offset) <= at <
                                    (ann.end_lineno or 0, ann.end_col_offset or 0)):
                return node.name, arg.arg
    return None


def error(kind: type, what: str, span: Optional[Span] = None) -> BaseException:
    """An exception of type `kind` whose message begins with the span (the
    caller's when not given): ``raise error(TypeError, "T.copy: ...")``."""
    if span is None:
        span = user_span()
    if span[1] == 0:
        return kind(what)
    return kind(f"{span_text(span)}: {what}")


def strip_internal_frames(exc: BaseException) -> None:
    """Drops tilejit's own frames from the traceback of `exc` (the author's
    frames stay, in order)."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            frames.append((tb.tb_frame, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    new_tb = None
    for frame, lasti, lineno in reversed(frames):
        new_tb = types.TracebackType(new_tb, frame, lasti, lineno)
    exc.__traceback__ = new_tb
