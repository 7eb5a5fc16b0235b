// Tile ops as calls of a target's tile library (tile_codegen.h): the CPU's
// (device/cpu/tilejit/cpu/) and, for the operands it keeps in memory, the
// CUDA's (device/cuda/tilejit/cuda/), which have the same functions: the
// CUDA ones are run by every thread of the block together. Regions are
// normalised by transform::verify: one (min, extent) per dimension.
//
// Note [Tile op shapes]
// A copy, fill or atomic add walks the region's non-unit dimensions (its
// "iteration shape", the same on both sides of a copy once unit dimensions
// are dropped, as TileLang matches A[bx, 0:n] with a 1-D tile). The last two
// become the library's ROWS x COLS rectangle when the column dimension is
// each operand's contiguous last dimension; dimensions before them become
// loops. A rectangle of a tensor carries bounds (copy.h: elements outside
// are not read, read as 0, or not written); the unit dimensions and loop
// indices outside the tensor make it empty. Any other shape (a column of a
// matrix, say) is copied element by element with the same bounds, which is
// slower but has the same meaning. gemm takes each operand's last two
// dimensions (the leading ones of extent 1: a stage of a multi-buffered
// tile), reduce a 1-D or 2-D source.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/common/tile_codegen.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/buffer.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::backend {
namespace {

using ir::Expr;

// One side of a tile op, as the generated code reaches it.
struct Side {
  const BufferAccess* access = nullptr;
  std::vector<std::string> mins;     // C++ of each dimension's start
  std::vector<int64_t> extents;      // each dimension's extent (constant)
  std::vector<std::string> strides;  // C++ of each dimension's stride (elements)
  std::vector<int> iter_dims;        // the non-unit dimensions, in order
  const char* type = nullptr;        // storage type
};

std::string str(int64_t v) { return std::to_string(v); }

Side make_side(TileCodegen& cg, const ir::Region& r, const ir::Span& span, const std::string& op,
               const char* role) {
  Side s;
  s.access = &cg.access(r.buffer, span, op.c_str());
  s.type = cg.storage_type(r.buffer.dtype(), span, op);
  const int rank = r.buffer.rank();
  TILEJIT_ICHECK(int(r.ranges.size()) == rank)
      << cg.func().name << ": " << op << ": region of " << r.buffer.name() << " not normalised";
  for (int d = 0; d < rank; ++d) {
    const ir::Range& range = r.ranges[size_t(d)];
    if (!range.extent.is_const()) {
      cg.fail(ErrorKind::kValueError, span, op,
              std::string(role) + " " + ir::to_string(r) +
                  " has a dynamic extent; the " + cg.display() + " backend needs constant tile extents");
    }
    s.mins.push_back(range.min.is_const() ? std::to_string(range.min.int_value())
                                          : "int64_t(" + cg.expr(range.min) + ")");
    s.extents.push_back(range.extent.int_value());
    if (range.extent.int_value() != 1) s.iter_dims.push_back(d);
  }
  // Row-major strides.
  s.strides.assign(size_t(rank), "1");
  std::string acc;
  for (int d = rank - 1; d >= 0; --d) {
    s.strides[size_t(d)] = acc.empty() ? "1" : acc;
    const std::string& dim = s.access->shape[size_t(d)];
    acc = acc.empty() ? dim : "(" + acc + " * " + dim + ")";
  }
  return s;
}

bool is_last_dim(const Side& s, int d) { return d == int(s.extents.size()) - 1; }

// C++ of the offset of the element at `pos` (one C++ index per dimension).
std::string offset_of(const Side& s, const std::vector<std::string>& pos) {
  std::string out;
  for (size_t d = 0; d < pos.size(); ++d) {
    if (pos[d] == "0") continue;
    const std::string term = s.strides[d] == "1" ? pos[d] : pos[d] + " * " + s.strides[d];
    out = out.empty() ? term : out + " + " + term;
  }
  return out.empty() ? "0" : out;
}

// C++ of "every index of `pos` in `dims` lies inside the tensor" ("" when
// the side is a tile, or nothing to check).
std::string inside(const Side& s, const std::vector<std::string>& pos, const std::vector<int>& dims) {
  if (!s.access->global) return "";
  std::string out;
  for (int d : dims) {
    const std::string c = "(" + pos[size_t(d)] + " >= 0 && " + pos[size_t(d)] + " < " +
                          s.access->shape[size_t(d)] + ")";
    out = out.empty() ? c : out + " && " + c;
  }
  return out;
}

// Loops over the leading iteration dimensions of a copy / fill / atomic add.
// Returns the loop variables (C++), one per leading dimension.
std::vector<std::string> open_loops(TileCodegen& cg, const std::vector<int64_t>& extents,
                                    size_t count) {
  std::vector<std::string> vars;
  for (size_t k = 0; k < count; ++k) {
    const std::string v = cg.fresh("tilejit_i");
    cg.line("for (int64_t " + v + " = 0; " + v + " < " + str(extents[k]) + "; ++" + v + ") {");
    cg.indent();
    vars.push_back(v);
  }
  return vars;
}

void close_loops(TileCodegen& cg, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    cg.dedent();
    cg.line("}");
  }
}

