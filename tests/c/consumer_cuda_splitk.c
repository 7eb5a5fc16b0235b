/* The C consumer of the CUDA exports of the split-K GEMMs
   (tests/c/export_kernels.cpp writes them with target "cuda"): plain C, built
   with `cc` against the headers and the .so files alone. It opens
   libcuda.so.1 itself for its own device memory (cuMemAlloc, cuMemcpyHtoD,
   ...), runs the GEMMs on a stream it creates, copies back and checks them
   against a reference computed here, and checks the errors of bad calls.
   What it can check depends on the driver it finds:
     - none (no libcuda.so.1): every launching call returns
       TILEJIT_RUNTIME_ERROR naming the missing driver, and the host-only
       functions (workspace bytes, output shapes) work;
     - the null driver (bench/null_driver; its device is "null CUDA device"):
       every call and every error path, graph capture's bookkeeping
       included, but no result (kernels do not run);
     - a real driver and a GPU: all of it, results included.
   `consumer_cuda_splitk expect-gpu` fails unless a real GPU ran the GEMMs.
   Exits 0 when every check holds. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libsplitk_gemm.h"
#include "libsplitk_gemm_counted.h"

#include "consumer_common.h"

/* The part running now, printed as it starts; a part that does not end
   within kWatchdogSeconds fails the program, naming it, instead of hanging
   the test run. */
enum { kWatchdogSeconds = 120 };
static const char* volatile part = "start";
static void enter(const char* name) {
  part = name;
  printf("-- %s\n", name);
  fflush(stdout);
}
static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "consumer_cuda_splitk: timed out in part: ";
  const char* p = part;
  if (write(2, msg, sizeof msg - 1) < 0 || write(2, p, strlen(p)) < 0 || write(2, "\n", 1) < 0) {
    /* nothing more can be said */
  }
  _exit(3);
}

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                          \
      fprintf(stderr, "\n");                                                 \
      ++failures;                                                            \
    }                                                                        \
  } while (0)

/* The few driver entries used here, by their ABI names (cuda.h's macros map
   cuMemAlloc to cuMemAlloc_v2 and so on); CUresult is an int. */
typedef unsigned long long devptr;
static struct {
  int (*init)(unsigned);
  int (*device_get)(int*, int);
  int (*device_name)(char*, int, int);
  int (*primary_retain)(void**, int);
  int (*ctx_set)(void*);
  int (*mem_alloc)(devptr*, size_t);
  int (*mem_free)(devptr);
  int (*htod)(devptr, const void*, size_t);
  int (*dtoh)(void*, devptr, size_t);
  int (*memset8)(devptr, unsigned char, size_t);
  int (*stream_create)(void**, unsigned);
  int (*stream_sync)(void*);
  int (*begin_capture)(void*, int);
  int (*end_capture)(void*, void**);
  int (*graph_destroy)(void*);
  int (*instantiate)(void**, void*, unsigned long long);
  int (*graph_launch)(void*, void*);
  int (*exec_destroy)(void*);
  int (*memset8_async)(devptr, unsigned char, size_t, void*);
} cu;

enum { kNoDriver, kNullDriver, kGpu };
static int mode = kNoDriver;
static void* stream = NULL;
static void* context = NULL;

