// core/: Error, DataType, Device, Tensor.
#include <gtest/gtest.h>

#include <ostream>
#include <stdexcept>

#include "tilejit/core/data_type.h"
#include "tilejit/core/device.h"
#include "tilejit/core/error.h"
#include "tilejit/core/tensor.h"

namespace tilejit {
namespace {

TEST(Error, KindAndMessage) {
  try {
    TILEJIT_THROW(kTypeError) << "bad " << 42;
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTypeError);
    EXPECT_EQ(e.message(), "bad 42");
    EXPECT_STREQ(e.what(), "TypeError: bad 42");
  }
  int evaluated = 0;
  auto side_effect = [&] { return ++evaluated; };
  TILEJIT_CHECK(true, kValueError) << side_effect();
  EXPECT_EQ(evaluated, 0);  // the message is built only on failure
  EXPECT_THROW(TILEJIT_CHECK(false, kValueError) << side_effect(), Error);
  EXPECT_EQ(evaluated, 1);
}

// A value whose operator<< throws, as a bad_alloc while the message grows would.
struct ThrowsWhenStreamed {};
std::ostream& operator<<(std::ostream& os, ThrowsWhenStreamed) {
  throw std::runtime_error("operator<< failed");
  return os;
}

TEST(Error, AnExceptionWhileStreamingPropagatesInsteadOfTerminating) {
  // Used to end in std::terminate: the builder threw its Error from its
  // destructor while the streaming exception unwound.
  try {
    TILEJIT_THROW(kValueError) << "before " << ThrowsWhenStreamed{} << " after";
    FAIL() << "TILEJIT_THROW did not throw";
  } catch (const Error& e) {
    FAIL() << "the Error was thrown instead: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "operator<< failed");
  }
  try {
    TILEJIT_CHECK(1 + 1 == 3, kTypeError) << ThrowsWhenStreamed{};
    FAIL() << "TILEJIT_CHECK did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "operator<< failed");
  }
  // Errors still work afterwards.
  try {
    TILEJIT_THROW(kTypeError) << "fine";
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTypeError);
    EXPECT_EQ(e.message(), "fine");
  }
}

TEST(DataType, NamesAndParse) {
  const DataType all[] = {DataType::float64(), DataType::float32(), DataType::float16(),
                          DataType::bfloat16(), DataType::int8(),   DataType::int16(),
                          DataType::int32(),    DataType::int64(),  DataType::uint8(),
                          DataType::uint16(),   DataType::uint32(), DataType::uint64(),
                          DataType::boolean()};
  for (DataType t : all) {
    EXPECT_EQ(DataType::parse(t.name()), t) << t.name();
    EXPECT_TRUE(is_supported(t));
  }
  EXPECT_EQ(DataType::parse("bf16"), DataType::bfloat16());
  EXPECT_EQ(DataType::parse("half"), DataType::float16());
  EXPECT_EQ(DataType::bfloat16().bytes(), 2);
  EXPECT_EQ(DataType::boolean().bytes(), 1);
  EXPECT_EQ(DataType(DataType::kUInt, 32).name(), "uint32");
  EXPECT_EQ(DataType::parse("uint64"), DataType(DataType::kUInt, 64));
  EXPECT_EQ(DataType::uint16().bytes(), 2);
  EXPECT_TRUE(DataType::uint32().is_int() && DataType::uint32().is_uint());
  EXPECT_FALSE(DataType::int32().is_uint());
  EXPECT_FALSE(is_supported(DataType(DataType::kUInt, 4)));
  try {
    DataType::parse("float8");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValueError);
    EXPECT_EQ(e.message(),
              "unknown dtype 'float8'; expected one of float64, float32, float16, bfloat16, "
              "int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool");
  }
}

TEST(Device, Names) {
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_EQ((Device{DeviceType::kCPU, 1}).str(), "cpu:1");  // told apart in messages
  EXPECT_EQ(Device::cuda(1).str(), "cuda:1");
  EXPECT_NE(Device::cuda(0), Device::cuda(1));
}

int deleted = 0;
void count_delete(void* ctx) noexcept { deleted += *static_cast<int*>(ctx); }

TEST(Tensor, RefCountingRunsTheDeleterOnce) {
  deleted = 0;
  int weight = 1;
  float data[6];
  const int64_t shape[] = {2, 3};
  {
    Tensor t = Tensor::from_blob(data, shape, DataType::float32(), Device::cpu(), count_delete, &weight);
    Tensor copy = t;
    Tensor moved = std::move(copy);
    EXPECT_EQ(t.use_count(), 2);
    EXPECT_FALSE(copy.defined());
    copy = moved;
    EXPECT_EQ(t.use_count(), 3);
    EXPECT_EQ(t.numel(), 6);
    EXPECT_EQ(t.nbytes(), 24);
    EXPECT_EQ(t.stride(0), 3);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.shape_str(), "[2, 3]");
  }
  EXPECT_EQ(deleted, 1);
}

TEST(Tensor, StridesAndErrors) {
  float data[6];
  const int64_t shape[] = {2, 3};
  const int64_t transposed[] = {1, 2};
  EXPECT_FALSE(Tensor::from_blob(data, shape, DataType::float32(), Device::cpu(), nullptr, nullptr,
                                 transposed).is_contiguous());
  const int64_t ones[] = {1, 3};
  const int64_t odd[] = {99, 1};  // a size-1 dimension may carry any stride
  EXPECT_TRUE(Tensor::from_blob(data, ones, DataType::float32(), Device::cpu(), nullptr, nullptr, odd)
                  .is_contiguous());
  const int64_t negative[] = {2, -1};
  try {
    Tensor::from_blob(data, negative, DataType::float32(), Device::cpu());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValueError);
    EXPECT_EQ(e.message(), "tensor dimension 1 is negative (-1)");
  }
  const int64_t deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  try {
    Tensor::from_blob(data, deep, DataType::float32(), Device::cpu());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "tensor rank 9 exceeds the maximum of 8");
  }
}

}  // namespace
}  // namespace tilejit
