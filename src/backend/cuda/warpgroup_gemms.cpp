// Note [Warpgroup gemms] in warpgroup_gemms.h.
#include "backend/cuda/warpgroup_gemms.h"

#include "backend/cuda/fragment_uses.h"

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

// The uses of the kernel's shared tiles: a tile stays a candidate while
// every use is a whole-tile copy into it from memory the block reads, or a
// whole operand of a gemm.
class OperandUses : public TileCandidates {
 private:
  void visit_alloc(const ir::AllocStmt* op, const ir::Stmt& s) override {
    const ir::Buffer& b = op->buffer;
    if (b.scope() == ir::Scope::kShared && b.rank() == 2 && is_16bit_float(b.dtype()) &&
        dim(b, 0) > 0 && dim(b, 0) % 8 == 0 && dim(b, 1) > 0) {
      if (const int sw = swizzle_bytes(dim(b, 1), b.dtype().bytes())) candidates.emplace(b.id(), sw);
    }
    ir::IRVisitor::visit_alloc(op, s);
  }
  void visit_copy(const ir::CopyOp* op, const ir::Stmt&) override {
    // Into the whole tile from global memory or another shared tile: the
    // copy writes it swizzled. A register fragment's own stores do not.
    const ir::Scope from = op->src.buffer.scope();
    if (!is_whole(op->dst) || (from != ir::Scope::kGlobal && from != ir::Scope::kShared)) {
      drop(op->dst.buffer);
    }
    drop(op->src.buffer);
    ranges(op->src);
    ranges(op->dst);
  }
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt&) override {
    for (const ir::Region* r : {&op->a, &op->b}) {
      if (!is_whole(*r)) drop(r->buffer);
      ranges(*r);
    }
    drop(op->c.buffer);
    ranges(op->c);
  }
};

// The columns of one instruction for n columns of B (0: none): n itself up
// to 256, else the widest multiple of 8 (of a panel's columns, for a B
// whose panels run along N) that divides it.
int instruction_columns(int64_t n, bool b_mn_major, int b_swizzle, int64_t element_bytes) {
  if (n <= 0 || n % 8 != 0) return 0;
  if (n <= 256) return int(n);
  const int64_t panel = b_mn_major ? b_swizzle / element_bytes : 8;
  for (int64_t nc = 256; nc >= 8; nc -= 8) {
    if (n % nc == 0 && nc % panel == 0) return int(nc);
  }
  return 0;
}

// The gemm's shape, or why it cannot run on wgmma with operands that may
// be swizzled as `swizzlable` says (and A from registers where it is a
// fragment), its C's columns split over `wgn` warpgroups.
std::string unfit(const ir::GemmOp& op, const std::map<uint64_t, int>& swizzlable, int wgn,
                  int* columns) {
  const ir::Buffer &a = op.a.buffer, &b = op.b.buffer;
  if (!is_16bit_float(a.dtype()) || a.dtype() != b.dtype()) return "A and B are not 16-bit floats of one dtype";
  if (!is_whole(op.a) || !is_whole(op.b) || a.rank() != 2 || b.rank() != 2) {
    return "an operand is a slice of its buffer";
  }
  const auto sb = swizzlable.find(b.id());
  if (sb == swizzlable.end()) {
    return "B " + b.name() + " is not a swizzled shared tile (one that only whole-tile copies write and "
           "only gemms on wgmma read)";
  }
  // A stored K x M (transpose_A) would be read M-major, a descriptor form
  // the H200 runs have not exercised yet: such gemms keep mma.sync.
  if (op.trans_a) return "A " + a.name() + " is transposed (wgmma reads A K-major here)";
  const bool a_regs = a.scope() == ir::Scope::kFragment;
  if (!a_regs && !swizzlable.count(a.id())) {
    return "A " + a.name() + " is not a swizzled shared tile (one that only whole-tile copies write and "
           "only gemms on wgmma read) nor a fragment";
  }
  const int64_t k = op.trans_a ? dim(a, 0) : dim(a, 1);
  if (k <= 0 || k % 16 != 0) return "K = " + std::to_string(k) + " is not a multiple of 16";
  const int64_t n = op.trans_b ? dim(b, 0) : dim(b, 1);
  const int64_t per = n / wgn;  // a warpgroup's columns
  if (n % wgn != 0) return "N = " + std::to_string(n) + " does not split over " + std::to_string(wgn) + " warpgroups";
  // A warpgroup's first column starts a panel of a B whose panels run along N.
  const int64_t panel = sb->second / b.dtype().bytes();
  if (!op.trans_b && wgn > 1 && per % panel != 0) {
    return "a warpgroup's " + std::to_string(per) + " columns of B " + b.name() +
           " start inside a panel of " + std::to_string(panel);
  }
  *columns = instruction_columns(per, !op.trans_b, sb->second, b.dtype().bytes());
  if (*columns == 0) {
    return "N = " + std::to_string(per) + " per warpgroup cuts into no instructions of 8 to 256 columns";
  }
  return "";
}

}  // namespace

