// The consumers' loop of a warp-specialised T.Pipelined with a schedule
// (Note [Scheduled pipelines] in pipeline_schedule.h), and the gemms it
// leaves running.
//
// Note [Gemms left running]
// In a scheduled loop a wgmma gemm is committed and not waited for: the
// statements after it run while it does. Before a statement that touches
// its accumulator (or an RS gemm's A fragment) or writes a shared tile it
// reads, the consumers wait until it is done (wgmma.wait_group N, N the
// gemms issued after it), and the "free" barrier of a stage it reads is
// arrived at only then. At the end of each iteration every gemm is done.
// So flash attention's softmax of iteration t overlaps the gemm P V of
// t - 1, issued right after Q K^T of t.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/common/accesses.h"
#include "backend/cuda/tile_codegen.h"
#include "backend/cuda/warpgroup_gemms.h"

namespace tilejit::cuda {

using backend::Accessed;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

void CudaTileCodegen::emit_scheduled_loop(const ir::ForStmt& op,
                                          const std::vector<const ir::CopyOp*>& copies,
                                          const std::string& lo, const std::string& end,
                                          int stages, const std::set<uint64_t>& reads,
                                          const std::set<uint64_t>& writes) {
  const std::vector<ScheduledGroup>& groups = ws_.schedule.groups;
  const std::vector<ir::Stmt>& body = ws_.body;
  const std::string k = var_name(op.var);
  struct Running {
    std::string wait;  // C++ after "acc_wgmma_wait<": "<layout>, " then N and the acc
    std::string acc, layout, pin;
    std::set<uint64_t> registers, shared;
    std::vector<std::string> releases;
  };
  std::vector<Running> running;
  auto wait_through = [&](size_t j) {  // until running[j] and all before it are done
    const int after = int(running.size() - 1 - j);
    for (size_t i = 0; i <= j; ++i) {
      line("tilejit::cuda::acc_wgmma_wait<" + running[i].layout + ", " + str(after) + ">(" +
           running[i].acc + ");");
      if (!running[i].pin.empty()) line(running[i].pin);
    }
    for (size_t i = 0; i <= j; ++i) {
      for (const std::string& r : running[i].releases) line(r);
    }
    running.erase(running.begin(), running.begin() + long(j) + 1);
  };
  // One iteration's worth: the groups of `stages_run` in order, a stage-s
  // group for the iteration named names[s].
  auto is_wg_gemm = [&](const ir::Stmt& st) {
    const auto* gemm = st.as<ir::GemmOp>();
    return gemm != nullptr && warpgroup_gemm(*gemm).columns > 0 &&
           register_layout(gemm->c.buffer) != nullptr;
  };
  auto section = [&](const std::vector<std::string>& names, const std::set<int>& stages_run,
                     const std::string& last) {
    // Note [Warpgroup ping-pong]: the section's gemms, issued in its turn.
    int turn_gemms = 0;
    for (const ScheduledGroup& sg : groups) {
      if (!stages_run.count(sg.stage)) continue;
      for (size_t i : sg.stmts) turn_gemms += is_wg_gemm(body[i]);
    }
    int issued = 0;
    std::map<uint64_t, backend::BufferAccess> saved;  // the tiles' accesses before
    // Each copy group's stage tile for each lag, named once.
    std::map<std::pair<uint64_t, int>, backend::BufferAccess> tiles;
    for (int s : stages_run) {
      const std::string stage = "(" + names[size_t(s)] + " - " + lo + ") % " + str(stages);
      std::map<uint64_t, backend::BufferAccess> before = bind_stages(copies, stage);
      if (saved.empty()) saved = std::move(before);
      for (const ir::CopyOp* c : copies) {
        tiles[{c->dst.buffer.id(), s}] = access(c->dst.buffer, c->span, "T.copy");
      }
    }
    std::set<size_t> waited;
    for (size_t g = 0; g < groups.size(); ++g) {
      const int s = groups[g].stage;
      if (!stages_run.count(s)) continue;
      const std::string& iter = names[size_t(s)];
      bind_var(op.var, iter);
      for (const ir::CopyOp* c : copies) set_access(c->dst.buffer, tiles.at({c->dst.buffer.id(), s}));
      const std::string rel = "(" + iter + " - " + lo + ")";
      for (size_t c : groups[g].stages_read) {
        if (!waited.insert(c).second) continue;
        emit_mbar_wait(ws_bars_[c].first, rel + " % " + str(stages),
                       "unsigned(" + rel + " / " + str(stages) + ") & 1u");
      }
      for (size_t i : groups[g].stmts) {
        const ir::Stmt& st = body[i];
        Accessed a;
        a.visit(st);
        for (size_t j = running.size(); j-- > 0;) {
          bool touches = false;
          for (uint64_t id : running[j].registers) touches = touches || a.ids.count(id) ||
                                                              a.reads.count(id) ||
                                                              a.writes.count(id);
          for (uint64_t id : running[j].shared) touches = touches || a.writes.count(id);
          if (touches) {
            wait_through(j);
            break;
          }
        }
        const auto* gemm = st.as<ir::GemmOp>();
        if (!is_wg_gemm(st)) {
          emit_stmt(st);
          continue;
        }
        if (ws_.pingpong && issued == 0) line("tilejit::cuda::wg_turn_wait();");
        gemm_issue_only_ = true;
        emit_stmt(st);
        gemm_issue_only_ = false;
        if (ws_.pingpong && ++issued == turn_gemms) {
          line("tilejit::cuda::wg_turn_pass(" + last + ");");
        }
        Running r;
        r.layout = layout_type(*register_layout(gemm->c.buffer));
        r.acc = access(gemm->c.buffer, gemm->span, "T.gemm").name;
        r.pin = issued_pin_;
        r.registers = {gemm->c.buffer.id()};
        if (register_layout(gemm->a.buffer) != nullptr) {
          r.registers.insert(gemm->a.buffer.id());
        } else {
          r.shared.insert(gemm->a.buffer.id());
        }
        r.shared.insert(gemm->b.buffer.id());
        running.push_back(std::move(r));
      }
      // Stages no later group of this iteration reads go back to the
      // producer, once the gemms that read them are done.
      for (size_t c : groups[g].stages_read) {
        bool later = false;
        for (size_t h = g + 1; h < groups.size(); ++h) {
          later = later || (stages_run.count(groups[h].stage) && groups[h].stages_read.count(c));
        }
        if (later) continue;
        const std::string release = "tilejit::cuda::mbar_arrive(&" + ws_bars_[c].second + "[" +
                                    rel + " % " + str(stages) + "]);";
        std::set<uint64_t> tiles_of_c;
        for (const ir::CopyOp* copy : ws_.groups[c].copies) tiles_of_c.insert(copy->dst.buffer.id());
        size_t reader = running.size();
        for (size_t j = 0; j < running.size(); ++j) {
          for (uint64_t id : running[j].shared) {
            if (tiles_of_c.count(id)) reader = j;
          }
        }
        if (reader == running.size()) {
          line(release);
        } else {
          running[reader].releases.push_back(release);
        }
      }
    }
    if (!running.empty()) wait_through(running.size() - 1);
    bind_var(op.var, k);
    for (const ir::CopyOp* c : copies) set_access(c->dst.buffer, saved.at(c->dst.buffer.id()));
  };
  // Note [Scheduled pipelines]: prologue, steady state, epilogue.
  line("// T.Pipelined(num_stages=" + str(stages) + ", order=, stage=): warp-specialised, " +
       str(int64_t(groups.size())) + " groups in their order, one iteration apart at most");
  line("if (" + end + " > " + lo + ") {");
  indent();
  if (ws_.pingpong) {
    line("// Note [Warpgroup ping-pong]: the consumer warpgroups take turns at their gemms");
    line("tilejit::cuda::wg_turn_first();");
  }
  {
    line("{");
    indent();
    const std::string first = fresh(k + "_first");
    line("const int64_t " + first + " = " + lo + ";");
    section({first, first}, {0}, "false");
    dedent();
    line("}");
  }
  line("for (int64_t " + k + " = " + lo + " + 1; " + k + " < " + end + "; ++" + k + ") {");
  indent();
  const std::string previous = fresh(k + "_previous");
  line("const int64_t " + previous + " = " + k + " - 1;");
  // The steady state's turn is warpgroup 1's last where the epilogue issues
  // no gemm.
  bool epilogue_gemms = false;
  for (const ScheduledGroup& sg : groups) {
    for (size_t i : sg.stmts) epilogue_gemms = epilogue_gemms || (sg.stage == 1 && is_wg_gemm(body[i]));
  }
  section({k, previous}, {0, 1}, epilogue_gemms ? "false" : k + " + 1 == " + end);
  if (pending_meets(reads, writes)) sync();  // across the back edge
  dedent();
  line("}");
  {
    line("{");
    indent();
    const std::string last = fresh(k + "_last");
    line("const int64_t " + last + " = " + end + " - 1;");
    section({last, last}, {1}, "true");
    dedent();
    line("}");
  }
  dedent();
  line("}");
}

}  // namespace tilejit::cuda
