// Note [Register accumulators] and Note [Padded gemm operands] in
// fragments.h.
#include "backend/cuda/fragments.h"

#include "backend/cuda/fragment_uses.h"
#include "backend/cuda/store_tiles.h"
#include "backend/cuda/warpgroup_gemms.h"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <set>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

using ir::Expr;

// A gemm the tensor cores can run into an accumulator of `layout`, with A
// in registers of `a_layout` when it is given.
bool mma_gemm(const ir::GemmOp& g, const FragmentLayout& layout, const FragmentLayout* a_layout) {
  const ir::Buffer& a = g.a.buffer;
  const ir::Buffer& b = g.b.buffer;
  if (!is_16bit_float(a.dtype()) || a.dtype() != b.dtype()) return false;
  for (const ir::Buffer* x : {&a, &b}) {
    if (x->scope() != ir::Scope::kShared && x->scope() != ir::Scope::kFragment) return false;
    if (x->rank() != 2 || dim(*x, 0) <= 0 || dim(*x, 1) <= 0 || dim(*x, 1) % 8 != 0) return false;
  }
  const int64_t k = g.trans_a ? dim(a, 0) : dim(a, 1);
  const int64_t m = g.trans_a ? dim(a, 1) : dim(a, 0);
  const int64_t n = g.trans_b ? dim(b, 0) : dim(b, 1);
  // A in registers: the C's warp rows, each of its WN warps holding the whole row's A.
  if (a_layout != nullptr &&
      !(*a_layout == operand_layout(m, k, layout.wm, layout.wn, layout.il_rows) && !g.trans_a)) {
    return false;
  }
  // Short accumulators read 16 rows of an untransposed A (Note [Short accumulators]).
  if (layout.m_real > 0 && g.trans_a) return false;
  return is_whole(g.a) && is_whole(g.b) && k % 16 == 0 && m == layout.buffer_rows() &&
         n == layout.n;
}
// The warp grids to try for policy `policy` (0 Square, 1 FullRow, 2 FullCol).
std::vector<std::pair<int, int>> grids(int warps, int policy, int64_t m, int64_t n) {
  std::vector<std::pair<int, int>> out;
  std::vector<std::pair<int, int>> all;
  for (int wm = 1; wm <= warps; ++wm) {
    if (warps % wm == 0) all.emplace_back(wm, warps / wm);
  }
  // Square: the most even split of the tile first.
  std::vector<std::pair<int, int>> square = all;
  std::sort(square.begin(), square.end(), [&](auto x, auto y) {
    const int64_t dx = std::llabs(m / x.first - n / x.second);
    const int64_t dy = std::llabs(m / y.first - n / y.second);
    return dx < dy;
  });
  if (policy == 1) out.emplace_back(warps, 1);
  if (policy == 2) out.emplace_back(1, warps);
  out.insert(out.end(), square.begin(), square.end());
  return out;
}

