// Note [Warp specialisation] in warp_specialize.h.
#include "backend/cuda/warp_specialize.h"

#include <algorithm>
#include <map>
#include <set>

#include "backend/common/accesses.h"
#include "backend/cuda/infer_layouts.h"
#include "backend/cuda/warpgroup_gemms.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

// What an expression the producer computes reads that the producer does
// not have: the first such variable or buffer, by name; empty when none.
struct ProducerReads : ir::IRVisitor {
  std::set<uint64_t> vars;               // the loop and block variables
  const std::vector<std::string>* symbols = nullptr;
  const std::set<uint64_t>* written = nullptr;  // the buffers the kernel writes
  std::string missing;
  void visit_var(const ir::VarNode*, const ir::Expr& e) override {
    if (vars.count(e.var_id())) return;
    if (std::find(symbols->begin(), symbols->end(), e.var_name()) != symbols->end()) return;
    if (missing.empty()) missing = "'" + e.var_name() + "', which the kernel computes";
  }
  void visit_load(const ir::LoadNode* op, const ir::Expr& e) override {
    const ir::Buffer& b = op->buffer;
    if ((b.scope() != ir::Scope::kGlobal || written->count(b.id())) && missing.empty()) {
      missing = "'" + b.name() + "', which the kernel writes";
    }
    ir::IRVisitor::visit_load(op, e);
  }
};

int round8(int64_t v) { return int(v / 8 * 8); }

// The registers the kernel's widest wgmma takes at once: ptxas fits every
// instruction within the launch's registers per thread (setmaxnreg moves
// registers between warpgroups, not under one instruction). Measured: an
// m64n128k16 needs 90, and fails to assemble at 3 blocks of 256 threads
// (80 each). Its accumulator's words (N / 2) and 32 for the rest.
int64_t widest_instruction(const ir::KernelStmt& kernel) {
  struct Gemms : ir::IRVisitor {
    int64_t widest = 0;
    void visit_gemm(const ir::GemmOp* op, const ir::Stmt&) override {
      const int columns = warpgroup_gemm(*op).columns;
      if (columns > 0) widest = std::max<int64_t>(widest, columns / 2 + 32);
    }
  } gemms;
  gemms.visit(kernel.body);
  return gemms.widest;
}

// A gemm left running (Note [Warp specialisation]) needs this many flops of
// gemm per iteration times the stages past 2: 128 x 256 x 64 in 3 stages.
constexpr int64_t kInFlightFlops = 2 * 128 * 256 * 64;

// Note [Warpgroup ping-pong]
// In a scheduled loop (Note [Scheduled pipelines]) each consumer warpgroup
// issues its gemms together (flash attention's Q K^T of iteration t and
// P V of t - 1), then runs its softmax while they run. With two
// warpgroups, FlashAttention-3 makes them take turns: one issues its gemms
// while the other runs its softmax, so that the tensor cores see one
// warpgroup's gemms after the other's instead of both at once and then
// none. Each warpgroup waits for its turn (named barrier 14 + its index,
// 256 threads: its own 128 and the other's arrival) before its first gemm
// of an iteration and hands the turn over (bar.arrive on the other's) after
// its last; warpgroup 1 hands warpgroup 0 the first turn before the loop,
// and does not hand over after its last iteration, so every barrier
// completes. It applies where nothing but the turns orders the two
// warpgroups in the loop: 256 consumer threads, every register fragment in
// a warpgroup layout whose rows are its own (wgmma's, one warpgroup a
// column), no shared memory written in the loop (no barrier across the
// warpgroups there) and no thread ranges or other conditions that send a
// block's threads different ways (a thread range's ops synchronise on named
// barriers the turns would share). A condition decided per block (causal
// attention's diagonal block, Note [Conditions decided per block]) sends
// both warpgroups the same way and leaves the turns alone.
bool pingpong_fits(const ir::KernelStmt& kernel, const std::vector<ir::Stmt>& body, int threads,
                   const transform::ThreadUniformity& uniformity) {
  if (threads != 256) return false;
  for (const ir::Buffer& b : kernel_tiles(kernel)) {
    const FragmentLayout* l = register_layout(b);
    if (l != nullptr && (!l->il_rows || l->wn != 1 || l->wr != 1)) return false;
  }
  backend::Accessed a;
  for (const ir::Stmt& s : body) a.visit(s);
  for (uint64_t id : a.writes) {
    bool registers = false;
    for (const ir::Buffer& b : kernel_tiles(kernel)) {
      if (b.id() == id) registers = register_layout(b) != nullptr || b.scope() == ir::Scope::kLocal;
    }
    if (!registers) return false;
  }
  struct Divergent : ir::IRVisitor {
    const transform::ThreadUniformity* u = nullptr;
    bool found = false;
    void visit_if(const ir::IfStmt* op, const ir::Stmt& s) override {
      found = found || u->divergent(s);
      ir::IRVisitor::visit_if(op, s);
    }
  } divergent;
  divergent.u = &uniformity;
  divergent.visit(kernel.body);
  return !divergent.found;
}

}  // namespace

