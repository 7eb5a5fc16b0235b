/* A C program that uses exported kernels with nothing but their headers and
   shared libraries: built with `cc` against libsplitk_gemm.so and
   libsplitk_gemm_counted.so (tests/c/export_kernels.cpp writes them), it
   runs both split-K GEMMs and checks them against a reference computed
   here, checks the errors of bad calls, and runs <op>_auto with a caller's
   allocator and with the library's pool. Exits 0 when every check holds. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libsplitk_gemm.h"
#include "libsplitk_gemm_counted.h"

#include "consumer_common.h"

static DLTensor tensor(void* data, int64_t* shape, int ndim, uint8_t code, uint8_t bits) {
  return dl_tensor(data, shape, ndim, kDLCPU, code, bits);
}

/* A caller's allocator that counts what it is asked for. */
typedef struct {
  int allocs;
  int frees;
  size_t last_bytes;
  void* last_stream;
} counting_state;

static void* counting_alloc(void* user, size_t bytes, size_t alignment, void* stream) {
  counting_state* s = (counting_state*)user;
  s->allocs++;
  s->last_bytes = bytes;
  s->last_stream = stream;
  return aligned_alloc(alignment, bytes);
}

static void counting_free(void* user, void* ptr, size_t bytes, void* stream) {
  counting_state* s = (counting_state*)user;
  (void)bytes;
  (void)stream;
  s->frees++;
  free(ptr);
}

static void* failing_alloc(void* user, size_t bytes, size_t alignment, void* stream) {
  (void)user, (void)bytes, (void)alignment, (void)stream;
  return NULL;
}