// Row vectors (Note [Register accumulators]): the rows of the accumulators
// they meet (reductions into them, 2-D nests over both), agreed on through
// copies and 1-D nests; a 1-D nest over a row vector in registers is a loop
// over the thread's rows, so all it stores must be such row vectors.
// `vectors`: the 1-D fragments choose_vectors placed or kept from them.
void choose_rows(const Uses& uses, std::map<uint64_t, FragmentLayout>& regs,
                 const std::set<uint64_t>& vectors) {
  std::map<uint64_t, FragmentLayout> want;
  std::set<uint64_t> out = vectors;
  for (const auto& [id, b] : uses.candidates) {
    if (b.rank() == 1 && uses.out.count(id)) out.insert(id);
  }
  auto tile_layout = [&](uint64_t id) -> const FragmentLayout* {
    auto it = regs.find(id);
    return it == regs.end() || it->second.flat || it->second.repl ? nullptr : &it->second;
  };
  auto require = [&](uint64_t id, const FragmentLayout* tile) {
    if (out.count(id)) return;
    // An mma layout's row vectors hold float32 (its reductions' type).
    if (tile == nullptr || tile->m != dim(uses.candidates.at(id), 0) ||
        (!tile->part() && uses.candidates.at(id).dtype() != DataType::float32())) {
      out.insert(id);
      return;
    }
    auto [it, fresh] = want.emplace(id, tile->row_layout());
    if (!fresh && !(it->second == tile->row_layout())) out.insert(id);
  };
  for (const auto& [src, dst] : uses.reductions) {
    if (!is_reduced_float(uses.candidates.at(dst).dtype())) out.insert(dst);
    require(dst, tile_layout(src));
  }
  for (const Nest& nest : uses.nests) {
    if (nest.depth == 1 || nest.rows.empty()) continue;
    const FragmentLayout* tile = nullptr;
    for (uint64_t id : nest.tiles) {
      if (tile == nullptr) tile = tile_layout(id);
    }
    for (uint64_t id : nest.rows) require(id, tile);
  }
  for (bool changed = true; changed;) {
    changed = false;
    auto agree = [&](uint64_t x, uint64_t y) {
      if (out.count(x) || out.count(y)) return;
      auto ix = want.find(x), iy = want.find(y);
      if (ix == want.end() && iy == want.end()) return;
      if (ix == want.end()) {
        want.emplace(x, iy->second);
      } else if (iy == want.end()) {
        want.emplace(y, ix->second);
      } else if (ix->second == iy->second) {
        return;
      } else {
        out.insert(y);
      }
      changed = true;
    };
    for (const auto& [src, dst] : uses.links) {
      if (uses.is_rows(src)) agree(src, dst);
    }
    for (const Nest& nest : uses.nests) {
      if (nest.depth != 1 || nest.rows.empty()) continue;
      // Its stores: register row vectors, or memory at a row the nest does
      // not read (one thread of the row's stores it; the lowering's
      // leader()), never a thread's local buffer.
      bool loop = !nest.tile_ops;
      for (uint64_t id : nest.stored) {
        const bool row = uses.candidates.count(id) && uses.is_rows(id) && !out.count(id);
        const bool memory = !nest.local.count(id) && !nest.loaded.count(id) &&
                            !(uses.candidates.count(id) && !uses.is_rows(id));
        loop = loop && (row || memory);
      }
      if (!loop) {
        for (uint64_t id : nest.rows) changed = out.insert(id).second || changed;
        continue;
      }
      for (uint64_t x : nest.rows) {
        for (uint64_t y : nest.rows) {
          if (x != y) agree(x, y);
        }
      }
    }
  }
  for (const auto& [id, layout] : want) {
    if (!out.count(id)) regs.emplace(id, layout);
  }
}

