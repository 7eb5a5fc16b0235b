#!/usr/bin/env python3
"""List TileLang's `tilelang.language` names (the `T.` surface) from its
source, without importing TileLang, and count how many of TileLang's example
files use each one.

    python3 scripts/tilelang_surface.py SITE [--examples DIR] [--tilejit] [--format md|tsv]

SITE is a directory holding the `tilelang` package: an unpacked wheel
(`.../site-packages`, where `tilelang/3rdparty/tvm/python` holds TVM's
Python) or a source checkout of TileLang (`tilelang/` and
`3rdparty/tvm/python`). DIR is a checkout of TileLang's repository (its
`examples/` folder is read) or a bare git directory (read at HEAD with `git
ls-tree` / `git show`, or at `--rev`).

How the names are found: `tilelang/language/__init__.py` is parsed with
`ast`; its exported names are its `__all__` plus the names it binds by
explicit import. `from m import *` and `from m import __all__ as x` are
followed into the modules they name, and each module's `__all__` is computed
by executing, in an empty namespace with a few builtins (tuple, list,
sorted, ...), only its top-level assignments and loops whose inputs are
already known (string lists and sets from other modules); anything that
needs a real import is skipped. A module without `__all__` exports its
public top-level names.

Output: one row per name: the name, the module that defines it, the first
line of its docstring (when it is a def or class in the parsed source), the
number of example files that use `T.<name>`, and, with `--tilejit`, whether
`tilejit.language` has the name. A last section lists `T.<name>` uses in
the examples that are not in the exported set (older spellings, module
attributes).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import os
import re
import subprocess
import sys
import types
from collections import Counter

_SAFE_BUILTINS = {n: getattr(builtins, n) for n in (
    "tuple", "list", "sorted", "set", "frozenset", "dict", "len", "str", "range",
    "enumerate", "zip", "isinstance", "reversed", "any", "all", "map", "filter")}


class Surface:
    """Static resolver of module exports over a set of source roots."""

    def __init__(self, roots: list[str]):
        self.roots = roots
        self._cache: dict[str, types.SimpleNamespace] = {}
        self._prev: dict[str, types.SimpleNamespace] = {}
        self._busy: set[str] = set()

    def settle(self, mod: str, passes: int = 5) -> types.SimpleNamespace:
        """Load `mod` again until its exports stop changing: an import cycle
        sees, in one pass, what the module in the cycle gave the pass before."""
        last = None
        for _ in range(passes):
            self._prev, self._cache = self._cache, {}
            ns = self.load(mod)
            key = (tuple(ns.__all__ or ()), tuple(ns.public))
            if key == last:
                break
            last = key
        return ns

    def module_path(self, mod: str) -> str | None:
        rel = mod.replace(".", os.sep)
        for root in self.roots:
            for cand in (os.path.join(root, rel, "__init__.py"), os.path.join(root, rel + ".py")):
                if os.path.isfile(cand):
                    return cand
        return None

    @staticmethod
    def _absolute(mod: str, level: int, target: str | None, is_pkg: bool) -> str:
        if level == 0:
            return target or ""
        parts = mod.split(".")
        base = parts if is_pkg else parts[:-1]
        base = base[:len(base) - (level - 1)] if level > 1 else base
        return ".".join(base + ([target] if target else []))

    def load(self, mod: str) -> types.SimpleNamespace:
        """The module's statically known namespace: `ns.__all__` (a tuple, or
        None), `ns.public` (its top-level names), `ns.origin` {name: (module,
        node)} and its constant values as attributes."""
        if mod in self._busy:
            return self._prev.get(mod) or types.SimpleNamespace(
                __name__=mod, __all__=None, public={}, origin={}, path=None)
        if mod in self._cache:
            return self._cache[mod]
        ns = types.SimpleNamespace(__name__=mod, __all__=None, public={}, origin={}, path=None)
        self._cache[mod] = ns
        path = self.module_path(mod)
        if path is None:
            return ns
        self._busy.add(mod)
        ns.path = path
        is_pkg = path.endswith("__init__.py")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        env: dict = {}

        def bind(name, value, origin):
            env[name] = value
            if not name.startswith("_") or name.startswith("__") and not name.endswith("__"):
                ns.public[name] = origin
            ns.origin[name] = origin

        def run(stmt):
            code = compile(ast.Module(body=[stmt], type_ignores=[]), path, "exec")
            g = {"__builtins__": _SAFE_BUILTINS}
            g.update(env)
            before = dict(g)
            try:
                exec(code, g)  # noqa: S102 (constants only: no imports, safe builtins)
            except Exception:
                return
            for k, v in g.items():
                if k != "__builtins__" and (k not in before or before[k] is not v):
                    bind(k, v, ns.origin.get(k, (mod, stmt)))

        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
                continue
            if isinstance(stmt, ast.ImportFrom):
                src = self._absolute(mod, stmt.level, stmt.module, is_pkg)
                for alias in stmt.names:
                    if alias.name == "*":
                        sub = self.load(src)
                        names = sub.__all__ if sub.__all__ is not None else list(sub.public)
                        for n in names:
                            bind(n, getattr(sub, n, None), sub.origin.get(n, (src, None)))
                        continue
                    sub = self.load(src)
                    local = alias.asname or alias.name
                    submodule = src + "." + alias.name
                    if self.module_path(submodule):
                        bind(local, self.load(submodule), (submodule, None))
                    elif alias.name == "__all__":
                        env[local] = sub.__all__
                    else:
                        bind(local, getattr(sub, alias.name, None),
                             sub.origin.get(alias.name, (src, None)))
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        env[alias.asname] = self.load(alias.name)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bind(stmt.name, None, (mod, stmt))
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.Expr)):
                if isinstance(stmt, ast.Assign):
                    targets = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
                    for t in targets:  # a name bound to something not computable
                        ns.origin.setdefault(t, (mod, stmt))
                        if isinstance(stmt.value, ast.Name) and stmt.value.id in ns.origin:
                            ns.origin[t] = ns.origin[stmt.value.id]
                        if not t.startswith("_"):
                            ns.public.setdefault(t, ns.origin[t])
                run(stmt)
            elif isinstance(stmt, ast.If):
                for s in stmt.orelse:  # `if TYPE_CHECKING: ... else: from .x import y`
                    if isinstance(s, (ast.ImportFrom, ast.FunctionDef)):
                        tree.body.append(s)
        for k, v in env.items():
            if not k.startswith("__") and not isinstance(v, types.SimpleNamespace):
                setattr(ns, k, v)
        if isinstance(env.get("__all__"), (list, tuple)):
            ns.__all__ = env["__all__"]  # its own type: `other.__all__ + [...]` must work
        self._busy.discard(mod)
        return ns


def find_roots(site: str) -> list[str]:
    roots = [site]
    for cand in (os.path.join(site, "tilelang", "3rdparty", "tvm", "python"),
                 os.path.join(site, "3rdparty", "tvm", "python")):
        if os.path.isdir(cand):
            roots.append(cand)
    if len(roots) == 1:
        print(f"warning: no TVM Python (3rdparty/tvm/python) under {site}: the names TileLang "
              f"re-exports from TVM's TIR script are missing", file=sys.stderr)
    return roots


def language_names(site: str) -> list[tuple[str, str, str]]:
    """[(name, defining module, docstring's first line)] of tilelang.language."""
    surface = Surface(find_roots(site))
    ns = surface.settle("tilelang.language")
    if ns.path is None:
        sys.exit(f"no tilelang/language/__init__.py under {site}")
    names = list(ns.__all__ or ())
    for n in ns.public:
        if n not in names and not n.startswith("__"):
            names.append(n)
    rows = []
    for n in names:
        where, node = ns.origin.get(n, ("?", None))
        doc = ""
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            doc = (ast.get_docstring(node) or "").strip().split("\n")[0]
        rows.append((n, where, doc))
    return rows


_USE = re.compile(r"(?<![\w.])T\.([A-Za-z_]\w*)")


def example_sources(path: str, rev: str) -> list[tuple[str, str]]:
    if os.path.isdir(os.path.join(path, "examples")):
        out = []
        for dirpath, _, files in os.walk(os.path.join(path, "examples")):
            for f in sorted(files):
                if f.endswith(".py"):
                    p = os.path.join(dirpath, f)
                    with open(p, encoding="utf-8", errors="replace") as fh:
                        out.append((os.path.relpath(p, path), fh.read()))
        return out
    files = subprocess.run(["git", "-C", path, "ls-tree", "-r", rev, "--name-only", "--",
                            "examples"], check=True, capture_output=True, text=True).stdout.split()
    out = []
    for f in files:
        if f.endswith(".py"):
            text = subprocess.run(["git", "-C", path, "show", f"{rev}:{f}"], check=True,
                                  capture_output=True, text=True, errors="replace").stdout
            out.append((f, text))
    return out


def example_counts(path: str, rev: str) -> tuple[Counter, int]:
    counts: Counter = Counter()
    sources = example_sources(path, rev)
    for _, text in sources:
        counts.update(set(_USE.findall(text)))
    return counts, len(sources)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", help="directory holding the tilelang package (wheel or checkout)")
    ap.add_argument("--examples", help="TileLang checkout or bare git dir with examples/")
    ap.add_argument("--rev", default="HEAD", help="revision of a bare git dir (default HEAD)")
    ap.add_argument("--tilejit", action="store_true",
                    help="add whether tilejit.language has each name (needs tilejit importable)")
    ap.add_argument("--format", choices=["md", "tsv"], default="md")
    args = ap.parse_args()

    rows = language_names(args.site)
    counts, nfiles = (example_counts(args.examples, args.rev) if args.examples
                      else (Counter(), 0))
    T = None
    if args.tilejit:
        import tilejit.language as T  # noqa: N812

    def has(name):
        try:
            getattr(T, name)
            return "yes"
        except AttributeError:
            return "no"

    def row(cells):
        if args.format == "md":
            return "| " + " | ".join(cells) + " |"
        return "\t".join(cells)

    head = ["name", "module", "doc", "example files"] + (["tilejit"] if T else [])
    print(f"# {len(rows)} names; {nfiles} example files")
    print(row(head))
    if args.format == "md":
        print("|" + "---|" * len(head))
    for name, where, doc in rows:
        cells = [f"`{name}`", where, doc.replace("|", "/"), str(counts.get(name, 0))]
        if T:
            cells.append(has(name))
        print(row(cells))
    exported = {r[0] for r in rows}
    extra = sorted((n for n in counts if n not in exported), key=lambda n: (-counts[n], n))
    if extra:
        print(f"\n# T.<name> in the examples outside the exported set ({len(extra)}):")
        for n in extra:
            print(f"{n}\t{counts[n]}" + (f"\t{has(n)}" if T else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