static int open_driver(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) return kNoDriver;
  cu.init = (int (*)(unsigned))dlsym(h, "cuInit");
  cu.device_get = (int (*)(int*, int))dlsym(h, "cuDeviceGet");
  cu.device_name = (int (*)(char*, int, int))dlsym(h, "cuDeviceGetName");
  cu.primary_retain = (int (*)(void**, int))dlsym(h, "cuDevicePrimaryCtxRetain");
  cu.ctx_set = (int (*)(void*))dlsym(h, "cuCtxSetCurrent");
  cu.mem_alloc = (int (*)(devptr*, size_t))dlsym(h, "cuMemAlloc_v2");
  cu.mem_free = (int (*)(devptr))dlsym(h, "cuMemFree_v2");
  cu.htod = (int (*)(devptr, const void*, size_t))dlsym(h, "cuMemcpyHtoD_v2");
  cu.dtoh = (int (*)(void*, devptr, size_t))dlsym(h, "cuMemcpyDtoH_v2");
  cu.memset8 = (int (*)(devptr, unsigned char, size_t))dlsym(h, "cuMemsetD8_v2");
  cu.stream_create = (int (*)(void**, unsigned))dlsym(h, "cuStreamCreate");
  cu.stream_sync = (int (*)(void*))dlsym(h, "cuStreamSynchronize");
  cu.begin_capture = (int (*)(void*, int))dlsym(h, "cuStreamBeginCapture_v2");
  cu.end_capture = (int (*)(void*, void**))dlsym(h, "cuStreamEndCapture");
  cu.graph_destroy = (int (*)(void*))dlsym(h, "cuGraphDestroy");
  cu.instantiate = (int (*)(void**, void*, unsigned long long))dlsym(h, "cuGraphInstantiateWithFlags");
  cu.graph_launch = (int (*)(void*, void*))dlsym(h, "cuGraphLaunch");
  cu.exec_destroy = (int (*)(void*))dlsym(h, "cuGraphExecDestroy");
  cu.memset8_async = (int (*)(devptr, unsigned char, size_t, void*))dlsym(h, "cuMemsetD8Async");
  int dev = 0;
  char name[256] = "";
  if (!cu.init || !cu.device_get || !cu.primary_retain || !cu.ctx_set || !cu.mem_alloc ||
      !cu.mem_free || !cu.htod || !cu.dtoh || !cu.stream_create || !cu.stream_sync ||
      cu.init(0) != 0 || cu.device_get(&dev, 0) != 0 || cu.primary_retain(&context, dev) != 0 ||
      cu.ctx_set(context) != 0 || cu.stream_create(&stream, 0) != 0) {
    fprintf(stderr, "libcuda.so.1 loads but no CUDA device can be used\n");
    exit(1);
  }
  if (cu.device_name != NULL) cu.device_name(name, (int)sizeof name, dev);
  return strcmp(name, "null CUDA device") == 0 ? kNullDriver : kGpu;
}

/* Device memory, or, with no driver, host memory standing in for it (the
   calls must fail before they touch it). */
static void* dalloc(size_t bytes) {
  if (mode == kNoDriver) return aligned_alloc(256, (bytes + 255) / 256 * 256);
  devptr p = 0;
  if (cu.mem_alloc(&p, bytes) != 0) {
    fprintf(stderr, "cuMemAlloc of %zu bytes failed\n", bytes);
    exit(1);
  }
  return (void*)(uintptr_t)p;
}
static void dfree(void* p) {
  if (mode == kNoDriver) free(p); else cu.mem_free((devptr)(uintptr_t)p);
}
static void upload(void* d, const void* h, size_t bytes) {
  if (mode == kNoDriver) memcpy(d, h, bytes); else cu.htod((devptr)(uintptr_t)d, h, bytes);
}
static void download(void* h, const void* d, size_t bytes) {
  if (mode != kNoDriver) cu.stream_sync(stream);
  if (mode == kNoDriver) memcpy(h, d, bytes); else cu.dtoh(h, (devptr)(uintptr_t)d, bytes);
}
static void dzero(void* d, size_t bytes) {
  if (mode == kNoDriver) memset(d, 0, bytes); else if (cu.memset8) cu.memset8((devptr)(uintptr_t)d, 0, bytes);
}

static DLTensor tensor(void* data, int64_t* shape, int ndim, int device_type) {
  return dl_tensor(data, shape, ndim, device_type, kDLFloat, 32);
}

/* A launching call's status: 0 where a driver runs it, else the missing
   driver's error. */
static void check_status(int st, const char* error, const char* what) {
  if (mode == kNoDriver) {
    CHECK(st == TILEJIT_RUNTIME_ERROR, "%s: status %d", what, st);
    CHECK(strstr(error, "cannot load the CUDA driver libcuda.so.1: ") != NULL, "%s: '%s'", what, error);
  } else {
    CHECK(st == TILEJIT_OK, "%s: status %d: %s", what, st, error);
  }
}

static void check_result(const float* a, const float* b, const void* dc, int64_t m, int64_t n,
                         int64_t k, const char* what) {
  if (mode != kGpu) return;
  float* c = malloc(sizeof(float) * (size_t)(m * n));
  download(c, dc, sizeof(float) * (size_t)(m * n));
  const double err = max_error(a, b, c, m, n, k);
  CHECK(err < 1e-3, "%s: max |error| %g", what, err);
  free(c);
}