// One loop over all of `extents` whose iterations the block's threads share
// (a target whose tile library runs on every thread of a block); returns the
// index of each dimension, as open_loops. Closed by close_loops(cg, 1).
std::vector<std::string> open_split_loops(TileCodegen& cg, const std::vector<int64_t>& extents) {
  int64_t total = 1;
  for (int64_t e : extents) total *= e;
  const std::string f = cg.fresh("tilejit_f");
  cg.line("for (int64_t " + f + " = " + cg.thread_index() + "; " + f + " < " + str(total) +
          "; " + f + " += " + cg.thread_count() + ") {");
  cg.indent();
  std::vector<std::string> vars;
  int64_t inner = total;
  for (int64_t e : extents) {
    inner /= e;
    const std::string v = cg.fresh("tilejit_i");
    std::string value = inner == 1 ? f : f + " / " + str(inner);
    if (!vars.empty()) value = "(" + value + ") % " + str(e);
    cg.line("const int64_t " + v + " = " + value + ";");
    vars.push_back(v);
  }
  return vars;
}

// The position of every dimension of `s` for iteration indices `it` (C++,
// one per iteration dimension): min + index on iteration dimensions, min on
// unit ones.
std::vector<std::string> position(const Side& s, const std::vector<std::string>& it) {
  std::vector<std::string> pos = s.mins;
  for (size_t k = 0; k < it.size() && k < s.iter_dims.size(); ++k) {
    const size_t d = size_t(s.iter_dims[k]);
    if (it[k] != "0") pos[d] = "(" + s.mins[d] + " + " + it[k] + ")";
  }
  return pos;
}

// A pointer to the element at `pos`.
std::string pointer_at(const Side& s, const std::vector<std::string>& pos) {
  const std::string off = offset_of(s, pos);
  return off == "0" ? s.access->data : "(" + s.access->data + " + " + off + ")";
}

// The element reference at `pos`.
std::string element(const Side& s, const std::vector<std::string>& pos) {
  if (s.access->global) {
    std::string out = s.access->name + "(";
    for (size_t d = 0; d < pos.size(); ++d) out += (d ? ", " : "") + pos[d];
    return out + ")";
  }
  return s.access->data + "[" + offset_of(s, pos) + "]";
}