WarpSpecialization plan_warp_specialization(const ir::KernelStmt& kernel,
                                            const std::vector<std::string>& symbols, int threads,
                                            const PipelinePlan& pipelines, const TmaPlan& tma,
                                            const SmemPlan& tiles,
                                            const transform::ThreadUniformity& uniformity,
                                            bool enabled) {
  WarpSpecialization ws;
  const ir::ForStmt* loop = nullptr;
  for (const auto& [l, copies] : pipelines.loops) {
    for (const ir::CopyOp* c : copies) {
      if (tma.copies.count(c)) loop = l;
    }
  }
  if (loop == nullptr) return ws;  // nothing for a producer to do
  auto refuse = [&](const std::string& why) {
    ws.refused = "not warp-specialised: " + why;
    return ws;
  };
  if (!enabled) return refuse("turned off (tl.disable_warp_specialized)");
  if (threads % 128 != 0) return refuse(std::to_string(threads) + " threads are not whole warpgroups");
  if (threads + WarpSpecialization::kProducerThreads > 1024) {
    return refuse(std::to_string(threads) + " threads leave no room for a producer warpgroup");
  }
  if (pipelines.loops.size() != 1) return refuse("more than one loop of the kernel prefetches");
  for (const ir::CopyOp* c : pipelines.loops.begin()->second) {
    if (!tma.copies.count(c)) return refuse("a prefetch of the loop is not a TMA copy");
  }
  bool top = false;
  for (const ir::Stmt& s : flatten(kernel.body)) top = top || s.get() == loop;
  if (!top) return refuse("the loop is inside another loop or a branch");
  backend::Accessed accessed;
  accessed.visit(kernel.body);
  // The producer fills the stages from the block's start: no tile the body
  // uses before the loop may share their bytes.
  backend::Accessed before;
  for (const ir::Stmt& s : flatten(kernel.body)) {
    if (s.get() == loop) break;
    before.visit(s);
  }
  for (const ir::CopyOp* c : pipelines.loops.begin()->second) {
    const uint64_t id = c->dst.buffer.id();
    const int64_t lo = tiles.offsets.at(id), hi = lo + tiles.bytes.at(id);
    for (const auto& [other, at] : tiles.offsets) {
      const bool used = before.ids.count(other) || before.reads.count(other) ||
                        before.writes.count(other);
      if (other == id || !used || at >= hi || at + tiles.bytes.at(other) <= lo) {
        continue;
      }
      return refuse("a tile used before the loop shares the bytes of " + c->dst.buffer.name() +
                    "'s stages");
    }
  }
  ProducerReads reads;
  reads.symbols = &symbols;
  reads.written = &accessed.writes;
  reads.vars.insert(loop->var.var_id());
  for (const ir::Expr& v : kernel.block_vars) reads.vars.insert(v.var_id());
  reads.visit(loop->min);
  reads.visit(loop->extent);
  if (!reads.missing.empty()) return refuse("the loop's bounds read " + reads.missing);
  for (const ir::CopyOp* c : pipelines.loops.begin()->second) {
    for (const ir::Range& r : pipelines.issued(c).src.ranges) {
      reads.visit(r.min);
      reads.visit(r.extent);
    }
    if (!reads.missing.empty()) {
      return refuse("the region of the copy at line " + std::to_string(c->span.line) + " reads " +
                    reads.missing);
    }
  }
  ws.loop = loop;
  // The groups, by the statement that first reads them.
  const std::vector<const ir::CopyOp*>& copies = pipelines.loops.begin()->second;
  std::set<const ir::StmtNode*> prefetched(copies.begin(), copies.end());
  for (const ir::Stmt& s : flatten(loop->body)) {
    if (!prefetched.count(s.get())) ws.body.push_back(s);
  }
  std::map<size_t, size_t> group_at;  // first read -> index in ws.groups
  for (const ir::CopyOp* c : copies) {
    const uint64_t id = c->dst.buffer.id();
    size_t first = ws.body.size(), last = ws.body.size();
    for (size_t i = 0; i < ws.body.size(); ++i) {
      backend::Accessed a;
      a.visit(ws.body[i]);
      if (!a.reads.count(id) && !a.ids.count(id)) continue;
      if (first == ws.body.size()) first = i;
      last = i;
    }
    auto [it, added] = group_at.emplace(first, ws.groups.size());
    if (added) ws.groups.push_back({{}, first, last, 0});
    StageGroup& g = ws.groups[it->second];
    g.copies.push_back(c);
    g.last = std::max(g.last, last);
    g.bytes += tma.copies.at(c).bytes;
  }
  // Note [Inferred schedules]: a loop without order/stage may get one.
  const std::vector<ir::Stmt> all = flatten(loop->body);
  const bool written = !loop->schedule.empty();
  const std::string refusal = written ? kNotApplied : kNotInferred;
  const InferredSchedule inferred = written ? InferredSchedule{} : infer_schedule(*loop, all, copies);
  ws.schedule = plan_schedule(written ? loop->schedule : inferred.schedule, all, ws.body, copies,
                              refusal);
  if (ws.schedule.refused.empty()) ws.schedule.refused = inferred.declined;
  // The copy groups each scheduled group reads; every reader of one runs in
  // one iteration of the schedule.
  for (ScheduledGroup& sg : ws.schedule.groups) {
    for (size_t i : sg.stmts) {
      backend::Accessed a;
      a.visit(ws.body[i]);
      for (size_t g = 0; g < ws.groups.size(); ++g) {
        for (const ir::CopyOp* c : ws.groups[g].copies) {
          if (a.reads.count(c->dst.buffer.id())) sg.stages_read.insert(g);
        }
      }
    }
  }
  for (size_t g = 0; g < ws.groups.size() && !ws.schedule.groups.empty(); ++g) {
    int lag = -1;
    for (const ScheduledGroup& sg : ws.schedule.groups) {
      if (!sg.stages_read.count(g)) continue;
      if (lag >= 0 && lag != sg.stage) {
        ws.schedule.groups.clear();
        ws.schedule.refused = refusal + ": groups of different stages read " +
                              ws.groups[g].copies.front()->dst.buffer.name();
        break;
      }
      lag = sg.stage;
    }
  }
  ws.pingpong = !ws.schedule.groups.empty() && pingpong_fits(kernel, ws.body, threads, uniformity);
  if (ws.body.size() == 1) {
    const auto* gemm = ws.body[0].as<ir::GemmOp>();
    const WarpgroupGemm wg = gemm ? warpgroup_gemm(*gemm) : WarpgroupGemm{};
    // A stage comes back one gemm later, so the loads run one stage less
    // ahead: worth it where the stages left still cover a load's latency
    // (measured on the H200: 128 x 256 x 64 tiles in 3 stages gain 3%,
    // 128 x 128 x 32 ones lose 4-6%, and 2 stages lose 25%).
    int64_t flops = 0;
    if (gemm != nullptr) {
      const ir::Buffer& a = gemm->a.buffer;
      const ir::Buffer& c = gemm->c.buffer;
      const bool shapes = a.rank() == 2 && c.rank() == 2 && a.shape()[0].is_const() &&
                          a.shape()[1].is_const() && c.shape()[0].is_const() &&
                          c.shape()[1].is_const();
      if (shapes) {
        flops = 2 * c.shape()[0].int_value() * c.shape()[1].int_value() *
                a.shape()[gemm->trans_a ? 0 : 1].int_value();
      }
    }
    const int stages = pipelines.stages.at(copies.front()->dst.buffer.id());
    ws.gemm_in_flight = wg.columns > 0 && !wg.a_in_registers &&
                        flops * (stages - 2) >= kInFlightFlops &&
                        std::all_of(ws.groups.begin(), ws.groups.end(),
                                    [](const StageGroup& g) { return g.first == 0; });
  }
  // The consumers' registers: their fragments' words and 64 more.
  int64_t need = 64;
  for (const ir::Buffer& b : kernel_tiles(kernel)) {
    if (const FragmentLayout* l = register_layout(b)) need += l->words(b.dtype().bytes());
  }
  // As many blocks per multiprocessor as shared memory allows (228 KiB, 1
  // KiB of it the block's reserve and 1 KiB the mbarriers), while the
  // consumers keep what they need of the block's share of the registers
  // (the producer keeps kProducerRegisters).
  const int launch = ws.launch_threads(threads);
  const int64_t widest = widest_instruction(kernel);
  const int64_t smem = tiles.total + 2048;
  const int most = int(std::max<int64_t>(1, std::min<int64_t>(233472 / smem, 2048 / launch)));
  for (int blocks = std::min(most, 4); blocks >= 1; --blocks) {
    const int64_t at_launch = std::min<int64_t>(round8(65536 / (int64_t(launch) * blocks)), 248);
    const int64_t left = at_launch * launch -
                         int64_t(WarpSpecialization::kProducerThreads) *
                             WarpSpecialization::kProducerRegisters;
    ws.blocks = blocks;
    ws.consumer_registers = std::min(round8(left / threads), 240);
    if (ws.consumer_registers >= need && at_launch >= widest) break;
  }
  return ws;
}

}  // namespace tilejit::cuda