// Note [1-D and replicated fragments]: the 1-D fragments that no tile's
// rows involve, replicated or partitioned. Returns the 1-D fragments that
// choose_rows is to leave alone; `why` gets what kept one of them from
// registers where no op of Uses said it.
std::set<uint64_t> choose_vectors(const Uses& uses, int threads,
                                  std::map<uint64_t, FragmentLayout>& regs,
                                  std::map<uint64_t, runtime::Diagnostic>& why) {
  // The row vectors' fragments: reduced into from a tile's rows, read in a
  // 2-D nest, and those they meet in copies and 1-D nests.
  std::set<uint64_t> involved;
  for (const auto& [src, dst] : uses.reductions) involved.insert(dst);
  for (const Nest& nest : uses.nests) {
    if (nest.depth == 2) involved.insert(nest.rows.begin(), nest.rows.end());
  }
  for (bool changed = true; changed;) {
    changed = false;
    auto join = [&](const std::set<uint64_t>& ids) {
      bool any = false;
      for (uint64_t id : ids) any = any || involved.count(id);
      if (!any) return;
      for (uint64_t id : ids) changed = involved.insert(id).second || changed;
    };
    for (const auto& [src, dst] : uses.links) {
      if (uses.is_rows(src)) join({src, dst});
    }
    for (const Nest& nest : uses.nests) {
      if (nest.depth == 1) join(nest.rows);
    }
  }
  std::map<uint64_t, FragmentLayout> want;
  std::set<uint64_t> mine;  // the whole reductions' sources, and what is placed here
  for (const auto& [src, dst] : uses.whole_reductions) mine.insert(src);
  for (const auto& [id, b] : uses.candidates) {
    if (b.rank() != 1 || involved.count(id)) continue;
    const int64_t n = dim(b, 0);
    if (uses.strided.count(id)) {
      why.emplace(id, runtime::Diagnostic{"T.alloc_fragment", b->span, "shared",
                                          "a copy to or from a strided column, which only the "
                                          "row vector of a tile's rows takes"});
      continue;
    }
    if (!uses.repl_out.count(id) && n <= kMaxReplicated) {
      FragmentLayout l{n, 0};
      l.repl = true;
      want.emplace(id, l);
      continue;
    }
    if (uses.out.count(id)) continue;
    if (std::optional<FragmentLayout> l = part_layout(1, n, threads)) {
      l->flat = true;
      want.emplace(id, *l);
    } else {
      why.emplace(id, runtime::Diagnostic{
                          "T.alloc_fragment", b->span, "shared",
                          "no partitioned layout of " + std::to_string(n) + " elements over " +
                              std::to_string(threads) +
                              " threads (runs of 8, 4, 2 or 1 elements that the threads divide "
                              "evenly, at most " +
                              std::to_string(kMaxAccRegisters) + " a thread)"});
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    auto drop = [&](uint64_t id, const ir::Span& span, const std::string& op,
                    const std::string& reason) {
      if (want.erase(id) == 0) return;
      why.emplace(id, runtime::Diagnostic{op, span, "shared", reason});
      changed = true;
    };
    // A copy between two of them is register to register in one layout;
    // to or from one in shared memory, it loads or stores.
    for (const auto& [src, dst] : uses.links) {
      auto x = want.find(src), y = want.find(dst);
      if (x == want.end() || y == want.end() || x->second.repl == y->second.repl) continue;
      const ir::Span span = uses.candidates.at(dst)->span;
      drop(src, span, "T.copy", "a copy between a replicated and a partitioned fragment");
      drop(dst, span, "T.copy", "a copy between a replicated and a partitioned fragment");
    }
    // A whole reduction into registers reads its tile from registers.
    for (const auto& [src, dst] : uses.whole_reductions) {
      auto x = want.find(src);
      if (want.count(dst.id()) && (x == want.end() || !x->second.flat)) {
        drop(dst.id(), dst->span, "T.alloc_fragment",
             "the result of a reduction of a 1-D fragment kept in shared memory");
      }
    }
  }
  for (const auto& [id, l] : want) {
    regs.emplace(id, l);
    mine.insert(id);
  }
  for (const auto& [id, b] : uses.candidates) {
    if (b.rank() == 1 && !involved.count(id)) mine.insert(id);
  }
  return mine;
}

}  // namespace

std::vector<const ir::ForStmt*> parallel_nest(const ir::ForStmt& op) {
  std::vector<const ir::ForStmt*> nest{&op};
  for (;;) {
    const ir::Stmt& body = nest.back()->body;
    const ir::ForStmt* inner = nullptr;
    if (body.kind() == ir::StmtKind::kFor) inner = body.as<ir::ForStmt>();
    if (body.kind() == ir::StmtKind::kSeq && body.as<ir::SeqStmt>()->stmts.size() == 1 &&
        body.as<ir::SeqStmt>()->stmts[0].kind() == ir::StmtKind::kFor) {
      inner = body.as<ir::SeqStmt>()->stmts[0].as<ir::ForStmt>();
    }
    if (inner == nullptr || inner->for_kind != ir::ForKind::kParallel) return nest;
    nest.push_back(inner);
  }
}

