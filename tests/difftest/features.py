"""What the generator may draw on: one row per feature, each with a switch.

`targets` lists the targets on which the feature is on when programs are
drawn for CI (the pytest entry) and by default from the command line; a
feature left off for a target names the defect that keeps it off (issue 20's
items). The command line's --all turns every feature on, which is how the
defects were found; its --features / --without choose exactly.

When a defect is fixed, add its target back to the row: the regression
cases that use the feature (regressions/*.json, expected failures until
then) become plain tests at the same time.

`item` names the item of issue 20 a feature was switched off for, each
found by this tester: 1 (statements outside tile ops ran on thread 0 only,
T.get_thread_binding() was 0 on the CPU; wrong results on both targets,
hangs on CUDA), 2 (tile ops under a thread-index condition ran on all
threads or none; hangs on CUDA), 3 (T.alloc_reducer raced on CUDA), 4 (a
T.Parallel past its fragment compiled), 5 (CUDA's pipeliner prefetched a
copy whose address the loop computes with a stale index), 6 (max and min
reductions dropped NaN). All are fixed (a722510, c11bab2, de7988d,
5302588) and on again; the CPU was checked after the fixes, CUDA not yet
(scripts/gpu_run.sh's run of the tester is that check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

BOTH = ("cpu", "cuda")


@dataclass(frozen=True)
class Feature:
    name: str
    what: str
    targets: Tuple[str, ...] = BOTH
    off_because: Optional[str] = None  # the defect, where `targets` leaves one out
    item: Optional[int] = None         # its item in issue 20


FEATURES: Dict[str, Feature] = {f.name: f for f in [
    # Tile-level data movement and compute.
    Feature("copy_whole", "T.copy of whole buffers (shared <-> fragment, casts)"),
    Feature("copy_slice", "T.copy with slice operands A[a:b, c:d] and tile slices"),
    Feature("copy_corner", "T.copy with start-corner operands A[bx * 32, k * 16]"),
    Feature("gemm", "T.gemm of shared tiles into a float32 fragment, clear_accum or not"),
    Feature("gemm_transpose", "T.gemm with transpose_A / transpose_B"),
    Feature("gemm_fragment_a", "T.gemm with its A operand in a fragment"),
    Feature("reduce", "T.reduce_sum / max / min / abssum / absmax over dim 0 or 1, "
                      "clear or not"),
    Feature("fill", "T.fill and T.clear of tiles and tile slices"),
    Feature("parallel_fragment", "T.Parallel nests over fragments (elementwise, broadcast "
                                 "of row / column vectors, index-dependent selects)"),
    Feature("parallel_shared", "T.Parallel nests over shared tiles"),
    Feature("atomic_global", "T.atomic_add of a tile into a global tensor from T.Parallel "
                             "(every block adds into the same elements)"),
    Feature("k_loop", "a T.serial / T.Pipelined loop over K tiles feeding a gemm"),
    Feature("pipelined_gather", "a T.Pipelined K loop whose copy address reads an index "
                                "tensor: T.copy(A[bx * 32, Idx[k] * 16], A_s)"),
    Feature("partial_tiles", "shapes that do not divide the tiles (and gathered K tiles "
                             "wholly outside a tensor)"),
    Feature("symbolic", "T.symbolic dimensions: one kernel checked at several shapes"),
    Feature("float16", "float16 tensors and tiles"),
    Feature("bfloat16", "bfloat16 tensors and tiles (needs ml_dtypes)"),
    # Per-thread code: statements outside tile ops run on every thread.
    Feature("thread_store", "per-thread stores and loads of shared and global elements "
                            "indexed by T.get_thread_binding()", item=1),
    Feature("thread_var", "per-thread T.alloc_var accumulators and T.alloc_local arrays",
            item=1),
    Feature("thread_cond", "per-thread code under conditions on the thread index", item=1),
    Feature("atomic_shared", "per-thread T.atomic_add into a shared vector, then a tile op "
                             "reads it", item=1),
    Feature("atomic_thread_global", "per-thread T.atomic_add into a global tensor", item=1),
    Feature("thread_cond_tile", "tile ops under `if tx < c:` / `else:` (warp-specialised "
                                "branches)", item=2),
    Feature("reducer", "T.alloc_reducer updated in T.Parallel, then T.finalize_reducer",
            item=3),
    Feature("pipelined_dependent", "a T.Pipelined K loop whose copy address reads a buffer "
                                   "written in the loop: blk[0] = Idx[k]; "
                                   "T.copy(A[bx * 32, blk[0] * 16], A_s)", item=5),
    Feature("parallel_oob", "an invalid program: a T.Parallel extent larger than its "
                            "fragment, which tilejit must reject when it compiles, at the "
                            "user's line, naming the fragment", item=4),
    Feature("nan", "NaN in the inputs of max / min reductions (propagated, as numpy does)",
            item=6),
]}


def enabled(target: str, all_features: bool = False, only: Optional[Iterable[str]] = None,
            without: Iterable[str] = ()) -> Set[str]:
    """The features on for `target`: the table's choice, or every feature
    (all_features), or exactly `only`; minus `without`."""
    if only is not None:
        chosen = set(only)
    elif all_features:
        chosen = set(FEATURES)
    else:
        chosen = {f.name for f in FEATURES.values() if target in f.targets}
    unknown = (chosen | set(without)) - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown features: {', '.join(sorted(unknown))}; expected some of "
                         f"{', '.join(FEATURES)}")
    return chosen - set(without)


def off_for(features: Iterable[str], target: str) -> List[Feature]:
    """The features among `features` that are off for `target`."""
    return [FEATURES[n] for n in sorted(features) if target not in FEATURES[n].targets]


def known_defect(features: Iterable[str], target: str) -> Optional[str]:
    """Why a program with `features` is expected to fail on `target` (the
    defects of its switched-off features), or None."""
    reasons = sorted({f.off_because for f in off_for(features, target)})
    return "; ".join(reasons) if reasons else None
