// The tile ops of TileBuilder (tilejit/ir/tile_builder.h): each checks its
// operands at the user's span and records the op in the innermost frame.
#include "ir/tile_builder_state.h"

namespace tilejit::ir {

void TileBuilder::copy(Region src, Region dst, Span span, bool disable_tma) {
  State& s = *state_;
  s.check_in_kernel(span, "T.copy");
  s.check_region(src, span, "T.copy", "source");
  s.check_region(dst, span, "T.copy", "destination");
  s.add(make_stmt<CopyOp>(std::move(src), std::move(dst), std::move(span), disable_tma));
}

void TileBuilder::gemm(Region a, Region b, Region c, bool trans_a, bool trans_b, bool clear_accum,
                       int policy, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "T.gemm");
  s.check_region(a, span, "T.gemm", "operand A");
  s.check_region(b, span, "T.gemm", "operand B");
  s.check_region(c, span, "T.gemm", "accumulator C");
  s.add(make_stmt<GemmOp>(std::move(a), std::move(b), std::move(c), trans_a, trans_b, clear_accum,
                          policy, std::move(span)));
}

void TileBuilder::fill(Region dst, Expr value, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "T.fill");
  s.check_region(dst, span, "T.fill", "destination");
  TILEJIT_CHECK(value.defined(), kValueError) << s.prefix(span, "T.fill")
                                              << "the value is undefined";
  value = cast(dst.buffer.dtype(), value);
  s.add(make_stmt<FillOp>(std::move(dst), std::move(value), std::move(span)));
}

void TileBuilder::reduce(ReduceKind kind, Region src, Region dst, int dim, bool clear, Span span) {
  State& s = *state_;
  const std::string op = std::string("T.reduce_") + reduce_kind_name(kind);
  s.check_in_kernel(span, op);
  s.check_region(src, span, op, "source");
  s.check_region(dst, span, op, "destination");
  s.add(make_stmt<ReduceOp>(kind, std::move(src), std::move(dst), dim, clear, std::move(span)));
}

void TileBuilder::atomic_add(Region dst, Expr value, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "T.atomic_add");
  s.check_region(dst, span, "T.atomic_add", "destination");
  TILEJIT_CHECK(value.defined(), kValueError) << s.prefix(span, "T.atomic_add")
                                              << "the value is undefined";
  value = cast(dst.buffer.dtype(), value);
  s.add(make_stmt<AtomicAddOp>(std::move(dst), Region{}, std::move(value), std::move(span)));
}

void TileBuilder::atomic_add(Region dst, Region src, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "T.atomic_add");
  s.check_region(dst, span, "T.atomic_add", "destination");
  s.check_region(src, span, "T.atomic_add", "source");
  s.add(make_stmt<AtomicAddOp>(std::move(dst), std::move(src), Expr(), std::move(span)));
}

void TileBuilder::print(Expr value, std::string message, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "T.print");
  TILEJIT_CHECK(value.defined(), kValueError) << s.prefix(span, "T.print")
                                              << "the value is undefined";
  s.add(make_stmt<PrintOp>(std::move(value), Region{}, std::move(message), std::move(span)));
}

void TileBuilder::print(Region region, std::string message, Span span) {
  State& s = *state_;
  s.check_in_kernel(span, "T.print");
  s.check_region(region, span, "T.print", "buffer");
  s.add(make_stmt<PrintOp>(Expr(), std::move(region), std::move(message), std::move(span)));
}

}  // namespace tilejit::ir
