// The CUDA tile library, whole: what a generated tile kernel includes.
#pragma once

#include "tilejit/cuda/atomic.h"
#include "tilejit/cuda/bounds.h"
#include "tilejit/cuda/copy.h"
#include "tilejit/cuda/gemm.h"
#include "tilejit/cuda/mma.h"
#include "tilejit/cuda/mma_acc.h"
#include "tilejit/cuda/part_tile.h"
#include "tilejit/cuda/print.h"
#include "tilejit/cuda/rasterize.h"
#include "tilejit/cuda/reduce.h"
#include "tilejit/cuda/shuffle.h"
#include "tilejit/cuda/tile.h"
#include "tilejit/cuda/vector_run.h"
