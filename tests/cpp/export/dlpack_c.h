// The DLPack structs as an exported library's header declares them (the
// public DLPack ABI), for C++ programs that call an exported library through
// dlsym without its generated header: the export tests and
// bench/bench_export_call.cpp.
#pragma once

#include <cstdint>

namespace tilejit::export_testing {

struct DLDev {
  int32_t device_type;
  int32_t device_id;
};
struct DLType {
  uint8_t code, bits;
  uint16_t lanes;
};
struct DLTensorC {
  void* data;
  DLDev device;
  int32_t ndim;
  DLType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};

}  // namespace tilejit::export_testing
