// The CUDA lowering's synchronisation (Note [CUDA lowering of tile IR],
// "Barriers", in tile_codegen.h) and its thread groups (Note [Thread
// semantics] in tilejit/transform/thread_uniformity.h): the hazard sets and
// the barriers they place, the bodies of loops and branches, a thread's own
// statements and the branches of an if on a thread range.
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "backend/common/accesses.h"
#include "backend/cuda/tile_codegen.h"
#include "backend/cuda/tile_memory.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cuda {

using backend::Accessed;
using backend::meets;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

bool CudaTileCodegen::async_proxy_fence_due() const {
  if (!async_proxy_reads()) return false;
  std::set<uint64_t> tiles;
  for (const auto& [id, b] : tiles_by_id_) {
    if (swizzle_of(b) != 0) tiles.insert(id);
  }
  for (const auto& [copy, c] : tma_.stores) tiles.insert(copy->src.buffer.id());
  return meets(written_since_, visible(tiles));
}

void CudaTileCodegen::sync() {
  const bool fence = async_proxy_fence_due();
  read_since_.clear();
  written_since_.clear();
  pending_keys_.clear();
  if (synced_at_ == lines_written()) return;
  if (group_barrier_ != 0) {
    line("tilejit::cuda::group_barrier<" + str(group_barrier_) + ", " + str(group_.count) +
         (pending_async_ ? ", true" : ", false") + ">();");
  } else if (ws_.loop != nullptr) {
    // Note [Warp specialisation]: the consumers' barrier, which the
    // producer warpgroup does not reach.
    if (pending_async_) line("tilejit::cuda::async_wait_all();");
    if (fence) line("tilejit::cuda::async_proxy_fence();");
    line("tilejit::cuda::block_sync<" + str(threads_) + ">();");
  } else {
    if (fence) {
      // Note [Warpgroup gemms]: what the block wrote, wgmma sees.
      line(std::string("tilejit::cuda::proxy_barrier<") + (pending_async_ ? "true" : "false") + ">();");
    } else {
      line(pending_async_ ? "tilejit::cuda::barrier();" : "__syncthreads();");
    }
  }
  pending_async_ = false;
  synced_at_ = lines_written();
}

void CudaTileCodegen::barrier_inside(const std::set<uint64_t>& reads,
                                     const std::set<uint64_t>& writes, uint64_t scratch,
                                     int64_t threads) {
  if (group_barrier_ != 0 || pending_async_ || threads != threads_ || async_proxy_fence_due()) {
    return;
  }
  read_since_ = visible(reads);
  read_since_.insert(scratch);
  written_since_ = visible(writes);
  written_since_.erase(scratch);
  std::erase_if(pending_keys_, [&](const auto& kv) { return !written_since_.count(kv.first); });
}

std::set<uint64_t> CudaTileCodegen::visible(const std::set<uint64_t>& ids) const {
  std::set<uint64_t> out;
  for (uint64_t id : ids) {
    if (locals_.count(id) || register_layout_of(id) != nullptr) continue;
    out.insert(id);
    // Tiles that share bytes with it are the same memory to a hazard.
    if (auto a = aliases_.find(id); a != aliases_.end()) out.insert(a->second.begin(), a->second.end());
  }
  return out;
}

bool CudaTileCodegen::pending_meets(const std::set<uint64_t>& reads,
                                    const std::set<uint64_t>& writes,
                                    const std::map<uint64_t, int64_t>& keys) const {
  if (meets(written_since_, reads) || meets(read_since_, writes)) return true;
  for (uint64_t id : writes) {
    if (!written_since_.count(id)) continue;
    // Note [Thread-exclusive writes]: the same partition meets no other
    // thread's element.
    auto k = keys.find(id);
    auto p = pending_keys_.find(id);
    if (k == keys.end() || p == pending_keys_.end() || k->second != p->second) return true;
  }
  return false;
}

std::map<uint64_t, int64_t> CudaTileCodegen::exclusive_keys(const ir::Stmt& body) const {
  if (group_barrier_ != 0) return {};
  std::map<uint64_t, int64_t> keys = exclusive_.keys(body, loop_ranges_);
  for (auto it = keys.begin(); it != keys.end();) {
    it = aliases_.count(it->first) ? keys.erase(it) : std::next(it);  // bytes another tile shares
  }
  return keys;
}

