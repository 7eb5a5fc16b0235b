// The part every exported library's C header shares (c_header() writes it
// after header_dlpack.h's text): the status codes and the allocator of the
// _auto functions, under a guard of their own, so that two exported headers
// in one program declare them once. C, and C++.
#include <stddef.h>
// ---- embedded from the next line on ----
/* Shared by every tilejit-exported header. */
#ifndef TILEJIT_EXPORT_COMMON_
#define TILEJIT_EXPORT_COMMON_
/* Status codes: 0 success; otherwise the kind of the jit path's error. */
enum {
  TILEJIT_OK = 0,
  TILEJIT_TYPE_ERROR = 1,    /* a wrong dtype, a NULL tensor */
  TILEJIT_VALUE_ERROR = 2,   /* a wrong rank, extent, device, layout, workspace */
  TILEJIT_RUNTIME_ERROR = 3, /* the kernel failed (a block threw), or the CUDA driver
                                is missing (libcuda.so.1) or failed */
  TILEJIT_OUT_OF_MEMORY = 4  /* a workspace or an output could not be allocated */
};
/* Memory for <op>_auto's workspace and <op>_auto_outputs' outputs. alloc returns `bytes` bytes aligned to
   `alignment` (256), usable by work queued on `stream`, or NULL; free gives
   back what alloc returned, once the work queued on `stream` so far is done
   (stream-ordered: for CUDA, cuMemFreeAsync on `stream` does it; the CPU
   target runs synchronously, so at once). `user` is passed to both. */
typedef struct tilejit_allocator {
  void* (*alloc)(void* user, size_t bytes, size_t alignment, void* stream);
  void (*free)(void* user, void* ptr, size_t bytes, void* stream);
  void* user;
} tilejit_allocator;
#endif
