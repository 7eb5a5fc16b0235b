// The CUDA device headers (device/cuda/): each compiles on its own under
// NVRTC, handed over by name as the backend hands them. Skips where NVRTC
// cannot be loaded (no GPU is needed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/common/device_files.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/nvrtc_loader.h"
#include "cuda/cuda_test_util.h"

namespace tilejit::backend {
namespace {

std::filesystem::path device_dir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path() /
         "device" / "cuda";
}

TEST(CudaDeviceHeaders, EmbeddedTextIsTheTreesText) {
  std::set<std::string> in_tree;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(device_dir())) {
    if (entry.path().extension() == ".h") {
      in_tree.insert(std::filesystem::relative(entry.path(), device_dir()).string());
    }
  }
  std::set<std::string> embedded;
  for (const DeviceFile& f : cuda_device_files()) {
    embedded.insert(std::string(f.name));
    std::ifstream in(device_dir() / std::string(f.name), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), f.text) << f.name;
  }
  EXPECT_EQ(embedded, in_tree);
  EXPECT_TRUE(embedded.count(cuda::kPreludeName));
}

// Compiles `unit` (through ptxas: a unit with a __global__ entry is code
// generated) with the embedded headers; returns NVRTC's log on failure.
// With `ptx`, compiles for the virtual architecture and returns its PTX there.
std::string nvrtc_errors(const std::string& unit, std::string* ptx = nullptr) {
  const cuda::NvrtcApi& api = cuda::nvrtc();
  std::vector<const char*> texts, names;
  for (const DeviceFile& f : cuda_device_files()) {
    texts.push_back(f.text.data());
    names.push_back(f.name.data());
  }
  std::vector<std::string> flags = {ptx ? "--gpu-architecture=compute_90a"
                                        : "--gpu-architecture=sm_90a",
                                    "-std=c++17", "-default-device"};
  for (const std::string& d : api.include_dirs) flags.push_back("--include-path=" + d);
  std::vector<const char*> argv;
  for (const std::string& f : flags) argv.push_back(f.c_str());
  nvrtcProgram prog = nullptr;
  if (api.nvrtcCreateProgram(&prog, unit.c_str(), "unit.cu", int(texts.size()), texts.data(),
                             names.data()) != NVRTC_SUCCESS) {
    return "nvrtcCreateProgram failed";
  }
  const nvrtcResult r = api.nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  size_t size = 0;
  api.nvrtcGetProgramLogSize(prog, &size);
  std::string log(size, '\0');
  api.nvrtcGetProgramLog(prog, log.data());
  if (r == NVRTC_SUCCESS && ptx != nullptr) {
    api.nvrtcGetPTXSize(prog, &size);
    ptx->assign(size, '\0');
    api.nvrtcGetPTX(prog, ptx->data());
  }
  api.nvrtcDestroyProgram(&prog);
  return r == NVRTC_SUCCESS ? std::string() : log + "\n(in)\n" + unit;
}

TEST(CudaDeviceHeaders, EachCompilesOnItsOwnUnderNvrtc) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  ASSERT_FALSE(cuda::nvrtc().include_dirs.empty()) << "no CUDA headers for NVRTC";
  for (const DeviceFile& f : cuda_device_files()) {
    EXPECT_EQ(nvrtc_errors("#include \"" + std::string(f.name) + "\"\n"), "") << f.name;
  }
}

