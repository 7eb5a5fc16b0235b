// DataType: an element type, laid out as DLPack's DLDataType so that a
// tensor's dtype crosses the DLPack boundary without translation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tilejit {

struct DataType {
  /// Type codes, equal to DLPack's DLDataTypeCode values.
  enum Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBFloat = 4, kBool = 6 };

  uint8_t code = kFloat;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  constexpr DataType() = default;
  constexpr DataType(Code c, uint8_t b, uint16_t l = 1) : code(c), bits(b), lanes(l) {}

  static constexpr DataType float64() { return {kFloat, 64}; }
  static constexpr DataType float32() { return {kFloat, 32}; }
  static constexpr DataType float16() { return {kFloat, 16}; }
  static constexpr DataType bfloat16() { return {kBFloat, 16}; }
  static constexpr DataType int8() { return {kInt, 8}; }
  static constexpr DataType int16() { return {kInt, 16}; }
  static constexpr DataType int32() { return {kInt, 32}; }
  static constexpr DataType int64() { return {kInt, 64}; }
  static constexpr DataType uint8() { return {kUInt, 8}; }
  static constexpr DataType uint16() { return {kUInt, 16}; }
  static constexpr DataType uint32() { return {kUInt, 32}; }
  static constexpr DataType uint64() { return {kUInt, 64}; }
  static constexpr DataType boolean() { return {kBool, 8}; }

  /// Bytes of one element (bool is one byte, as in DLPack and numpy).
  constexpr int64_t bytes() const { return (int64_t{bits} * lanes + 7) / 8; }
  constexpr bool is_int() const { return code == kInt || code == kUInt; }
  constexpr bool is_uint() const { return code == kUInt; }
  constexpr bool is_float() const { return code == kFloat || code == kBFloat; }

  /// "float32", "bfloat16", "int64", "bool", ...
  std::string name() const;
  /// Parses a name as name() prints it, plus the aliases "float", "double",
  /// "half", "int", "long", "bf16", "fp16", "fp32", "fp64". Throws ValueError
  /// naming the text on anything else.
  static DataType parse(std::string_view text);

  friend constexpr bool operator==(DataType a, DataType b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
  }
  friend constexpr bool operator!=(DataType a, DataType b) { return !(a == b); }
};

/// True for the element types tilejit supports in signatures.
bool is_supported(DataType t);

}  // namespace tilejit
