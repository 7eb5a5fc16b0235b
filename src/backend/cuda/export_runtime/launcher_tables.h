// A stand-in for what cuda_export.cpp writes before launcher.cpp
// (launcher_source()): the includes, and the tables of one kernel's
// launches with its cubin and PTX (here empty: the launcher then reports
// that nothing loads). launcher.cpp includes it so that it compiles on its
// own (ctest export.runtime.cuda_launcher); no generated unit holds it. When
// the generator writes a new table, it belongs here too.
//
// The launcher reads kKernelName, kNumLaunches, kEntries, kThreads, kCubin,
// kCubinSize, kCubinArch, kPtx and kPtxArch.
#pragma once

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace {

const char* const kKernelName = "splitk_gemm";
constexpr int kNumLaunches = 1;
const char* const kEntries[] = {"tilejit_kernel", nullptr};
const unsigned kThreads[][3] = {{128u, 1u, 1u}, {0u, 0u, 0u}};
const char* const kCubinArch = "sm_90a";
const char* const kPtxArch = "compute_90";
constexpr size_t kCubinSize = 0;
alignas(256) const unsigned char kCubin[] = { 0};
alignas(256) const unsigned char kPtx[] = { 0};

}  // namespace