void CudaTileCodegen::merge_pending(const std::set<uint64_t>& reads,
                                    const std::set<uint64_t>& writes) {
  read_since_.insert(reads.begin(), reads.end());
  for (uint64_t id : writes) pending_keys_.erase(id);  // another path's writes
  written_since_.insert(writes.begin(), writes.end());
}

void CudaTileCodegen::enter(const std::set<uint64_t>& reads, const std::set<uint64_t>& writes,
                            const std::map<uint64_t, int64_t>& keys) {
  const std::set<uint64_t> r = visible(reads), w = visible(writes);
  if (pending_meets(r, w, keys)) sync();
  read_since_.insert(r.begin(), r.end());
  for (uint64_t id : w) {
    auto k = keys.find(id);
    if (k == keys.end()) {
      pending_keys_.erase(id);
    } else if (!written_since_.count(id)) {
      pending_keys_[id] = k->second;
    } else if (auto p = pending_keys_.find(id); p != pending_keys_.end() && p->second != k->second) {
      pending_keys_.erase(p);
    }
  }
  written_since_.insert(w.begin(), w.end());
}

void CudaTileCodegen::emit_block(const ir::Stmt& s) {
  // Inside a T.Parallel nest or a thread's own statement a branch or a
  // while body is one thread's code, taken by some threads and not others:
  // a barrier there would wait for threads that never reach it.
  if (own_code()) {
    emit_stmt(s);
    return;
  }
  emit_body(s, /*back_edge=*/false);
}

Accessed CudaTileCodegen::body_accesses(const ir::Stmt& body) const {
  Accessed all;
  all.visit(body);
  // The row reductions' scratches (kScratchIds, emit_tile_op) are no
  // buffers of the IR: a reduction through one in a loop meets the next
  // iteration's.
  if (scratch_reductions(body) > 0) {
    all.writes.insert(std::begin(kScratchIds), std::end(kScratchIds));
  }
  return all;
}

void CudaTileCodegen::sync_before_loop(const ir::Stmt& body) {
  const Accessed all = body_accesses(body);
  if (pending_meets(visible(all.reads), visible(all.writes), exclusive_keys(body))) sync();
}

void CudaTileCodegen::emit_body(const ir::Stmt& body, bool back_edge) {
  const Accessed all = body_accesses(body);
  const std::set<uint64_t> r = visible(all.reads), w = visible(all.writes);
  const std::map<uint64_t, int64_t> keys = exclusive_keys(body);
  // Past the body, what was pending before it still is where it did not
  // run (a loop of no iteration, a branch not taken): the barrier below is
  // inside the body, so it does not count there.
  const std::set<uint64_t> pre_r = read_since_, pre_w = written_since_;
  if (pending_meets(r, w, keys)) sync();
  emit_stmt(body);
  if (back_edge && pending_meets(r, w, keys)) sync();
  merge_pending(pre_r, pre_w);
}

void CudaTileCodegen::emit_if(const ir::IfStmt& op) {
  if (own_code()) {
    TileCodegen::emit_if(op);
    return;
  }
  line("if (" + expr(op.cond) + ") {");
  indent();
  const std::set<uint64_t> pre_r = read_since_, pre_w = written_since_;
  emit_body(op.then_case, false);
  const std::set<uint64_t> then_r = read_since_, then_w = written_since_;
  read_since_ = pre_r;
  written_since_ = pre_w;
  dedent();
  if (op.else_case.defined()) {
    line("} else {");
    indent();
    emit_body(op.else_case, false);
    dedent();
  }
  line("}");
  // Either branch's accesses may be pending.
  merge_pending(then_r, then_w);
}

void CudaTileCodegen::emit_while(const ir::WhileStmt& op) {
  if (own_code()) {
    TileCodegen::emit_while(op);
    return;
  }
  sync_before_loop(op.body);
  line("while (" + expr(op.cond) + ") {");
  indent();
  emit_body(op.body, /*back_edge=*/true);
  dedent();
  line("}");
}

bool CudaTileCodegen::emit_own(const ir::Stmt& s) {
  if (own_code() || s.kind() == ir::StmtKind::kAlloc) return false;
  if (transform::ThreadUniformity::collective(s)) {
    if (const auto* op = s.as<ir::IfStmt>(); op != nullptr && uniformity_.divergent(s)) {
      emit_range_if(*op);
      return true;
    }
    return false;  // its statements are emitted one by one
  }
  if (uniformity_.divergent(s)) {
    emit_per_thread(s);
    return true;
  }
  return false;
}

