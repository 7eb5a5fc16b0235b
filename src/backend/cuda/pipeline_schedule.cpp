// Note [Scheduled pipelines] in pipeline_schedule.h.
#include "backend/cuda/pipeline_schedule.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "backend/common/accesses.h"
#include "backend/cuda/fragment_uses.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The variables a group defines (its lets) and uses.
struct Vars : ir::IRVisitor {
  std::set<uint64_t> defined, used;
  std::map<uint64_t, std::string> names;
  void visit_let(const ir::LetStmt* op, const ir::Stmt& s) override {
    defined.insert(op->var.var_id());
    names[op->var.var_id()] = op->var.var_name();
    ir::IRVisitor::visit_let(op, s);
  }
  void visit_var(const ir::VarNode*, const ir::Expr& e) override {
    used.insert(e.var_id());
    names[e.var_id()] = e.var_name();
  }
};

struct Group {
  int order = -1, stage = -1;
  size_t first = 0;  // its first statement's index in the flattened body
  backend::Accessed access;
  Vars vars;
};

bool conflict(const Group& a, const Group& b, const std::set<uint64_t>& stages) {
  auto hits = [&](const std::set<uint64_t>& x, const std::set<uint64_t>& y) {
    for (uint64_t id : x) {
      if (y.count(id) && !stages.count(id)) return true;
    }
    return false;
  };
  return hits(a.access.writes, b.access.reads) || hits(a.access.writes, b.access.writes) ||
         hits(a.access.reads, b.access.writes);
}

// Dimension d of a gemm operand's 2-D buffer, 0 where it is not constant.
int64_t gemm_dim(const ir::Buffer& b, size_t d) {
  return b.rank() == 2 ? std::max<int64_t>(dim(b, d), 0) : 0;
}

// Note [Inferred schedules]: the gemms' work per element of the score tile,
// in multiply-adds (the depth of the gemms into it plus the output's
// width), under which the overlap does not pay. Measured on the H200 with
// flash attention's 128 x 128 tiles on 256 threads: at head dim 128 (256)
// 574 TFLOP/s against 558 in program order; at head dim 64 (128) 369
// against 382, and causal 310 against 332.
constexpr int64_t kMinGemmDepth = 256;

// The prologue and the epilogue print the stage-0 and stage-1 groups once
// more, which NVRTC compiles again: flash attention at head dim 128 in 780
// ms against 490 in program order. A loop of fewer iterations than this has
// little to overlap (GQA decoding's 8: 0.0878 ms inferred, 0.0874 in
// program order), and a body with a branch (causal attention's conditions
// decided per block, printed once per case) gains 2% (513 against 502
// TFLOP/s) for 980 ms of NVRTC against 550: neither is inferred.
constexpr int64_t kMinIterations = 16;

bool has_branch(const ir::Stmt& s) {
  struct Ifs : ir::IRVisitor {
    bool found = false;
    void visit_if(const ir::IfStmt*, const ir::Stmt&) override { found = true; }
  } ifs;
  ifs.visit(s);
  return ifs.found;
}

// The most iterations a loop of extent `e` runs, where its constants say.
std::optional<int64_t> most(const ir::Expr& e) {
  if (e.is_const()) return e.int_value();
  if (e.kind() == ir::ExprKind::kMin) {
    const std::optional<int64_t> a = most(e.a()), b = most(e.b());
    if (a && b) return std::min(*a, *b);
    return a ? a : b;
  }
  if (e.kind() == ir::ExprKind::kMax) {
    const std::optional<int64_t> a = most(e.a()), b = most(e.b());
    if (a && b) return std::max(*a, *b);
  }
  return std::nullopt;
}

}  // namespace