// Note [Fragment double buffering]: warp_mma's pair loop for every shape of
// K it has: one step, an odd count, the unrolled even counts and the rolled
// loop past 8 steps; both operand layouts.
TEST(CudaDeviceHeaders, WarpMmaBuildsForEveryStepCount) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  std::string unit = "#include \"tilejit/cuda/prelude.h\"\n#include \"tilejit/cuda/mma.h\"\n";
  int n = 0;
  for (int k : {16, 32, 48, 64, 128, 144, 256}) {
    for (const char* trans : {"false, false", "true, true"}) {
      unit += "extern \"C\" __global__ void k" + std::to_string(n++) +
              "(const tilejit::bfloat16* a, const tilejit::bfloat16* b, float* c) {\n"
              "  extern __shared__ __align__(16) tilejit::bfloat16 as[];\n"
              "  tilejit::bfloat16* bs = as + 256 * 264;\n"
              "  as[threadIdx.x] = a[threadIdx.x]; bs[threadIdx.x] = b[threadIdx.x];\n"
              "  __syncthreads();\n"
              "  float acc[2][4][4] = {};\n"
              "  tilejit::cuda::warp_mma<2, 4, " + std::string(trans) + ", 264, 264, " +
              std::to_string(k) + ">(acc, as, bs, 0, 0);\n"
              "  c[threadIdx.x] = acc[1][3][2];\n}\n";
    }
  }
  EXPECT_EQ(nvrtc_errors(unit), "");
}

// FullCol accumulators (fragments.h, Note [Register accumulators]): warp
// tiles of one 8-column mma tile (ldmatrix .x2 for B, NT odd), the A
// operand in registers held alike by the WN warps of a warp row (WR = WN)
// and loaded from shared memory by ldmatrix, under both B orientations.
TEST(CudaDeviceHeaders, FullColAccumulatorsAndReplicatedOperandsBuild) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const std::string unit = R"(#include "tilejit/cuda/prelude.h"
#include "tilejit/cuda/mma_acc.h"
using namespace tilejit::cuda;
using S = MmaAcc<64, 64, 1, 8>;            // 8 columns a warp
using P = MmaAcc<64, 64, 1, 1, 64, 8>;     // its rows' A, in every warp of the row
using O = MmaAcc<64, 256, 1, 8>;
extern "C" __global__ void k(const tilejit::float16* a, float* y) {
  __shared__ __align__(128) tilejit::float16 q[64 * 72], kv[64 * 72], s[64 * 72];
  for (int i = threadIdx.x; i < 64 * 72; i += blockDim.x) q[i] = kv[i] = s[i] = a[i];
  __syncthreads();
  float acc[S::kCount] = {}, out[O::kCount] = {};
  acc_gemm<S, 64, false, true, 72, 72>(acc, q, kv, false);
  acc_gemm<S, 64, false, false, 72, 72>(acc, q, kv, false);
  tilejit::float16 p[P::kCount];
  acc_load_shared<P, 72>(p, s);
  acc_gemm_rs<O, 64, false, 72>(out, p, kv, true);
  acc_gemm_rs<S, 64, true, 72>(acc, p, kv, false);
  acc_store<O>(out, Rect<float>{y, 0, 256, 0, 64, 0, 256});
  acc_store<S>(acc, Rect<float>{y, 64 * 256, 64, 0, 64, 0, 64});
}
)";
  std::string ptx;
  ASSERT_EQ(nvrtc_errors(unit, &ptx), "");
  EXPECT_NE(ptx.find("ldmatrix.sync.aligned.m8n8.x2.shared.b16"), std::string::npos);
  EXPECT_NE(ptx.find("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16"), std::string::npos);
  EXPECT_EQ(ptx.find(".local"), std::string::npos) << "registers went to local memory";
}

