// tilejit: declare a kernel's signature once, with outputs and workspaces;
// call it with its inputs alone.
#pragma once

#include "tilejit/core/data_type.h"
#include "tilejit/core/device.h"
#include "tilejit/core/error.h"
#include "tilejit/core/tensor.h"
#include "tilejit/export/export_library.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/jit/call_messages.h"
#include "tilejit/jit/jit_options.h"
#include "tilejit/jit/kernel.h"
#include "tilejit/runtime/allocator.h"
#include "tilejit/runtime/compile_cache.h"
#include "tilejit/runtime/workspace_pool.h"

namespace tilejit {
// The names an operator author writes, at the top level.
using ir::ceildiv;
using ir::Expr;
using ir::floordiv;
using ir::floormod;
using ir::max;
using ir::min;
using ir::prim_func;
using ir::PrimFunc;
using ir::symbolic;
using runtime::empty;
}  // namespace tilejit
