// The second part of an exported library's wrapper unit, after the tables
// (wrapper_types.h says what comes before): checking the inputs as the jit
// path does (jit/kernel.cpp bind_inputs, with the wording of
// jit/call_errors.cpp), laying out the arena, checking the outputs.
// wrapper_call.cpp, which follows it, runs the call.
//
// Its functions are used by the parts after it (the C functions the
// generator writes last), so the standalone compile (ctest
// export.runtime.wrapper_check) allows unused ones.
#include "wrapper_tables.h"
// ---- embedded from the next line on ----
namespace {

struct Bound {
  int64_t sym[kNumSymbols + 1];
  int64_t res[kNumResults + 1];
  int device_id;     // the call's device: the first tensor input's (else 0)
  int first_tensor;  // that input's index, or -1
};

thread_local char g_error[2048];

__attribute__((cold, noinline, format(printf, 2, 3))) int fail(int status, const char* fmt, ...) {
  int n = snprintf(g_error, sizeof g_error, "%s: ", kName);
  if (n < 0 || size_t(n) >= sizeof g_error) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error + n, sizeof g_error - size_t(n), fmt, ap);
  va_end(ap);
  return status;
}

// "[2, 3]" into buf.
__attribute__((cold)) const char* shape_str(const int64_t* shape, int n, char* buf, size_t size) {
  size_t at = 0;
  at += size_t(snprintf(buf, size, "["));
  for (int d = 0; d < n && at < size; ++d) {
    at += size_t(snprintf(buf + at, size - at, "%s%lld", d ? ", " : "", (long long)shape[d]));
  }
  if (at < size) snprintf(buf + at, size - at, "]");
  return buf;
}

__attribute__((cold)) const char* dtype_str(DLDataType t, char* buf, size_t size) {
  const char* base = nullptr;
  if (t.lanes == 1) {
    if (t.code == kDLInt && (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64)) base = "int";
    if (t.code == kDLUInt && (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64)) base = "uint";
    if (t.code == kDLFloat && (t.bits == 16 || t.bits == 32 || t.bits == 64)) base = "float";
    if (t.code == kDLBfloat && t.bits == 16) base = "bfloat";
    if (t.code == kDLBool && t.bits == 8) {
      snprintf(buf, size, "bool");
      return buf;
    }
  }
  if (base != nullptr) {
    snprintf(buf, size, "%s%u", base, unsigned(t.bits));
  } else {
    snprintf(buf, size, "dtype(code=%u, bits=%u, lanes=%u)", unsigned(t.code), unsigned(t.bits),
             unsigned(t.lanes));
  }
  return buf;
}

__attribute__((cold)) const char* device_str(DLDevice d, char* buf, size_t size) {
  const int id = int(d.device_id);
  switch (int(d.device_type)) {
    case kDLCPU:
      if (id == 0) snprintf(buf, size, "cpu"); else snprintf(buf, size, "cpu:%d", id);
      return buf;
    case kDLCUDA: snprintf(buf, size, "cuda:%d", id); return buf;
    case kDLCUDAHost: snprintf(buf, size, "cuda_host:%d", id); return buf;
    default: snprintf(buf, size, "device_type<%d>:%d", int(d.device_type), id); return buf;
  }
}

bool contiguous(const DLTensor* t) {
  if (t->strides == nullptr) return true;
  int64_t expected = 1;
  bool row_major = true;
  for (int i = t->ndim; i-- > 0;) {
    if (t->shape[i] == 0) return true;  // no elements: no stride is ever used
    if (t->shape[i] != 1 && t->strides[i] != expected) row_major = false;
    expected = int64_t(uint64_t(expected) * uint64_t(t->shape[i]));
  }
  return row_major;
}