// Note [Stores from a thread's base]: a whole accumulator stores 16-bit
// pairs as one 32-bit word and float pairs as one 64-bit vector, from one
// pointer per thread (no 64-bit multiply per register); into a whole 16-bit
// shared tile it goes through stmatrix.
TEST(CudaDeviceHeaders, AccumulatorStoresPairsAndStmatrix) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const std::string unit = R"(#include "tilejit/cuda/prelude.h"
#include "tilejit/cuda/mma_acc.h"
using namespace tilejit::cuda;
using L = MmaAcc<64, 64, 4, 2, 64, 1, true>;
extern "C" __global__ void k(const float* x, tilejit::float16* h, float* f, tilejit::float16* g) {
  __shared__ __align__(128) tilejit::float16 s[64 * 64];
  float acc[L::kCount];
  for (int r = 0; r < L::kCount; ++r) acc[r] = x[r * 256 + threadIdx.x];
  acc_store<L, true>(acc, Rect<tilejit::float16>{h, 0, 64, 0, 64, 0, 64});
  acc_store<L, true>(acc, Rect<float>{f, 0, 64, 0, 64, 0, 64});
  acc_store_shared<L, 64>(acc, s);
  __syncthreads();
  g[threadIdx.x] = s[threadIdx.x * 7];
}
)";
  std::string ptx;
  ASSERT_EQ(nvrtc_errors(unit, &ptx), "");
  EXPECT_NE(ptx.find("stmatrix.sync.aligned.m8n8.x4.shared.b16"), std::string::npos);
  EXPECT_NE(ptx.find("st.global.u32"), std::string::npos) << "16-bit pairs as one word";
  EXPECT_NE(ptx.find("st.global.v2.f32"), std::string::npos) << "float pairs as one vector";
  size_t wide = 0;  // a thread's base pointer: one per store at most, not one per register
  for (size_t at = ptx.find("mul.wide.s32"); at != std::string::npos; at = ptx.find("mul.wide.s32", at + 1)) {
    ++wide;
  }
  EXPECT_LE(wide, 2u);
  EXPECT_EQ(ptx.find(".local"), std::string::npos) << "registers went to local memory";
}

// Note [NaN in max and min]: every max and min the library combines floats
// with is max.NaN / min.NaN, which keep a NaN, never max.f32 / min.f32
// (fmaxf), which drop it: the reductions of tiles in memory in both
// dimensions, a register accumulator's rows (its registers, the shuffles of
// a quad, the scratch where warps meet), and T.max / T.min.
TEST(CudaDeviceHeaders, MaxAndMinReductionsKeepNaN) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const std::string unit = R"(#include "tilejit/cuda/prelude.h"
#include "tilejit/cuda/mma_acc.h"
#include "tilejit/cuda/reduce.h"
using namespace tilejit::cuda;
using Square = MmaAcc<64, 64, 2, 2>;
using Rows = MmaAcc<64, 64, 4, 1>;
extern "C" __global__ void k(const float* x, const tilejit::bfloat16* h, float* y) {
  __shared__ float scratch[2 * 64];
  reduce<ReduceKind::kMax, 8, 64, 1, 64, 128>(x, y, true);
  reduce<ReduceKind::kMin, 8, 64, 0, 64, 128>(x, y + 8, false);
  reduce<ReduceKind::kAbsMax, 8, 64, 1, 64, 128>(h, y + 72, true);
  float acc[Square::kCount];
  for (int r = 0; r < Square::kCount; ++r) acc[r] = x[threadIdx.x * Square::kCount + r];
  acc_reduce_rows<ReduceKind::kMax, Square>(acc, y + 80, false, scratch);
  acc_reduce_rows<ReduceKind::kMin, Rows>(acc, y + 144, true, nullptr);
  float rows[MmaRows<64, 4>::kCount];
  acc_reduce_rows_to<ReduceKind::kAbsMax, Rows>(acc, rows, true);
  y[208 + threadIdx.x] = tilejit::maximum<float>(rows[0], x[1]) + tilejit::minimum<float>(rows[1], x[2]);
  // WN = 2: the warps of a warp row meet in scratch and each holds the rows.
  float rows2[MmaRows<64, 2, 2>::kCount];
  acc_reduce_rows_to<ReduceKind::kMax, Square>(acc, rows2, false, scratch);
  rows_store<MmaRows<64, 2, 2>, true>(rows2, Rect<float>{y, 400, 3, 0, 64, 0, 1});
}
)";
  std::string ptx;
  ASSERT_EQ(nvrtc_errors(unit, &ptx), "");
  EXPECT_NE(ptx.find("max.NaN.f32"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("min.NaN.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("max.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("min.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("max.ftz.f32"), std::string::npos) << ptx;
}

}  // namespace
}  // namespace tilejit::backend
