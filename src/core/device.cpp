#include "tilejit/core/device.h"

namespace tilejit {

std::string device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::kCPU: return "cpu";
    case DeviceType::kCUDA: return "cuda";
    case DeviceType::kCUDAHost: return "cuda_host";
  }
  return "device_type<" + std::to_string(static_cast<int>(type)) + ">";
}

std::string Device::str() const {
  // "cpu" for the one CPU device every tensor from the host has; an explicit
  // other id (DLPack allows it) is spelled out so that messages tell them apart.
  if (type == DeviceType::kCPU) return id == 0 ? "cpu" : "cpu:" + std::to_string(id);
  return device_type_name(type) + ":" + std::to_string(id);
}

}  // namespace tilejit
