// The third part of an exported library's wrapper unit (after
// wrapper_check.cpp, whose conventions it follows): zeroing the workspaces,
// packing the argument block and launching, the library's own pool, the
// whole call, the outputs <op>_auto_outputs makes, and the queries. What
// differs between targets (launching on a stream, zeroing, memory, the
// device's context) goes through the launcher's hooks (tilejit_export_*,
// declared in wrapper_types.h). The C functions of the header, which the
// generator writes after this text, call call(), call_allocating(),
// workspace_bytes(), output_shapes() and pool_bytes().
#include "wrapper_check.cpp"
// ---- embedded from the next line on ----
namespace {

// Zeroes the workspaces whose policy asks for it (`fresh`: the arena's
// zero_once regions are not known to be zero), packs the argument block as
// the KernelAbi lays it out, and runs every launch in order, all on the
// call's stream.
int launch(tilejit_export_call* tc, const DLTensor* const* in, const Scalar* sc,
           DLTensor* const* out, char* arena, const Bound* b, const int64_t* offsets,
           const int64_t* sizes, bool fresh) {
  void* values[kNumParams + 1];
  for (int i = 0; i < kNumInputs; ++i) {
    values[kInputs[i].param] = kInputs[i].scalar
        ? const_cast<Scalar*>(&sc[i])
        : static_cast<void*>(static_cast<char*>(in[i]->data) + in[i]->byte_offset);
  }
  for (int o = 0; o < kNumOutputs; ++o) {
    values[kOutputs[o].param] = static_cast<char*>(out[o]->data) + out[o]->byte_offset;
  }
  for (int w = 0; w < kNumWorkspaces; ++w) {
    char* at = arena != nullptr ? arena + offsets[w] : nullptr;
    values[kWorkspaces[w].param] = at;
    const int init = kWorkspaces[w].init;
    if (at != nullptr && sizes[w] > 0 && (init == kInitZero || (init == kInitZeroOnce && fresh))) {
      if (int st = tilejit_export_zero(tc, at, size_t(sizes[w]), g_error, sizeof g_error)) return st;
    }
  }
  alignas(64) unsigned char block[kBlockBytes + 8];
  memset(block, 0, sizeof block);
  tilejit_abi::pack_block(kAbiArgs, kNumAbiArgs, values, b->sym, block, kBlockBytes);
  for (int m = 0; m < kNumTensorMaps; ++m) {
    const TensorMapSpec& t = kTensorMaps[m];
    const AbiArgSpec& arg = kAbiArgs[t.arg];
    uint64_t dims[5];
    bool empty = false;
    for (int d = 0; d < t.rank; ++d) {
      const int64_t n = t.dims[d] >= 0 ? t.dims[d] : b->sym[-1 - t.dims[d]];
      empty = empty || n <= 0;
      dims[d] = uint64_t(n);
    }
    if (empty) continue;  // no block reads a tensor without elements
    if (int st = tilejit_export_tensor_map(tc, block + arg.offset, values[arg.source], t.elem_bytes,
                                           t.rank, dims, t.box, t.swizzle, t.name, g_error,
                                           sizeof g_error)) {
      return st;
    }
  }
  for (int l = 0; l < kNumLaunches; ++l) {
    const int64_t grid[3] = {b->res[kLaunchGrid[l][0]], b->res[kLaunchGrid[l][1]],
                             b->res[kLaunchGrid[l][2]]};
    int64_t total;
    if (__builtin_mul_overflow(grid[0], grid[1], &total) || __builtin_mul_overflow(total, grid[2], &total)) {
      return fail(kValueError, "invalid grid (%lld, %lld, %lld)", (long long)grid[0],
                  (long long)grid[1], (long long)grid[2]);
    }
    const int64_t smem = b->res[kLaunchSmem[l][0]] + kLaunchSmem[l][1];
    if (int st = tilejit_export_launch(tc, l, block, grid, smem, g_error, sizeof g_error)) return st;
  }
  return kOk;
}

// Note [The library's pool]: one free list of arenas, each reused by the
// next call that needs exactly its size; a call takes its arena off the
// list, so concurrent calls never share one. On a device target
// (kStreamKeyedPool) an arena is reused only by a call on the same context
// and stream as the call that last used it (and, on the per-thread default
// stream, the same thread): the stream runs the new call's work after the
// old call's, so no event and no synchronisation is needed, and a call on
// another stream gets an arena of its own. A call on a stream that is
// capturing a CUDA graph gets a new arena the graph keeps (Note [CUDA
// export] in export_library.cpp): it comes back once the graph and its
// executables are destroyed, free then for any stream of its context
// (kAnyStream).
//
// The arenas are freed by an exit handler (atexit, registered when the
// first arena is made) rather than a destructor: glibc runs a library's
// exit handlers when it is unloaded (dlclose) or, at process exit, before
// any library's destructors, and in the reverse order of registration. The
// first arena is made after the launcher opened and initialised the driver,
// so at exit the handler frees the arenas while libcuda.so.1 still works;
// a destructor would run after libcuda's own, and a call into a driver torn
// down can block for ever.
struct PoolBlock {
  PoolBlock* next;
  int64_t bytes;
  char* ptr;
  uint64_t tag;  // Note [zero_once] in jit/kernel.cpp: the layout it last ran
  void* target;  // the launcher's state of the context it was made in
  void* stream;
  pthread_t thread;
};
pthread_mutex_t g_pool_mutex = PTHREAD_MUTEX_INITIALIZER;
PoolBlock* g_pool = nullptr;
int64_t g_pool_bytes = 0;

// CU_STREAM_PER_THREAD: one handle, a different stream on every thread.
void* const kPerThreadStream = reinterpret_cast<void*>(uintptr_t(2));
// The stream of an arena no work is pending on (a destroyed graph's).
void* const kAnyStream = reinterpret_cast<void*>(~uintptr_t(0));

bool same_queue(const PoolBlock* p, const tilejit_export_call* tc) {
  if (!kStreamKeyedPool) return true;
  if (p->target != tc->target) return false;
  if (p->stream == kAnyStream) return true;
  if (p->stream != tc->stream) return false;
  return tc->stream != kPerThreadStream || pthread_equal(p->thread, pthread_self());
}

void pool_free_all();
pthread_once_t g_pool_exit_once = PTHREAD_ONCE_INIT;
void register_pool_exit() { atexit(pool_free_all); }

PoolBlock* pool_acquire(tilejit_export_call* tc, int64_t bytes) {
  pthread_mutex_lock(&g_pool_mutex);
  for (PoolBlock** p = &g_pool; *p != nullptr; p = &(*p)->next) {
    if ((*p)->bytes == bytes && same_queue(*p, tc)) {
      PoolBlock* found = *p;
      *p = found->next;
      found->stream = tc->stream;
      found->thread = pthread_self();
      pthread_mutex_unlock(&g_pool_mutex);
      return found;
    }
  }
  pthread_mutex_unlock(&g_pool_mutex);
  PoolBlock* block = static_cast<PoolBlock*>(malloc(sizeof(PoolBlock)));
  if (block == nullptr) return nullptr;
  // bytes: a multiple of 256. Not stream-ordered: an arena outlives the
  // call, reused on its stream.
  block->ptr = static_cast<char*>(tilejit_export_alloc(tc, size_t(bytes), 0));
  if (block->ptr == nullptr) {
    free(block);
    return nullptr;
  }
  pthread_once(&g_pool_exit_once, register_pool_exit);
  block->bytes = bytes;
  block->tag = 0;
  block->target = tc->target;
  block->stream = tc->stream;
  block->thread = pthread_self();
  pthread_mutex_lock(&g_pool_mutex);
  g_pool_bytes += bytes;
  pthread_mutex_unlock(&g_pool_mutex);
  return block;
}

void pool_release(PoolBlock* block) {
  pthread_mutex_lock(&g_pool_mutex);
  block->next = g_pool;
  g_pool = block;
  pthread_mutex_unlock(&g_pool_mutex);
}

// (Under the lock: a graph's arena may come back on a driver thread
// meanwhile.)
void pool_free_all() {
  pthread_mutex_lock(&g_pool_mutex);
  PoolBlock* list = g_pool;
  g_pool = nullptr;
  pthread_mutex_unlock(&g_pool_mutex);
  while (list != nullptr) {
    PoolBlock* next = list->next;
    tilejit_export_free(list->target, list->ptr, size_t(list->bytes), nullptr, 0);
    free(list);
    list = next;
  }
}

uint64_t layout_tag(const int64_t* offsets, const int64_t* sizes) {
  uint64_t h = kLayoutSeed;
  for (int w = 0; w < kNumWorkspaces; ++w) {
    const uint64_t values[2] = {uint64_t(offsets[w]), uint64_t(sizes[w])};
    for (uint64_t v : values) h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return h | 1;  // never 0, the tag of a new block
}

// Outputs that the library allocates are the caller's once the call
// returns (freed by their deleter), while a captured graph would write them
// on every replay: refused on a capturing stream.
__attribute__((cold)) int refuse_capture() {
  return fail(kValueError, "outputs: the stream is capturing a CUDA graph, and the library cannot "
              "allocate a graph's outputs; pass a tilejit_allocator");
}

int capturing(tilejit_export_call* tc, int* result) {
  *result = 0;
  if (!kStreamKeyedPool) return kOk;
  return tilejit_export_capturing(tc, result, g_error, sizeof g_error);
}

// On a driver thread, once the graph that kept `p` and its executables are
// destroyed: back to the pool, for any stream of its context.
void graph_released(void* p) {
  PoolBlock* block = static_cast<PoolBlock*>(p);
  block->tag = 0;
  block->stream = kAnyStream;
  pool_release(block);
}

// A call captured into a graph: a new arena the graph keeps, zero_once
// regions zeroed by the graph on every replay.
__attribute__((noinline)) int run_captured(tilejit_export_call* tc, const DLTensor* const* in,
                                           const Scalar* sc, DLTensor* const* out, const Bound* b,
                                           const int64_t* offsets, const int64_t* sizes, int64_t total) {
  PoolBlock* block = static_cast<PoolBlock*>(malloc(sizeof(PoolBlock)));
  if (block == nullptr) {
    return fail(kOutOfMemory, "workspace: cannot allocate %lld bytes of host memory", (long long)sizeof(PoolBlock));
  }
  block->next = nullptr;
  block->bytes = total;
  block->tag = 0;
  block->target = tc->target;
  block->stream = kAnyStream;
  block->thread = pthread_self();
  void* ptr = nullptr;
  if (int st = tilejit_export_graph_alloc(tc, size_t(total), &ptr, graph_released, block, g_error,
                                          sizeof g_error)) {
    free(block);
    return st;
  }
  block->ptr = static_cast<char*>(ptr);
  pthread_once(&g_pool_exit_once, register_pool_exit);
  pthread_mutex_lock(&g_pool_mutex);
  g_pool_bytes += total;
  pthread_mutex_unlock(&g_pool_mutex);
  return launch(tc, in, sc, out, block->ptr, b, offsets, sizes, true);
}

// The caller's workspace (for <op>()): checked before the target is asked
// for anything.
int check_workspace(void* workspace, int64_t total) {
  if (total == 0) return kOk;
  if (__builtin_expect(workspace == nullptr, 0)) {
    return fail(kValueError, "workspace: needs %lld bytes, got NULL", (long long)total);
  }
  if (__builtin_expect(reinterpret_cast<uintptr_t>(workspace) % 256 != 0, 0)) {
    return fail(kValueError, "workspace: the pointer is not 256-byte aligned (address %% 256 = %u)",
                unsigned(reinterpret_cast<uintptr_t>(workspace) % 256));
  }
  return kOk;
}

// The call once the inputs and outputs are checked, the arena laid out and
// the target ready: the caller's workspace (`automatic` false), the caller's
// allocator, or the pool.
int run(tilejit_export_call* tc, const DLTensor* const* in, const Scalar* sc, DLTensor* const* out,
        const Bound* b, const int64_t* offsets, const int64_t* sizes, int64_t total, void* workspace,
        bool automatic, const tilejit_allocator* allocator) {
  if (total == 0) return launch(tc, in, sc, out, nullptr, b, offsets, sizes, true);
  if (!automatic) {
    // Nothing is known of the caller's memory: zero_once regions are zeroed too.
    return launch(tc, in, sc, out, static_cast<char*>(workspace), b, offsets, sizes, true);
  }
  void* stream = tc->stream;
  if (allocator != nullptr) {
    void* p = allocator->alloc(allocator->user, size_t(total), 256, stream);
    if (__builtin_expect(p == nullptr, 0)) {
      return fail(kOutOfMemory, "workspace: the allocator returned NULL for %lld bytes", (long long)total);
    }
    if (__builtin_expect(reinterpret_cast<uintptr_t>(p) % 256 != 0, 0)) {
      allocator->free(allocator->user, p, size_t(total), stream);
      return fail(kValueError, "workspace: the allocator returned a pointer that is not 256-byte aligned");
    }
    const int st = launch(tc, in, sc, out, static_cast<char*>(p), b, offsets, sizes, true);
    allocator->free(allocator->user, p, size_t(total), stream);
    return st;
  }
  int captured = 0;
  if (int st = capturing(tc, &captured)) return st;
  if (captured) return run_captured(tc, in, sc, out, b, offsets, sizes, total);
  PoolBlock* block = pool_acquire(tc, total);
  if (__builtin_expect(block == nullptr, 0)) {
    return fail(kOutOfMemory, "workspace: cannot allocate %lld bytes of %s memory", (long long)total,
                kStreamKeyedPool ? "device" : "host");
  }
  const uint64_t tag = kHasZeroOnce ? layout_tag(offsets, sizes) : 0;
  const int st = launch(tc, in, sc, out, block->ptr, b, offsets, sizes, block->tag != tag);
  // A launch that failed may have left its zero_once regions dirty.
  block->tag = st == kOk ? tag : 0;
  pool_release(block);
  return st;
}

// The whole call: bind, check the outputs, make the target ready for the
// call's device and stream, run.
int call(const DLTensor* const* in, const Scalar* sc, DLTensor* const* out, void* workspace,
         bool automatic, void* stream, const tilejit_allocator* allocator) {
  Bound b;
  if (int st = bind(in, sc, &b)) return st;
  int64_t offsets[kNumWorkspaces + 1], sizes[kNumWorkspaces + 1], total = 0;
  if (int st = layout(&b, offsets, sizes, &total)) return st;
  if (int st = check_outputs(out, &b)) return st;
  if (!automatic) {
    if (int st = check_workspace(workspace, total)) return st;
  }
  tilejit_export_call tc = {b.device_id, stream, nullptr, nullptr};
  if (int st = tilejit_export_begin(&tc, g_error, sizeof g_error)) return st;
  const int st = run(&tc, in, sc, out, &b, offsets, sizes, total, workspace, automatic, allocator);
  tilejit_export_end(&tc);
  return st;
}

// An output <op>_auto_outputs made: the DLManagedTensor the caller frees
// through its deleter, with the shape it points to and how to free the data.
struct OutputBox {
  DLManagedTensor managed;
  int64_t shape[8];
  tilejit_allocator allocator;  // a copy; has_allocator false: the target's memory
  bool has_allocator;
  void* stream;
  void* target;  // the launcher's state of the call's context
  size_t bytes;
};

void delete_output(DLManagedTensor* self) {
  if (self == nullptr) return;
  OutputBox* box = static_cast<OutputBox*>(self->manager_ctx);
  void* data = box->managed.dl_tensor.data;
  if (box->has_allocator) {
    box->allocator.free(box->allocator.user, data, box->bytes, box->stream);
  } else {
    tilejit_export_free(box->target, data, box->bytes, box->stream, 1);
  }
  free(box);
}

// <op>_auto with the outputs allocated too: each through `allocator` (or
// the target's memory: aligned_alloc, stream-ordered device memory),
// 256-byte aligned, its bytes rounded up to 256 (at least 256, so that an
// empty output still has an address of its own).
int call_allocating(const DLTensor* const* in, const Scalar* sc, DLManagedTensor** result,
                    void* stream, const tilejit_allocator* allocator) {
  for (int o = 0; o < kNumOutputs; ++o) result[o] = nullptr;
  Bound b;
  if (int st = bind(in, sc, &b)) return st;
  int64_t offsets[kNumWorkspaces + 1], sizes[kNumWorkspaces + 1], total = 0;
  if (int st = layout(&b, offsets, sizes, &total)) return st;
  tilejit_export_call tc = {b.device_id, stream, nullptr, nullptr};
  if (int st = tilejit_export_begin(&tc, g_error, sizeof g_error)) return st;
  int captured = 0;
  int st = allocator == nullptr ? capturing(&tc, &captured) : kOk;
  if (st == kOk && captured) st = refuse_capture();
  OutputBox* boxes[kNumOutputs + 1] = {nullptr};
  DLTensor* outs[kNumOutputs + 1] = {nullptr};
  for (int o = 0; o < kNumOutputs && st == kOk; ++o) {
    const BufferSpec& s = kOutputs[o];
    int64_t bytes = s.elem_bytes;
    for (int d = 0; d < s.rank; ++d) bytes *= b.res[s.first + d];  // checked by bind()
    if (bytes > INT64_MAX - 511) {
      st = fail(kOutOfMemory, "out[%d] '%s': %lld bytes cannot be allocated", o, s.name, (long long)bytes);
      break;
    }
    const size_t rounded = size_t(bytes == 0 ? 256 : (bytes + 255) / 256 * 256);
    OutputBox* box = static_cast<OutputBox*>(calloc(1, sizeof(OutputBox)));
    void* data = nullptr;
    if (box != nullptr) {
      data = allocator != nullptr ? allocator->alloc(allocator->user, rounded, 256, stream)
                                  : tilejit_export_alloc(&tc, rounded, 1);
    }
    if (box == nullptr || data == nullptr) {
      free(box);
      st = fail(kOutOfMemory, "out[%d] '%s': cannot allocate %lld bytes%s", o, s.name,
                (long long)rounded, allocator != nullptr ? " (the allocator returned NULL)" : "");
      break;
    }
    box->has_allocator = allocator != nullptr;
    if (allocator != nullptr) box->allocator = *allocator;
    box->stream = stream;
    box->target = tc.target;
    box->bytes = rounded;
    for (int d = 0; d < s.rank; ++d) box->shape[d] = b.res[s.first + d];
    DLTensor& t = box->managed.dl_tensor;
    t.data = data;
    t.device.device_type = static_cast<DLDeviceType>(kDeviceType);
    t.device.device_id = b.device_id;
    t.ndim = s.rank;
    t.dtype.code = s.code;
    t.dtype.bits = s.bits;
    t.dtype.lanes = 1;
    t.shape = box->shape;
    t.strides = nullptr;
    t.byte_offset = 0;
    box->managed.manager_ctx = box;
    box->managed.deleter = delete_output;
    boxes[o] = box;
    outs[o] = &t;
  }
  if (st == kOk) st = check_outputs(outs, &b);
  if (st == kOk) st = run(&tc, in, sc, outs, &b, offsets, sizes, total, nullptr, true, allocator);
  for (int o = 0; o < kNumOutputs; ++o) {
    if (st == kOk) {
      result[o] = &boxes[o]->managed;
    } else {
      if (boxes[o] != nullptr) delete_output(&boxes[o]->managed);
      result[o] = nullptr;
    }
  }
  tilejit_export_end(&tc);
  return st;
}

int64_t workspace_bytes(const DLTensor* const* in, const Scalar* sc) {
  Bound b;
  if (bind(in, sc, &b) != kOk) return -1;
  int64_t offsets[kNumWorkspaces + 1], sizes[kNumWorkspaces + 1], total = 0;
  if (layout(&b, offsets, sizes, &total) != kOk) return -1;
  return total;
}

int output_shapes(const DLTensor* const* in, const Scalar* sc, int64_t* shapes) {
  Bound b;
  if (int st = bind(in, sc, &b)) return st;
  int at = 0;
  for (int o = 0; o < kNumOutputs; ++o) {
    for (int d = 0; d < kOutputs[o].rank; ++d) shapes[at++] = b.res[kOutputs[o].first + d];
  }
  return kOk;
}

int64_t pool_bytes() {
  pthread_mutex_lock(&g_pool_mutex);
  const int64_t bytes = g_pool_bytes;
  pthread_mutex_unlock(&g_pool_mutex);
  return bytes;
}

}  // namespace
