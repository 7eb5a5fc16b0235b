#!/usr/bin/env bash
# compute-sanitizer's memcheck and racecheck over the tile programs on a GPU
# (tests/python/test_tile_cuda.py), one pytest process per tool:
#
#   bash scripts/gpu_sanitize.sh [pytest -k expression]
#
# Needs tilejit installed (or on PYTHONPATH) with its CUDA target, torch with
# CUDA, and compute-sanitizer on PATH or in $CUDA_HOME/bin. Prints each tool's
# summary line and the pytest result; exits nonzero when a tool reports an
# error or a hazard, or a test fails.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
filter=${1:-"readme_gemm_as or splitk_gemm_with_atomic or rms_norm or softmax_rows or flash_attention_float16 or flash_attention_bfloat16 or flash_decoding_bfloat16 or one_query_head or sparse_attention_in_the_seed or chunked_gated"}
cs=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
[ -x "$cs" ] || { echo "compute-sanitizer not found"; exit 1; }
status=0
for tool in memcheck racecheck; do
  log=$(mktemp)
  (cd /tmp && "$cs" --tool "$tool" --error-exitcode 3 python3 -m pytest -q -p no:cacheprovider \
    "$here/tests/python/test_tile_cuda.py" -k "$filter") >"$log" 2>&1
  rc=$?
  echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1);" \
       "pytest: $(grep -E '[0-9]+ (passed|failed)' "$log" | tail -1)"
  [ "$rc" -eq 0 ] || { status=1; grep -E "Error|Hazard|FAILED" "$log" | head -20; }
  rm -f "$log"
done
exit $status
