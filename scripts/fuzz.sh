#!/usr/bin/env bash
# Builds the libFuzzer target tests/fuzz/fuzz_signature.cpp (clang,
# AddressSanitizer + UndefinedBehaviorSanitizer) and runs it from the
# committed corpus for a bounded time; exits non-zero on a crash, leaving the
# input that crashed under build-fuzz/artifacts/ (replay it with
# `build-fuzz/fuzz_signature FILE`; TILEJIT_FUZZ_VERBOSE=1 says what it does).
#
#   scripts/fuzz.sh [SECONDS]                  fuzz for SECONDS (default 60,
#                                              or $FUZZ_SECONDS)
#   scripts/fuzz.sh --update-corpus [SECONDS]  fuzz, then replace
#                                              tests/fuzz/corpus by a small
#                                              set that keeps the coverage
#
# New inputs go to build-fuzz/corpus, never into the committed corpus.
# TILEJIT_FUZZ_BUILD_DIR overrides build-fuzz; TILEJIT_FUZZ_ROOT fuzzes the
# sources of another tilejit tree.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

update=0
if [[ "${1:-}" == "--update-corpus" ]]; then
  update=1
  shift
fi
seconds=${1:-${FUZZ_SECONDS:-60}}
build=${TILEJIT_FUZZ_BUILD_DIR:-build-fuzz}
corpus=tests/fuzz/corpus

# clang and its libFuzzer / sanitizer runtimes.
source scripts/apt_ensure.sh  # the script runs from the repository root
apt_ensure clang-14 libclang-rt-14-dev cmake make python3
cxx=$(command -v clang++-14 || command -v clang++)

SECONDS=0
echo "== fuzz: build ($build, $cxx)"
cmake -S tests/fuzz -B "$build" -DCMAKE_CXX_COMPILER="$cxx" \
  -DTILEJIT_ROOT="${TILEJIT_FUZZ_ROOT:-$root}" >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "== fuzz: built in $SECONDS s; running for $seconds s"

work="$build/corpus"
mkdir -p "$work" "$build/artifacts"
log="$build/fuzz.log"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
"$build/fuzz_signature" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$work" "$corpus" >"$log" 2>&1 ||
  status=$?
if ((status != 0)); then
  tail -n 60 "$log"
  echo "== fuzz: FAILED (exit $status); the input is in $build/artifacts/" >&2
  exit "$status"
fi
grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)" "$log" | tail -n 2 || true
grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" \
  "$log" || true
echo "== fuzz: no crash in $seconds s"

if ((update)); then
  echo "== fuzz: minimising the corpus into $corpus"
  merged=$(mktemp -d)
  trap 'rm -rf "$merged"' EXIT
  mkdir "$merged/out"
  # The control file lists the edges each input covers; the picking is
  # minimize_corpus.py's (libFuzzer's own merge keeps far more files).
  "$build/fuzz_signature" -merge=1 -use_counters=0 -merge_control_file="$merged/control" \
    "$merged/out" "$corpus" "$work" >"$build/merge.log" 2>&1
  python3 tests/fuzz/minimize_corpus.py "$merged/control" "$merged/picked" --max-files 190
  rm -f "$corpus"/*
  cp "$merged"/picked/* "$corpus"/
  python3 tests/fuzz/make_seeds.py "$corpus"
  echo "== fuzz: $(ls "$corpus" | wc -l) files, $(cat "$corpus"/* | wc -c) bytes in $corpus"
fi