static void test_splitk(void) {
  const int64_t M = 70, N = 50, K = 100;
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  float* a = malloc(sizeof(float) * M * K);
  float* b = malloc(sizeof(float) * K * N);
  fill(a, M * K, 1);
  fill(b, K * N, 2);
  void* da = dalloc(sizeof(float) * M * K);
  void* db = dalloc(sizeof(float) * K * N);
  void* dc = dalloc(sizeof(float) * M * N);
  upload(da, a, sizeof(float) * M * K);
  upload(db, b, sizeof(float) * K * N);
  DLTensor A = tensor(da, sa, 2, kDLCUDA), B = tensor(db, sb, 2, kDLCUDA), C = tensor(dc, sc, 2, kDLCUDA);

  /* Host-only: no driver needed. */
  const int64_t bytes = splitk_gemm_workspace_bytes(&A, &B);
  CHECK(bytes == (4 * M * N * 4 + 255) / 256 * 256, "workspace bytes %lld", (long long)bytes);
  int64_t shapes[SPLITK_GEMM_OUTPUT_SHAPES_LEN];
  CHECK(splitk_gemm_output_shapes(&A, &B, shapes) == TILEJIT_OK, "%s", splitk_gemm_last_error());
  CHECK(shapes[0] == M && shapes[1] == N, "output shape");

  /* The caller's workspace, on the stream. */
  enter("splitk_gemm: the caller's workspace");
  void* ws = dalloc((size_t)bytes);
  dzero(dc, sizeof(float) * M * N);
  int st = splitk_gemm(&A, &B, &C, ws, stream);
  check_status(st, splitk_gemm_last_error(), "splitk_gemm");
  check_result(a, b, dc, M, N, K, "splitk_gemm");

  /* The library's pool: one arena for the stream, reused (no allocation in
     steady state); the legacy default stream (NULL) gets its own. */
  enter("splitk_gemm: the library's pool");
  for (int i = 0; i < 3; ++i) {
    dzero(dc, sizeof(float) * M * N);
    st = splitk_gemm_auto(&A, &B, &C, stream, NULL);
    check_status(st, splitk_gemm_last_error(), "splitk_gemm_auto");
    check_result(a, b, dc, M, N, K, "splitk_gemm_auto");
  }
  CHECK(splitk_gemm_pool_bytes() == (mode == kNoDriver ? 0 : bytes), "pool holds %lld bytes",
        (long long)splitk_gemm_pool_bytes());
  st = splitk_gemm_auto(&A, &B, &C, NULL, NULL);
  check_status(st, splitk_gemm_last_error(), "splitk_gemm_auto on the default stream");
  CHECK(splitk_gemm_pool_bytes() == (mode == kNoDriver ? 0 : 2 * bytes), "pool holds %lld bytes",
        (long long)splitk_gemm_pool_bytes());
  check_result(a, b, dc, M, N, K, "splitk_gemm_auto on the default stream");

  /* The outputs allocated by the library: CUDA tensors on the call's device. */
  enter("splitk_gemm: outputs the library allocates");
  DLManagedTensor* made[SPLITK_GEMM_NUM_OUTPUTS] = {NULL};
  st = splitk_gemm_auto_outputs(&A, &B, made, stream, NULL);
  check_status(st, splitk_gemm_last_error(), "splitk_gemm_auto_outputs");
  CHECK((st == TILEJIT_OK) == (made[0] != NULL), "made[0] %p", (void*)made[0]);
  if (made[0] != NULL) {
    const DLTensor* t = &made[0]->dl_tensor;
    CHECK(t->device.device_type == kDLCUDA && t->device.device_id == 0, "made device %d:%d",
          (int)t->device.device_type, (int)t->device.device_id);
    CHECK(t->ndim == 2 && t->shape[0] == M && t->shape[1] == N, "made shape");
    CHECK(((uintptr_t)t->data) % 256 == 0, "made data is not 256-byte aligned");
    check_result(a, b, t->data, M, N, K, "splitk_gemm_auto_outputs");
    made[0]->deleter(made[0]);
  }

  /* Errors: found before the driver is needed, so with or without one. */
  enter("splitk_gemm: errors");
  DLTensor Acpu = tensor(a, sa, 2, kDLCPU);
  st = splitk_gemm(&Acpu, &B, &C, ws, stream);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(),
               "splitk_gemm: argument #0 'A': expected a tensor on cuda (target 'cuda'), got one on cpu") == 0,
        "'%s'", splitk_gemm_last_error());
  DLTensor B1 = B;
  B1.device.device_id = 1;
  st = splitk_gemm(&A, &B1, &C, ws, stream);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(),
               "splitk_gemm: argument #1 'B': is on cuda:1 but argument #0 'A' is on cuda:0; all "
               "tensors must be on one device") == 0,
        "'%s'", splitk_gemm_last_error());
  DLTensor C1 = C;
  C1.device.device_id = 1;
  st = splitk_gemm_auto(&A, &B, &C1, stream, NULL);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(),
               "splitk_gemm: out[0] 'C': expected a tensor on cuda:0, got one on cuda:1") == 0,
        "'%s'", splitk_gemm_last_error());
  DLTensor Chost = C;
  Chost.device.device_type = kDLCUDAHost;
  st = splitk_gemm(&A, &B, &Chost, ws, stream);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(),
               "splitk_gemm: out[0] 'C': expected a tensor on cuda (target 'cuda'), got one on cuda_host:0") == 0,
        "'%s'", splitk_gemm_last_error());
  st = splitk_gemm(&A, &B, &C, NULL, stream);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(), "splitk_gemm: workspace: needs 56064 bytes, got NULL") == 0,
        "'%s'", splitk_gemm_last_error());
  if (mode != kNoDriver) {
    /* A device that does not exist: found when the call asks the driver. */
    DLTensor A9 = A, B9 = B, C9 = C;
    A9.device.device_id = B9.device.device_id = C9.device.device_id = 9;
    st = splitk_gemm(&A9, &B9, &C9, ws, stream);
    CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
    CHECK(strstr(splitk_gemm_last_error(), "splitk_gemm: the tensors are on cuda:9, but there ") != NULL,
          "'%s'", splitk_gemm_last_error());
  }

  dfree(ws);
  dfree(da);
  dfree(db);
  dfree(dc);
  free(a);
  free(b);
}

