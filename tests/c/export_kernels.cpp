// Exports the split-K GEMMs of examples/tile/tile_kernels.h for the C
// consumer (consumer_splitk.c): splitk_gemm with its Partial workspace
// declared in the signature, and splitk_gemm_counted, whose compiler-made
// Count workspace is zero_once.
//   tilejit_export_kernels <dir> [target]
//       writes <dir>/libsplitk_gemm.so and .h, <dir>/libsplitk_gemm_counted.so
//       and .h, for `target` ("cpu" when not given, or "cuda": the C
//       consumer consumer_cuda_splitk.c runs those).
#include <cstdio>
#include <filesystem>
#include <string>

#include "tile/tile_kernels.h"
#include "tilejit/tilejit.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s <output directory> [cpu|cuda]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::string target = argc == 3 ? argv[2] : "cpu";
  try {
    std::filesystem::create_directories(dir);
    tilejit::JitOptions options;
    options.out_idx = {2};
    options.workspace_idx = {3};
    options.target = target;
    tilejit::export_library(tilejit::jit(examples::tile::splitk_gemm(4), options),
                            dir + "/libsplitk_gemm.so");
    tilejit::JitOptions counted;
    counted.out_idx = {2};
    counted.target = target;
    tilejit::export_library(
        tilejit::jit(examples::tile::splitk_gemm_counted(3), counted),
        dir + "/libsplitk_gemm_counted.so");
  } catch (const tilejit::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
