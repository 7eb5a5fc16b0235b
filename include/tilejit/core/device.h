// Device: where a tensor lives, with DLPack's device-type numbering.
#pragma once

#include <cstdint>
#include <string>

namespace tilejit {

/// Device types, equal to DLPack's DLDeviceType values.
enum class DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int32_t id = 0;

  static constexpr Device cpu() { return {DeviceType::kCPU, 0}; }
  static constexpr Device cuda(int32_t id = 0) { return {DeviceType::kCUDA, id}; }

  /// "cpu", "cuda:1".
  std::string str() const;

  friend constexpr bool operator==(Device a, Device b) { return a.type == b.type && a.id == b.id; }
  friend constexpr bool operator!=(Device a, Device b) { return !(a == b); }
};

/// "cpu", "cuda", "cuda_host", or "device_type<N>".
std::string device_type_name(DeviceType type);

}  // namespace tilejit