int swizzle_bytes(int64_t cols, int64_t element_bytes) {
  // (32-byte rows would take the 32-byte swizzle, a form the H200 runs have
  // not exercised yet: such tiles keep mma.sync.)
  const int64_t bytes = cols * element_bytes;
  if (bytes == 64) return 64;
  return bytes > 0 && bytes % 128 == 0 ? 128 : 0;
}

std::map<uint64_t, int> swizzlable_operands(const ir::KernelStmt& kernel,
                                            const std::set<uint64_t>& in_groups) {
  OperandUses uses;
  uses.visit(kernel.body);
  for (uint64_t id : in_groups) uses.candidates.erase(id);
  return uses.candidates;
}

std::string warpgroup_accumulator(const std::vector<const ir::GemmOp*>& gemms,
                                  const std::map<uint64_t, int>& swizzlable, int64_t m, int64_t n,
                                  int threads, int wgn) {
  if (threads % 128 != 0) return std::to_string(threads) + " threads are not whole warpgroups";
  const int groups = threads / 128;
  if (wgn < 1 || groups % wgn != 0) return "the warpgroups do not split over the columns";
  const int wgm = groups / wgn;
  if (m % (64 * wgm) != 0) {
    return "M = " + std::to_string(m) + " is not a multiple of 64 rows for each of the " +
           std::to_string(wgm) + " warpgroups along it";
  }
  if (n % (8 * wgn) != 0) return "N = " + std::to_string(n) + " is not 8 columns for each warpgroup";
  for (const ir::GemmOp* op : gemms) {
    int columns = 0;
    if (std::string why = unfit(*op, swizzlable, wgn, &columns); !why.empty()) return why;
    const int64_t rows = op->trans_a ? dim(op->a.buffer, 1) : dim(op->a.buffer, 0);
    const int64_t cols = op->trans_b ? dim(op->b.buffer, 0) : dim(op->b.buffer, 1);
    if (rows != m || cols != n) return "the operands' rows or columns are not the accumulator's";
  }
  return "";
}

std::map<uint64_t, int> swizzled_operands(const std::vector<const ir::GemmOp*>& gemms,
                                          const std::map<uint64_t, int>& swizzlable,
                                          const std::map<uint64_t, FragmentLayout>& regs) {
  // A tile is swizzled when every gemm that reads it runs on wgmma; a gemm
  // that does not (its C in another layout, its A a fragment kept in
  // shared memory) reads its tiles row-major, which refuses them, and may
  // leave another gemm without its swizzled operand: until nothing changes.
  std::map<uint64_t, int> out;
  for (const ir::GemmOp* op : gemms) {
    for (const ir::Buffer* x : {&op->a.buffer, &op->b.buffer}) {
      if (auto it = swizzlable.find(x->id()); it != swizzlable.end()) out.insert(*it);
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const ir::GemmOp* op : gemms) {
      auto c = regs.find(op->c.buffer.id());
      int columns = 0;
      bool wgmma = c != regs.end() && c->second.il_rows &&
                   unfit(*op, out, c->second.wn, &columns).empty();
      if (wgmma && op->a.buffer.scope() == ir::Scope::kFragment) {
        wgmma = regs.count(op->a.buffer.id()) != 0;
      }
      if (wgmma) continue;
      for (const ir::Buffer* x : {&op->a.buffer, &op->b.buffer}) changed = out.erase(x->id()) != 0 || changed;
    }
  }
  return out;
}

WarpgroupGemm warpgroup_gemm(const ir::GemmOp& op,
                             const std::map<uint64_t, FragmentLayout>& registers,
                             const std::map<uint64_t, int>& swizzled) {
  WarpgroupGemm g;
  int columns = 0;
  auto c = registers.find(op.c.buffer.id());
  const int wgn = c == registers.end() ? 1 : c->second.wn;
  g.a_in_registers = registers.count(op.a.buffer.id()) != 0;
  if (op.a.buffer.scope() == ir::Scope::kFragment && !g.a_in_registers) {
    g.why = "A " + op.a.buffer.name() + " is a fragment kept in shared memory";
  } else {
    g.why = unfit(op, swizzled, wgn, &columns);
  }
  if (g.why.empty()) g.columns = columns;
  return g;
}

WarpgroupGemm warpgroup_gemm(const ir::GemmOp& op) {
  std::map<uint64_t, FragmentLayout> registers;
  std::map<uint64_t, int> swizzled;
  for (const ir::Buffer* x : {&op.a.buffer, &op.b.buffer, &op.c.buffer}) {
    if (const FragmentLayout* l = register_layout(*x)) registers.emplace(x->id(), *l);
    if (int sw = swizzle_of(*x)) swizzled.emplace(x->id(), sw);
  }
  return warpgroup_gemm(op, registers, swizzled);
}

}  // namespace tilejit::cuda
