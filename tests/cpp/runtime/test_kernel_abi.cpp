// KernelAbi (Note [Kernel ABI]): layout, packing, serialisation.
#include "tilejit/runtime/kernel_abi.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/test_util.h"

namespace tilejit::runtime {
namespace {

using tilejit::testing::error_message;

// A pointer, an int32 scalar, a 128-byte struct (a TMA descriptor's size and
// alignment), a symbol; two launches.
KernelAbi sample() {
  KernelAbi abi;
  abi.add(AbiArgKind::kPointer, "A", 0, 8, 8);
  abi.add(AbiArgKind::kScalar, "alpha", 1, 4, 4, DataType::int32());
  abi.add(AbiArgKind::kStruct, "desc", 2, 128, 64);
  abi.add(AbiArgKind::kSymbol, "n", 0, 8, 8);
  abi.launches.push_back(AbiLaunch{"first", {3, 4, 5}, 6, {128, 1, 1}});
  abi.launches.push_back(AbiLaunch{"second", {7, 8, 9}, 10, {32, 4, 1}});
  return abi;
}

TEST(KernelAbi, AddLaysArgumentsOutAtTheirAlignment) {
  const KernelAbi abi = sample();
  ASSERT_EQ(abi.args.size(), 4u);
  EXPECT_EQ(abi.args[0].offset, 0u);
  EXPECT_EQ(abi.args[1].offset, 8u);
  EXPECT_EQ(abi.args[2].offset, 64u);   // after alpha, rounded up to 64
  EXPECT_EQ(abi.args[3].offset, 192u);
  EXPECT_EQ(abi.block_align, 64u);
  EXPECT_EQ(abi.block_bytes, 256u);     // 200 rounded up to the block's alignment
  EXPECT_EQ(abi.num_values(), 3);
  EXPECT_EQ(abi.num_symbols(), 1);
  EXPECT_EQ(abi.problem(), "");
  EXPECT_EQ(abi.str(),
            "block 256 bytes: pointer A @0, scalar alpha int32 @8, struct desc (128 bytes, "
            "align 64) @64, symbol n @192; launch first grid (r3, r4, r5) threads (128, 1, 1) "
            "smem r6; launch second grid (r7, r8, r9) threads (32, 4, 1) smem r10");
}

TEST(KernelAbi, AddRefusesABlockPastTheLimit) {
  KernelAbi abi;
  abi.add(AbiArgKind::kStruct, "big", 0, 4000, 8);
  EXPECT_EQ(error_message([&] { abi.add(AbiArgKind::kStruct, "more", 1, 128, 64); },
                          ErrorKind::kValueError),
            "kernel argument 'more' (128 bytes at offset 4032) does not fit in the 4096-byte "
            "argument block");
}

TEST(KernelAbi, PackCopiesEachArgumentAndZeroesTheRest) {
  const KernelAbi abi = sample();
  float data[4];
  int32_t alpha = -7;
  unsigned char desc[128];
  for (int i = 0; i < 128; ++i) desc[i] = static_cast<unsigned char>(i + 1);
  void* values[] = {data, &alpha, desc};
  const int64_t symbols[] = {123456789012345};
  alignas(64) unsigned char block[256];
  std::memset(block, 0xee, sizeof block);
  abi.pack(values, symbols, block);

  void* a = nullptr;
  std::memcpy(&a, block, 8);
  EXPECT_EQ(a, data);
  int32_t got_alpha = 0;
  std::memcpy(&got_alpha, block + 8, 4);
  EXPECT_EQ(got_alpha, -7);
  for (int i = 12; i < 64; ++i) EXPECT_EQ(block[i], 0) << i;  // padding
  EXPECT_EQ(std::memcmp(block + 64, desc, 128), 0);          // the struct by value
  int64_t n = 0;
  std::memcpy(&n, block + 192, 8);
  EXPECT_EQ(n, 123456789012345);
  for (int i = 200; i < 256; ++i) EXPECT_EQ(block[i], 0) << i;
}

TEST(KernelAbi, DenseMeansPointersThenSymbols) {
  KernelAbi abi;
  abi.add(AbiArgKind::kPointer, "A", 0, 8, 8);
  abi.add(AbiArgKind::kPointer, "B", 1, 8, 8);
  abi.add(AbiArgKind::kSymbol, "n", 0, 8, 8);
  EXPECT_TRUE(abi.is_dense(2, 1));
  EXPECT_FALSE(abi.is_dense(3, 0));
  EXPECT_FALSE(sample().is_dense(3, 1));
  std::swap(abi.args[0].source, abi.args[1].source);  // B's pointer first
  EXPECT_FALSE(abi.is_dense(2, 1));
}

TEST(KernelAbi, SerialisationRoundTrips) {
  const KernelAbi abi = sample();
  const std::string bytes = abi.serialize();
  size_t consumed = 0;
  const std::optional<KernelAbi> back = KernelAbi::deserialize(bytes + "trailing", &consumed);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, abi);
  EXPECT_EQ(consumed, bytes.size());  // self-delimiting: what follows is not read
  EXPECT_EQ(KernelAbi::deserialize(KernelAbi{}.serialize()), std::nullopt);  // no launch
}

TEST(KernelAbi, CorruptOrTruncatedBytesDoNotDeserialise) {
  const std::string bytes = sample().serialize();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x01;
    EXPECT_EQ(KernelAbi::deserialize(bad), std::nullopt) << "byte " << i;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(KernelAbi::deserialize(bytes.substr(0, n)), std::nullopt) << n << " bytes";
  }
  // Another version: byte 8 is the version's low byte.
  std::string other = bytes;
  other[8] = char(KernelAbi::kVersion + 1);
  EXPECT_EQ(KernelAbi::deserialize(other), std::nullopt);
}