// The Rect (copy.h) of `s` at leading iteration indices `lead`, over its
// last one or two iteration dimensions (rows, cols).
std::string rect(const TileCodegen& cg, const Side& s, const std::vector<std::string>& lead,
                 bool constant, bool column = false) {
  const size_t q = s.iter_dims.size();
  std::vector<std::string> it = lead;
  while (it.size() < q) it.push_back("0");
  const std::vector<std::string> pos = position(s, it);
  // `column`: the one iteration dimension is the Rect's rows (a strided vector).
  const int col = column ? -1 : q >= 1 ? s.iter_dims[q - 1] : -1;
  const int row = column ? s.iter_dims[0] : q >= 2 ? s.iter_dims[q - 2] : -1;
  const std::string type = cg.lib() + "::Rect<" + (constant ? "const " : "") + s.type + ">";
  const std::string origin = offset_of(s, pos);
  const std::string stride = row >= 0 ? s.strides[size_t(row)] : "0";
  std::string bounds;
  if (!s.access->global) {
    bounds = "0, " + str(row >= 0 ? s.extents[size_t(row)] : 1) + ", 0, " +
             str(col >= 0 ? s.extents[size_t(col)] : 1);
  } else {
    const std::string r_lo = row >= 0 ? "-" + pos[size_t(row)] : "0";
    const std::string r_hi =
        row >= 0 ? s.access->shape[size_t(row)] + " - " + pos[size_t(row)] : "1";
    const std::string c_lo = col >= 0 ? "-" + pos[size_t(col)] : "0";
    const std::string c_hi =
        col >= 0 ? s.access->shape[size_t(col)] + " - " + pos[size_t(col)] : "1";
    bounds = r_lo + ", " + r_hi + ", " + c_lo + ", " + c_hi;
  }
  std::string out = type + "{" + s.access->data + ", " + origin + ", " + stride + ", " + bounds + "}";
  if (s.access->global) {
    // Every other dimension (unit or a loop's) must lie inside the tensor.
    std::vector<int> fixed;
    for (int d = 0; d < int(s.extents.size()); ++d) {
      if (d != row && d != col) fixed.push_back(d);
    }
    const std::string cond = inside(s, pos, fixed);
    if (!cond.empty()) out = "(" + cond + " ? " + out + " : " + cg.lib() + "::empty_rect(" + out + "))";
  }
  return out;
}

// The rectangle path applies: the column dimension is contiguous on each side.
bool rect_path(const std::vector<const Side*>& sides) {
  for (const Side* s : sides) {
    if (!s->iter_dims.empty() && !is_last_dim(*s, s->iter_dims.back())) return false;
  }
  return true;
}

std::vector<int64_t> iteration_shape(const Side& s) {
  std::vector<int64_t> shape;
  for (int d : s.iter_dims) shape.push_back(s.extents[size_t(d)]);
  return shape;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// ROWS, COLS of the rectangle over the last two iteration dimensions.
std::pair<int64_t, int64_t> rows_cols(const std::vector<int64_t>& shape) {
  const size_t q = shape.size();
  return {q >= 2 ? shape[q - 2] : 1, q >= 1 ? shape[q - 1] : 1};
}

// Element by element over the whole iteration shape: `body(dst_pos, src_pos)`
// writes the statement for one element; the bounds of global sides guard it.
template <typename Body>
void elementwise(TileCodegen& cg, const std::vector<int64_t>& shape, const Side& dst,
                 const Side* src, Body body) {
  const bool split = cg.thread_index() != nullptr;
  const std::vector<std::string> it =
      split ? open_split_loops(cg, shape) : open_loops(cg, shape, shape.size());
  const std::vector<std::string> dpos = position(dst, it);
  std::vector<int> all_dst(dst.extents.size());
  for (size_t d = 0; d < all_dst.size(); ++d) all_dst[d] = int(d);
  const std::string guard = inside(dst, dpos, all_dst);
  if (!guard.empty()) {
    cg.line("if (" + guard + ") {");
    cg.indent();
  }
  std::string src_ok;
  std::vector<std::string> spos;
  if (src != nullptr) {
    spos = position(*src, it);
    std::vector<int> all_src(src->extents.size());
    for (size_t d = 0; d < all_src.size(); ++d) all_src[d] = int(d);
    src_ok = inside(*src, spos, all_src);
  }
  body(dpos, spos, src_ok);
  if (!guard.empty()) {
    cg.dedent();
    cg.line("}");
  }
  close_loops(cg, split ? 1 : shape.size());
}

}  // namespace

std::string copy_side_rect(TileCodegen& cg, const ir::CopyOp& op, bool source, bool* column) {
  const std::string name = "T.copy";
  const auto [src_r, dst_r] = resolve_pair(cg, op.src, op.dst, op.span, name);
  const Side side = make_side(cg, source ? src_r : dst_r, op.span, name,
                              source ? "source" : "destination");
  const bool strided = column != nullptr && side.iter_dims.size() == 1 && !rect_path({&side});
  if (column != nullptr) *column = strided;
  TILEJIT_ICHECK(strided || (rect_path({&side}) && side.iter_dims.size() <= 2))
      << cg.func().name << ": T.copy: " << ir::to_string(source ? op.src : op.dst)
      << " is not a rectangle";
  return rect(cg, side, {}, source, strided);
}

