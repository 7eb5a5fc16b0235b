// thread_uniformity: which values and statements of a kernel depend on the
// thread that runs them, and which thread ranges its conditions admit.
//
// Note [Thread semantics]
// As in TileLang, every statement of a kernel body runs on every thread of
// the block:
//  - T.get_thread_binding(d) is the thread's own index along d (x fastest:
//    the linear thread id is tx + X * (ty + Y * tz));
//  - T.alloc_local and T.alloc_var buffers are the thread's own;
//  - a store, a let, a scalar T.atomic_add (one element, a value) and a
//    tile op whose destination is a local buffer are the thread's own: a
//    scalar atomic therefore adds once per thread, as TileLang's does;
//  - the block-collective ops (T.copy, T.gemm, T.fill, the reductions and
//    T.atomic_add of a region into a block-visible buffer, T.Parallel
//    nests, T.print, T.sync_threads) are made by the block's threads together, or, under
//    an `if` whose condition admits a contiguous range of thread ids
//    (`tx < 128`, `tx >= 128`, `ty == 0` with tz of extent 1, ...), by
//    exactly the threads of that range, with barriers over that group only.
//    A collective op under any other thread-dependent condition, loop
//    bound or exit is a ValueError at the user's `if`, `while` or loop.
//
// A value is thread-dependent ("variant") when it reads a thread index, a
// let of a variant value, a variant local buffer, or a buffer at a variant
// index. A local buffer is variant when some store into it is variant (its
// index or value is, or it is under variant control). Shared, fragment and
// global buffers are the block's: a load of one at a uniform index is
// uniform. A statement is variant when it reads a variant value, writes a
// variant local buffer, is a scalar atomic, or holds a variant statement.
//
// The backends follow it: a uniform store may be made by one thread (an
// optimisation: every thread would store the same value), a variant one by
// every thread; the CPU target runs each variant statement in a loop over
// the threads of its group, and a uniform one once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tilejit/ir/expr.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::transform {

/// The linear thread ids [first, first + count) of a block.
struct ThreadRange {
  int64_t first = 0;
  int64_t count = 0;
  bool operator==(const ThreadRange&) const = default;
};

class ThreadUniformity {
 public:
  /// The block's threads (the product of the kernel's extents).
  int64_t threads() const { return threads_; }
  bool variant(const ir::Expr& e) const;
  bool variant(const ir::Stmt& s) const { return variant(s.get()); }
  bool variant(const ir::StmtNode* s) const { return s != nullptr && stmts_.count(s) != 0; }
  bool variant_buffer(uint64_t id) const { return buffers_.count(id) != 0; }
  /// A loop, while or if whose threads go different ways: a variant
  /// bound or condition, or a break or continue under a variant condition.
  bool divergent(const ir::Stmt& s) const { return divergent_.count(s.get()) != 0; }
  /// The name of a thread's own value (a variant variable or local buffer)
  /// that a loop reads but does not define; "" when none.
  std::string thread_state_read(const ir::ForStmt& loop) const;
  /// The range of the threads that run an if's branch, when its condition
  /// is a thread range (the else branch: the rest of the enclosing group);
  /// nullopt when the condition is uniform or not a range.
  std::optional<ThreadRange> branch_range(const ir::IfStmt* op, bool then_branch) const;

  /// The statement holds a block-collective op (Note [Thread semantics]).
  static bool collective(const ir::Stmt& s);
  /// A tile op that is its thread's own: a scalar atomic add, a tile op into
  /// a local buffer.
  static bool per_thread_op(const ir::Stmt& s);

 private:
  friend class UniformityAnalysis;
  int64_t threads_ = 1;
  std::set<uint64_t> vars_;     // variant IR variables (thread indices, lets, loop vars)
  std::set<uint64_t> buffers_;  // variant local buffers
  std::set<const ir::StmtNode*> stmts_;      // variant statements
  std::set<const ir::StmtNode*> divergent_;  // divergent control statements
  std::map<std::pair<const ir::StmtNode*, bool>, ThreadRange> ranges_;
};

/// The analysis of one kernel of `func_name`. Throws ValueError at the
/// user's line for a collective op under a thread-dependent condition that
/// is not a thread range, naming the op and the condition's line.
ThreadUniformity thread_uniformity(const ir::KernelStmt& kernel, const std::string& func_name);

}  // namespace tilejit::transform
