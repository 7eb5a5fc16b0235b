// The layout of a tile buffer: where each of its elements lives.
//
// Note [Layouts]
// Every shared, fragment and local buffer of a tile body gets a Layout from
// its target's layout pass before it is lowered (transform::select_layouts
// on the CPU, cuda::infer_layouts on CUDA), and carries it on its
// BufferNode: every use of the buffer in the lowered function (its
// allocation, loads, stores and tile-op regions) is the laid-out buffer.
// The printer shows it on the allocation. Four kinds:
//  - row major: element (i_0, ..., i_n) at offset sum_d i_d * prod(s_{d+1},
//    ..., s_n) of one contiguous array of the block: every tile on the CPU
//    (a block runs on one thread), and a tile in CUDA shared memory with no
//    padding or swizzle;
//  - local: a thread's own array (T.alloc_local), row major;
//  - shared: a CUDA shared tile with a row pitch (elements from one row to
//    the next, more than the row's length where rows are padded: Note
//    [Padded gemm operands]), the rows allocated (more than the buffer's
//    for the A of a short accumulator: Note [Short accumulators]), and a
//    swizzle (the bytes of a panel's rows, 32, 64 or 128, as wgmma and TMA
//    read them: Note [Warpgroup gemms]);
//  - fragment: a tile spread over the block's threads in registers. Its
//    FragmentLayout says which thread holds each element and at which local
//    index: element(thread, local) is the (row, column) that local register
//    `local` of thread `thread` holds, and each element is held by
//    replication() threads (the warps of a warp row hold a row vector
//    alike; every thread holds a replicated fragment). These are the
//    layouts the device library's MmaAcc, MmaRows, PartTile, PartRows and
//    Replicated implement (device/cuda/tilejit/cuda/mma_acc.h and
//    part_tile.h document the same maps).
// Global buffers (tensors) have no layout: a tensor's strides are its own.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace tilejit::ir {

/// A tile in registers (Note [Layouts]): an m x n accumulator or operand
/// over a wm x wn warp grid, or (n == 0) a row vector of the rows of such a
/// tile; or, where tc > 0, a tile spread over tr x tc threads in runs of v
/// columns, or its row vector; a 1-D fragment as the one row of such a tile
/// (`flat`), or m elements every thread holds (`repl`, n == 0). The CUDA
/// lowering's Notes [Register accumulators], [Partitioned fragments] and
/// [1-D and replicated fragments] (backend/cuda/fragments.h) say which
/// fragments take which.
struct FragmentLayout {
  int64_t m = 0, n = 0;
  int wm = 1, wn = 1;
  /// An accumulator of fewer than 16 rows: its rows, in an m = 16 tile whose
  /// other rows exist only in registers (0: all m rows are the buffer's).
  int64_t m_real = 0;
  /// A partitioned fragment: thread rows, threads per row, run length.
  int tr = 0, tc = 0, v = 0;
  /// A 1-D fragment: a 1 x n partitioned tile indexed by its column.
  bool flat = false;
  /// Replicated: every thread holds all m elements.
  bool repl = false;
  /// Warps that hold each warp tile alike: a row vector of an accumulator
  /// with wn = wr warps on a warp row, or the A operand in registers of a
  /// gemm into one (each of them holds the row's whole A).
  int wr = 1;
  /// Interleaved rows (Note [Warpgroup gemms]): warp w holds rows 16 * w +
  /// 16 * wm * mt of its 16-row blocks mt, as wgmma leaves them.
  bool il_rows = false;

  bool rows() const { return n == 0 && !repl; }
  bool part() const { return tc > 0; }
  int64_t buffer_rows() const { return m_real > 0 ? m_real : m; }
  /// 32-bit registers per thread for elements of `bytes` bytes.
  int64_t words(int64_t bytes) const { return (registers() * bytes + 3) / 4; }
  /// Elements per thread.
  int64_t registers() const {
    if (repl) return m;
    if (part()) return rows() ? m / tr : (m / tr) * (n / tc);
    return rows() ? m / (8 * int64_t(wm)) : m * n / (32 * int64_t(wm) * wn);
  }
  /// The row vector of this tile's rows: held alike by the wn warps of a
  /// warp row.
  FragmentLayout row_layout() const {
    FragmentLayout r{m, 0, part() ? 1 : wm, 1};
    if (part()) {
      r.tr = tr;
      r.tc = tc;
    } else {
      r.wr = wn;
      r.il_rows = il_rows;
    }
    return r;
  }
  /// Floats of shared memory a row reduction of this tile combines its
  /// warps in (0: none, the warp shuffles suffice).
  int64_t scratch_floats() const {
    if (part()) return tc > 32 ? m * (tc / 32) : 0;
    return wn > 1 && !rows() ? m * wn : 0;
  }

  /// The threads that hold elements; 0 for a replicated fragment (every
  /// thread of the block does).
  int64_t threads() const;
  /// How many threads hold each element (0: every thread of the block).
  int64_t replication() const;
  /// The (row, column) of the element that register `local` of thread
  /// `thread` holds (column 0 for a vector; a flat fragment's index is its
  /// column). Both in range: 0 <= thread < threads(), 0 <= local <
  /// registers(). Rows past buffer_rows() exist only in registers.
  std::pair<int64_t, int64_t> element(int64_t thread, int64_t local) const;
  /// "mma 128x128, warps 4x1", "rows of mma 128, warps 4", "part 64x512,
  /// threads 4x32, runs of 8", "replicated 1", ...
  std::string to_string() const;
  bool operator==(const FragmentLayout&) const = default;
};

/// A tile in CUDA shared memory (Note [Layouts]).
struct SharedLayout {
  /// Elements from one row to the next.
  int64_t pitch = 0;
  /// Rows allocated (at least the buffer's).
  int64_t rows = 0;
  /// Bytes of a swizzled panel's rows (32, 64, 128), 0 for none.
  int swizzle = 0;
  std::string to_string() const;
  bool operator==(const SharedLayout&) const = default;
};

class Layout {
 public:
  enum class Kind : uint8_t { kNone, kRowMajor, kLocal, kShared, kFragment };

  Layout() = default;
  static Layout row_major() { return Layout(Kind::kRowMajor); }
  static Layout local() { return Layout(Kind::kLocal); }
  static Layout shared(SharedLayout s) {
    Layout l(Kind::kShared);
    l.shared_ = s;
    return l;
  }
  static Layout fragment(FragmentLayout f) {
    Layout l(Kind::kFragment);
    l.fragment_ = f;
    return l;
  }

  Kind kind() const { return kind_; }
  bool defined() const { return kind_ != Kind::kNone; }
  /// The fragment layout, or nullptr for another kind.
  const FragmentLayout* fragment() const { return kind_ == Kind::kFragment ? &fragment_ : nullptr; }
  /// The shared layout, or nullptr for another kind.
  const SharedLayout* shared() const { return kind_ == Kind::kShared ? &shared_ : nullptr; }
  /// "row_major", "local", "shared(pitch 72, rows 16, swizzle 128)",
  /// "fragment(mma 128x128, warps 4x1)"; "" for none.
  std::string to_string() const;
  bool operator==(const Layout&) const = default;

 private:
  explicit Layout(Kind k) : kind_(k) {}
  Kind kind_ = Kind::kNone;
  FragmentLayout fragment_;
  SharedLayout shared_;
};

}  // namespace tilejit::ir
