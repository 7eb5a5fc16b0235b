// Tensor: a reference-counted handle to a strided n-dimensional buffer.
//
// Invariants:
//  - a defined Tensor points to one TensorNode; copies share it and the last
//    reference runs the deleter (if any) with its context, once;
//  - ndim <= kMaxRank; shape and strides are stored inline, so making a
//    Tensor costs one small allocation and views of foreign memory
//    (DLPack, numpy) cost no copy of the data;
//  - strides are in elements, as in DLPack.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "tilejit/core/data_type.h"
#include "tilejit/core/device.h"

namespace tilejit {

inline constexpr int kMaxRank = 8;

class Tensor {
 public:
  /// Frees whatever the tensor was made over; called with the context given
  /// at construction when the last reference goes away.
  using Deleter = void (*)(void* context) noexcept;

  // Copies, moves and destruction are inline: a call makes and drops
  // several handles, most of them empty or moved-from.
  Tensor() noexcept = default;
  Tensor(const Tensor& other) noexcept : node_(other.node_) {
    if (node_) node_->refcount.fetch_add(1, std::memory_order_relaxed);
  }
  Tensor(Tensor&& other) noexcept : node_(other.node_) { other.node_ = nullptr; }
  Tensor& operator=(const Tensor& other) noexcept {
    if (other.node_) other.node_->refcount.fetch_add(1, std::memory_order_relaxed);
    reset();
    node_ = other.node_;
    return *this;
  }
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      reset();
      node_ = other.node_;
      other.node_ = nullptr;
    }
    return *this;
  }
  ~Tensor() { reset(); }

  /// Wraps memory the caller owns. `strides` empty means contiguous
  /// (row-major). `deleter(context)` runs when the last reference goes; pass
  /// nullptr for a view whose memory outlives the tensor. Throws ValueError
  /// for a rank above kMaxRank or a negative dimension.
  static Tensor from_blob(void* data, std::span<const int64_t> shape, DataType dtype,
                          Device device, Deleter deleter = nullptr, void* context = nullptr,
                          std::span<const int64_t> strides = {});

  bool defined() const noexcept { return node_ != nullptr; }
  void* data() const noexcept { return node_->data; }
  template <typename T>
  T* data_as() const noexcept { return static_cast<T*>(node_->data); }
  DataType dtype() const noexcept { return node_->dtype; }
  Device device() const noexcept { return node_->device; }
  int ndim() const noexcept { return node_->ndim; }
  int64_t shape(int dim) const noexcept { return node_->shape[dim]; }
  std::span<const int64_t> shape() const noexcept { return {node_->shape, size_t(node_->ndim)}; }
  int64_t stride(int dim) const noexcept { return node_->strides[dim]; }
  std::span<const int64_t> strides() const noexcept {
    return {node_->strides, size_t(node_->ndim)};
  }
  int64_t numel() const noexcept { return node_->numel; }
  int64_t nbytes() const noexcept { return node_->numel * node_->dtype.bytes(); }
  /// Row-major contiguous; dimensions of extent 1 may carry any stride.
  bool is_contiguous() const noexcept { return node_->contiguous; }
  /// "[2, 3, 4]".
  std::string shape_str() const;
  int use_count() const noexcept { return node_ ? node_->refcount.load() : 0; }

 private:
  struct Node {
    std::atomic<int> refcount{1};
    void* data = nullptr;
    DataType dtype;
    Device device;
    int ndim = 0;
    bool contiguous = true;
    int64_t numel = 1;
    int64_t shape[kMaxRank] = {};
    int64_t strides[kMaxRank] = {};
    Deleter deleter = nullptr;
    void* context = nullptr;
  };
  explicit Tensor(Node* node) noexcept : node_(node) {}
  /// Drops this handle's reference; the last one runs the deleter.
  void reset() noexcept {
    if (node_ != nullptr) release();
  }
  void release() noexcept;  // node_ != nullptr
  static void set_strides(Node* node, std::span<const int64_t> shape,
                          std::span<const int64_t> strides) noexcept;

  Node* node_ = nullptr;
};

/// "[2, 3, 4]".
std::string shape_str(std::span<const int64_t> shape);

/// Row-major strides of `shape`, in elements, written to `out`.
void contiguous_strides(std::span<const int64_t> shape, int64_t* out) noexcept;
/// The contiguity rule of Tensor::is_contiguous(): row-major, except that a
/// dimension of extent 1 may carry any stride, and a tensor without elements
/// is contiguous whatever its strides. Empty `strides` mean row-major.
bool is_contiguous(std::span<const int64_t> shape, std::span<const int64_t> strides) noexcept;

}  // namespace tilejit