void lower_copy(TileCodegen& cg, const ir::CopyOp& op) {
  const std::string name = "T.copy";
  const auto [src_r, dst_r] = resolve_pair(cg, op.src, op.dst, op.span, name);
  const Side src = make_side(cg, src_r, op.span, name, "source");
  const Side dst = make_side(cg, dst_r, op.span, name, "destination");
  const std::vector<int64_t> shape = iteration_shape(dst);
  if (shape != iteration_shape(src)) {
    cg.fail(ErrorKind::kValueError, op.span, name,
            "source " + ir::to_string(op.src) + " and destination " + ir::to_string(op.dst) +
                " differ in shape (" + shape_str(iteration_shape(src)) + " vs " +
                shape_str(shape) + ")");
  }
  cg.line("// T.copy(" + ir::to_string(op.src) + ", " + ir::to_string(op.dst) + ")");
  cg.line("{");
  cg.indent();
  if (rect_path({&src, &dst})) {
    const size_t lead = shape.size() > 2 ? shape.size() - 2 : 0;
    const std::vector<std::string> it = open_loops(cg, shape, lead);
    const auto [rows, cols] = rows_cols(shape);
    cg.line(cg.lib() + "::copy<" + str(rows) + ", " + str(cols) + cg.copy_template_tail(op) + ">(" +
            rect(cg, dst, it, false) + ", " + rect(cg, src, it, true) + cg.group_args() + ");");
    close_loops(cg, lead);
  } else {
    elementwise(cg, shape, dst, &src,
                [&](const std::vector<std::string>& dpos, const std::vector<std::string>& spos,
                    const std::string& src_ok) {
                  std::string value = cg.lib() + "::convert<" + std::string(dst.type) + ">(" +
                                      element(src, spos) + ")";
                  if (!src_ok.empty()) {
                    value = "(" + src_ok + " ? " + value + " : " + cg.lib() + "::convert<" +
                            std::string(dst.type) + ">(0.f))";
                  }
                  cg.line(element(dst, dpos) + " = " + value + ";");
                });
  }
  cg.dedent();
  cg.line("}");
}

void lower_fill(TileCodegen& cg, const ir::FillOp& op) {
  const std::string name = "T.fill";
  const std::vector<Expr> one(op.dst.ranges.size(), Expr(1));
  const Side dst = make_side(cg, resolve(cg, op.dst, &one, op.span, name), op.span, name,
                             "destination");
  const std::vector<int64_t> shape = iteration_shape(dst);
  const std::string value = cg.expr(op.value);
  cg.line("// T.fill(" + ir::to_string(op.dst) + ", " + ir::to_string(op.value) + ")");
  cg.line("{");
  cg.indent();
  if (rect_path({&dst})) {
    const size_t lead = shape.size() > 2 ? shape.size() - 2 : 0;
    const std::vector<std::string> it = open_loops(cg, shape, lead);
    const auto [rows, cols] = rows_cols(shape);
    cg.line(cg.lib() + "::fill<" + str(rows) + ", " + str(cols) + cg.group_template_tail() + ">(" +
            rect(cg, dst, it, false) + ", " + value + cg.group_args() + ");");
    close_loops(cg, lead);
  } else {
    elementwise(cg, shape, dst, nullptr,
                [&](const std::vector<std::string>& dpos, const std::vector<std::string>&,
                    const std::string&) {
                  cg.line(element(dst, dpos) + " = " + cg.lib() + "::convert<" +
                          std::string(dst.type) + ">(" + value + ");");
                });
  }
  cg.dedent();
  cg.line("}");
}

