"""Where TileLang-Ascend places a kernel's on-chip buffers, and whether
they fit (Note [Ascend memory planning]).

Note [Ascend memory planning]
TileLang-Ascend's code generator reserves each memory whole (L1 524032,
L0A and L0B 65536, L0C 131072, UB 196352 bytes on A2/A3:
src/target/codegen_ascend.cc) and gives every buffer an offset in it,
chosen by the pass AscendMemoryPlanning (src/transform/
ascend_memory_planning.cc, after CombineCV in tilelang/engine/phase.py):
- with TL_ASCEND_MEMORY_PLANNING on, by liveness: a buffer lives from the
  statement that first touches it to the one that last does; when the last
  touch is in a deeper `for` than the first, the end moves forward to the
  last statement before the next one at one level above the first touch
  (to the end of the body when the first touch is outside every loop),
  so a buffer first touched before a loop and last touched in it stays
  live through the loop. Buffers sizes are rounded up to 32 bytes;
  buffers, by first touch, go on top of what is placed while it fits, else
  into the lowest freed block of a buffer no longer live (the top block
  grown to the end of the memory), else the compile fails naming the
  buffer and its bytes. Buffers whose lifetimes do not overlap share
  bytes: the seed's two L0C accumulators, 16 KiB and 128 KiB, both sit at
  offset 0. T.annotate_address places a buffer at its address instead; a
  placed buffer that overlaps a live one is an error there too. Never
  touched buffers are not placed.
- with it off (the default), one after another in allocation order, each
  at a 32-byte boundary, annotated buffers at their address, with no check
  at all: a kernel whose buffers add up past a memory compiles and writes
  past it on the NPU. Here that is the error it would be, at the
  allocation that passes the end.
This module replays the planning pass over the statements the kernel is
traced into: a statement is one tile op or one store of the author's (the
touches of one source line in a row), its level the number of `for`
loops around it in the kernel body (T.Parallel loops, which TileLang-Ascend
turns into vector instructions, not counted). The traced order is the
program's text order, but in an interleaved kernel (Note [Cube and vector
concurrently]), where the cube's and the vector cores' statements
alternate at their waits; the cube's buffers and the vector cores' are
apart, so only the ends moved forward can differ.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .spans import Span, error

ALIGN = 32


def align_up(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Placed:
    """One on-chip buffer of the kernel: the op and line that allocated
    it, its bytes as declared, and its address once placed."""

    __slots__ = ("buf", "memory", "nbytes", "op", "span", "address", "address_span", "order")

    def __init__(self, buf: Any, memory: str, nbytes: int, op: str, span: Span,
                 order: int) -> None:
        self.buf = buf
        self.memory = memory
        self.nbytes = nbytes
        self.op = op
        self.span = span
        self.address: Optional[int] = None  # T.annotate_address
        self.address_span: Optional[Span] = None
        self.order = order

    def describe(self) -> str:
        shape = ", ".join(str(d) for d in self.buf.shape)
        return f"{self.buf.name} ({self.buf.dtype}[{shape}])"


class MemoryPlan:
    """The kernel's on-chip buffers and, with planning on, the statements
    that touch them (Note [Ascend memory planning])."""

    def __init__(self, capacity: Dict[str, int], planned: bool) -> None:
        self.capacity = capacity
        self.planned = planned
        self.placed: List[Placed] = []  # in allocation order
        self.buffers: Dict[int, Placed] = {}  # id(NpuBuffer) -> its Placed
        self.used: Dict[str, int] = {}  # linear placement: the next free offset
        self.levels: List[int] = []  # per statement
        self.touched: List[List[Placed]] = []  # per statement
        self.first: Dict[int, int] = {}  # id(Placed) -> its first statement
        self.last: Dict[int, int] = {}
        self._line: Any = None  # the (file, line) of the statement open

    def allocate(self, buf: Any, memory: str, nbytes: int, op: str, span: Span) -> None:
        """A new buffer; an error at its line when it cannot fit."""
        cap = self.capacity[memory]
        p = Placed(buf, memory, nbytes, op, span, len(self.placed))
        if self.planned:
            if nbytes > cap:
                raise error(ValueError, f"{op}: {p.describe()} takes {nbytes} bytes, over "
                                        f"{memory}'s capacity of {cap} bytes", span)
        else:
            used = self.used.get(memory, 0)
            if used + nbytes > cap:
                held = f" with the {used} bytes already allocated there" if used else ""
                raise error(ValueError, f"{op}: {p.describe()} takes {nbytes} bytes{held}, "
                                        f"over {memory}'s capacity of {cap} bytes", span)
            self.used[memory] = align_up(used + nbytes)
        self.placed.append(p)
        self.buffers[id(buf)] = p

    def alias(self, buf: Any, k: int) -> None:
        """`buf` is the k-th buffer allocated, allocated again by the
        vector cores' part of an interleaved trace."""
        self.buffers[id(buf)] = self.placed[k]

    def annotate(self, buf: Any, address: int, span: Span) -> None:
        """T.annotate_address: the buffer's offset in its memory."""
        p = self.buffers[id(buf)]
        cap = self.capacity[p.memory]
        if address + p.nbytes > cap:
            raise error(ValueError, f"T.annotate_address: {p.describe()} at {address} takes "
                                    f"{p.nbytes} bytes, past the end of {p.memory} ({cap} "
                                    f"bytes)", span)
        p.address, p.address_span = address, span

    def touch(self, buf: Any, span: Span, level: int) -> None:
        """The statement at `span` touches `buf` (at `level` loops deep
        when it opens a statement)."""
        p = self.buffers.get(id(buf))
        if p is None:
            return
        line = span[:2]
        if line != self._line or not self.levels:
            self._line = line
            self.levels.append(level)
            self.touched.append([])
        i = len(self.levels) - 1
        if not self.touched[i] or self.touched[i][-1] is not p:
            self.touched[i].append(p)
        self.first.setdefault(id(p), i)
        self.last[id(p)] = i

    def statement_ended(self) -> None:
        """What follows opens a new statement even on the same line."""
        self._line = None

    # --- the planning pass -----------------------------------------------

    def check(self) -> None:
        """Places every touched buffer as AscendMemoryPlanning would; an
        error at the allocation of the first that finds no room."""
        if not self.planned or not self.levels:
            return
        ends = self._lifetime_ends()
        for memory in self.capacity:
            ordered = sorted((p for p in self.placed if p.memory == memory and id(p) in self.first),
                             key=lambda p: (self.first[id(p)], p.order))
            self._place(memory, [(p, self.first[id(p)], ends[id(p)]) for p in ordered])

    def _lifetime_ends(self) -> Dict[int, int]:
        """Each buffer's last statement, moved forward as ReorderKillPoints
        moves it."""
        events = sorted(set(self.first.values()) | set(self.last.values()))
        where = {s: k for k, s in enumerate(events)}
        ends = {}
        for key, kill in self.last.items():
            gen_level, kill_level = self.levels[self.first[key]], self.levels[kill]
            end = kill
            if kill_level > gen_level:
                k = where[kill]
                while k + 1 < len(events) and self.levels[events[k + 1]] != gen_level - 1:
                    k += 1
                end = events[k]
            ends[key] = end
        return ends

    def _place(self, memory: str, intervals: List[Tuple[Placed, int, int]]) -> None:
        cap = self.capacity[memory]
        top = 0  # next_new_offset
        free: List[Tuple[int, int]] = []  # (offset, bytes)
        active: List[Tuple[Placed, int, int, int]] = []  # (buffer, offset, bytes, end)
        pre = [(p, s, e) for p, s, e in intervals if p.address is not None]
        for p, start, end in intervals:
            size = align_up(p.nbytes)
            for a in sorted([a for a in active if a[3] < start], key=lambda a: a[3]):
                free.append((a[1], a[2]))
                active.remove(a)
            free = _merged(free)
            if p.address is not None:
                offset = align_up(p.address)
                for q, o, n, _ in active:
                    if offset < o + n and o < offset + size:
                        raise error(ValueError, f"T.annotate_address: {p.describe()} at "
                                                f"{offset} ({size} bytes) overlaps {q.describe()} "
                                                f"at {o} ({n} bytes), live at the same time in "
                                                f"{memory}", p.address_span)
                if offset > top:
                    free.append((top, offset - top))
                top = max(top, offset + size)
            else:
                def clear(o: int) -> bool:
                    return not any(start < e and s < end and o < q.address + align_up(q.nbytes)
                                   and q.address < o + size
                                   for q, s, e in pre if q is not p)
                offset = align_up(top)
                if offset + size <= cap and clear(offset):
                    top = offset + size
                else:
                    free.sort()
                    offset = _reusable(free, size, clear)
                    if offset is None and free and free[-1][0] + free[-1][1] == top:
                        # The top block grows to the end of the memory.
                        top = cap
                        free[-1] = (free[-1][0], cap - free[-1][0])
                        o = align_up(free[-1][0])
                        if free[-1][1] - (o - free[-1][0]) >= size and clear(o):
                            offset = o
                    if offset is None:
                        raise self._no_room(p, size, memory, cap, active)
                    free = _taken(free, offset, size)
            active.append((p, offset, size, end))

    def _no_room(self, p: Placed, size: int, memory: str, cap: int,
                 active: List[Tuple[Placed, int, int, int]]) -> BaseException:
        beside = ", ".join(f"{q.buf.name} ({n} bytes at {o})"
                           for q, o, n, _ in sorted(active, key=lambda a: a[1]))
        who = f" while {beside} {'is' if len(active) == 1 else 'are'} live" if active else ""
        return error(ValueError, f"{p.op}: {p.describe()} takes {size} bytes, and no room "
                                 f"is left for it in {memory}'s {cap} bytes{who}", p.span)


def _merged(blocks: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    out: List[Tuple[int, int]] = []
    for o, n in sorted(blocks):
        if out and out[-1][0] + out[-1][1] >= o:
            last = out[-1]
            out[-1] = (last[0], max(last[0] + last[1], o + n) - last[0])
        else:
            out.append((o, n))
    return out


def _reusable(free: List[Tuple[int, int]], size: int, clear: Any) -> Optional[int]:
    for o, n in sorted(free):
        a = align_up(o)
        if n - (a - o) >= size and clear(a):
            return a
    return None


def _taken(free: List[Tuple[int, int]], offset: int, size: int) -> List[Tuple[int, int]]:
    out = []
    for o, n in free:
        if o <= offset < o + n:
            if offset > o:
                out.append((o, offset - o))
            if offset + size < o + n:
                out.append((offset + size, o + n - offset - size))
        else:
            out.append((o, n))
    return out