// What kept each fragment that is not in registers in shared memory, for
// the lowering report: the first op that disqualified it, or what no op
// decided (its dtype or rank, the block's threads, the gemm's shape).
static void explain_shared(const Uses& uses, int threads, const std::set<uint64_t>& in_groups,
                           const std::map<uint64_t, runtime::Diagnostic>& vector_why,
                           FragmentChoice& choice) {
  for (const ir::Buffer& b : uses.fragments) {
    if (choice.registers.count(b.id())) continue;
    runtime::Diagnostic d{"T.alloc_fragment", b->span, "shared", ""};
    if (!uses.candidates.count(b.id())) {
      d.reason = "no register layout for a fragment of this dtype, rank or shape (2-D float32 "
                 "or 16-bit, or 1-D float32, 16-bit or integer, of constant shape)";
    } else if (in_groups.count(b.id())) {
      d.reason = "used by the ops of a range of the block's threads";
    } else if (threads % 32 != 0) {
      d.reason = std::to_string(threads) + " threads per block, not whole warps";
    } else if (auto r = uses.repl_why.find(b.id());
               r != uses.repl_why.end() && uses.at_constant.count(b.id())) {
      // Accessed at constant indices: why it is not replicated.
      d = r->second;
    } else if (auto v = vector_why.find(b.id()); v != vector_why.end()) {
      d = v->second;
    } else if (auto w = uses.why.find(b.id()); w != uses.why.end()) {
      d = w->second;
    } else if (auto c = uses.as_c.find(b.id()); c != uses.as_c.end()) {
      d = {"T.gemm", c->second.front()->span, "shared",
           "the tensor cores cannot run this gemm into registers (16-bit A and B of one dtype, "
           "M and N multiples of 16 per warp, K a multiple of 16, at most " +
               std::to_string(kMaxAccRegisters) + " registers per thread)"};
    } else {
      d.reason = "its uses agree on no register layout of an accumulator's rows";
    }
    choice.reasons.kept_shared.emplace(b.id(), std::move(d));
  }
}

// Note [Register budget] (fragments.h).
// Returns whether it moved any.
static bool fit_register_budget(const Uses& uses, int threads, std::map<uint64_t, FragmentLayout>& regs,
                                std::map<uint64_t, runtime::Diagnostic>& why) {
  const int64_t budget = register_budget(threads);
  int64_t total = 0;
  for (const auto& [id, l] : regs) total += l.words(uses.candidates.at(id).dtype().bytes());
  if (total <= budget) return false;
  std::vector<uint64_t> alike;  // held alike by the warps of a warp row
  for (const auto& [id, l] : regs) {
    if (l.wr > 1) alike.push_back(id);
  }
  for (uint64_t id : alike) {
    const bool operand = !regs.at(id).rows();
    regs.erase(id);
    why.emplace(id, runtime::Diagnostic{
                        "T.alloc_fragment", uses.candidates.at(id)->span, "shared",
                        "the kernel's register fragments would take " + std::to_string(total) +
                            " registers a thread, past the " + std::to_string(budget) +
                            " that leave room for its addresses and the gemms' fragments at " +
                            std::to_string(threads) + " threads; " +
                            (operand ? "a gemm's A that several warps would hold alike"
                                     : "a row vector that several warps would hold alike") +
                            " is kept in shared memory (Note [Register budget])"});
  }
  return !alike.empty();
}