void CudaTileCodegen::emit_per_thread(const ir::Stmt& s) {
  Accessed a;
  a.visit(s);
  enter(a.reads, a.writes);
  per_thread_ += 1;
  emit_stmt(s);
  per_thread_ -= 1;
}

void CudaTileCodegen::emit_range_if(const ir::IfStmt& op) {
  // The block's (or the enclosing group's) barrier before it where what is
  // pending meets its accesses: a branch's own barriers cover its threads
  // only. Each branch starts from what is pending here.
  Accessed all;
  all.visit(op.then_case);
  all.visit(op.else_case);
  const std::set<uint64_t> r = visible(all.reads), w = visible(all.writes);
  if (pending_meets(r, w)) sync();
  const std::set<uint64_t> pre_r = read_since_, pre_w = written_since_;
  for (bool then_branch : {true, false}) {
    read_since_ = pre_r;
    written_since_ = pre_w;
    const ir::Stmt& branch = then_branch ? op.then_case : op.else_case;
    if (!branch.defined()) continue;
    line(then_branch ? "if (" + expr(op.cond) + ") {" : std::string("} else {"));
    indent();
    const std::optional<transform::ThreadRange> r = uniformity_.branch_range(&op, then_branch);
    if (!r) {
      // The rest of the group is not one range: no collective op there
      // (thread_uniformity checked), each thread's own code.
      emit_per_thread(branch);
    } else {
      if (transform::ThreadUniformity::collective(branch) && (r->first % 32 != 0 || r->count % 32 != 0)) {
        fail(ErrorKind::kValueError, op.span, "if",
             "the tile ops under this condition run on threads [" + str(r->first) + ", " +
                 str(r->first + r->count) + "), which are not whole warps; the CUDA backend runs "
                 "a tile op on a range of threads that starts and ends at a multiple of 32");
      }
      const transform::ThreadRange saved_group = group_;
      const int saved_barrier = group_barrier_;
      const std::string saved_index = group_index_, saved_count = group_count_;
      group_ = *r;
      const bool whole = r->first == 0 && r->count == threads_;
      if (!whole) {
        auto [it, added] = barrier_ids_.emplace(std::make_pair(r->first, r->count),
                                                int(barrier_ids_.size()) + 1);
        if (it->second > 15) {
          fail(ErrorKind::kValueError, op.span, "if",
               "more than 15 thread ranges run tile ops in this kernel; a block has 15 named "
               "barriers besides __syncthreads");
        }
        (void)added;
        group_barrier_ = it->second;
        group_index_ = r->first == 0 ? "tilejit_tid" : "(tilejit_tid - " + str(r->first) + ")";
        group_count_ = str(r->count);
      }
      line("// threads [" + str(r->first) + ", " + str(r->first + r->count) + ")");
      emit_stmt(branch);
      group_ = saved_group;
      group_barrier_ = saved_barrier;
      group_index_ = saved_index;
      group_count_ = saved_count;
    }
    dedent();
  }
  line("}");
  // A group's barriers order nothing for the other threads: past the if,
  // everything the branches did is pending.
  read_since_ = pre_r;
  written_since_ = pre_w;
  enter(all.reads, all.writes);
}

void CudaTileCodegen::before_stmt(const ir::Stmt& s) {
  if (own_code()) return;
  // What uniform code's own expressions read (bodies and tile ops are
  // entered where they are emitted).
  Accessed a;
  switch (s.kind()) {
    case ir::StmtKind::kLet: a.visit(s.as<ir::LetStmt>()->value); break;
    case ir::StmtKind::kEvaluate: a.visit(s.as<ir::EvaluateStmt>()->value); break;
    case ir::StmtKind::kIf: a.visit(s.as<ir::IfStmt>()->cond); break;
    case ir::StmtKind::kWhile: a.visit(s.as<ir::WhileStmt>()->cond); break;
    case ir::StmtKind::kFor:
      a.visit(s.as<ir::ForStmt>()->min);
      a.visit(s.as<ir::ForStmt>()->extent);
      break;
    default: return;
  }
  enter(a.reads, {});
}

}  // namespace tilejit::cuda