TEST(KernelAbi, ProblemNamesWhatIsWrong) {
  KernelAbi abi = sample();
  abi.args[1].offset = 4;  // inside A
  EXPECT_EQ(abi.problem(), "two arguments overlap");
  abi = sample();
  abi.args[2].offset = 72;
  EXPECT_EQ(abi.problem(), "struct 'desc' is at offset 72 with alignment 64");
  abi = sample();
  abi.args[1].size = 8;
  EXPECT_EQ(abi.problem(), "scalar 'alpha' has 8 bytes");
  abi = sample();
  abi.args[3].offset = 256;
  EXPECT_EQ(abi.problem(), "symbol 'n' ends past the block");
  abi = sample();
  abi.launches.clear();
  EXPECT_EQ(abi.problem(), "0 launches");
  abi = sample();
  abi.launches[1].threads[1] = 0;
  EXPECT_EQ(abi.problem(), "launch 'second' has 0 threads");
  abi = sample();
  abi.launches[0].entry.clear();
  EXPECT_EQ(abi.problem(), "a launch without an entry name");
  abi = sample();
  abi.launches[1].smem = -1;
  EXPECT_EQ(abi.problem(), "launch 'second' reads result -1");
  EXPECT_EQ(sample().num_results(), 11);  // "second" reads results 7 to 10
}

// Note [Tensor maps]: a TMA descriptor's argument says what the backend
// encodes at the launch; pack() leaves its bytes zero, the serialisation
// keeps the description, and problem() checks it.
KernelAbi with_tensor_map() {
  KernelAbi abi;
  abi.add(AbiArgKind::kPointer, "A", 0, 8, 8);
  abi.add(AbiArgKind::kSymbol, "n", 0, 8, 8);
  AbiArg& m = abi.add(AbiArgKind::kTensorMap, "A", 0, 128, 64, DataType::float16());
  m.tensor_map.rank = 2;
  m.tensor_map.swizzle = 128;
  m.tensor_map.dims[0] = 4096;
  m.tensor_map.dims[1] = -1;  // symbol slot 0
  m.tensor_map.box[0] = 64;
  m.tensor_map.box[1] = 128;
  abi.launches.push_back(AbiLaunch{"k", {0, 1, 2}, 3, {128, 1, 1}});
  return abi;
}

TEST(KernelAbi, TensorMapsAreDescribedPackedAsZeroAndSerialised) {
  const KernelAbi abi = with_tensor_map();
  EXPECT_EQ(abi.problem(), "");
  EXPECT_EQ(abi.args[2].offset, 64u);
  EXPECT_EQ(abi.block_bytes, 192u);
  EXPECT_FALSE(abi.is_dense(1, 1));
  EXPECT_EQ(abi.str(),
            "block 192 bytes: pointer A @0, symbol n @8, tensor map A (float16, dims [4096 s0], "
            "box [64 128], swizzle 128) @64; launch k grid (r0, r1, r2) threads (128, 1, 1) smem "
            "r3");
  float data[4];
  void* values[] = {data};
  const int64_t symbols[] = {77};
  alignas(64) unsigned char block[192];
  std::memset(block, 0xab, sizeof block);
  abi.pack(values, symbols, block);
  for (int i = 64; i < 192; ++i) EXPECT_EQ(block[i], 0) << "byte " << i;
  const std::optional<KernelAbi> back = KernelAbi::deserialize(abi.serialize());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, abi);
  KernelAbi other = abi;
  other.args[2].tensor_map.box[1] = 64;
  EXPECT_NE(*KernelAbi::deserialize(other.serialize()), abi);
  KernelAbi bad = abi;
  bad.args[2].tensor_map.box[1] = 512;
  EXPECT_EQ(bad.problem(), "tensor map 'A' has a box of 512");
  bad = abi;
  bad.args[2].tensor_map.swizzle = 16;
  EXPECT_EQ(bad.problem(),
            "tensor map 'A' describes a rank-2 tensor of 2-byte elements swizzled in 16-byte rows");
}

}  // namespace
}  // namespace tilejit::runtime