// "expected a contiguous tensor, got strides [80, 16, 2] in elements ([320,
// 64, 8] in bytes) for shape [2, 5, 8]" after `prefix`.
__attribute__((cold)) int not_contiguous(const char* prefix, const DLTensor* t) {
  char elements[256], bytes[256], shape[256];
  int64_t in_bytes[8];
  const int n = t->ndim < 8 ? t->ndim : 8;
  for (int d = 0; d < n; ++d) in_bytes[d] = t->strides[d] * ((t->dtype.bits * t->dtype.lanes + 7) / 8);
  return fail(kValueError, "%sexpected a contiguous tensor, got strides %s in elements (%s in bytes) for shape %s",
              prefix, shape_str(t->strides, n, elements, sizeof elements),
              shape_str(in_bytes, n, bytes, sizeof bytes), shape_str(t->shape, n, shape, sizeof shape));
}

__attribute__((cold)) const char* symbol_list(const Bound* b, char* buf, size_t size) {
  size_t at = 0;
  buf[0] = '\0';
  for (int s = 0; s < kNumSymbols && at < size; ++s) {
    at += size_t(snprintf(buf + at, size - at, "%s%s = %lld", s ? ", " : "", kSymbolNames[s],
                          (long long)b->sym[s]));
  }
  return buf;
}

int check_input(int i, const DLTensor* t) {
  const InputSpec& s = kInputs[i];
  char got[256], prefix[160];
  if (__builtin_expect(t == nullptr, 0)) {
    return fail(kTypeError, "argument #%d '%s': expected %s tensor, got NULL", i, s.name, s.a_dtype);
  }
  if (__builtin_expect(t->dtype.code != s.code || t->dtype.bits != s.bits || t->dtype.lanes != 1, 0)) {
    return fail(kTypeError, "argument #%d '%s': expected %s, got %s", i, s.name, s.dtype,
                dtype_str(t->dtype, got, sizeof got));
  }
  if (__builtin_expect(t->ndim != s.rank, 0)) {
    return fail(kValueError, "argument #%d '%s': expected %d dimensions %s, got %d %s", i, s.name,
                s.rank, s.shape, int(t->ndim),
                shape_str(t->shape, t->ndim > 8 ? 8 : (t->ndim < 0 ? 0 : t->ndim), got, sizeof got));
  }
  for (int d = 0; d < s.rank; ++d) {
    if (__builtin_expect(s.dims[d] >= 0 && t->shape[d] != s.dims[d], 0)) {
      return fail(kValueError, "argument #%d '%s': dimension %d must be %lld, got %lld (shape %s)", i,
                  s.name, d, (long long)s.dims[d], (long long)t->shape[d],
                  shape_str(t->shape, t->ndim, got, sizeof got));
    }
  }
  if (__builtin_expect(int(t->device.device_type) != kDeviceType, 0)) {
    return fail(kValueError, "argument #%d '%s': expected a tensor on %s, got one on %s", i, s.name,
                kDeviceText, device_str(t->device, got, sizeof got));
  }
  if (__builtin_expect(!contiguous(t), 0)) {
    snprintf(prefix, sizeof prefix, "argument #%d '%s': ", i, s.name);
    return not_contiguous(prefix, t);
  }
  return kOk;
}

