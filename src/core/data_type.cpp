#include "tilejit/core/data_type.h"

#include <array>
#include <utility>

#include "tilejit/core/error.h"

namespace tilejit {
namespace {

struct NamedType {
  std::string_view name;
  DataType type;
};

constexpr std::array<NamedType, 13> kCanonical = {{
    {"float64", DataType::float64()},
    {"float32", DataType::float32()},
    {"float16", DataType::float16()},
    {"bfloat16", DataType::bfloat16()},
    {"int8", DataType::int8()},
    {"int16", DataType::int16()},
    {"int32", DataType::int32()},
    {"int64", DataType::int64()},
    {"uint8", DataType::uint8()},
    {"uint16", DataType::uint16()},
    {"uint32", DataType::uint32()},
    {"uint64", DataType::uint64()},
    {"bool", DataType::boolean()},
}};

constexpr std::array<NamedType, 9> kAliases = {{
    {"float", DataType::float32()},
    {"double", DataType::float64()},
    {"half", DataType::float16()},
    {"int", DataType::int32()},
    {"long", DataType::int64()},
    {"bf16", DataType::bfloat16()},
    {"fp16", DataType::float16()},
    {"fp32", DataType::float32()},
    {"fp64", DataType::float64()},
}};

}  // namespace

std::string DataType::name() const {
  for (const auto& entry : kCanonical) {
    if (entry.type == *this) return std::string(entry.name);
  }
  std::string base;
  switch (code) {
    case kInt: base = "int"; break;
    case kUInt: base = "uint"; break;
    case kFloat: base = "float"; break;
    case kBFloat: base = "bfloat"; break;
    case kBool: base = "bool"; break;
    default: base = "code" + std::to_string(code) + "_"; break;
  }
  base += std::to_string(bits);
  if (lanes != 1) base += "x" + std::to_string(lanes);
  return base;
}

DataType DataType::parse(std::string_view text) {
  for (const auto& entry : kCanonical) {
    if (entry.name == text) return entry.type;
  }
  for (const auto& entry : kAliases) {
    if (entry.name == text) return entry.type;
  }
  TILEJIT_THROW(kValueError) << "unknown dtype '" << text
                             << "'; expected one of float64, float32, float16, bfloat16, "
                                "int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool";
}

bool is_supported(DataType t) {
  for (const auto& entry : kCanonical) {
    if (entry.type == t) return true;
  }
  return false;
}

}  // namespace tilejit
