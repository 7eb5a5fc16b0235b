// The CUDA backend's code generation for tile-IR bodies, over the printer
// both targets share (backend/common/tile_codegen.h), in files:
//   tile_codegen.cpp     the unit, the entries, allocations, loops, stores
//   barriers.cpp         the barriers, loop and branch bodies, thread
//                        ranges and a thread's own statements
//   emit_runs.cpp        the runs of consecutive elements whose accesses
//                        move as vectors (Note [Vectorised runs])
//   lower_tile_ops.cpp   the tile ops: the shared lowering's calls of the
//                        CUDA tile library (device/cuda/tilejit/cuda/*.h,
//                        the CPU library's names and meaning), the register
//                        operands' calls, the pipelined loops
//   tile_unit.cpp        the unit: each kernel lowered (lower_kernel.h,
//                        Note [The lowering pipeline]), then printed
//   fragments, pipeline, smem_plan, tile_memory, tma_copies,
//   warp_specialize: the decisions lower_kernel makes before any code
//                        (register accumulators, prefetched tiles, shared
//                        memory, TMA, the producer warpgroup)
//
// Note [CUDA lowering of tile IR]
// A T.Kernel is one __global__ entry (tilejit_kernel, tilejit_kernel_1, ...
// for the kernels of one function, launched in order on one stream), with
// the kernel's `threads` as a 1-D block; the block indices are blockIdx.
//
// Every thread runs the body's statements in order: outside T.Parallel
// loops the code is uniform, the same for every thread of the block.
//  - Shared and fragment buffers live in the block's dynamic shared memory
//    (but for the fragments kept in registers: Note [Register
//    accumulators], Note [Partitioned fragments] and Note [1-D and
//    replicated fragments] in fragments.h, where a T.Parallel nest over one
//    is a loop over the thread's registers), one buffer in which tiles whose
//    lifetimes cannot overlap share bytes (Note [Shared-memory liveness] in
//    smem_plan.h), each at a 128-byte boundary. The total is the
//    launch's shared memory in the KernelAbi, and the module raises the
//    kernel's limit above 48 KiB when it needs more. A fragment is thus one
//    block-wide array as on the CPU, which every thread can read.
//  - Local buffers are per-thread arrays (registers).
//  - A T.Parallel nest is one loop over all its iterations that the
//    block's threads share (iteration f on thread f % threads); loops inside
//    it run on their thread.
//  - Tile ops are library calls that the block's threads make together;
//    inside a T.Parallel nest, where TileLang writes T.atomic_add or T.print
//    of one element, the op is the calling thread's alone.
//  - A store outside a T.Parallel loop into a shared, fragment or global
//    buffer is made by thread 0 alone (the value is the same on every
//    thread); a store into a local buffer by every thread.
//  - Barriers: each statement that the block runs together (a tile op, a
//    T.Parallel nest, a thread-0 store, an expression of uniform code) reads
//    and writes a set of block-visible buffers (shared, fragment in shared
//    memory, global). Since the last barrier the statements emitted have
//    read R and written W; a statement reading r and writing w is preceded
//    by a barrier when W meets r or w, or R meets w (a hazard between
//    threads), and then the sets restart. Loop bodies start and end with a
//    barrier (the back edge), and so do the branches of an if and the body
//    of a while, except inside a T.Parallel nest: there they are one
//    thread's code, which some threads run and others not, so a barrier in
//    them would wait for ever (nothing in a nest needs one: its statements
//    are the thread's own). A barrier first waits for this thread's cp.async copies
//    (copy.h issues them and does not wait), so a tile copied from global
//    memory is complete for every thread past it.
//  - T.Pipelined(num_stages >= 2) prefetches its tiles through a ring of
//    shared-memory stages (Note [Software pipelining] in pipeline.h);
//    T.unroll carries #pragma unroll.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "backend/common/accesses.h"
#include "backend/common/tile_codegen.h"
#include "backend/cuda/cluster_multicast.h"
#include "backend/cuda/coarse_k_steps.h"
#include "backend/cuda/exclusive_writes.h"
#include "backend/cuda/fragments.h"
#include "backend/cuda/pipeline.h"
#include "backend/cuda/smem_plan.h"
#include "backend/cuda/tma_copies.h"
#include "backend/cuda/warp_specialize.h"
#include "backend/cuda/vector_runs.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cuda {

