// The CUDA backend's stages that need no GPU: registration, availability and
// the loader's messages, generated source, NVRTC compiles (cubin and PTX) and
// their errors, toolchain keys, binary validation, and the thread-local
// current stream. Launching is in test_cuda_launch.cpp (GPU only).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/common/device_files.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "cuda/cuda_test_util.h"
#include "kernels/flash_decoding.h"
#include "kernels/sparse_attention.h"
#include "kernels/sparse_attention_cuda.h"
#include "kernels/splitk_matmul.h"
#include "kernels/splitk_matmul_cuda.h"
#include "tilejit/ir/expr.h"

namespace tilejit::cuda::testing {
namespace {

using ir::Expr;

// A kernel with every kind of parameter: a dynamic and a static dimension,
// an expression over symbols, scalars of each dtype, and a scalar that binds
// a symbol of the same name.
ir::PrimFunc mixed_func(const std::string& cuda_body = "Y(0) = alpha;\n") {
  Expr n = Expr::var("n"), m = Expr::var("m");
  return ir::prim_func("mixed")
      .tensor("X", {n, 64}, DataType::bfloat16())
      .tensor("Y", {ir::ceildiv(n, 4) * m + 1}, DataType::float32())
      .tensor("H", {8}, DataType::float16())
      .scalar("alpha", DataType::float32())
      .scalar("count", DataType::int32())
      .scalar("m", DataType::int64())
      .grid({ir::ceildiv(n, 128), 2})
      .threads(128)
      .body("cpu", "")
      .body("cuda", cuda_body)
      .build();
}

TEST(CudaBackend, IsRegistered) {
  runtime::Backend& be = cuda_backend();
  EXPECT_EQ(be.target(), "cuda");
  EXPECT_EQ(be.device_type(), DeviceType::kCUDA);
  EXPECT_EQ(runtime::find_backend(DeviceType::kCUDA), &be);
}

// Needs no GPU: what the backend says of a PrimFunc is declaration-level.
TEST(CudaBackend, DefaultDeviceRankAndValidation) {
  runtime::Backend& be = cuda_backend();
  EXPECT_EQ(be.default_device(), Device::cuda(0));
  const ir::PrimFunc both = ir::prim_func("both").body("cpu", "").body("cuda", "").build();
  const ir::PrimFunc cpu_only = ir::prim_func("cpu_only").body("cpu", "").build();
  EXPECT_EQ(be.auto_rank(both), 1);  // above the CPU's 0
  EXPECT_EQ(be.auto_rank(cpu_only), -1);
  EXPECT_NO_THROW(be.validate(ir::prim_func("k").threads(1024).body("cuda", "").build()));
  const ir::PrimFunc wide = ir::prim_func("wide").threads(1025).body("cuda", "").build();
  EXPECT_EQ(error_message([&] { be.validate(wide); }, ErrorKind::kValueError),
            "wide: 1025 threads per block; CUDA allows 1 to 1024");
  // A TileLang-Ascend program is the CPU target's to emulate: "auto" never
  // picks CUDA for it, and asking for CUDA says so.
  ir::PrimFunc ascend = ir::prim_func("npu").build();
  ir::TileBody body;
  body.dialect = "ascend";
  ascend.body = body;
  EXPECT_EQ(be.auto_rank(ascend), -1);
  EXPECT_EQ(error_message([&] { be.validate(ascend); }, ErrorKind::kValueError),
            "npu: a TileLang-Ascend program (T.Kernel(..., is_npu=True)) is emulated on the CPU "
            "target only; compile it with target=\"cpu\" (\"auto\" picks it)");
}

TEST(CudaBackend, AvailabilityMatchesTheDriver) {
  runtime::Backend& be = cuda_backend();
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (libcuda == nullptr) libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (libcuda != nullptr) {
    dlclose(libcuda);
    if (be.available()) {
      EXPECT_GT(device_count(), 0);
      EXPECT_EQ(unavailable_reason(), "");
    }
    return;
  }
  // No driver here: everything that needs it says why, and nothing crashes.
  EXPECT_FALSE(be.available());
  EXPECT_EQ(device_count(), 0);
  EXPECT_EQ(unavailable_reason().rfind("cannot load libcuda.so.1: ", 0), 0u) << unavailable_reason();
  const std::string expected =
      "cuda backend: the CUDA driver is not available: " + unavailable_reason();
  EXPECT_EQ(error_message([&] { be.allocator().allocate(256, Device::cuda(0), nullptr); },
                          ErrorKind::kRuntimeError),
            expected);
  EXPECT_EQ(error_message([&] { be.record_event(Device::cuda(0), nullptr); },
                          ErrorKind::kRuntimeError),
            expected);
  EXPECT_EQ(error_message([&] { be.is_capturing(Device::cuda(0), nullptr); },
                          ErrorKind::kRuntimeError),
            expected);
  const int64_t shape[] = {4};
  EXPECT_EQ(error_message(
                [&] { be.tensor_allocator().empty(shape, DataType::float32(), Device::cuda(0), nullptr); },
                ErrorKind::kRuntimeError),
            expected);
  // Nothing to free is nothing to fail at.
  be.allocator().deallocate(nullptr, 0, Device::cuda(0), nullptr);
  be.destroy_event(nullptr);
  EXPECT_TRUE(be.event_completed(nullptr));
  be.memset_async(nullptr, 0, 0, Device::cuda(0), nullptr);
}

TEST(CudaBackend, DriverErrorsNameTheApiTheErrorAndItsCode) {
  // With a driver the name and text come from cuGetErrorName/String;
  // without one the code alone is known.
  const bool driver = driver_or_null() != nullptr;
  EXPECT_EQ(error_message([] { throw_driver_error(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"); },
                          ErrorKind::kOutOfMemoryError),
            driver ? "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
                   : "cuMemAlloc failed: unknown CUDA error (2)");
  const std::string msg = error_message(
      [] { throw_driver_error(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData", "loading"); },
      ErrorKind::kRuntimeError);
  EXPECT_EQ(msg.rfind(driver ? "loading: cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (200)"
                             : "loading: cuModuleLoadData failed: unknown CUDA error (200)",
                      0),
            0u)
      << msg;
}

TEST(CudaBackend, RejectsNonCudaDevices) {
  runtime::Backend& be = cuda_backend();
  EXPECT_EQ(error_message([&] { be.allocator().allocate(16, Device::cpu(), nullptr); },
                          ErrorKind::kValueError),
            "cuda backend: allocate on device 'cpu', which is not a CUDA device");
  EXPECT_EQ(error_message([&] { be.load("C", runtime::KernelAbi{}, Device::cpu()); },
                          ErrorKind::kValueError),
            "cuda backend: load on device 'cpu', which is not a CUDA device");
  EXPECT_EQ(error_message([&] { be.toolchain_key({}, Device::cpu()); }, ErrorKind::kValueError),
            "cuda backend: toolchain_key on device 'cpu', which is not a CUDA device");
}

// The entry point after the prelude: the argument struct and the kernel.
TEST(CudaCodegen, EntryPointGivesTheBodyViewsScalarsAndSymbols) {
  const ir::PrimFunc f = mixed_func("Y(0) = alpha;");
  const std::vector<std::string> symbols = {"n", "m"};
  const std::string src = cuda_backend().generate_source({&f, symbols});
  EXPECT_EQ(src.rfind("// Generated by tilejit's CUDA backend for kernel 'mixed'.\n"
                      "#include \"tilejit/cuda/prelude.h\"\n\n",
                      0),
            0u)
      << src.substr(0, 300);
  const size_t at = src.find("namespace tilejit {\nstruct Args");
  ASSERT_NE(at, std::string::npos) << src;
  EXPECT_EQ(src.substr(at), R"(namespace tilejit {
struct Args {
  void* ptrs[6];
  int64_t syms[2];
};
static_assert(sizeof(Args) == 64, "the KernelAbi's block");
}  // namespace tilejit

extern "C" __global__ void __launch_bounds__(128) tilejit_kernel(const __grid_constant__ tilejit::Args tilejit_args) {
  [[maybe_unused]] const int64_t n = tilejit_args.syms[0];
  [[maybe_unused]] const int64_t m = tilejit_args.syms[1];
  [[maybe_unused]] tilejit::View<tilejit::bfloat16, -1, 64> X(static_cast<tilejit::bfloat16*>(tilejit_args.ptrs[0]), {n});
  [[maybe_unused]] tilejit::View<float, -1> Y(static_cast<float*>(tilejit_args.ptrs[1]), {tilejit::ceildiv(n, 4) * m + 1});
  [[maybe_unused]] tilejit::View<tilejit::float16, 8> H(static_cast<tilejit::float16*>(tilejit_args.ptrs[2]), {});
  [[maybe_unused]] const float alpha = tilejit::scalar_arg<float>(tilejit_args.ptrs[3]);
  [[maybe_unused]] const int32_t count = tilejit::scalar_arg<int32_t>(tilejit_args.ptrs[4]);
  // m: the symbol declared above
  [[maybe_unused]] const tilejit::Dim3 grid_dim{gridDim.x, gridDim.y, gridDim.z};
  [[maybe_unused]] const tilejit::Dim3 block_idx{blockIdx.x, blockIdx.y, blockIdx.z};
  [[maybe_unused]] const int64_t bx = block_idx.x, by = block_idx.y, bz = block_idx.z;
#line 1 "mixed_body"
Y(0) = alpha;
#line 2 "mixed_body"
}
)");
}

TEST(CudaCodegen, KernelWithoutParametersOrSymbols) {
  const ir::PrimFunc f = ir::prim_func("empty").body("cuda", "").build();
  const std::string src = cuda_backend().generate_source({&f, {}});
  EXPECT_EQ(src.find("tilejit-cuda-abi"), std::string::npos);  // the layout is the KernelAbi's
  EXPECT_NE(src.find("struct Args {\n  int64_t unused;\n};"), std::string::npos);
  EXPECT_NE(src.find("__launch_bounds__(1)"), std::string::npos);
}

TEST(CudaCodegen, Errors) {
  runtime::Backend& be = cuda_backend();
  const ir::PrimFunc cpu_only = ir::prim_func("cpu_only").body("cpu", "").build();
  EXPECT_EQ(error_message([&] { be.generate_source({&cpu_only, {}}); }, ErrorKind::kValueError),
            "cpu_only: no body for target 'cuda' (bodies given: cpu)");
  const ir::PrimFunc none = ir::prim_func("none").build();
  EXPECT_EQ(error_message([&] { be.generate_source({&none, {}}); }, ErrorKind::kValueError),
            "none: no body for target 'cuda' (bodies given: none)");

  const ir::PrimFunc f = mixed_func();
  const std::vector<std::string> only_n = {"n"};
  EXPECT_EQ(error_message([&] { be.generate_source({&f, only_n}); }, ErrorKind::kValueError),
            "mixed: symbol 'm' in the shape of parameter 'Y' is not among the request's symbols "
            "(n)");

  const ir::PrimFunc wide = ir::prim_func("wide").threads(2048).body("cuda", "").build();
  EXPECT_EQ(error_message([&] { be.generate_source({&wide, {}}); }, ErrorKind::kValueError),
            "wide: 2048 threads per block; CUDA allows 1 to 1024");
}

// Note [Kernel argument ABI]: the struct's layout, as the KernelAbi says it.
TEST(CudaCodegen, KernelAbiDescribesTheArgumentStruct) {
  const ir::PrimFunc f = mixed_func();
  const std::vector<std::string> symbols = {"n", "m"};
  const runtime::LaunchResults results{{3, 4, 5}, 6};
  const runtime::KernelAbi abi =
      cuda_backend().generate({&f, symbols, {&results, 1}}).abi;
  EXPECT_EQ(abi.str(),
            "block 64 bytes: pointer X @0, pointer Y @8, pointer H @16, scalar alpha float32 @24, "
            "scalar count int32 @32, scalar m int64 @40, symbol n @48, symbol m @56; launch "
            "tilejit_kernel grid (r3, r4, r5) threads (128, 1, 1) smem r6");
}

TEST(CudaCompile, CubinForSm90aWithEveryDtype) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  auto b = ir::prim_func("dtypes");
  const DataType types[] = {DataType::float64(), DataType::float32(), DataType::float16(),
                            DataType::bfloat16(), DataType::int8(),   DataType::int16(),
                            DataType::int32(),   DataType::int64(),   DataType::uint8(),
                            DataType::boolean()};
  std::string body;
  for (size_t i = 0; i < std::size(types); ++i) {
    const std::string name = "T" + std::to_string(i);
    b.tensor(name, {Expr::var("n"), 2}, types[i]);
    // Every element type converts from and to float in the body.
    body += name + "(threadIdx.x, 1) = " + name + "(threadIdx.x, 0);\n";
    body += "acc += float(" + name + "(0, 0));\n";
  }
  b.scalar("s32", DataType::int32()).scalar("s64", DataType::int64()).scalar("f", DataType::float32());
  b.threads(64).body("cuda", "float acc = f + s32 + s64 + INFINITY * 0.f;\n" + body +
                                 "T1(0, 0) = acc + T0.shape(0) + T0.stride(0) + T0.size();\n");
  const ir::PrimFunc f = b.build();
  const std::string binary = compile(f, {"n"});
  ASSERT_GT(binary.size(), 64u);
  EXPECT_EQ(binary[0], 'C');
  // Then an ELF file for EM_CUDA (190): the layout travels as the KernelAbi.
  EXPECT_EQ(binary.compare(1, 4, "\x7f" "ELF"), 0);
  uint16_t machine = 0;
  std::memcpy(&machine, binary.data() + 1 + 18, 2);
  EXPECT_EQ(machine, 190);
}

// Note [Warpgroup gemms] (cuda_compiler.cpp): a wait that ptxas injects
// because code reads a wgmma's accumulator before waiting for it (C7517)
// would end the overlap of a gemm left running; the compile fails instead.
TEST(CudaCompile, AWaitPtxasInjectsFailsTheCompile) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const std::string gemm =
      "extern \"C\" __global__ void early(float* out, unsigned long long a, unsigned long long b) {\n"
      "  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;\n"
      "  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
      "  asm volatile(\"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, "
      "%5, 1, 1, 1, 0, 0;\" : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3) : \"l\"(a), "
      "\"l\"(b));\n"
      "  asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n";
  const std::string wait = "  asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n";
  const std::string store = "  out[threadIdx.x] = d0 + d1 + d2 + d3;\n";
  runtime::CompileOptions o;
  o.extra_flags = {"--gpu-architecture=sm_90a"};
  runtime::Backend& be = cuda_backend();
  // Waited for, then read: compiles.
  EXPECT_EQ(be.compile(gemm + wait + store + "}\n", "early", o, Device::cuda(0))[0], 'C');
  // Read first: ptxas injects the wait.
  const std::string msg = error_message(
      [&] { be.compile(gemm + store + wait + "}\n", "early", o, Device::cuda(0)); },
      ErrorKind::kCompileError);
  EXPECT_NE(msg.find("early: ptxas serialised the kernel's wgmma"), std::string::npos) << msg;
  EXPECT_NE(msg.find("C7517"), std::string::npos) << msg;
}

TEST(CudaCompile, PtxWhenTheFlagsAskForAVirtualArch) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  runtime::CompileOptions o;
  o.extra_flags = {"--gpu-architecture=compute_80"};
  const std::string binary = compile(mixed_func(), {"n", "m"}, o);
  ASSERT_FALSE(binary.empty());
  EXPECT_EQ(binary[0], 'P');
  EXPECT_NE(binary.find(".target sm_80"), std::string::npos);
  EXPECT_NE(binary.find(".entry tilejit_kernel("), std::string::npos);
}

TEST(CudaCompile, SyntaxErrorInTheBody) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const ir::PrimFunc f = mixed_func("float a = alpha;\nfloat b = a +* ;\nY(0) = b;\n");
  const std::string msg =
      error_message([&] { compile(f, {"n", "m"}); }, ErrorKind::kCompileError);
  const NvrtcApi& api = nvrtc();
  const std::string version = std::to_string(api.major) + "." + std::to_string(api.minor);
  const std::string head = "mixed: NVRTC " + version +
                           " failed (NVRTC_ERROR_COMPILATION)\noptions: --gpu-architecture=sm_90a "
                           "-std=c++17 -default-device -lineinfo --include-path=";
  EXPECT_EQ(msg.rfind(head, 0), 0u) << msg;
  EXPECT_NE(msg.find("\nmixed_body(2): error: expected an expression"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\n(set TILEJIT_KEEP_FAILED=1 to keep the source in a file)\n"),
            std::string::npos)
      << msg;
  // The body's lines are numbered, the wrapper's after them are not.
  EXPECT_TRUE(msg.ends_with("\nsource around line 2 of mixed_body:\n"
                            "   1 | float a = alpha;\n"
                            ">  2 | float b = a +* ;\n"
                            "   3 | Y(0) = b;\n"
                            "     | }"))
      << msg;
}

TEST(CudaCompile, ErrorAfterTheBodyIsShownInTheGeneratedLines) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  // An expression the body leaves unfinished ends in the wrapper's code.
  const ir::PrimFunc f = mixed_func("float a = alpha;\nY(0) = a *\n");
  const std::string msg =
      error_message([&] { compile(f, {"n", "m"}); }, ErrorKind::kCompileError);
  EXPECT_NE(msg.find("\nmixed_body(3): error: "), std::string::npos) << msg;
  EXPECT_TRUE(msg.ends_with("\nsource around line 3 of mixed_body, in the code generated after "
                            "the body's 2 lines:\n"
                            "   1 | float a = alpha;\n"
                            "   2 | Y(0) = a *\n"
                            ">    | }"))
      << msg;
}

TEST(CudaCompile, FailedSourceIsCarriedAndKeptWhenAsked) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const ir::PrimFunc f = mixed_func("Y(0) = ;\n");
  runtime::Backend& be = cuda_backend();
  const std::vector<std::string> symbols = {"n", "m"};
  const std::string source = be.generate_source({&f, symbols});
  ScopedEnv keep("TILEJIT_KEEP_FAILED", "1");
  try {
    be.compile(source, f.name, {}, Device::cuda(0));
    ADD_FAILURE() << "no CompileError";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.source(), source);
    const std::string path = e.kept_path();
    ASSERT_TRUE(path.ends_with("/mixed.cu")) << path;
    EXPECT_NE(e.message().find("\nkept: " + path + " (TILEJIT_KEEP_FAILED=1)\n"),
              std::string::npos)
        << e.message();
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), source);
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  }
}