/* zero_once through the pool: zeroed (a stream-ordered memset) when the
   arena is first used, re-armed by the kernel; every later call is right. */
static void test_counted(void) {
  const int64_t M = 130, N = 129, K = 65;
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  float* a = malloc(sizeof(float) * M * K);
  float* b = malloc(sizeof(float) * K * N);
  fill(a, M * K, 3);
  fill(b, K * N, 4);
  void* da = dalloc(sizeof(float) * M * K);
  void* db = dalloc(sizeof(float) * K * N);
  void* dc = dalloc(sizeof(float) * M * N);
  upload(da, a, sizeof(float) * M * K);
  upload(db, b, sizeof(float) * K * N);
  DLTensor A = tensor(da, sa, 2, kDLCUDA), B = tensor(db, sb, 2, kDLCUDA), C = tensor(dc, sc, 2, kDLCUDA);
  enter("splitk_gemm_counted: the library's pool");
  const int64_t bytes = splitk_gemm_counted_workspace_bytes(&A, &B);
  CHECK(bytes > 0, "workspace bytes %lld", (long long)bytes);
  for (int i = 0; i < 3; ++i) {
    dzero(dc, sizeof(float) * M * N);
    const int st = splitk_gemm_counted_auto(&A, &B, &C, stream, NULL);
    check_status(st, splitk_gemm_counted_last_error(), "splitk_gemm_counted_auto");
    check_result(a, b, dc, M, N, K, "splitk_gemm_counted_auto");
  }
  CHECK(splitk_gemm_counted_pool_bytes() == (mode == kNoDriver ? 0 : bytes), "pool holds %lld bytes",
        (long long)splitk_gemm_counted_pool_bytes());
  /* The caller's workspace, full of garbage: zero_once is zeroed anyway. */
  enter("splitk_gemm_counted: the caller's workspace");
  void* ws = dalloc((size_t)bytes);
  if (mode != kNoDriver && cu.memset8) cu.memset8((devptr)(uintptr_t)ws, 0x7f, (size_t)bytes);
  dzero(dc, sizeof(float) * M * N);
  const int st = splitk_gemm_counted(&A, &B, &C, ws, stream);
  check_status(st, splitk_gemm_counted_last_error(), "splitk_gemm_counted");
  check_result(a, b, dc, M, N, K, "splitk_gemm_counted with the caller's workspace");
  /* Under stream capture (global mode): the pool's arena for the call is a
     new one the graph keeps, its zero_once region zeroed on every replay;
     outputs the library would allocate are refused. */
  if (mode != kNoDriver && cu.begin_capture && cu.end_capture && cu.graph_destroy && cu.instantiate &&
      cu.graph_launch && cu.exec_destroy && cu.memset8_async) {
    enter("splitk_gemm_counted: graph capture");
    const int64_t pool_before = splitk_gemm_counted_pool_bytes();
    CHECK(cu.begin_capture(stream, 0 /* CU_STREAM_CAPTURE_MODE_GLOBAL */) == 0, "cuStreamBeginCapture");
    cu.memset8_async((devptr)(uintptr_t)dc, 0, sizeof(float) * (size_t)(M * N), stream);
    int cst = splitk_gemm_counted_auto(&A, &B, &C, stream, NULL);
    CHECK(cst == TILEJIT_OK, "captured call: status %d: %s", cst, splitk_gemm_counted_last_error());
    CHECK(splitk_gemm_counted_pool_bytes() == pool_before + bytes, "pool holds %lld bytes, had %lld",
          (long long)splitk_gemm_counted_pool_bytes(), (long long)pool_before);
    DLManagedTensor* made[SPLITK_GEMM_COUNTED_NUM_OUTPUTS] = {NULL};
    cst = splitk_gemm_counted_auto_outputs(&A, &B, made, stream, NULL);
    CHECK(cst == TILEJIT_VALUE_ERROR && made[0] == NULL, "status %d", cst);
    CHECK(strcmp(splitk_gemm_counted_last_error(),
                 "splitk_gemm_counted: outputs: the stream is capturing a CUDA graph, and the "
                 "library cannot allocate a graph's outputs; pass a tilejit_allocator") == 0,
          "'%s'", splitk_gemm_counted_last_error());
    enter("splitk_gemm_counted: graph replay");
    void* graph = NULL;
    void* exec = NULL;
    CHECK(cu.end_capture(stream, &graph) == 0 && graph != NULL, "cuStreamEndCapture");
    CHECK(graph != NULL && cu.instantiate(&exec, graph, 0) == 0, "cuGraphInstantiate");
    for (int i = 0; exec != NULL && i < 2; ++i) {
      CHECK(cu.graph_launch(exec, stream) == 0, "cuGraphLaunch");
      check_result(a, b, dc, M, N, K, "a replay of the captured call");
    }
    if (exec != NULL) cu.exec_destroy(exec);
    if (graph != NULL) cu.graph_destroy(graph);
    if (mode == kNullDriver) {
      /* The null driver runs the graph's destructors at once: the arena is
         back, free for any stream (a new one takes it, no allocation). */
      void* other = NULL;
      CHECK(cu.stream_create(&other, 0) == 0, "cuStreamCreate");
      const int64_t held = splitk_gemm_counted_pool_bytes();
      cst = splitk_gemm_counted_auto(&A, &B, &C, other, NULL);
      CHECK(cst == TILEJIT_OK, "status %d: %s", cst, splitk_gemm_counted_last_error());
      CHECK(splitk_gemm_counted_pool_bytes() == held, "the graph's arena was not reused (%lld -> %lld bytes)",
            (long long)held, (long long)splitk_gemm_counted_pool_bytes());
    }
    printf("graph capture: the pool's arena kept by the graph, outputs refused\n");
    /* On a GPU the arena comes back once the driver has destroyed the graph
       (on a thread of its own); a later call works either way. */
    enter("splitk_gemm_counted: a call after the graph");
    dzero(dc, sizeof(float) * M * N);
    cst = splitk_gemm_counted_auto(&A, &B, &C, stream, NULL);
    CHECK(cst == TILEJIT_OK, "status %d: %s", cst, splitk_gemm_counted_last_error());
    check_result(a, b, dc, M, N, K, "a call after the graph");
  }

  dfree(ws);
  dfree(da);
  dfree(db);
  dfree(dc);
  free(a);
  free(b);
}

