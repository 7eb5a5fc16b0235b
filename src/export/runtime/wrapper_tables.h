// A stand-in for what the generator writes between wrapper_types.h and
// wrapper_check.cpp (wrapper_source() in export_codegen.cpp): the tables of
// one kernel's call plan and KernelAbi, and its shape program as
// straight-line code. The fixed parts of the wrapper include it so that each
// compiles on its own (ctests export.runtime.*, with the warnings of
// tests/export_runtime/CMakeLists.txt); no generated unit holds it. The
// tables are those of the CUDA export of examples/tile/tile_kernels.h's
// splitk_gemm(4) (A[M, K], B[K, N] -> C[M, N], workspace Partial[4, M, N]),
// as the generator wrote them; when the generator writes a new table, it
// belongs here too.
//
// The fixed code reads, from the tables: kName, kDeviceType, kDeviceText,
// kOneDevice, kStreamKeyedPool, kNumInputs, kNumOutputs, kNumWorkspaces,
// kNumSymbols, kNumResults, kNumParams, kNumLaunches, kNumBindings,
// kNumChecks, kNumAbiArgs, kBlockBytes, kHasZeroOnce, kLayoutSeed, kInputs,
// kBindings, kChecks, kOutputs, kWorkspaces, kSymbolNames, kResultExpr,
// kLaunchGrid, kLaunchSmem, kAbiArgs, kTensorMaps, kNumTensorMaps, and
// run_program().
#pragma once

// The C header's fixed parts, as the unit begins with the header.
#include "header_dlpack.h"
#include "header_common.h"
#include "wrapper_types.h"

namespace {

constexpr const char* kName = "splitk_gemm";
constexpr int kDeviceType = 2;
constexpr const char* kDeviceText = "cuda (target 'cuda')";
constexpr bool kOneDevice = true;
constexpr bool kStreamKeyedPool = true;
constexpr int kNumInputs = 2;
constexpr int kNumOutputs = 1;
constexpr int kNumWorkspaces = 1;
constexpr int kNumSymbols = 3;
constexpr int kNumResults = 10;
constexpr int kNumParams = 4;
constexpr int kNumLaunches = 1;
constexpr int kNumBindings = 3;
constexpr int kNumChecks = 1;
constexpr int kNumAbiArgs = 7;
constexpr uint32_t kBlockBytes = 56;
constexpr bool kHasZeroOnce = false;
constexpr uint64_t kLayoutSeed = 15252218552234118197ULL;

const InputSpec kInputs[] = {
  {"A", 0, 0, 2, 32, 2, {-1, -1, -1, -1, -1, -1, -1, -1}, "float32", "a float32", "[M, K]"},
  {"B", 1, 0, 2, 32, 2, {-1, -1, -1, -1, -1, -1, -1, -1}, "float32", "a float32", "[K, N]"},
  {}};
const Binding kBindings[] = {
  {0, 0, 0, 1LL, 0LL, "M", "A.shape[0]"},
  {1, 0, 1, 1LL, 0LL, "K", "A.shape[1]"},
  {2, 1, 1, 1LL, 0LL, "N", "B.shape[1]"},
  {}};
const DimCheck kChecks[] = {
  {1, 0, 0, "K", "A.shape[1]", "K"},
  {}};
const BufferSpec kOutputs[] = {
  {"C", 2, 2, 32, 2, 1, 0, 4, "float32", "a float32"},
  {}};
const BufferSpec kWorkspaces[] = {
  {"Partial", 3, 2, 32, 3, 3, 0, 4, "float32", "a float32"},
  {}};
const char* const kSymbolNames[] = {"M", "K", "N", nullptr};
const char* const kResultExpr[] = {"", "M", "N", "4", "M", "N", "ceildiv(N, 64)", "ceildiv(M, 64)", "1", "", nullptr};
const int kLaunchGrid[][3] = {{6, 7, 8}, {0, 0, 0}};
const int64_t kLaunchSmem[][2] = {{9, 32768}, {0, 0}};
const AbiArgSpec kAbiArgs[] = {
  {0, 0, 0, 8},
  {0, 1, 8, 8},
  {0, 2, 16, 8},
  {0, 3, 24, 8},
  {1, 0, 32, 8},
  {1, 1, 40, 8},
  {1, 2, 48, 8},
  {}};
const TensorMapSpec kTensorMaps[] = {
  {}};
constexpr int kNumTensorMaps = 0;

inline int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline int64_t floormod_i(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
inline int64_t ceildiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}
// Division by zero: 0 and the flag; by -1: negation (INT64_MIN / -1 overflows).
inline int64_t div_op(int op, int64_t a, int64_t b, bool* dz, bool* of) {
  int64_t v = 0;
  if (b == 0) { *dz = true; return 0; }
  if (b == -1) { if (op != 1) *of |= __builtin_sub_overflow(int64_t{0}, a, &v); return v; }
  return op == 0 ? floordiv_i(a, b) : op == 1 ? floormod_i(a, b) : ceildiv_i(a, b);
}

unsigned run_program(const int64_t* s, int64_t* res) {
  int64_t r[9];
  bool dz = false, of = false;
  (void)dz; (void)of;
  r[0] = s[0];
  r[1] = s[1];
  r[2] = s[2];
  r[3] = 4LL;
  r[4] = 64LL;
  r[5] = div_op(2, r[2], r[4], &dz, &of);
  r[6] = div_op(2, r[0], r[4], &dz, &of);
  r[7] = 1LL;
  r[8] = 0LL;
  res[0] = r[1];
  res[1] = r[0];
  res[2] = r[2];
  res[3] = r[3];
  res[4] = r[0];
  res[5] = r[2];
  res[6] = r[5];
  res[7] = r[6];
  res[8] = r[7];
  res[9] = r[8];
  return (dz ? 1u : 0u) | (of ? 2u : 0u);
}

}  // namespace