TEST(CudaCompile, ErrorOutsideTheBodyShowsTheGeneratedSource) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  runtime::CompileOptions o;
  o.extra_flags = {"-DArgs=3"};  // breaks the argument struct, not the body
  const std::string msg =
      error_message([&] { compile(mixed_func(), {"n", "m"}, o); }, ErrorKind::kCompileError);
  EXPECT_NE(msg.find("\nsource around line "), std::string::npos) << msg;
  EXPECT_NE(msg.find(" of mixed.cu:\n"), std::string::npos) << msg;
}

TEST(CudaCompile, FlagsReplaceTheDefaultsAndFeedTheKey) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  runtime::Backend& be = cuda_backend();
  const NvrtcApi& api = nvrtc();
  const std::string key = be.toolchain_key({}, Device::cuda(0));
  const std::string version = std::to_string(api.major) + "." + std::to_string(api.minor);
  const std::string arch =
      be.available() ? "" : "; arch sm_90a cubin";  // with a device, its own arch
  EXPECT_EQ(key.rfind("cuda abi 1; nvrtc " + version + arch, 0), 0u) << key;
  EXPECT_NE(key.find("; flags -std=c++17 -default-device -lineinfo"), std::string::npos) << key;

  runtime::CompileOptions replaced;
  replaced.flags = {"-std=c++20"};
  const std::string key2 = be.toolchain_key(replaced, Device::cuda(0));
  EXPECT_NE(key2.find("; flags -std=c++20;"), std::string::npos) << key2;
  runtime::CompileOptions extra;
  extra.extra_flags = {"--use_fast_math"};
  const std::string key3 = be.toolchain_key(extra, Device::cuda(0));
  EXPECT_NE(key3.find("-lineinfo --use_fast_math"), std::string::npos) << key3;
  // The device headers are not in the source, so their hash is in the key.
  const std::string headers =
      "; device headers " + backend::device_files_digest(backend::cuda_device_files());
  EXPECT_EQ(key3.substr(key3.size() - headers.size()), headers) << key3;
  runtime::CompileOptions arch80;
  arch80.extra_flags = {"-arch", "sm_80"};
  EXPECT_NE(be.toolchain_key(arch80, Device::cuda(0)).find("; arch sm_80 cubin"), std::string::npos);

  // Replaced flags still compile: the prelude does not rely on -default-device.
  EXPECT_EQ(compile(mixed_func(), {"n", "m"}, replaced)[0], 'C');
}