PipelineScheduling plan_schedule(const ir::PipelineSchedule& sched,
                                 const std::vector<ir::Stmt>& all,
                                 const std::vector<ir::Stmt>& body,
                                 const std::vector<const ir::CopyOp*>& prefetched,
                                 const std::string& refusal) {
  PipelineScheduling out;
  if (sched.empty()) return out;
  auto refuse = [&](const std::string& why) {
    out.groups.clear();
    out.refused = refusal + ": " + why;
    return out;
  };
  size_t count = 0;
  for (const std::vector<int>& g : sched.group) count += g.size();
  if (count != all.size()) {
    return refuse("the schedule counts " + str(int64_t(count)) + " statements, the lowered body " +
                  str(int64_t(all.size())));
  }
  std::set<const ir::StmtNode*> copies(prefetched.begin(), prefetched.end());
  std::set<uint64_t> stages;
  for (const ir::CopyOp* c : prefetched) stages.insert(c->dst.buffer.id());
  std::map<const ir::StmtNode*, size_t> in_body;
  for (size_t i = 0; i < body.size(); ++i) in_body[body[i].get()] = i;
  std::vector<Group> groups;
  std::vector<ScheduledGroup> kept;  // by group, the prefetches' left empty
  for (size_t g = 0; g < sched.group.size(); ++g) {
    Group grp;
    grp.order = sched.order[g];
    grp.stage = sched.stage[g];
    grp.first = size_t(sched.group[g].front());
    ScheduledGroup sg;
    sg.stage = grp.stage;
    for (int i : sched.group[g]) {
      const ir::Stmt& s = all[size_t(i)];
      const bool copy = copies.count(s.get()) != 0;
      if (copy != (grp.stage == -1)) {
        return refuse(copy ? "statement " + str(i) + " is a prefetched copy in a group of stage " +
                                 str(grp.stage)
                           : "statement " + str(i) + " of a stage -1 group is not a prefetched "
                                                     "copy");
      }
      if (grp.stage > 1) return refuse("stage " + str(grp.stage) + " (one iteration behind at most)");
      grp.access.visit(s);
      grp.vars.visit(s);
      if (!copy) sg.stmts.push_back(in_body.at(s.get()));
    }
    groups.push_back(std::move(grp));
    kept.push_back(std::move(sg));
  }
  // Each pair of conflicting groups, in one iteration or consecutive ones,
  // keeps its program order: (iteration i, group a) before (i + d, group b).
  for (size_t a = 0; a < groups.size(); ++a) {
    for (size_t b = 0; b < groups.size(); ++b) {
      const Group& ga = groups[a];
      const Group& gb = groups[b];
      if (ga.stage < 0 || gb.stage < 0) continue;
      for (const uint64_t v : gb.vars.used) {
        if (a != b && ga.vars.defined.count(v)) {
          return refuse("statement " + str(int64_t(gb.first)) + " uses '" + gb.vars.names.at(v) +
                        "', which another group defines");
        }
      }
      if (!conflict(ga, gb, stages)) continue;
      for (int d = 0; d <= 1; ++d) {
        if (d == 0 && a >= b) continue;  // program order within an iteration: a first
        const int ta = ga.stage, tb = d + gb.stage;
        const bool kept_order = ta < tb || (ta == tb && ga.order < gb.order);
        if (!kept_order) {
          return refuse("it runs statement " + str(int64_t(gb.first)) +
                        (d ? " of the next iteration" : "") + " before statement " +
                        str(int64_t(ga.first)) + ", and they touch the same buffer");
        }
      }
    }
  }
  std::vector<size_t> by_order;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].stage >= 0) by_order.push_back(g);
  }
  std::sort(by_order.begin(), by_order.end(),
            [&](size_t x, size_t y) { return groups[x].order < groups[y].order; });
  for (size_t g : by_order) out.groups.push_back(kept[g]);
  return out;
}

InferredSchedule infer_schedule(const ir::ForStmt& loop, const std::vector<ir::Stmt>& all,
                                const std::vector<const ir::CopyOp*>& prefetched) {
  const std::set<const ir::StmtNode*> copies(prefetched.begin(), prefetched.end());
  std::vector<int> body;  // the consumers' statements, by index in `all`
  bool branch = false;
  for (size_t i = 0; i < all.size(); ++i) {
    if (copies.count(all[i].get())) continue;
    branch = branch || has_branch(all[i]);
    body.push_back(int(i));
  }
  if (body.empty()) return {};
  const auto* last = all[size_t(body.back())].as<ir::GemmOp>();
  if (last == nullptr || last->clear_accum) return {};
  const uint64_t out = last->c.buffer.id();
  // The gemms before the last one: the first part ends at the latest.
  size_t first_end = 0;  // one past the first part, in `body`
  int64_t depth = gemm_dim(last->c.buffer, 1);
  for (size_t k = 0; k + 1 < body.size(); ++k) {
    const auto* g = all[size_t(body[k])].as<ir::GemmOp>();
    if (g == nullptr) continue;
    if (g->c.buffer.id() == out) return {};
    first_end = k + 1;
    depth += gemm_dim(g->a.buffer, g->trans_a ? 0 : 1);
  }
  if (first_end == 0) return {};
  // The run before the last gemm that writes O alone.
  size_t run = body.size() - 1;
  while (run > first_end) {
    backend::Accessed a;
    a.visit(all[size_t(body[run - 1])]);
    if (a.writes != std::set<uint64_t>{out}) break;
    --run;
  }
  if (run == first_end) return {};  // no softmax to overlap
  // Flash attention's shape: the schedule is inferred where it pays, and
  // the report says why not elsewhere.
  auto decline = [](const std::string& why) {
    InferredSchedule d;
    d.declined = std::string(kNotInferred) + ": " + why +
                 " (T.Pipelined's order=, stage=, group= ask for it)";
    return d;
  };
  if (depth < kMinGemmDepth) {
    return decline("its gemms do " + str(depth) + " multiply-adds per score, under " +
                   str(kMinGemmDepth));
  }
  if (const std::optional<int64_t> n = most(loop.extent); n && *n < kMinIterations) {
    return decline("the loop runs " + str(*n) + " iterations at most, under " +
                   str(kMinIterations));
  }
  if (branch) return decline("the body has a branch, which a prologue would compile again");
  InferredSchedule out_schedule;
  ir::PipelineSchedule& sched = out_schedule.schedule;
  auto add = [&](std::vector<int> stmts, int order, int stage) {
    sched.group.push_back(std::move(stmts));
    sched.order.push_back(order);
    sched.stage.push_back(stage);
  };
  const std::vector<int> first(body.begin(), body.begin() + long(first_end));
  const std::vector<int> rest(body.begin() + long(first_end), body.begin() + long(run));
  const std::vector<int> into_out(body.begin() + long(run), body.end() - 1);
  for (size_t i = 0; i < all.size(); ++i) {
    const int at = int(i);
    if (copies.count(all[i].get())) add({at}, -1, -1);
    if (at == first.front()) add(first, 0, 0);
    if (at == rest.front()) add(rest, 3, 0);
    if (!into_out.empty() && at == into_out.front()) add(into_out, 1, 1);
    if (at == body.back()) add({at}, 2, 1);
  }
  return out_schedule;
}

}  // namespace tilejit::cuda
