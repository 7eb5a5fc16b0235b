// The target-neutral passes the CPU lowering runs: transform::predicate
// (partial-tile guards on scalar accesses of tensors) and
// transform::select_layouts (every tile buffer laid out; row-major on the
// CPU).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_util.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"
#include "tilejit/transform/predicate.h"

namespace tilejit::ir {
namespace {

using testing::error_message;

// The body of the one kernel, as printed (the lines after "kernel(...)").
std::string body_of(const PrimFunc& f) {
  const std::string text = print(f);
  const size_t at = text.find("):\n");
  return at == std::string::npos ? text : text.substr(at + 3);
}

// C[g] = <value(A, g)> for g = bx * 256 + i over [N] tensors.
template <typename Value>
PrimFunc one_d(const char* name, Value value, bool user_guard = false) {
  TileBuilder b(name);
  const Expr N = symbolic("N");
  const Buffer A = b.tensor_param("A", {N}, DataType::float32());
  const Buffer C = b.tensor_param("C", {N}, DataType::float32());
  const Expr bx = b.begin_kernel({ceildiv(N, 256)}, {128})[0];
  const Expr i = b.begin_for("i", 0, 256, ForKind::kParallel);
  const Expr g = bx * 256 + i;
  if (user_guard) b.begin_if(lt(g, N));
  b.store(C, {g}, value(A, g));
  if (user_guard) b.end_if();
  b.end_for();
  b.end_kernel();
  return b.finish();
}

TEST(Predicate, GuardsStoresAndLoadsPastTheEnd) {
  const PrimFunc f = one_d("copy", [](const Buffer& A, const Expr& g) { return load(A, {g}); });
  // bx, i >= 0 are proven; g < N is not. The load at the store's own index
  // is covered by the store's guard.
  EXPECT_EQ(body_of(transform::predicate(f)),
            "  for i in parallel(0, 256):\n"
            "    if bx * 256 + i < N:\n"
            "      C[bx * 256 + i] = A[bx * 256 + i]\n");
}

// g - 1 may be -1, and g - 1 < N is not the guard's g < N: both are checked
// (the pass matches conditions, it does not derive one from another).
TEST(Predicate, LoadsAtOtherIndicesReadZeroOutside) {
  const PrimFunc f = one_d("shift", [](const Buffer& A, const Expr& g) {
    return load(A, {g + 1}) + load(A, {g - 1});
  });
  EXPECT_EQ(body_of(transform::predicate(f)),
            "  for i in parallel(0, 256):\n"
            "    if bx * 256 + i < N:\n"
            "      C[bx * 256 + i] = select(bx * 256 + i + 1 < N, A[bx * 256 + i + 1], 0.0) + "
            "select(bx * 256 + i - 1 >= 0 && bx * 256 + i - 1 < N, A[bx * 256 + i - 1], 0.0)\n");
}

TEST(Predicate, AnEnclosingGuardIsReused) {
  const PrimFunc f =
      one_d("guarded", [](const Buffer& A, const Expr& g) { return load(A, {g}); }, true);
  EXPECT_EQ(body_of(transform::predicate(f)),
            "  for i in parallel(0, 256):\n"
            "    if bx * 256 + i < N:\n"
            "      C[bx * 256 + i] = A[bx * 256 + i]\n");
}

TEST(Predicate, ConstantBoundsNeedNoGuard) {
  TileBuilder b("static");
  const Buffer A = b.tensor_param("A", {Expr(4), Expr(256)}, DataType::float32());
  const Expr bx = b.begin_kernel({Expr(4)}, {1})[0];
  const Expr i = b.begin_for("i", 0, 256, ForKind::kParallel);
  b.store(A, {bx, i}, load(A, {bx, i}) * 2.0);
  b.end_for();
  b.end_kernel();
  const PrimFunc f = b.finish();
  EXPECT_EQ(body_of(transform::predicate(f)), body_of(f));
}

TEST(Predicate, TileOpsAreLeftToTheLowering) {
  TileBuilder b("tiles");
  const Expr N = symbolic("N");
  const Buffer A = b.tensor_param("A", {N}, DataType::float32());
  const Expr bx = b.begin_kernel({ceildiv(N, 64)}, {1})[0];
  const Buffer s = b.alloc("s", {64}, DataType::float32(), Scope::kShared);
  b.copy(corner(A, {bx * 64}), whole(s));
  b.copy(whole(s), corner(A, {bx * 64}));
  b.end_kernel();
  const PrimFunc f = b.finish();
  EXPECT_EQ(body_of(transform::predicate(f)), body_of(f));
}

// The layouts of every allocation and of every buffer in a tile op's region.
struct Layouts : IRVisitor {
  std::vector<std::string> seen;
  void visit_alloc(const AllocStmt* op, const Stmt&) override {
    seen.push_back(op->buffer.name() + ":" + op->buffer->layout.to_string());
  }
  void visit_region(const Region& r) override {
    seen.push_back(r.buffer.name() + ":" + r.buffer->layout.to_string());
    IRVisitor::visit_region(r);
  }
};

PrimFunc two_tiles() {
  TileBuilder b("two_tiles");
  const Buffer A = b.tensor_param("A", {Expr(64)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {1});
  const Buffer s = b.alloc("s", {64}, DataType::float32(), Scope::kShared);
  const Buffer f = b.alloc("f", {64}, DataType::float32(), Scope::kFragment);
  b.copy(whole(A), whole(s));
  b.copy(whole(s), whole(f));
  b.end_kernel();
  return b.finish();
}

TEST(LayoutSelect, EveryTileBufferIsRowMajorOnTheCpu) {
  const PrimFunc f = transform::select_layouts(two_tiles(), transform::LayoutTarget::kCpu);
  Layouts l;
  l.visit(f.tile()->stmt);
  EXPECT_EQ(l.seen, (std::vector<std::string>{"s:row_major", "f:row_major", "A:", "s:row_major",
                                              "s:row_major", "f:row_major"}));
}

// Sets a layout the CPU does not have on the first allocation.
struct Swizzle : IRMutator {
  Stmt visit_alloc(const AllocStmt* op, const Stmt& s) override {
    if (done) return s;
    done = true;
    return make_stmt<AllocStmt>(op->buffer.with_layout(Layout::shared({64, 1, 128})), s.span());
  }
  bool done = false;
};

TEST(LayoutSelect, ALayoutTheTargetLacksIsAnError) {
  PrimFunc f = two_tiles();
  TileBody body = *f.tile();
  body.stmt = Swizzle().mutate(body.stmt);
  f.body = body;
  EXPECT_EQ(error_message([&] { transform::select_layouts(f, transform::LayoutTarget::kCpu); },
                          ErrorKind::kValueError),
            "two_tiles: layout: buffer s has layout 'shared(pitch 64, rows 1, swizzle 128)', which "
            "the CPU does not take (it lays tiles out row_major first)");
}

}  // namespace
}  // namespace tilejit::ir