void lower_atomic_add(TileCodegen& cg, const ir::AtomicAddOp& op) {
  const std::string name = "T.atomic_add";
  ir::Region dst_r, src_r;
  if (op.src.buffer.defined()) {
    std::tie(dst_r, src_r) = resolve_pair(cg, op.dst, op.src, op.span, name);
  } else {
    const std::vector<Expr> one(op.dst.ranges.size(), Expr(1));
    dst_r = resolve(cg, op.dst, &one, op.span, name);
  }
  const Side dst = make_side(cg, dst_r, op.span, name, "destination");
  const std::vector<int64_t> shape = iteration_shape(dst);
  cg.line("// T.atomic_add(" + ir::to_string(op.dst) + ", " +
          (op.src.buffer.defined() ? ir::to_string(op.src) : ir::to_string(op.value)) + ")");
  cg.line("{");
  cg.indent();
  if (!op.src.buffer.defined()) {
    const std::string value = cg.expr(op.value);
    elementwise(cg, shape, dst, nullptr,
                [&](const std::vector<std::string>& dpos, const std::vector<std::string>&,
                    const std::string&) {
                  cg.line(cg.lib() + "::atomic_add(&" + element(dst, dpos) + ", " + value + ");");
                });
  } else {
    const Side src = make_side(cg, src_r, op.span, name, "source");
    if (shape != iteration_shape(src)) {
      cg.fail(ErrorKind::kValueError, op.span, name,
              "source " + ir::to_string(op.src) + " and destination " + ir::to_string(op.dst) +
                  " differ in shape (" + shape_str(iteration_shape(src)) + " vs " +
                  shape_str(shape) + ")");
    }
    // An element outside the source tensor adds nothing.
    elementwise(cg, shape, dst, &src,
                [&](const std::vector<std::string>& dpos, const std::vector<std::string>& spos,
                    const std::string& src_ok) {
                  const std::string add =
                      cg.lib() + "::atomic_add(&" + element(dst, dpos) + ", " + element(src, spos) + ");";
                  cg.line(src_ok.empty() ? add : "if (" + src_ok + ") " + add);
                });
  }
  cg.dedent();
  cg.line("}");
}

namespace {

// A gemm or reduce operand: a tile whose last two dimensions are the matrix
// (Note [Tile op shapes]); rows = 1 for a 1-D operand when allowed.
struct Matrix {
  std::string ptr;  // C++ pointer to element (0, 0)
  int64_t rows = 1, cols = 1, ld = 1;
};

Matrix matrix(TileCodegen& cg, const ir::Region& region, const ir::Span& span,
              const std::string& op, const char* role, bool allow_1d) {
  const ir::Region r = resolve(cg, region, nullptr, span, op);
  const Side s = make_side(cg, r, span, op, role);
  const std::string what = std::string(role) + " " + ir::to_string(region);
  if (s.access->global) {
    cg.fail(ErrorKind::kValueError, span, op,
            what + " is a global tensor; the operands are shared, fragment or local buffers "
                   "(T.copy it into one first)");
  }
  const int rank = int(s.extents.size());
  if (rank < (allow_1d ? 1 : 2)) {
    cg.fail(ErrorKind::kValueError, span, op, what + " is not a 2-D tile");
  }
  for (int d = 0; d + 2 < rank; ++d) {
    if (s.extents[size_t(d)] != 1) {
      cg.fail(ErrorKind::kValueError, span, op,
              what + " spans more than its last two dimensions");
    }
  }
  Matrix m;
  m.ptr = pointer_at(s, s.mins);
  m.cols = s.extents[size_t(rank - 1)];
  if (rank >= 2) {
    m.rows = s.extents[size_t(rank - 2)];
    m.ld = s.access->static_shape[size_t(rank - 1)];
  } else {
    m.ld = m.cols;
  }
  return m;
}

}  // namespace