// Checks every input, binds the symbols, runs the shape program and checks
// what it computed (Note [Call plan] in jit/call_plan.h).
int bind(const DLTensor* const* in, const Scalar* sc, Bound* b) {
  b->device_id = 0;
  b->first_tensor = -1;
  for (int i = 0; i < kNumInputs; ++i) {
    if (kInputs[i].scalar) continue;
    if (int st = check_input(i, in[i])) return st;
    if (!kOneDevice) continue;
    // A device target: every tensor on one device, the first tensor's.
    if (b->first_tensor < 0) {
      b->first_tensor = i;
      b->device_id = int(in[i]->device.device_id);
    } else if (__builtin_expect(int(in[i]->device.device_id) != b->device_id, 0)) {
      char got[64], want[64];
      return fail(kValueError, "argument #%d '%s': is on %s but argument #%d '%s' is on %s; all tensors must be on one device",
                  i, kInputs[i].name, device_str(in[i]->device, got, sizeof got), b->first_tensor,
                  kInputs[b->first_tensor].name, device_str(in[b->first_tensor]->device, want, sizeof want));
    }
  }
  for (int k = 0; k < kNumBindings; ++k) {
    const Binding& bd = kBindings[k];
    int64_t v;
    if (bd.dim < 0) {
      v = kInputs[bd.input].bits == 32 ? int64_t(sc[bd.input].i32) : sc[bd.input].i64;
    } else {
      const int64_t extent = in[bd.input]->shape[bd.dim];
      int64_t num;
      if (__builtin_sub_overflow(extent, bd.offset, &num) || (bd.coeff == -1 && num == INT64_MIN)) {
        return fail(kValueError, "argument #%d '%s': dimension %d is %lld, which is %s only for a %s past int64",
                    bd.input, kInputs[bd.input].name, bd.dim, (long long)extent, bd.dim_expr,
                    kSymbolNames[bd.symbol]);
      }
      if (__builtin_expect(num % bd.coeff != 0, 0)) {
        return fail(kValueError, "argument #%d '%s': dimension %d is %lld, which is not %s for any integer %s",
                    bd.input, kInputs[bd.input].name, bd.dim, (long long)extent, bd.dim_expr,
                    kSymbolNames[bd.symbol]);
      }
      v = num / bd.coeff;
    }
    if (__builtin_expect(v < 0, 0)) {
      return fail(kValueError, "symbol '%s' = %lld from %s is negative; shapes must be non-negative",
                  kSymbolNames[bd.symbol], (long long)v, bd.source);
    }
    b->sym[bd.symbol] = v;
  }
  if (const unsigned f = run_program(b->sym, b->res)) {
    char list[512];
    if (f & 1u) {
      return fail(kValueError, "division by zero evaluating the shapes (%s)", symbol_list(b, list, sizeof list));
    }
    return fail(kValueError, "a shape overflows int64 (%s)", symbol_list(b, list, sizeof list));
  }
  for (int k = 0; k < kNumChecks; ++k) {
    const DimCheck& c = kChecks[k];
    const int64_t got = in[c.input]->shape[c.dim];
    if (__builtin_expect(got == b->res[c.result], 1)) continue;
    if (c.symbol != nullptr) {
      return fail(kValueError, "symbol '%s': %s = %lld but %s.shape[%d] = %lld", c.symbol, c.source,
                  (long long)b->res[c.result], kInputs[c.input].name, c.dim, (long long)got);
    }
    return fail(kValueError, "argument #%d '%s': dimension %d must be %s = %lld, got %lld", c.input,
                kInputs[c.input].name, c.dim, c.expr, (long long)b->res[c.result], (long long)got);
  }
  for (int l = 0; l < kNumLaunches; ++l) {
    for (int d = 0; d < 3; ++d) {
      const int r = kLaunchGrid[l][d];
      if (__builtin_expect(b->res[r] > 0, 1)) continue;
      char which[32] = "";
      if (kNumLaunches > 1) snprintf(which, sizeof which, "launch #%d's ", l);
      return fail(kValueError, "%sgrid extent %d = %s evaluates to %lld; every grid extent must be positive",
                  which, d, kResultExpr[r], (long long)b->res[r]);
    }
  }
  for (int list = 0; list < 2; ++list) {
    const BufferSpec* bufs = list == 0 ? kOutputs : kWorkspaces;
    const int n = list == 0 ? kNumOutputs : kNumWorkspaces;
    for (int o = 0; o < n; ++o) {
      int64_t bytes = bufs[o].elem_bytes;
      bool overflow = false;
      for (int d = 0; d < bufs[o].rank; ++d) {
        const int r = bufs[o].first + d;
        if (__builtin_expect(b->res[r] < 0, 0)) {
          return fail(kValueError, "%s '%s' dimension %d = %s evaluates to %lld; extents must be non-negative",
                      list == 0 ? "output" : "workspace", bufs[o].name, d, kResultExpr[r],
                      (long long)b->res[r]);
        }
        overflow |= __builtin_mul_overflow(bytes, b->res[r], &bytes);
      }
      if (__builtin_expect(overflow, 0)) {
        if (list == 0) {
          return fail(kValueError, "output #%d '%s': its shape has more bytes than int64 can count", o, bufs[o].name);
        }
        return fail(kValueError, "workspace '%s': its shape has more bytes than int64 can count", bufs[o].name);
      }
    }
  }
  return kOk;
}