/// The most dynamic shared memory a block may have on the GPUs tilejit
/// targets (227 KiB on sm_90).
inline constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// The unit for a PrimFunc with a tile body.
runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request);

class CudaTileCodegen final : public backend::TileCodegen {
 public:
  CudaTileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
                  std::ostream& os, int threads, const transform::ThreadUniformity& uniformity,
                  const ir::KernelStmt& kernel, PipelinePlan pipelines, SmemPlan tiles);

  std::string lib() const override { return "tilejit::cuda"; }
  // Inside a T.Parallel nest or a thread's own statement an op is its
  // thread's alone; elsewhere its group's (Note [Thread semantics]).
  const char* thread_index() const override {
    return own_code() ? nullptr : group_index_.c_str();
  }
  const char* thread_count() const override {
    return own_code() ? nullptr : group_count_.c_str();
  }
  std::string gemm_template_tail() const override { return ", " + group_threads(); }
  std::string group_template_tail() const override { return ", " + group_threads(); }
  std::string group_args() const override;
  /// The block's threads, and whether the copy may use cp.async (shared
  /// from global: copy.h).
  std::string copy_template_tail(const ir::CopyOp& op) const override;
  /// A copy from global into shared memory, which copy.h makes with cp.async.
  bool async_copy(const ir::CopyOp& op) const;
  std::string math(const char* fn, const char* ct,
                   const std::vector<std::string>& args) const override;
  /// __shfl_*_sync through tilejit/cuda/shuffle.h (Note [Warp shuffles]).
  std::string shuffle(const ir::CallNode& call, const std::vector<std::string>& args) override;
  /// A register fragment's element is reachable only in its register loop.
  std::string tile_element(const backend::BufferAccess& a,
                           const std::vector<ir::Expr>& indices) override;

  /// The shared memory the body's tiles take, known once emitted.
  int64_t smem_bytes() const { return smem_bytes_; }

  /// The columns of the wgmma instructions the body's gemms use (Note
  /// [Warpgroup gemms]): the unit includes tilejit/cuda/wgmma/m64n<N>.h.
  const std::set<int>& wgmma_columns() const { return wgmma_columns_; }
  /// Some shared tile is swizzled: the unit's dynamic shared memory starts
  /// 1024-aligned.
  bool swizzles() const { return swizzles_; }
  /// The async proxy reads shared memory the threads write: wgmma's swizzled
  /// operands, TMA stores' tiles.
  bool async_proxy_reads() const { return swizzles_ || !tma_.stores.empty(); }
  /// A barrier here must fence the async proxy first (fence.proxy.async):
  /// the threads wrote, since the last barrier, a tile the async proxy reads
  /// (or one sharing its bytes). A barrier after writes to other tiles only
  /// (the scores a decoding kernel moves through shared memory, a
  /// reduction's scratch) needs none: MLA decoding's loop had three.
  bool async_proxy_fence_due() const;

  /// The copies proven inside their tensors (Note [Copies inside their
  /// tensor] in inside_copies.h), lowered without copy.h's edge walk.
  std::set<const ir::CopyOp*> inside_copies_;
  /// Note [TMA copies]: the prefetches TMA performs.
  TmaPlan tma_;
  /// Note [Alternating reduction scratch]: 1 or 2 scratches.
  int scratch_copies_ = 1;
  /// The pipelined loop being emitted: each TMA copy's barriers (one per
  /// stage).
  std::map<const ir::CopyOp*, std::string> tma_bars_;
  /// Note [Warp specialisation]: the loop whose tiles a producer warpgroup
  /// loads, if any.
  WarpSpecialization ws_;
  /// Note [Cluster multicast]: the pairs of blocks, if any.
  ClusterPlan cluster_;
  /// Note [Coarser K steps]: the program's K steps per iteration of ws_.loop.
  CoarseKSteps coarse_;
  /// Note [Warp specialisation]: the barriers, the producer's branch, and
  /// the consumers' registers; before the kernel's body, once the block and
  /// symbol names are bound.
  void emit_producer();
  /// The block's one thread index (Note [Thread-exclusive writes]); unset
  /// for a block of more than one dimension.
  void set_thread_index(const ir::Expr& tx) { exclusive_.thread_var = tx.var_id(); }

 private:
  void emit_alloc(const ir::AllocStmt& op) override;
  void emit_for(const ir::ForStmt& op) override;
  void emit_store(const ir::StoreStmt& op) override;
  void emit_tile_op(const ir::Stmt& s) override;
  void emit_sync(const ir::Stmt& s) override;

  void emit_block(const ir::Stmt& s) override;
  void before_stmt(const ir::Stmt& s) override;
  bool emit_own(const ir::Stmt& s) override;
  void emit_if(const ir::IfStmt& op) override;
  void emit_while(const ir::WhileStmt& op) override;

  /// Code one thread runs alone: a T.Parallel nest's body, a thread's own
  /// statement (Note [Thread semantics]).
  bool own_code() const { return parallel_depth_ > 0 || per_thread_ > 0; }
  /// The threads that make a collective op here ("1" in a thread's own code).
  std::string group_threads() const { return own_code() ? "1" : group_count_; }
  /// A thread's own statement: its accesses entered at once, no barrier in it.
  void emit_per_thread(const ir::Stmt& s);
  /// The branches of an if on a thread range, each run by its threads.
  void emit_range_if(const ir::IfStmt& op);
  /// A loop's or a branch's body, with a barrier before it only where its
  /// accesses meet what is pending, and after it (`back_edge`: a loop's
  /// next iteration) only where what is pending meets them again.
  void emit_body(const ir::Stmt& body, bool back_edge);
  void emit_parallel_nest(const ir::ForStmt& op);
  /// The nest's body in its register loop over `layout`, whose indices
  /// (the row, and the column where `both_indices`) the loop has bound.
  void emit_register_body(const std::vector<const ir::ForStmt*>& nest, const FragmentLayout& layout,
                          bool both_indices);
  /// Note [Vectorised runs] (emit_runs.cpp). The accesses of `body` that a
  /// run over `lane` stages, writes too when `stage_writes`; none under
  /// debug bounds.
  std::vector<StagedAccess> plan_run(const ir::Stmt& body, const ir::Expr& lane,
                                     bool stage_writes);
  /// Declares and reads the arrays of `staged` (`lane` printing as `first`,
  /// the run's first element, a multiple of v when `first_aligned`) and
  /// serves their accesses from them at `lane_text` until end_run; returns
  /// the arrays' names.
  std::vector<std::string> begin_run(const std::vector<StagedAccess>& staged, const ir::Expr& lane,
                                     int64_t v, const std::string& first,
                                     const std::string& lane_text, bool first_aligned);
  /// Writes back the written arrays; the accesses go to memory again.
  void end_run(const std::vector<StagedAccess>& staged, const std::vector<std::string>& arrays,
               const ir::Expr& lane, int64_t v, const std::string& first, bool first_aligned);
  /// load_run's and store_run's template arguments for `s`.
  std::string run_args(const StagedAccess& s, const ir::Expr& lane, int64_t v, bool first_aligned);
  /// A 2-D register loop over a partitioned tile as runs of its V columns
  /// (`staged`: plan_run's accesses, not empty).
  void emit_register_runs(const std::vector<const ir::ForStmt*>& nest, const FragmentLayout& layout,
                          const std::vector<StagedAccess>& staged);
  /// Note [Reductions in a T.Parallel nest]: the atomic that stores `op`
  /// when it folds a value into an element that other iterations of the
  /// nest fold into too (an element whose indices leave out one of the
  /// nest's `vars`); "" when it is a plain store.
  std::string reduction_store(const ir::StoreStmt& op, const std::vector<uint64_t>& vars);
  /// Note [Software pipelining] (pipeline.h).
  void emit_pipelined(const ir::ForStmt& op, const std::vector<const ir::CopyOp*>& copies);
  /// The prefetched copies of iteration `iteration` (C++) into stage
  /// `stage` (C++), under `guard`: TMA's by thread 0, each on its stage's
  /// barrier in tma_bars_ (Note [TMA copies]), the others' then a commit.
  void emit_prefetch(const ir::ForStmt& op, const std::vector<const ir::CopyOp*>& copies,
                     const std::string& iteration, const std::string& stage,
                     const std::string& guard);
  /// Each prefetched tile of `copies` named at stage `stage` (C++) for the
  /// body; returns their accesses before.
  std::map<uint64_t, backend::BufferAccess> bind_stages(
      const std::vector<const ir::CopyOp*>& copies, const std::string& stage);
  /// Note [Warp specialisation]: the consumers' side of the loop.
  void emit_consumer_loop(const ir::ForStmt& op, const std::vector<const ir::CopyOp*>& copies);
  /// What `body` reads and writes as a block, the row reductions' scratch
  /// (id 0) among its writes where it uses it.
  backend::Accessed body_accesses(const ir::Stmt& body) const;
  /// A wait on barrier `bars[stage]` (C++) for the phase of `parity` (C++);
  /// with debug_bounds, one that traps naming the barrier past a timeout.
  void emit_mbar_wait(const std::string& bars, const std::string& stage,
                      const std::string& parity);
  /// The TMA instructions of `copy` (the copy the prefetch issues) into the
  /// tile at `tile` (C++), counted on `bar` (C++). With `half` (Note [Cluster
  /// multicast]): half `rank` (C++, the block's in its pair) of the rows,
  /// through tensor map `half_map`, into both blocks of the pair.
  void emit_tma_copy(const ir::CopyOp& copy, const TmaCopy& how, const std::string& tile,
                     const std::string& bar, int half_map = -1, const std::string& rank = "");
  /// A statement the block runs together will read `reads` and write
  /// `writes` (buffer ids): a barrier first where that is a hazard.
  /// `keys`: the writes' partitions (Note [Thread-exclusive writes]).
  void enter(const std::set<uint64_t>& reads, const std::set<uint64_t>& writes,
             const std::map<uint64_t, int64_t>& keys = {});
  /// What is pending since the last barrier meets block-visible `reads` /
  /// `writes` (a hazard between threads), writes of `keys`' partitions
  /// meeting pending ones of the same partition aside.
  bool pending_meets(const std::set<uint64_t>& reads, const std::set<uint64_t>& writes,
                     const std::map<uint64_t, int64_t>& keys = {}) const;
  /// Before a loop's header: the barrier its body's first statements need
  /// after what is pending, once rather than in every iteration.
  void sync_before_loop(const ir::Stmt& body);
  /// Another path's pending accesses join this one's.
  void merge_pending(const std::set<uint64_t>& reads, const std::set<uint64_t>& writes);
  /// Note [Thread-exclusive writes] for the stores of `body`, where the
  /// block's threads run it together; none inside a thread range.
  std::map<uint64_t, int64_t> exclusive_keys(const ir::Stmt& body) const;
  /// The block-visible buffers among `ids` (not in registers, not local).
  std::set<uint64_t> visible(const std::set<uint64_t>& ids) const;
  /// A tile op with an operand in registers (Note [Register accumulators]);
  /// false when it has none.
  bool emit_register_op(const ir::Stmt& s);
  bool operand_from_shared(const ir::CopyOp& op, const FragmentLayout& to);
  bool accumulator_to_shared(const ir::CopyOp& op, const FragmentLayout& from);
  /// A T.copy the block makes: into a swizzled tile through copy_swizzled
  /// (Note [Warpgroup gemms]), else the common lowering.
  void emit_copy(const ir::CopyOp& op);
  /// T.gemm into a register accumulator of the warpgroup layout: wgmma.
  void emit_warpgroup_gemm(const ir::GemmOp& op, const FragmentLayout& c);
  void emit_tma_store(const ir::CopyOp& op, const TmaCopy& how);
  void emit_gemm_in_flight(const std::string& lo, int stages);
  /// emit_warpgroup_gemm commits the gemm and leaves it running.
  bool gemm_issue_only_ = false;
  /// What the wait for the gemm just left running must do after it (an RS
  /// gemm's operand pinned); "" for none.
  std::string issued_pin_;
  /// Note [Scheduled pipelines]: the consumers' loop of a T.Pipelined
  /// schedule, and the gemms left running in it (Note [Gemms left running]).
  void emit_scheduled_loop(const ir::ForStmt& op, const std::vector<const ir::CopyOp*>& copies,
                           const std::string& lo, const std::string& end, int stages,
                           const std::set<uint64_t>& reads, const std::set<uint64_t>& writes);
  /// ", rows padded" or the swizzle of a shared tile, for its declaration.
  std::string layout_note(const ir::Buffer& b) const;
  /// The register layout of the kernel's tile `id` (fragments.h's
  /// register_layout), or nullptr.
  const FragmentLayout* register_layout_of(uint64_t id) const;
  /// Bytes of shared memory at a new 128-byte boundary; returns the offset.
  int64_t take_shared(int64_t bytes, const ir::Span& span, const std::string& what);
  /// A tile's planned offset (smem_plan.h); ValueError past the limit.
  int64_t tile_offset(const ir::Buffer& b, int64_t bytes, const ir::Span& span);
  /// A barrier (after this thread's cp.async copies), unless the last line
  /// written was one; the hazard sets restart.
  void sync();
  /// A row reduction across warps (reading `reads`, writing `writes` and
  /// `scratch`, run by a layout of `threads` threads) was just emitted: its
  /// barrier between the scratch's writes and reads (mma_acc.h,
  /// part_tile.h) orders what came before it, as sync()'s would, where it is
  /// the barrier sync() would place (the group's threads, no cp.async copy
  /// in flight, no fence due). The hazard sets then hold the reduction's
  /// accesses after its barrier. Note [Alternating reduction scratch].
  void barrier_inside(const std::set<uint64_t>& reads, const std::set<uint64_t>& writes,
                      uint64_t scratch, int64_t threads);

  int threads_;
  /// The kernel's tiles (laid out: infer_layouts.h), by id.
  std::map<uint64_t, ir::Buffer> tiles_by_id_;
  bool swizzles_ = false;       // a tile is swizzled
  int64_t scratch_bytes_ = 0;   // the row reductions' scratch (tile_memory.h)
  // Note [Alternating reduction scratch]: the scratches' hazard ids (no
  // buffer's: buffer ids start at 1), and the one the next reduction takes.
  static constexpr uint64_t kScratchIds[2] = {0, ~uint64_t(0)};
  int next_scratch_ = 0;
  PipelinePlan pipelines_;
  SmemPlan tiles_;
  // Each tile's tiles sharing bytes with it (Note [Shared-memory liveness]).
  std::map<uint64_t, std::set<uint64_t>> aliases_;
  // Note [Warp specialisation]: each StageGroup's landed and free barriers.
  std::vector<std::pair<std::string, std::string>> ws_bars_;
  /// The consumers' hand-back of stage `stage` (C++) of group `group`.
  std::string release_line(size_t group, const std::string& stage) const;
  // Each prefetched buffer's stage 0 and its bytes per stage.
  std::map<uint64_t, std::pair<std::string, int64_t>> staged_;
  // cp.async copies issued since the last barrier that must land by the next.
  bool pending_async_ = false;
  int parallel_depth_ = 0;
  int per_thread_ = 0;
  const transform::ThreadUniformity& uniformity_;
  // The threads the collective ops run on and their barrier (0: the whole
  // block's __syncthreads; 1..15: a named barrier of a thread range).
  transform::ThreadRange group_;
  int group_barrier_ = 0;
  std::string group_index_ = "tilejit_tid", group_count_ = "tilejit_nthreads";
  std::map<std::pair<int64_t, int64_t>, int> barrier_ids_;
  // The register loop being emitted: its layout and the nest's indices.
  const FragmentLayout* reg_layout_ = nullptr;
  std::vector<uint64_t> reg_vars_;
  // The T.Parallel nest being emitted over the group's threads: its indices.
  std::vector<uint64_t> nest_vars_;
  int64_t smem_bytes_ = 0;
  int64_t scratch_offset_ = -1;  // the row reductions' scratch, once taken
  int64_t synced_at_ = -1;  // lines_written() after the last barrier
  std::set<uint64_t> read_since_, written_since_;
  // Note [Thread-exclusive writes]: each pending write's partition, where
  // all of the buffer's pending writes share one.
  std::map<uint64_t, int64_t> pending_keys_;
  ExclusiveWrites exclusive_;
  // The constant ranges of the loops being emitted.
  std::map<uint64_t, ir::IntRange> loop_ranges_;
  std::set<uint64_t> locals_;  // local buffers (per thread)
  std::set<int> wgmma_columns_;
};

}  // namespace tilejit::cuda
