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
  if (type == DeviceType::kCPU) return "cpu";
  return device_type_name(type) + ":" + std::to_string(id);
}

}  // namespace tilejit
