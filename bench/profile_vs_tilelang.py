"""One case of bench_vs_tilelang.py under one framework, built and run a few
times, for a profiler (a harness, not a benchmark: it prints nothing).

    ncu --clock-control none --launch-skip 2 --launch-count 1 \\
        -k 'regex:tilejit_kernel$|main_kernel$' --metrics METRICS --csv \\
        python3 bench/profile_vs_tilelang.py tilejit|TileLang CASE

CASE is a case name of either suite (`flash_bf16_s8192`, `mla_decode_fp16`,
...); tilejit's kernels are `tilejit_kernel` (`tilejit_kernel_1` for a
unit's second entry), TileLang's `main_kernel`. The metrics that placed
tilejit's excess instructions on 2026-12-03
(bench/results/h200-2026-12-03-hopper-bars.md): gpu__time_duration.sum,
smsp__inst_executed.sum, smsp__inst_executed_pipe_alu.sum,
smsp__inst_executed_pipe_fma.sum, smsp__inst_executed_pipe_xu.sum,
sm__throughput.avg.pct_of_peak_sustained_elapsed, launch__registers_per_thread
and the smsp__average_warps_issue_stalled_*_per_issue_active.ratio family.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_vs_tilelang as B  # noqa: E402


def main(argv):
    if len(argv) != 2 or argv[0] not in ("tilejit", "TileLang"):
        print(__doc__)
        return 2
    framework, name = argv
    cases = {c.name: c for c in B.hopper_case_list() + B.case_list()}
    if name not in cases:
        print(f"no case {name!r}; cases: {', '.join(sorted(cases))}")
        return 2
    import torch
    case = cases[name]
    if framework == "tilejit":
        import tilejit as tl
        import tilejit.language as T
        target = "cuda"
    else:
        import tilelang as tl
        import tilelang.language as T
        target = "auto"
    kernel = case.program(tl, T, target)(**case.full)
    inputs = B.torch_inputs(case.inputs(case.full), B.seed_of(case))
    for _ in range(3):
        B.run_kernel(kernel, inputs, case.inplace, lambda a: a.zero_())
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
