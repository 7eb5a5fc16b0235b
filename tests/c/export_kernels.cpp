// Exports the split-K GEMMs of examples/tile/tile_kernels.h for the C
// consumer (consumer_splitk.c): splitk_gemm with its Partial workspace
// declared in the signature, and splitk_gemm_counted, whose compiler-made
// Count workspace is zero_once.
//   tilejit_export_kernels <dir>   writes <dir>/libsplitk_gemm.so and .h,
//                                  <dir>/libsplitk_gemm_counted.so and .h
#include <cstdio>
#include <filesystem>
#include <string>

#include "tile/tile_kernels.h"
#include "tilejit/tilejit.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output directory>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  try {
    std::filesystem::create_directories(dir);
    tilejit::JitOptions options;
    options.out_idx = {2};
    options.workspace_idx = {3};
    options.target = "cpu";
    tilejit::export_library(tilejit::jit(examples::tile::splitk_gemm(4), options),
                            dir + "/libsplitk_gemm.so");
    tilejit::JitOptions counted;
    counted.out_idx = {2};
    counted.target = "cpu";
    tilejit::export_library(
        tilejit::jit(examples::tile::splitk_gemm_counted(3), counted),
        dir + "/libsplitk_gemm_counted.so");
  } catch (const tilejit::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
