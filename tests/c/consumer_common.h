/* What the C consumers of the exported split-K GEMMs share (consumer_splitk.c
   on the CPU, consumer_cuda_splitk.c on CUDA): the check macro, DLTensor
   construction, the inputs and the reference. Included after the exported
   headers, which declare the DLPack structs. */
#ifndef TILEJIT_TESTS_C_CONSUMER_COMMON_H_
#define TILEJIT_TESTS_C_CONSUMER_COMMON_H_

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* A compact tensor on device 0 of `device_type`. */
static DLTensor dl_tensor(void* data, int64_t* shape, int ndim, int device_type, uint8_t code,
                          uint8_t bits) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = (DLDeviceType)device_type;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

/* n values in [-1, 1] from `seed`. */
static void fill(float* x, int64_t n, unsigned seed) {
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f;
  }
}

/* max |A B - C| over the [m, n] result, the product in double. */
static double max_error(const float* a, const float* b, const float* c, int64_t m, int64_t n,
                        int64_t k) {
  double worst = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < k; ++p) ref += (double)a[i * k + p] * (double)b[p * n + j];
      double err = ref - (double)c[i * n + j];
      if (err < 0) err = -err;
      if (err > worst) worst = err;
    }
  }
  return worst;
}

#endif /* TILEJIT_TESTS_C_CONSUMER_COMMON_H_ */