void lower_gemm(TileCodegen& cg, const ir::GemmOp& op) {
  const std::string name = "T.gemm";
  const Matrix a = matrix(cg, op.a, op.span, name, "A", false);
  const Matrix b = matrix(cg, op.b, op.span, name, "B", false);
  const Matrix c = matrix(cg, op.c, op.span, name, "C", false);
  const int64_t m = op.trans_a ? a.cols : a.rows, k = op.trans_a ? a.rows : a.cols;
  const int64_t kb = op.trans_b ? b.cols : b.rows, n = op.trans_b ? b.rows : b.cols;
  if (k != kb || c.rows != m || c.cols != n) {
    cg.fail(ErrorKind::kValueError, op.span, name,
            "A " + ir::to_string(op.a) + ", B " + ir::to_string(op.b) + " and C " +
                ir::to_string(op.c) + " do not multiply (M, N, K = " + str(m) + ", " + str(n) +
                ", " + str(k) + " from A; B gives K = " + str(kb) + ", C is " + str(c.rows) +
                " x " + str(c.cols) + ")");
  }
  // A float C accumulates any operands in floating point; an integer C
  // takes integer operands, exactly (TileLang's int8 x int8 -> int32).
  const DataType ct = op.c.buffer.dtype();
  const bool int_operands = op.a.buffer.dtype().is_int() && op.b.buffer.dtype().is_int();
  if (!ct.is_float() && !(ct.is_int() && int_operands)) {
    cg.fail(ErrorKind::kTypeError, op.span, name,
            "C " + ir::to_string(op.c) + " has dtype " + ct.name() + " and A, B are " +
                op.a.buffer.dtype().name() + ", " + op.b.buffer.dtype().name() + "; the " +
                cg.display() + " gemm accumulates in floating point, or in an integer C from "
                "integer A and B");
  }
  cg.line("// T.gemm(" + ir::to_string(op.a) + ", " + ir::to_string(op.b) + ", " +
          ir::to_string(op.c) + ")");
  cg.line(cg.lib() + "::gemm<" + str(m) + ", " + str(n) + ", " + str(k) + ", " +
          (op.trans_a ? "true" : "false") + ", " + (op.trans_b ? "true" : "false") + ", " +
          str(a.ld) + ", " + str(b.ld) + ", " + str(c.ld) + cg.gemm_template_tail() + ">(" + a.ptr +
          ", " + b.ptr + ", " + c.ptr + ", " + (op.clear_accum ? "true" : "false") +
          cg.group_args() + ");");
}

// Note [N-D reductions]
// The tile library reduces a ROWS x COLS matrix with a leading dimension
// along its rows (dim 1: ROWS results) or its columns (dim 0: COLS results),
// the results consecutive in the destination. A source region of any rank
// is such matrices in a loop: its last dimension is the matrix's columns;
// the rows are the reduced dimension when that is not the last, else the
// dimension before the last; every other dimension of extent above 1 is a
// loop around the call, whose index places both source and destination
// (the source's dimensions but the reduced one are the destination's, in
// order, unit dimensions aside). The loops are uniform, so on CUDA each
// call is the block's (or its thread range's) as a single one would be.
void lower_reduce(TileCodegen& cg, const ir::ReduceOp& op) {
  const std::string name = std::string("T.reduce_") + ir::reduce_kind_name(op.reduce_kind);
  const ir::Region src_region = resolve(cg, op.src, nullptr, op.span, name);
  const Side src = make_side(cg, src_region, op.span, name, "source");
  if (src.access->global) {
    cg.fail(ErrorKind::kValueError, op.span, name,
            "source " + ir::to_string(op.src) + " is a global tensor; the operands are shared, "
            "fragment or local buffers (T.copy it into one first)");
  }
  const Side dst = make_side(cg, resolve(cg, op.dst, nullptr, op.span, name), op.span, name,
                             "destination");
  const int rank = int(src.extents.size());
  const int dim = op.dim;
  if (dim < 0 || dim >= rank) {
    cg.fail(ErrorKind::kValueError, op.span, name,
            "dim " + str(dim) + " of the " + str(rank) + "-D source " + ir::to_string(op.src));
  }
  const int col_dim = rank - 1;
  const int row_dim = dim == col_dim ? rank - 2 : dim;  // -1: a 1-D source is one row
  const int lib_dim = dim == col_dim ? 1 : 0;
  const int64_t rows = row_dim >= 0 ? src.extents[size_t(row_dim)] : 1;
  const int64_t cols = src.extents[size_t(col_dim)];
  int64_t ld = 1;  // the row stride, in the tile's (padded) static shape
  for (int d = row_dim + 1; d < rank; ++d) ld *= src.access->static_shape[size_t(d)];
  if (row_dim < 0) ld = cols;
  // The destination dimension of each source dimension but `dim` (-1: a
  // unit dimension, which has none).
  std::vector<int> to_dst(size_t(rank), -1);
  {
    size_t next = 0;
    for (int d = 0; d < rank; ++d) {
      if (d == dim || src.extents[size_t(d)] == 1) continue;
      if (next < dst.iter_dims.size()) to_dst[size_t(d)] = dst.iter_dims[next];
      ++next;
    }
  }
  const int out_dim = lib_dim == 1 ? row_dim : col_dim;
  const int64_t count = lib_dim == 1 ? rows : cols;
  const int out_dst = out_dim >= 0 ? to_dst[size_t(out_dim)] : -1;
  const bool contiguous = count == 1 || (out_dst >= 0 && dst.strides[size_t(out_dst)] == "1");
  if (dst.access->global || !contiguous) {
    cg.fail(ErrorKind::kValueError, op.span, name,
            "destination " + ir::to_string(op.dst) + " does not hold the results of each row (" +
                str(count) + " of them) as consecutive elements of a tile (the source " +
                ir::to_string(op.src) + " reduced over dim " + str(op.dim) + ")");
  }
  static const char* const kKinds[] = {"kSum", "kMax", "kMin", "kAbsSum", "kAbsMax"};
  cg.line("// " + name + "(" + ir::to_string(op.src) + ", " + ir::to_string(op.dst) + ", dim=" +
          str(op.dim) + ", clear=" + (op.clear ? "True" : "False") + ")");
  // The loops over the other dimensions (Note [N-D reductions]).
  std::vector<std::string> src_pos = src.mins, dst_pos = dst.mins;
  size_t loops = 0;
  for (int d = 0; d < rank; ++d) {
    if (d == row_dim || d == col_dim || src.extents[size_t(d)] == 1) continue;
    const std::string v = cg.fresh("tilejit_r");
    cg.line("for (int64_t " + v + " = 0; " + v + " < " + str(src.extents[size_t(d)]) + "; ++" +
            v + ") {");
    cg.indent();
    ++loops;
    auto at = [&](const std::string& min) { return min == "0" ? v : "(" + min + " + " + v + ")"; };
    src_pos[size_t(d)] = at(src.mins[size_t(d)]);
    const int j = to_dst[size_t(d)];
    if (j >= 0) dst_pos[size_t(j)] = at(dst.mins[size_t(j)]);
  }
  cg.line(std::string(cg.lib() + "::reduce<" + cg.lib() + "::ReduceKind::") +
          kKinds[int(op.reduce_kind)] + ", " + str(rows) + ", " + str(cols) + ", " +
          str(lib_dim) + ", " + str(ld) + cg.group_template_tail() + ">(" +
          pointer_at(src, src_pos) + ", " + pointer_at(dst, dst_pos) + ", " +
          (op.clear ? "true" : "false") + cg.group_args() + ");");
  close_loops(cg, loops);
}

