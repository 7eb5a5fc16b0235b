#include "tilejit/core/tensor.h"

#include "tilejit/core/error.h"

namespace tilejit {

void Tensor::release() noexcept {
  if (node_->refcount.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (node_->deleter) node_->deleter(node_->context);
    delete node_;
  }
  node_ = nullptr;
}

void contiguous_strides(std::span<const int64_t> shape, int64_t* out) noexcept {
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    out[i] = running;
    running *= shape[i];
  }
}

bool is_contiguous(std::span<const int64_t> shape, std::span<const int64_t> strides) noexcept {
  if (strides.empty()) return true;
  int64_t expected = 1;
  bool row_major = true;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;  // no elements: no stride is ever used
    if (shape[i] != 1 && strides[i] != expected) row_major = false;
    // Wraps only past what from_blob accepts; then the answer is unused.
    expected = int64_t(uint64_t(expected) * uint64_t(shape[i]));
  }
  return row_major;
}

// A view's own strides (out of line: most tensors are made row-major).
[[gnu::noinline]] void Tensor::set_strides(Node* node, std::span<const int64_t> shape,
                                           std::span<const int64_t> strides) noexcept {
  node->contiguous = tilejit::is_contiguous(shape, strides);
  for (size_t i = 0; i < shape.size(); ++i) node->strides[i] = strides[i];
}

Tensor Tensor::from_blob(void* data, std::span<const int64_t> shape, DataType dtype,
                         Device device, Deleter deleter, void* context,
                         std::span<const int64_t> strides) {
  TILEJIT_CHECK(shape.size() <= size_t(kMaxRank), kValueError)
      << "tensor rank " << shape.size() << " exceeds the maximum of " << kMaxRank;
  TILEJIT_CHECK(strides.empty() || strides.size() == shape.size(), kValueError)
      << "tensor has " << shape.size() << " dimensions but " << strides.size() << " strides";
  // The product of the non-zero extents bounds every stride and element
  // count computed below; it must fit even when another extent is zero.
  int64_t span_product = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    TILEJIT_CHECK(shape[i] >= 0, kValueError)
        << "tensor dimension " << i << " is negative (" << shape[i] << ")";
    if (shape[i] != 0 && TILEJIT_UNLIKELY(__builtin_mul_overflow(span_product, shape[i], &span_product))) {
      TILEJIT_THROW(kValueError) << "tensor of shape " << tilejit::shape_str(shape)
                                 << " has more elements than int64 can count";
    }
  }
  auto* node = new Node;
  node->data = data;
  node->dtype = dtype;
  node->device = device;
  node->ndim = int(shape.size());
  node->deleter = deleter;
  node->context = context;
  for (size_t i = 0; i < shape.size(); ++i) {
    node->shape[i] = shape[i];
    node->numel *= shape[i];
  }
  contiguous_strides(shape, node->strides);
  if (!strides.empty()) set_strides(node, shape, strides);
  return Tensor(node);
}

std::string shape_str(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string Tensor::shape_str() const { return tilejit::shape_str(shape()); }

}  // namespace tilejit