/* Calls from several threads at once, each on a stream of its own (and a
   thread with no current context: the library makes the primary one
   current): every call takes an arena of its own, each stream keeps one. */
enum { kThreads = 4, kCallsPerThread = 5 };
typedef struct {
  const float* a;
  const float* b;
  void* da;
  void* db;
  int64_t m, n, k;
  int bad_results;
} thread_args;

static void* run_calls(void* p) {
  thread_args* t = (thread_args*)p;
  int64_t sa[2] = {t->m, t->k}, sb[2] = {t->k, t->n}, sc[2] = {t->m, t->n};
  void* s = NULL;
  if (mode != kNoDriver && (cu.ctx_set(context) != 0 || cu.stream_create(&s, 0) != 0)) {
    t->bad_results++;
    return NULL;
  }
  void* dc = dalloc(sizeof(float) * (size_t)(t->m * t->n));
  DLTensor A = tensor(t->da, sa, 2, kDLCUDA), B = tensor(t->db, sb, 2, kDLCUDA), C = tensor(dc, sc, 2, kDLCUDA);
  if (mode != kNoDriver) cu.ctx_set(NULL);
  for (int i = 0; i < kCallsPerThread; ++i) {
    const int st = splitk_gemm_counted_auto(&A, &B, &C, s, NULL);
    if (st != (mode == kNoDriver ? TILEJIT_RUNTIME_ERROR : TILEJIT_OK)) t->bad_results++;
    if (mode == kGpu) {
      float* c = malloc(sizeof(float) * (size_t)(t->m * t->n));
      cu.stream_sync(s);
      cu.dtoh(c, (devptr)(uintptr_t)dc, sizeof(float) * (size_t)(t->m * t->n));
      if (max_error(t->a, t->b, c, t->m, t->n, t->k) >= 1e-3) t->bad_results++;
      free(c);
    }
  }
  dfree(dc);
  return NULL;
}