static void test_splitk(void) {
  const int64_t M = 70, N = 50, K = 100;
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  float* a = malloc(sizeof(float) * M * K);
  float* b = malloc(sizeof(float) * K * N);
  float* c = malloc(sizeof(float) * M * N);
  fill(a, M * K, 1);
  fill(b, K * N, 2);
  DLTensor A = tensor(a, sa, 2, kDLFloat, 32), B = tensor(b, sb, 2, kDLFloat, 32),
           C = tensor(c, sc, 2, kDLFloat, 32);

  /* The arena: Partial [4, M, N] float32, rounded up to 256 bytes. */
  const int64_t bytes = splitk_gemm_workspace_bytes(&A, &B);
  CHECK(bytes == (4 * M * N * 4 + 255) / 256 * 256, "workspace bytes %lld", (long long)bytes);
  int64_t shapes[SPLITK_GEMM_OUTPUT_SHAPES_LEN];
  CHECK(SPLITK_GEMM_NUM_OUTPUTS == 1 && SPLITK_GEMM_OUTPUT_SHAPES_LEN == 2, "output macros");
  CHECK(splitk_gemm_output_shapes(&A, &B, shapes) == TILEJIT_OK, "%s", splitk_gemm_last_error());
  CHECK(shapes[0] == M && shapes[1] == N, "output shape [%lld, %lld]", (long long)shapes[0],
        (long long)shapes[1]);

  /* The caller's workspace. */
  void* ws = aligned_alloc(256, (size_t)bytes);
  memset(c, 0, sizeof(float) * M * N);
  int st = splitk_gemm(&A, &B, &C, ws, NULL);
  CHECK(st == TILEJIT_OK, "status %d: %s", st, splitk_gemm_last_error());
  double err = max_error(a, b, c, M, N, K);
  CHECK(err < 1e-3, "max |error| %g", err);

  /* A caller's allocator: asked once per call, freed after the launch. */
  counting_state state = {0, 0, 0, NULL};
  tilejit_allocator alloc = {counting_alloc, counting_free, &state};
  int stream_token = 0;
  memset(c, 0, sizeof(float) * M * N);
  st = splitk_gemm_auto(&A, &B, &C, &stream_token, &alloc);
  CHECK(st == TILEJIT_OK, "status %d: %s", st, splitk_gemm_last_error());
  CHECK(state.allocs == 1 && state.frees == 1, "allocs %d frees %d", state.allocs, state.frees);
  CHECK(state.last_bytes == (size_t)bytes, "asked %zu bytes", state.last_bytes);
  CHECK(state.last_stream == &stream_token, "the allocator saw another stream");
  err = max_error(a, b, c, M, N, K);
  CHECK(err < 1e-3, "max |error| %g", err);

  /* No allocator: the library's pool, one arena reused. */
  for (int i = 0; i < 2; ++i) {
    memset(c, 0, sizeof(float) * M * N);
    st = splitk_gemm_auto(&A, &B, &C, NULL, NULL);
    CHECK(st == TILEJIT_OK, "status %d: %s", st, splitk_gemm_last_error());
    err = max_error(a, b, c, M, N, K);
    CHECK(err < 1e-3, "max |error| %g", err);
  }
  CHECK(splitk_gemm_pool_bytes() == bytes, "pool holds %lld bytes",
        (long long)splitk_gemm_pool_bytes());

  /* The outputs allocated too: through the caller's allocator (output and
     workspace; the workspace freed after the launch, the output by its
     deleter), then with NULL. */
  state.allocs = state.frees = 0;
  DLManagedTensor* made[SPLITK_GEMM_NUM_OUTPUTS] = {NULL};
  st = splitk_gemm_auto_outputs(&A, &B, made, &stream_token, &alloc);
  CHECK(st == TILEJIT_OK, "status %d: %s", st, splitk_gemm_last_error());
  CHECK(state.allocs == 2 && state.frees == 1, "allocs %d frees %d", state.allocs, state.frees);
  if (made[0] != NULL) {
    const DLTensor* t = &made[0]->dl_tensor;
    CHECK(t->ndim == 2 && t->shape[0] == M && t->shape[1] == N, "made shape");
    CHECK(t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->device.device_type == kDLCPU,
          "made dtype / device");
    CHECK(((uintptr_t)t->data) % 256 == 0, "made data is not 256-byte aligned");
    err = max_error(a, b, (const float*)t->data, M, N, K);
    CHECK(err < 1e-3, "max |error| %g", err);
    made[0]->deleter(made[0]);
  }
  CHECK(state.frees == 2, "the deleter did not free through the allocator (%d frees)", state.frees);
  st = splitk_gemm_auto_outputs(&A, &B, made, NULL, NULL);
  CHECK(st == TILEJIT_OK, "status %d: %s", st, splitk_gemm_last_error());
  if (made[0] != NULL) {
    err = max_error(a, b, (const float*)made[0]->dl_tensor.data, M, N, K);
    CHECK(err < 1e-3, "max |error| %g", err);
    made[0]->deleter(made[0]);
  }

  /* Bad calls: a status and the jit path's message. */
  int64_t* bad = malloc(sizeof(int64_t) * K * N);
  DLTensor B64 = tensor(bad, sb, 2, kDLInt, 64);
  st = splitk_gemm(&A, &B64, &C, ws, NULL);
  CHECK(st == TILEJIT_TYPE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(), "splitk_gemm: argument #1 'B': expected float32, got int64") == 0,
        "'%s'", splitk_gemm_last_error());
  CHECK(splitk_gemm_workspace_bytes(&A, &B64) == -1, "workspace bytes of a bad call");

  int64_t sb_short[2] = {K - 1, N};
  DLTensor Bshort = tensor(b, sb_short, 2, kDLFloat, 32);
  st = splitk_gemm(&A, &Bshort, &C, ws, NULL);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(), "splitk_gemm: symbol 'K': A.shape[1] = 100 but B.shape[0] = 99") == 0,
        "'%s'", splitk_gemm_last_error());

  st = splitk_gemm(&A, NULL, &C, ws, NULL);
  CHECK(st == TILEJIT_TYPE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(), "splitk_gemm: argument #1 'B': expected a float32 tensor, got NULL") == 0,
        "'%s'", splitk_gemm_last_error());

  int64_t sc_wrong[2] = {M, N + 1};
  DLTensor Cwrong = tensor(c, sc_wrong, 2, kDLFloat, 32);
  st = splitk_gemm(&A, &B, &Cwrong, ws, NULL);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(), "splitk_gemm: out[0] 'C': expected shape [70, 50], got [70, 51]") == 0,
        "'%s'", splitk_gemm_last_error());

  st = splitk_gemm(&A, &B, &C, NULL, NULL);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(), "splitk_gemm: workspace: needs 56064 bytes, got NULL") == 0,
        "'%s'", splitk_gemm_last_error());

  int64_t strides[2] = {1, K};
  DLTensor At = tensor(a, sa, 2, kDLFloat, 32);
  At.strides = strides;
  st = splitk_gemm(&At, &B, &C, ws, NULL);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(),
               "splitk_gemm: argument #0 'A': expected a contiguous tensor, got strides [1, 100] in "
               "elements ([4, 400] in bytes) for shape [70, 100]") == 0,
        "'%s'", splitk_gemm_last_error());

  DLTensor Acuda = tensor(a, sa, 2, kDLFloat, 32);
  Acuda.device.device_type = kDLCUDA;
  st = splitk_gemm(&Acuda, &B, &C, ws, NULL);
  CHECK(st == TILEJIT_VALUE_ERROR, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(),
               "splitk_gemm: argument #0 'A': expected a tensor on cpu (target 'cpu'), got one on cuda:0") == 0,
        "'%s'", splitk_gemm_last_error());

  made[0] = (DLManagedTensor*)&state;  /* a sentinel the failed call must overwrite with NULL */
  st = splitk_gemm_auto_outputs(&A, &B64, made, NULL, NULL);
  CHECK(st == TILEJIT_TYPE_ERROR && made[0] == NULL, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(), "splitk_gemm: argument #1 'B': expected float32, got int64") == 0,
        "'%s'", splitk_gemm_last_error());

  tilejit_allocator failing = {failing_alloc, counting_free, &state};
  st = splitk_gemm_auto(&A, &B, &C, NULL, &failing);
  CHECK(st == TILEJIT_OUT_OF_MEMORY, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(), "splitk_gemm: workspace: the allocator returned NULL for 56064 bytes") == 0,
        "'%s'", splitk_gemm_last_error());
  st = splitk_gemm_auto_outputs(&A, &B, made, NULL, &failing);
  CHECK(st == TILEJIT_OUT_OF_MEMORY && made[0] == NULL, "status %d", st);
  CHECK(strcmp(splitk_gemm_last_error(),
               "splitk_gemm: out[0] 'C': cannot allocate 14080 bytes (the allocator returned NULL)") == 0,
        "'%s'", splitk_gemm_last_error());

  free(bad);
  free(ws);
  free(a);
  free(b);
  free(c);
}