void lower_print(TileCodegen& cg, const ir::PrintOp& op) {
  std::string block_args = "{";
  for (size_t d = 0; d < 3; ++d) {
    block_args += (d ? ", " : "") + (d < cg.block_names.size() ? cg.block_names[d] : std::string("0"));
  }
  block_args += "}";
  std::string msg;
  for (char ch : op.message) {
    if (ch == '"' || ch == '\\') msg += '\\';
    if (ch == '\n') {
      msg += "\\n";
      continue;
    }
    msg += ch;
  }
  if (!op.region.buffer.defined()) {
    cg.line(cg.lib() + "::print_value(\"" + msg + "\", " + block_args + ", " + cg.expr(op.value) +
            ");");
    return;
  }
  const std::vector<Expr> one(op.region.ranges.size(), Expr(1));
  const Side s = make_side(cg, resolve(cg, op.region, &one, op.span, "T.print"), op.span,
                           "T.print", "buffer");
  std::vector<int64_t> shape = s.extents;
  cg.line("{");
  cg.indent();
  std::vector<int> dims(shape.size());
  for (size_t d = 0; d < dims.size(); ++d) dims[d] = int(d);
  const std::vector<std::string> it = open_loops(cg, shape, shape.size());
  std::vector<std::string> pos = s.mins;
  for (size_t d = 0; d < pos.size(); ++d) pos[d] = "(" + s.mins[d] + " + " + it[d] + ")";
  const std::string guard = inside(s, pos, dims);
  std::string index = "{";
  for (size_t d = 0; d < pos.size(); ++d) index += (d ? ", " : "") + pos[d];
  index += "}";
  const std::string call = cg.lib() + "::print_element(\"" + msg + "\", " + block_args + ", \"" +
                           op.region.buffer.name() + "\", " + index + ", " + str(int64_t(pos.size())) +
                           ", " + element(s, pos) + ");";
  cg.line(guard.empty() ? call : "if (" + guard + ") " + call);
  close_loops(cg, shape.size());
  cg.dedent();
  cg.line("}");
}

}  // namespace tilejit::backend