static void test_threads(void) {
  const int64_t M = 96, N = 80, K = 70;
  float* a = malloc(sizeof(float) * M * K);
  float* b = malloc(sizeof(float) * K * N);
  fill(a, M * K, 5);
  fill(b, K * N, 6);
  void* da = dalloc(sizeof(float) * M * K);
  void* db = dalloc(sizeof(float) * K * N);
  upload(da, a, sizeof(float) * M * K);
  upload(db, b, sizeof(float) * K * N);
  int64_t sa[2] = {M, K}, sb[2] = {K, N};
  DLTensor A = tensor(da, sa, 2, kDLCUDA), B = tensor(db, sb, 2, kDLCUDA);
  const int64_t bytes = splitk_gemm_counted_workspace_bytes(&A, &B);
  const int64_t before = splitk_gemm_counted_pool_bytes();
  enter("splitk_gemm_counted: four threads");
  pthread_t threads[kThreads];
  thread_args args[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    thread_args t = {a, b, da, db, M, N, K, 0};
    args[i] = t;
    CHECK(pthread_create(&threads[i], NULL, run_calls, &args[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(threads[i], NULL);
    CHECK(args[i].bad_results == 0, "thread %d: %d bad results", i, args[i].bad_results);
  }
  CHECK(splitk_gemm_counted_pool_bytes() - before == (mode == kNoDriver ? 0 : kThreads * bytes),
        "the pool grew by %lld bytes for %d streams of %lld", (long long)(splitk_gemm_counted_pool_bytes() - before),
        (int)kThreads, (long long)bytes);
  dfree(da);
  dfree(db);
  free(a);
  free(b);
}

int main(int argc, char** argv) {
  const int expect_gpu = argc > 1 && strcmp(argv[1], "expect-gpu") == 0;
  signal(SIGALRM, on_alarm);
  alarm(kWatchdogSeconds);
  enter("opening the driver");
  mode = open_driver();
  static const char* const names[] = {"no CUDA driver", "the null CUDA driver", "a GPU"};
  printf("running with %s\n", names[mode]);
  test_splitk();
  test_counted();
  test_threads();
  enter("exit");
  CHECK(!expect_gpu || mode == kGpu, "expected a GPU, found %s", names[mode]);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("OK: the CUDA exports of the split-K GEMMs pass (%s)\n", names[mode]);
  return 0;
}