/* zero_once: the Count workspace is zeroed when the pool's arena is first
   used, and the kernel re-arms it; a second call with the same arena must
   still be right. */
static void test_counted(void) {
  const int64_t M = 130, N = 129, K = 65;
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  float* a = malloc(sizeof(float) * M * K);
  float* b = malloc(sizeof(float) * K * N);
  float* c = malloc(sizeof(float) * M * N);
  fill(a, M * K, 3);
  fill(b, K * N, 4);
  DLTensor A = tensor(a, sa, 2, kDLFloat, 32), B = tensor(b, sb, 2, kDLFloat, 32),
           C = tensor(c, sc, 2, kDLFloat, 32);
  const int64_t bytes = splitk_gemm_counted_workspace_bytes(&A, &B);
  CHECK(bytes == 201472 + 256, "workspace bytes %lld", (long long)bytes);
  for (int i = 0; i < 3; ++i) {
    memset(c, 0, sizeof(float) * M * N);
    const int st = splitk_gemm_counted_auto(&A, &B, &C, NULL, NULL);
    CHECK(st == TILEJIT_OK, "status %d: %s", st, splitk_gemm_counted_last_error());
    const double err = max_error(a, b, c, M, N, K);
    CHECK(err < 1e-3, "call %d: max |error| %g", i, err);
  }
  CHECK(splitk_gemm_counted_pool_bytes() == bytes, "pool holds %lld bytes",
        (long long)splitk_gemm_counted_pool_bytes());
  /* The caller's workspace, full of garbage: zero_once is zeroed anyway. */
  void* ws = aligned_alloc(256, (size_t)bytes);
  memset(ws, 0x7f, (size_t)bytes);
  memset(c, 0, sizeof(float) * M * N);
  const int st = splitk_gemm_counted(&A, &B, &C, ws, NULL);
  CHECK(st == TILEJIT_OK, "status %d: %s", st, splitk_gemm_counted_last_error());
  const double err = max_error(a, b, c, M, N, K);
  CHECK(err < 1e-3, "caller's workspace: max |error| %g", err);
  free(ws);
  free(a);
  free(b);
  free(c);
}

/* Calls from several threads at once through the library's pool: each call
   takes an arena of its own, so every result is right. */
enum { kThreads = 4, kCallsPerThread = 5 };
typedef struct {
  const float* a;
  const float* b;
  int64_t m, n, k;
  int bad_results;
} thread_args;

static void* run_calls(void* p) {
  thread_args* t = (thread_args*)p;
  int64_t sa[2] = {t->m, t->k}, sb[2] = {t->k, t->n}, sc[2] = {t->m, t->n};
  float* c = malloc(sizeof(float) * t->m * t->n);
  DLTensor A = tensor((void*)t->a, sa, 2, kDLFloat, 32), B = tensor((void*)t->b, sb, 2, kDLFloat, 32),
           C = tensor(c, sc, 2, kDLFloat, 32);
  for (int i = 0; i < kCallsPerThread; ++i) {
    memset(c, 0, sizeof(float) * t->m * t->n);
    if (splitk_gemm_counted_auto(&A, &B, &C, NULL, NULL) != TILEJIT_OK ||
        max_error(t->a, t->b, c, t->m, t->n, t->k) >= 1e-3) {
      t->bad_results++;
    }
  }
  free(c);
  return NULL;
}

static void test_threads(void) {
  const int64_t M = 96, N = 80, K = 70;
  float* a = malloc(sizeof(float) * M * K);
  float* b = malloc(sizeof(float) * K * N);
  fill(a, M * K, 5);
  fill(b, K * N, 6);
  pthread_t threads[kThreads];
  thread_args args[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    thread_args t = {a, b, M, N, K, 0};
    args[i] = t;
    CHECK(pthread_create(&threads[i], NULL, run_calls, &args[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(threads[i], NULL);
    CHECK(args[i].bad_results == 0, "thread %d: %d bad results", i, args[i].bad_results);
  }
  free(a);
  free(b);
}

int main(void) {
  test_splitk();
  test_counted();
  test_threads();
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("OK: the exported split-K GEMMs match the C reference\n");
  return 0;
}
