// Buffers, regions and loads of the tile IR.
//
// A Buffer is a handle on an immutable BufferNode, identified by its id (two
// buffers may share a name). Tensor parameters are kGlobal buffers with
// `param` >= 0; T.alloc_global buffers are kGlobal with param -1 and an init
// policy; shared, fragment and local buffers are allocated inside a kernel
// (AllocStmt, stmt.h).
//
// Note [Region operands]
// A tile op's operand is a Region, in one of three forms, as the author wrote
// it and kept so until the verifier normalises it:
//  - a whole buffer: `ranges` is empty;
//  - a slice: one Range per dimension, each with a defined extent (an index
//    `A[bz, i:i+n]` gives its dimension extent 1);
//  - a start corner `A[by * bm, k * bk]`: one Range per dimension, each with
//    an UNDEFINED extent, which comes from the other operand of the op.
// verify() (transform/verify.h) resolves every form to full slices.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tilejit/core/data_type.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/layout.h"
#include "tilejit/ir/span.h"
#include "tilejit/ir/workspace_init.h"

namespace tilejit::ir {

enum class Scope : uint8_t { kGlobal, kShared, kFragment, kLocal };
/// "global", "shared", "fragment", "local".
const char* scope_name(Scope scope);

struct BufferNode {
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  Scope scope = Scope::kGlobal;
  /// The signature parameter it is (kGlobal parameters); -1 otherwise.
  int param = -1;
  /// T.alloc_global buffers: how the workspace is prepared before a launch.
  WorkspaceInit init = WorkspaceInit::kEmpty;
  /// Where its elements live, once its target's layout pass chose it (Note
  /// [Layouts]); none before, and for tensors.
  Layout layout;
  Span span;
  uint64_t id = 0;  // unique, > 0
};

class Buffer {
 public:
  Buffer() = default;

  /// A new buffer with a fresh id. Throws ValueError unless `name` is a C
  /// identifier and every dimension is defined.
  static Buffer make(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope,
                     Span span = {}, int param = -1, WorkspaceInit init = WorkspaceInit::kEmpty);

  bool defined() const noexcept { return node_ != nullptr; }
  const BufferNode* get() const noexcept { return node_.get(); }
  const BufferNode* operator->() const noexcept { return node_.get(); }

  const std::string& name() const noexcept { return node_->name; }
  DataType dtype() const noexcept { return node_->dtype; }
  const std::vector<Expr>& shape() const noexcept { return node_->shape; }
  int rank() const noexcept { return int(node_->shape.size()); }
  Scope scope() const noexcept { return node_->scope; }
  int param() const noexcept { return node_->param; }
  uint64_t id() const noexcept { return node_->id; }

  /// The same buffer (same id) with a layout set.
  Buffer with_layout(Layout layout) const;

  /// Identity: same id.
  friend bool operator==(const Buffer& x, const Buffer& y) noexcept {
    return x.node_ == y.node_ || (x.defined() && y.defined() && x.id() == y.id());
  }
  friend bool operator!=(const Buffer& x, const Buffer& y) noexcept { return !(x == y); }

 private:
  explicit Buffer(std::shared_ptr<const BufferNode> node) : node_(std::move(node)) {}
  std::shared_ptr<const BufferNode> node_;
};

/// One dimension of a region: [min, min + extent). An undefined extent marks a
/// start corner (Note [Region operands]).
struct Range {
  Expr min;
  Expr extent;
};

struct Region {
  Buffer buffer;
  std::vector<Range> ranges;  // empty: the whole buffer

  bool is_whole() const noexcept { return ranges.empty(); }
  /// A start corner: ranges given, their extents undefined.
  bool is_corner() const noexcept { return !ranges.empty() && !ranges[0].extent.defined(); }
  /// The extents of a whole buffer or a slice (after normalisation); for a
  /// corner, empty.
  std::vector<Expr> extents() const;
};

/// The whole buffer.
Region whole(const Buffer& buffer);
/// A slice, one (min, extent) per dimension.
Region region(const Buffer& buffer, std::vector<Range> ranges);
/// A start corner: the extents come from the other operand.
Region corner(const Buffer& buffer, std::vector<Expr> indices);

/// buffer[indices], one index per dimension (int dtypes); its dtype is the
/// buffer's.
struct LoadNode : ExprNode {
  Buffer buffer;
  std::vector<Expr> indices;
  LoadNode(Buffer b, std::vector<Expr> idx)
      : ExprNode(ExprKind::kLoad, b.dtype()), buffer(std::move(b)), indices(std::move(idx)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kLoad; }
};

/// A load of one element. Throws ValueError when the number of indices is not
/// the buffer's rank, TypeError for a non-integer index.
Expr load(const Buffer& buffer, std::vector<Expr> indices);

/// "A_s", "A[0:128, k * 64:k * 64 + 64]", "A[by * 128, k * 64]" (a corner).
std::string to_string(const Region& r);
/// "[128, 64]".
std::string shape_string(const std::vector<Expr>& shape);

}  // namespace tilejit::ir