// The workspaces' offsets in one arena, each 256-byte aligned, and the
// arena's size (a multiple of 256), as the jit path's pool leases it.
int layout(const Bound* b, int64_t* offsets, int64_t* sizes, int64_t* total) {
  const int64_t mask = 255;
  int64_t end = 0;
  for (int w = 0; w < kNumWorkspaces; ++w) {
    int64_t bytes = kWorkspaces[w].elem_bytes;
    for (int d = 0; d < kWorkspaces[w].rank; ++d) bytes *= b->res[kWorkspaces[w].first + d];  // checked by bind()
    int64_t offset;
    if (__builtin_add_overflow(end, mask, &offset) || __builtin_add_overflow(offset & ~mask, bytes, &end)) {
      return fail(kValueError, "the workspace arena has more bytes than int64 can count (at workspace '%s')",
                  kWorkspaces[w].name);
    }
    offsets[w] = offset & ~mask;
    sizes[w] = bytes;
  }
  int64_t t;
  if (__builtin_add_overflow(end, mask, &t)) {
    return fail(kValueError, "the workspace arena has more bytes than int64 can count");
  }
  *total = t & ~mask;
  return kOk;
}

int check_outputs(DLTensor* const* out, Bound* b) {
  char got[256], want[256], prefix[160];
  for (int o = 0; o < kNumOutputs; ++o) {
    const BufferSpec& s = kOutputs[o];
    const DLTensor* t = out[o];
    if (__builtin_expect(t == nullptr, 0)) {
      return fail(kTypeError, "out[%d] '%s': expected %s tensor, got NULL", o, s.name, s.a_dtype);
    }
    if (__builtin_expect(t->dtype.code != s.code || t->dtype.bits != s.bits || t->dtype.lanes != 1, 0)) {
      return fail(kTypeError, "out[%d] '%s': expected %s, got %s", o, s.name, s.dtype,
                  dtype_str(t->dtype, got, sizeof got));
    }
    bool same = t->ndim == s.rank;
    for (int d = 0; same && d < s.rank; ++d) same = t->shape[d] == b->res[s.first + d];
    if (__builtin_expect(!same, 0)) {
      return fail(kValueError, "out[%d] '%s': expected shape %s, got %s", o, s.name,
                  shape_str(&b->res[s.first], s.rank, want, sizeof want),
                  shape_str(t->shape, t->ndim > 8 ? 8 : (t->ndim < 0 ? 0 : t->ndim), got, sizeof got));
    }
    if (__builtin_expect(int(t->device.device_type) != kDeviceType, 0)) {
      return fail(kValueError, "out[%d] '%s': expected a tensor on %s, got one on %s", o, s.name,
                  kDeviceText, device_str(t->device, got, sizeof got));
    }
    if (kOneDevice) {
      // With no tensor input, the first output names the call's device.
      if (b->first_tensor < 0 && o == 0) b->device_id = int(t->device.device_id);
      if (__builtin_expect(int(t->device.device_id) != b->device_id, 0)) {
        const DLDevice want_device = {static_cast<DLDeviceType>(kDeviceType), b->device_id};
        return fail(kValueError, "out[%d] '%s': expected a tensor on %s, got one on %s", o, s.name,
                    device_str(want_device, want, sizeof want), device_str(t->device, got, sizeof got));
      }
    }
    if (__builtin_expect(!contiguous(t), 0)) {
      snprintf(prefix, sizeof prefix, "out[%d] '%s': ", o, s.name);
      return not_contiguous(prefix, t);
    }
  }
  return kOk;
}

}  // namespace