// Note [Register accumulators].
// `min_cols`: the fewest columns of a warp's accumulator tile (8 or 16,
// Note [Register budget]); `over_budget` is set where the budget moved
// fragments to shared memory.
static FragmentChoice choose_registers(Uses& uses, int threads,
                                       const std::set<uint64_t>& in_groups,
                                       std::map<uint64_t, runtime::Diagnostic>& vector_why,
                                       int min_cols, bool* over_budget, bool warpgroups,
                                       const std::map<uint64_t, int>& swizzlable,
                                       const std::map<uint64_t, std::string>& refused) {
  // A register layout spreads a tile over the whole block's warps.
  uses.out.insert(in_groups.begin(), in_groups.end());
  uses.repl_out.insert(in_groups.begin(), in_groups.end());
  FragmentChoice choice;
  if (threads % 32 != 0) return choice;
  const int warps = threads / 32;
  std::map<uint64_t, FragmentLayout>& regs = choice.registers;
  auto in_regs = [&](uint64_t id) { return regs.count(id) != 0; };
  // Accumulators: the first gemm's policy picks the grid.
  for (const auto& [id, g] : uses.as_c) {
    if (uses.out.count(id)) continue;
    const ir::Buffer& buffer = uses.candidates.at(id);
    // Note [Short accumulators]: fewer than 16 rows are an mma tile's first.
    const int64_t rows = dim(buffer, 0), n = dim(buffer, 1);
    const int64_t m = std::max<int64_t>(rows, 16);
    // Note [Warpgroup gemms]: every warp on 16 rows of each 64 * G.
    if (auto r = refused.find(id); warpgroups && r != refused.end()) {
      choice.reasons.not_warpgroup[id] = r->second;
    } else if (warpgroups && threads % 128 == 0) {
      // All warpgroups along M, or (FullCol first) along N.
      const int groups = threads / 128;
      std::string why;
      const bool cols_first = g.front()->policy == 2;
      for (int wgn : cols_first ? std::vector<int>{groups, 1} : std::vector<int>{1, groups}) {
        FragmentLayout layout{m, n, 4 * (groups / wgn), wgn};
        layout.il_rows = true;
        std::string w = warpgroup_accumulator(g, swizzlable, m, n, threads, wgn);
        if (w.empty() && layout.registers() > kMaxAccRegisters) {
          w = std::to_string(layout.registers()) + " accumulator registers a thread, past " +
              std::to_string(kMaxAccRegisters);
        }
        if (w.empty()) {
          regs.emplace(id, layout);
          break;
        }
        if (why.empty()) why = w;
        if (groups == 1) break;
      }
      if (regs.count(id)) continue;
      choice.reasons.not_warpgroup[id] = why;
    } else if (warpgroups) {
      choice.reasons.not_warpgroup[id] = std::to_string(threads) + " threads are not whole warpgroups";
    }
    for (auto [wm, wn] : grids(warps, g.front()->policy, m, n)) {
      FragmentLayout layout{m, n, wm, wn, rows < 16 ? rows : 0};
      if (m % (16 * wm) != 0 || n % (min_cols * wn) != 0) continue;
      if (layout.registers() > kMaxAccRegisters) break;
      bool ok = true;
      for (const ir::GemmOp* op : g) ok = ok && mma_gemm(*op, layout, nullptr);
      if (!ok) break;
      regs.emplace(id, layout);
      break;
    }
  }
  // Operands: the layout of their gemms' accumulators' rows.
  for (const auto& [id, g] : uses.as_a) {
    const ir::Buffer& buffer = uses.candidates.at(id);
    if (uses.out.count(id) || uses.as_c.count(id)) continue;
    auto c = regs.find(g.front()->c.buffer.id());
    if (c == regs.end() || c->second.m_real != 0) continue;
    const FragmentLayout layout = operand_layout(dim(buffer, 0), dim(buffer, 1), c->second.wm,
                                           c->second.wn, c->second.il_rows);
    if (layout.m % (16 * layout.wm) != 0 || layout.n % 16 != 0 ||
        layout.registers() > kMaxAccRegisters) {
      continue;
    }
    regs.emplace(id, layout);
  }
  // Note [Partitioned fragments]: the tiles no gemm touches.
  for (const auto& [id, buffer] : uses.candidates) {
    if (buffer.rank() != 2 || uses.out.count(id) || uses.as_c.count(id) || uses.as_a.count(id)) {
      continue;
    }
    if (std::optional<FragmentLayout> layout = part_layout(dim(buffer, 0), dim(buffer, 1), threads)) {
      regs.emplace(id, *layout);
    }
  }
  auto is_part = [&](uint64_t id) { return in_regs(id) && regs.at(id).part(); };
  // What the 2-D choices must agree on, until nothing changes: an operand's
  // gemms run on their accumulators in registers, a register-to-register
  // copy has one layout, a nest indexes one layout.
  for (bool changed = true; changed;) {
    changed = false;
    auto drop = [&](uint64_t id) { changed = regs.erase(id) != 0 || changed; };
    for (const auto& [id, g] : uses.as_a) {
      if (!in_regs(id)) continue;
      for (const ir::GemmOp* op : g) {
        auto c = regs.find(op->c.buffer.id());
        if (c == regs.end() || !mma_gemm(*op, c->second, &regs.at(id))) drop(id);
        if (!in_regs(id)) break;
      }
    }
    for (const auto& [src, dst] : uses.links) {
      if (uses.is_rows(src) || !in_regs(src) || !in_regs(dst)) continue;
      const FragmentLayout x = regs.at(src), y = regs.at(dst);
      if (x == y) continue;
      // A partitioned tile gives way to an mma one.
      if (is_part(src) != is_part(dst)) {
        drop(is_part(src) ? src : dst);
      } else {
        drop(uses.as_c.count(dst) ? src : dst);
      }
    }
    for (const Nest& nest : uses.nests) {
      // The nest's layout: an mma tile's if it has one.
      const FragmentLayout* first = nullptr;
      for (uint64_t id : nest.tiles) {
        auto it = regs.find(id);
        if (it != regs.end() && (first == nullptr || (first->part() && !it->second.part()))) {
          first = &it->second;
        }
      }
      if (first == nullptr) continue;
      const FragmentLayout want = *first;
      for (uint64_t id : nest.tiles) {
        auto it = regs.find(id);
        if (it != regs.end() && !(it->second == want)) drop(id);
      }
    }
    for (uint64_t id : uses.reduced_16) {
      if (in_regs(id) && !is_part(id)) drop(id);
    }
  }
  choose_rows(uses, regs, choose_vectors(uses, threads, regs, vector_why));
  *over_budget = fit_register_budget(uses, threads, regs, vector_why);
  for (const ir::GemmOp* op : uses.all_gemms) {
    auto c = regs.find(op->c.buffer.id());
    if (c != regs.end() && c->second.m_real > 0 && !in_regs(op->a.buffer.id())) {
      choice.padded_rows[op->a.buffer.id()] = c->second.m;
    }
  }
  if (warpgroups) choice.swizzled = swizzled_operands(uses.all_gemms, swizzlable, regs);
  // The 16-bit operands of gemms that may run on tensor cores (into
  // registers, or in the library's gemm on shared C).
  for (const ir::GemmOp* op : uses.all_gemms) {
    for (const ir::Buffer* x : {&op->a.buffer, &op->b.buffer}) {
      if (is_16bit_float(x->dtype()) && x->rank() == 2 && dim(*x, 1) > 0 && dim(*x, 1) % 8 == 0 &&
          (x->scope() == ir::Scope::kShared || x->scope() == ir::Scope::kFragment) &&
          !in_regs(x->id()) && !choice.swizzled.count(x->id())) {
        choice.padded[x->id()] = true;
      }
    }
  }
  return choice;
}

