// The CPU tile library as one header: what a unit lowered from tile IR
// includes after the prelude (src/backend/cpu/tile_codegen.cpp).
#pragma once

#include "tilejit/cpu/atomic.h"
#include "tilejit/cpu/bounds.h"
#include "tilejit/cpu/copy.h"
#include "tilejit/cpu/gemm.h"
#include "tilejit/cpu/print.h"
#include "tilejit/cpu/reduce.h"
#include "tilejit/cpu/shuffle.h"
#include "tilejit/cpu/tile.h"