// CI has no GPU: every example's CUDA body is still checked by a real
// compile for the H200's architecture.
TEST(CudaCompile, ExampleBodiesCompileForSm90a) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const ir::PrimFunc funcs[] = {
      examples::splitk_matmul(4, examples::kSplitKCudaBody),
      examples::sparse_attention_fwd({}, examples::kSparseAttentionCudaBody),
      examples::flash_decoding({}),
  };
  runtime::CompileOptions o;
  o.extra_flags = {"--gpu-architecture=sm_90a"};  // whatever device this machine has
  for (const ir::PrimFunc& f : funcs) {
    SCOPED_TRACE(f.name);
    const std::string binary = compile(f, symbols_of(f), o);
    EXPECT_EQ(binary[0], 'C');
  }
}

TEST(CudaLoad, RefusesDamagedBinariesBeforeTheDriverSeesThem) {
  runtime::Backend& be = cuda_backend();
  auto load_error = [&](const std::string& bytes) {
    return error_message([&] { be.load(bytes, abi_of(mixed_func(), {"n", "m"}), Device::cuda(0)); },
                         ErrorKind::kRuntimeError);
  };
  const std::string prefix = "cuda backend: cannot load the kernel binary: ";
  EXPECT_EQ(load_error(""), prefix + "the binary is empty");
  EXPECT_EQ(load_error("Xabc"), prefix + "the binary has an unknown tag byte");
  EXPECT_EQ(load_error("Cnot an elf"), prefix + "the cubin is not an ELF file (10 bytes)");
  EXPECT_EQ(load_error("P"), prefix + "the PTX is not text");
  EXPECT_EQ(error_message([&] { be.load("Cnot an elf", runtime::KernelAbi{}, Device::cuda(0)); },
                          ErrorKind::kRuntimeError),
            prefix + "its KernelAbi is not well formed: 0 launches");
  if (nvrtc_or_null() != nullptr) {
    const std::string good = compile(mixed_func(), {"n", "m"});
    EXPECT_EQ(load_error(good.substr(0, good.size() / 2)).rfind(prefix + "the cubin is truncated", 0),
              0u);
  }
}

