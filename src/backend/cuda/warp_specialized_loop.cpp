// The two sides of a warp-specialised pipelined loop (Note [Warp
// specialisation] in warp_specialize.h): the producer warpgroup's branch
// before the kernel's body, and the consumers' loop in its place.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/tile_codegen.h"
#include "backend/cuda/tile_memory.h"

namespace tilejit::cuda {

using backend::Accessed;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

std::string CudaTileCodegen::release_line(size_t group, const std::string& stage) const {
  const std::string bar = "&" + ws_bars_[group].second + "[" + stage + "]";
  // Note [Cluster multicast]: on both blocks' barriers.
  return cluster_.shares(ws_.groups[group]) ? "tilejit::cuda::mbar_arrive_pair(" + bar + ");"
                         : "tilejit::cuda::mbar_arrive(" + bar + ");";
}

void CudaTileCodegen::emit_producer() {
  const ir::ForStmt& op = *ws_.loop;
  const std::vector<const ir::CopyOp*>& copies = pipelines_.loops.at(&op);
  const int stages = pipelines_.stages.at(copies.front()->dst.buffer.id());
  const int producer = WarpSpecialization::kProducerThreads;
  line("// Note [Warp specialisation]: threads [" + str(threads_) + ", " + str(threads_ + producer) +
       ") load the tiles of the T.Pipelined loop at line " + str(op.span.line) +
       ", threads [0, " + str(threads_) + ") run the kernel");
  ws_bars_.clear();
  for (const StageGroup& g : ws_.groups) {
    std::string names;
    for (const ir::CopyOp* c : g.copies) names += (names.empty() ? "" : ", ") + c->dst.buffer.name();
    const std::string name = g.copies.front()->dst.buffer.name();
    ws_bars_.push_back({fresh(name + "_landed"), fresh(name + "_free")});
    line("__shared__ uint64_t " + ws_bars_.back().first + "[" + str(stages) + "];  // " + names);
    line("__shared__ uint64_t " + ws_bars_.back().second + "[" + str(stages) + "];");
  }
  line("if (tilejit_tid == 0) {");
  indent();
  for (size_t g = 0; g < ws_bars_.size(); ++g) {
    const auto& [landed, free] = ws_bars_[g];
    // Note [Cluster multicast]: a stage both blocks of a pair fill is free
    // once a lane of each consumer warp of both has handed it back.
    const int64_t arrivals = cluster_.shares(ws_.groups[g]) ? 2 * (threads_ / 32) : threads_;
    for (int s = 0; s < stages; ++s) {
      line("tilejit::cuda::mbar_init(&" + landed + "[" + str(s) + "], 1);");
      line("tilejit::cuda::mbar_init(&" + free + "[" + str(s) + "], " + str(arrivals) + ");");
    }
  }
  line("tilejit::cuda::mbar_init_fence();");
  dedent();
  line("}");
  // The other block of the pair arrives on this one's barriers and writes
  // its tiles: the cluster's barrier orders the initialisation first.
  line(cluster_.on() ? "tilejit::cuda::cluster_sync();" : "__syncthreads();");
  line("if (tilejit_tid >= " + str(threads_) + ") {");
  indent();
  line("tilejit::cuda::set_registers<false, " + str(WarpSpecialization::kProducerRegisters) +
       ">();");
  line("if (tilejit_tid == " + str(threads_) + ") {");
  indent();
  // The loop's variable is the consumers' name again past the producer.
  // Note [Cluster multicast]: the block's place in its pair.
  const std::string rank = cluster_.on() ? fresh("tilejit_rank") : "";
  if (cluster_.on()) line("const unsigned " + rank + " = tilejit::cuda::cluster_rank();");
  const std::string consumer_k = var_name(op.var);
  const std::string k = fresh(consumer_k + "_load");
  const std::string lo = expr(op.min);
  const std::string end = loop_end(k, op, lo);
  line("for (int64_t " + k + " = " + lo + "; " + k + " < " + end + "; ++" + k + ") {");
  indent();
  bind_var(op.var, k);
  const std::string rel = "(" + k + " - " + lo + ")";
  const std::string stage = rel + " % " + str(stages);
  const std::string parity = "(unsigned(" + rel + " / " + str(stages) + ") & 1u)";
  for (size_t gi = 0; gi < ws_.groups.size(); ++gi) {
    const std::string landed = "&" + ws_bars_[gi].first + "[" + stage + "]";
    emit_mbar_wait(ws_bars_[gi].second, stage, parity + " ^ 1u");
    line("tilejit::cuda::mbar_expect_tx(" + landed + ", " + str(ws_.groups[gi].bytes) + ");");
    for (const ir::CopyOp* copy : ws_.groups[gi].copies) {
      const ir::Buffer& dst = copy->dst.buffer;
      // The stage's tile, where emit_alloc will place it.
      const int64_t bytes = tile_elements(dst) * dst.dtype().bytes();
      const int64_t stride = stage_bytes(bytes, true) / dst.dtype().bytes();
      const char* st = storage_type(dst.dtype(), copy->span, "T.copy");
      const std::string tile = "(reinterpret_cast<" + std::string(st) + "*>(tilejit_smem + " +
                               str(tiles_.offsets.at(dst.id())) + ") + " + stage + " * " +
                               str(stride) + ")";
      const auto half = cluster_.halves.find(copy);
      emit_tma_copy(pipelines_.issued(copy), tma_.copies.at(copy), tile, landed,
                    half == cluster_.halves.end() ? -1 : half->second, rank);
    }
  }
  bind_var(op.var, consumer_k);
  dedent();
  line("}");
  if (cluster_.on()) {
    // Note [Cluster multicast]: the block leaves once the other block's
    // consumers have made their last arrivals on its barriers.
    line("for (int64_t " + k + " = " + end + "; " + k + " < " + end + " + " + str(stages) + "; ++" +
         k + ") {");
    indent();
    for (size_t gi = 0; gi < ws_.groups.size(); ++gi) {
      if (cluster_.shares(ws_.groups[gi])) emit_mbar_wait(ws_bars_[gi].second, stage, parity + " ^ 1u");
    }
    dedent();
    line("}");
  }
  dedent();
  line("}");
  line("return;");
  dedent();
  line("}");
  line("tilejit::cuda::set_registers<true, " + str(ws_.consumer_registers) + ">();");
}

void CudaTileCodegen::emit_consumer_loop(const ir::ForStmt& op,
                                         const std::vector<const ir::CopyOp*>& copies) {
  const int stages = pipelines_.stages.at(copies.front()->dst.buffer.id());
  const std::string k = var_name(op.var);
  const std::string lo = expr(op.min);
  const std::string end = loop_end(k, op, lo);
  const std::vector<ir::Stmt>& body = ws_.body;
  // The body's hazards with what comes before it and across its back edge,
  // as for any loop (emit_body), but for the stages, which the barriers
  // order.
  std::set<uint64_t> reads, writes;
  for (const ir::Stmt& s : body) {
    const Accessed a = body_accesses(s);
    reads.insert(a.reads.begin(), a.reads.end());
    writes.insert(a.writes.begin(), a.writes.end());
  }
  for (const ir::CopyOp* copy : copies) {
    reads.erase(copy->dst.buffer.id());
    writes.erase(copy->dst.buffer.id());
  }
  const std::set<uint64_t> r = visible(reads), w = visible(writes);
  const std::set<uint64_t> pre_r = read_since_, pre_w = written_since_;
  if (pending_meets(r, w)) sync();
  if (!ws_.schedule.groups.empty()) {
    emit_scheduled_loop(op, copies, lo, end, stages, r, w);
    merge_pending(pre_r, pre_w);
    return;
  }
  line("// T.Pipelined(num_stages=" + str(stages) + "): warp-specialised, " +
       str(int64_t(copies.size())) + " tile loads through " + str(stages) + " stages" +
       (coarse_.factor > 1 ? " (Note [Coarser K steps]: " + str(coarse_.factor) +
                                 " of the program's K steps of " + str(coarse_.k_step) +
                                 " per iteration)"
                           : ""));
  line("for (int64_t " + k + " = " + lo + "; " + k + " < " + end + "; ++" + k + ") {");
  indent();
  const std::string rel = "(" + k + " - " + lo + ")";
  const std::string stage = rel + " % " + str(stages);
  const std::map<uint64_t, backend::BufferAccess> saved = bind_stages(copies, stage);
  // Each group is waited for before the first statement that reads it and
  // handed back after the last (both at the end where none does).
  auto wait = [&](size_t g) {
    emit_mbar_wait(ws_bars_[g].first, stage, "unsigned(" + rel + " / " + str(stages) + ") & 1u");
  };
  auto release = [&](size_t g) {
    line(release_line(g, stage));
  };
  if (ws_.gemm_in_flight) {
    emit_gemm_in_flight(lo, stages);
  } else {
    for (size_t i = 0; i <= body.size(); ++i) {
      for (size_t g = 0; g < ws_.groups.size(); ++g) {
        if (ws_.groups[g].first == i) wait(g);
      }
      if (i < body.size()) emit_stmt(body[i]);
      for (size_t g = 0; g < ws_.groups.size(); ++g) {
        if (ws_.groups[g].last == i) release(g);
      }
    }
  }
  if (pending_meets(r, w)) sync();
  for (const ir::CopyOp* copy : copies) set_access(copy->dst.buffer, saved.at(copy->dst.buffer.id()));
  dedent();
  line("}");
  if (ws_.gemm_in_flight) {
    const auto& gemm = *body.front().as<ir::GemmOp>();
    line("tilejit::cuda::acc_wgmma_wait<" + layout_type(*register_layout(gemm.c.buffer)) + ", 0>(" +
         access(gemm.c.buffer, gemm.span, "T.gemm").name + ");  // the loop's last gemm");
    // Note [Cluster multicast]: the other block's producer waits for the
    // last stage too before it leaves.
    if (cluster_.on()) {
      line("if (" + end + " > " + lo + ") {");
      indent();
      for (size_t g = 0; g < ws_bars_.size(); ++g) {
        if (cluster_.shares(ws_.groups[g])) line(release_line(g, "(" + end + " - 1 - " + lo + ") % " + str(stages)));
      }
      dedent();
      line("}");
    }
  }
  merge_pending(pre_r, pre_w);
}

// Note [Warp specialisation]: a GEMM's main loop, the gemm of iteration k
// left running while the stage of k - 1 is handed back.
void CudaTileCodegen::emit_gemm_in_flight(const std::string& lo, int stages) {
  const auto& gemm = *ws_.body.front().as<ir::GemmOp>();
  const std::string k = var_name(ws_.loop->var);
  const std::string rel = "(" + k + " - " + lo + ")";
  const std::string stage = rel + " % " + str(stages);
  for (const auto& bars : ws_bars_) {
    emit_mbar_wait(bars.first, stage, "unsigned(" + rel + " / " + str(stages) + ") & 1u");
  }
  gemm_issue_only_ = true;
  emit_stmt(ws_.body.front());
  gemm_issue_only_ = false;
  line("tilejit::cuda::acc_wgmma_wait<" + layout_type(*register_layout(gemm.c.buffer)) + ", 1>(" +
       access(gemm.c.buffer, gemm.span, "T.gemm").name + ");  // the gemm of " + k + " - 1 is done");
  line("if (" + k + " > " + lo + ") {");
  indent();
  const std::string previous = "(" + rel + " + " + str(stages - 1) + ") % " + str(stages);
  for (const auto& bars : ws_bars_) {
    line(release_line(size_t(&bars - ws_bars_.data()), previous));
  }
  dedent();
  line("}");
}

std::map<uint64_t, backend::BufferAccess> CudaTileCodegen::bind_stages(
    const std::vector<const ir::CopyOp*>& copies, const std::string& stage) {
  std::map<uint64_t, backend::BufferAccess> saved;
  for (const ir::CopyOp* copy : copies) {
    const ir::Buffer& dst = copy->dst.buffer;
    const auto& [base, stride] = staged_.at(dst.id());
    backend::BufferAccess a = access(dst, copy->span, "T.copy");
    saved.emplace(dst.id(), a);
    const std::string name = fresh(dst.name());
    line(std::string(storage_type(dst.dtype(), copy->span, "T.copy")) + "* const " + name + " = " +
         base + " + " + stage + " * " + str(stride) + ";");
    a.name = a.data = name;
    set_access(dst, a);
  }
  return saved;
}

}  // namespace tilejit::cuda
