"""The differential tester from the command line.

    cd tests && python3 -m difftest --seconds 300            # the CPU target
    cd tests && python3 -m difftest --target cuda --all      # every feature, on a GPU

It draws programs from consecutive seeds (from --first-seed, or the
--seeds given), runs each on the target in a child process against the
interpreter, prints a line per program, and writes every failing program,
minimised (--minimise-seconds, 0 for none), to the corpus directory
(--corpus, default tests/difftest/regressions) as a regression case. The
summary groups the failures by the switched-off features that explain them
(features.py), each with its seeds. Exit status 1 when a program failed.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from typing import Dict, List, Optional

from . import corpus, features, render
from .generator import generate
from .runner import Worker


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m difftest", description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seconds", type=float, default=60.0, help="stop drawing after this long")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--seeds", help="comma-separated seeds to run (instead of consecutive ones)")
    ap.add_argument("--all", action="store_true", help="every feature, the switched-off too")
    ap.add_argument("--features", help="exactly these features (comma-separated)")
    ap.add_argument("--without", default="", help="features to leave out (comma-separated)")
    ap.add_argument("--with", dest="add", default="",
                    help="features to add to the target's (comma-separated)")
    ap.add_argument("--corpus", default=str(corpus.REGRESSIONS),
                    help="where failing programs are written")
    ap.add_argument("--minimise-seconds", type=float, default=120.0)
    ap.add_argument("--one-per-defect", action="store_true",
                    help="write one case per group of switched-off features")
    ap.add_argument("--timeout", type=float, default=300.0, help="per program, in seconds")
    ap.add_argument("--list-features", action="store_true")
    return ap.parse_args(argv)


def _explain(program_features: List[str], target: str) -> str:
    """The issue items of the switched-off features a failing program uses."""
    items = sorted({f.item for f in features.off_for(program_features, target) if f.item})
    return "issue 20 item " + ", ".join(map(str, items)) if items else "no known defect"


def _item(program_features: List[str], target: str) -> Optional[int]:
    items = sorted({f.item for f in features.off_for(program_features, target) if f.item})
    return items[0] if len(items) == 1 else None


def main(argv: Optional[List[str]] = None) -> int:
    args = _parse(argv)
    if args.list_features:
        for f in features.FEATURES.values():
            print(f"{f.name:22} on for {','.join(f.targets) or 'none':9} {f.what}"
                  + (f" [off: {f.off_because}]" if f.off_because else ""))
        return 0
    only = args.features.split(",") if args.features else None
    chosen = features.enabled(args.target, args.all, only,
                              [w for w in args.without.split(",") if w])
    chosen |= features.enabled(args.target, only=[a for a in args.add.split(",") if a])
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    worker = Worker(args.timeout)
    statuses: Dict[str, int] = collections.Counter()
    groups: Dict[str, List[int]] = collections.defaultdict(list)
    written = set()
    start = time.monotonic()
    seed = args.first_seed
    index = 0
    try:
        while time.monotonic() - start < args.seconds:
            if seeds is not None:
                if index >= len(seeds):
                    break
                seed = seeds[index]
            index += 1
            program = generate(seed, chosen)
            t0 = time.monotonic()
            result = worker.check(program, args.target, seed)
            statuses[result.status] += 1
            line = f"seed {seed}: {result.status} ({time.monotonic() - t0:.1f} s)"
            if result.failed:
                why = _explain(program.features, args.target)
                groups[why].append(seed)
                off = ",".join(f.name for f in features.off_for(program.features, args.target))
                print(f"{line} [{why}: {off}] {result.message.splitlines()[0][:300]}",
                      flush=True)
                if not args.one_per_defect or why not in written:
                    written.add(why)
                    _write(args, worker, program, seed, result, why)
            else:
                print(f"{line} {','.join(program.features)}", flush=True)
            seed += 1
    finally:
        worker.close()
    total = sum(statuses.values())
    print(f"\n{total} programs in {time.monotonic() - start:.0f} s on {args.target}: " +
          ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))
    for why, failed in sorted(groups.items()):
        print(f"  failed, explained by [{why}]: seeds {', '.join(map(str, failed))}")
    return 1 if groups else 0


def _write(args, worker: Worker, program, seed: int, result, why: str) -> None:
    # A hang or a crash costs the timeout or a new process per try: left as found.
    if args.minimise_seconds > 0 and result.status in ("mismatch", "error", "accepted"):
        check = (result.mismatch or {}).get("check")

        def fails(q) -> bool:
            return worker.check(q, args.target, seed).status == result.status
        before = len(render.source(program).splitlines())
        small = corpus.minimise(program, fails, args.minimise_seconds, check)
        again = worker.check(small, args.target, seed)
        print(f"  minimised: {before} -> {len(render.source(small).splitlines())} "
              f"lines, {again.status} when run again", flush=True)
        if again.failed:  # else an intermittent failure: the program as found
            program, result = small, again
    note = (f"{result.status} on {args.target}: {result.message.splitlines()[0][:500]} "
            f"(switched-off features it uses: {why})")
    path = corpus.save(args.corpus, program, seed, args.target, result, note,
                       _item(program.features, args.target))
    print(f"  written: {path}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