FragmentChoice choose_fragments(const ir::KernelStmt& kernel, int threads,
                                const std::set<uint64_t>& in_groups, bool warpgroups) {
  Uses uses;
  uses.visit(kernel.body);
  std::map<uint64_t, runtime::Diagnostic> vector_why;
  const std::map<uint64_t, int> swizzlable =
      warpgroups ? swizzlable_operands(kernel, in_groups) : std::map<uint64_t, int>{};
  // Note [Warpgroup gemms]: an accumulator whose gemm would run on mma.sync
  // all the same (its A a fragment the choice kept in shared memory, its
  // tiles refused) takes the mma layouts instead, and the choice is made
  // again without it.
  std::map<uint64_t, std::string> refused;
  FragmentChoice choice;
  for (bool again = true; again;) {
    bool over_budget = false;
    vector_why.clear();
    choice = choose_registers(uses, threads, in_groups, vector_why, 8, &over_budget, warpgroups,
                              swizzlable, refused);
    if (over_budget) {
      // Note [Register budget]: warp tiles of 8 columns serve row vectors and
      // operands held alike; without them, wider ones read fewer fragments.
      vector_why.clear();
      choice = choose_registers(uses, threads, in_groups, vector_why, 16, &over_budget, warpgroups,
                                swizzlable, refused);
    }
    again = false;
    for (const ir::GemmOp* op : uses.all_gemms) {
      auto c = choice.registers.find(op->c.buffer.id());
      if (c == choice.registers.end() || !c->second.il_rows) continue;
      const WarpgroupGemm g = warpgroup_gemm(*op, choice.registers, choice.swizzled);
      if (g.columns > 0) continue;
      again = refused.emplace(c->first, "its T.gemm at line " + std::to_string(op->span.line) +
                                            " would run on mma.sync (" + g.why + ")")
                  .second ||
              again;
    }
  }
  explain_shared(uses, threads, in_groups, vector_why, choice);
  if (warpgroups) {
    for (const auto& [id, sw] : swizzled_store_tiles(kernel, in_groups, choice.registers)) {
      choice.swizzled.emplace(id, sw);  // Note [Swizzled store tiles]
    }
  }
  return choice;
}

}  // namespace tilejit::cuda