TEST(CudaStream, CurrentStreamIsPerThreadAndPerDevice) {
  runtime::Backend& be = cuda_backend();
  auto* s1 = reinterpret_cast<void*>(uintptr_t(0x1000));
  auto* s2 = reinterpret_cast<void*>(uintptr_t(0x2000));
  EXPECT_EQ(be.current_stream(Device::cuda(0)), nullptr);
  {
    StreamGuard g0(0, s1);
    StreamGuard g3(3, s2);
    EXPECT_EQ(be.current_stream(Device::cuda(0)), s1);
    EXPECT_EQ(be.current_stream(Device::cuda(3)), s2);
    EXPECT_EQ(current_stream(1), nullptr);
    void* seen = s1;
    std::thread([&] { seen = current_stream(0); }).join();
    EXPECT_EQ(seen, nullptr);
  }
  EXPECT_EQ(current_stream(0), nullptr);
  EXPECT_EQ(current_stream(3), nullptr);
  EXPECT_EQ(error_message([&] { set_current_stream(64, nullptr); }, ErrorKind::kValueError),
            "set_current_stream: device 64 is not in [0, 64)");
  EXPECT_EQ(error_message([&] { current_stream(-1); }, ErrorKind::kValueError),
            "current_stream: device -1 is not in [0, 64)");
}

}  // namespace
}  // namespace tilejit::cuda::testing
