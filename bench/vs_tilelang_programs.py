"""The tile programs of bench/bench_vs_tilelang.py, each written once in
TileLang's classic style and run under TileLang and under tilejit.

Every program is a function of the two modules and a target:

    def softmax(tl, T, target="auto"):
        @tl.jit(out_idx=[-1], target=target)
        def softmax_kernel(M, N, ...):
            @T.prim_func
            def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
                ...
            return main
        return softmax_kernel

so ``softmax(tilelang, tilelang.language)`` is TileLang's factory and
``softmax(tilejit, tilejit.language, "cuda")`` is tilejit's, from the same
text. The programs follow the idioms of TileLang's examples (gemm, gemv,
elementwise, norm, online_softmax, flash_attention, flash_decoding,
deepseek_mla, gemm_splitk); they are written here, not copied. They keep to
the part of the language both frameworks accept: no T.macro, no eager style,
dtypes as strings, workspaces as T.alloc_global.
"""

LOG2E = 1.44269504


# --- memory-bound ------------------------------------------------------------

def elementwise_add(tl, T, target="auto"):
    @tl.jit(out_idx=[-1], target=target)
    def add_kernel(M, N, block_M=32, block_N=256, threads=128, dtype="float16"):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
                 C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M),
                          threads=threads) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_N), dtype)
                B_shared = T.alloc_shared((block_M, block_N), dtype)
                C_local = T.alloc_fragment((block_M, block_N), dtype)
                C_shared = T.alloc_shared((block_M, block_N), dtype)
                T.copy(A[by * block_M, bx * block_N], A_shared)
                T.copy(B[by * block_M, bx * block_N], B_shared)
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] = A_shared[i, j] + B_shared[i, j]
                T.copy(C_local, C_shared)
                T.copy(C_shared, C[by * block_M, bx * block_N])
        return main
    return add_kernel


def tile_copy(tl, T, target="auto"):
    @tl.jit(out_idx=[-1], target=target)
    def copy_kernel(M, N, block_M=64, block_N=256, threads=128, dtype="float16"):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M),
                          threads=threads) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_N), dtype)
                T.copy(A[by * block_M, bx * block_N], A_shared)
                T.copy(A_shared, B[by * block_M, bx * block_N])
        return main
    return copy_kernel


def transpose(tl, T, target="auto"):
    @tl.jit(out_idx=[-1], target=target)
    def transpose_kernel(M, N, block_M=64, block_N=64, threads=128, dtype="float16"):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M),
                          threads=threads) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_N), dtype)
                B_shared = T.alloc_shared((block_N, block_M), dtype)
                T.copy(A[by * block_M, bx * block_N], A_shared)
                for i, j in T.Parallel(block_N, block_M):
                    B_shared[i, j] = A_shared[j, i]
                T.copy(B_shared, B[bx * block_N, by * block_M])
        return main
    return transpose_kernel


def gemv(tl, T, target="auto"):
    """TileLang's naive GEMV: one thread per row of B, C = B @ A."""
    @tl.jit(out_idx=[-1], target=target)
    def gemv_kernel(N, K, BLOCK_N=128, BLOCK_K=128, dtype="float16", accum_dtype="float32"):
        @T.prim_func
        def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), dtype)):
            with T.Kernel(T.ceildiv(N, BLOCK_N), threads=BLOCK_N) as bn:
                tn = T.get_thread_binding(0)
                A_shared = T.alloc_shared((BLOCK_K,), dtype)
                B_shared = T.alloc_shared((BLOCK_N, BLOCK_K), dtype)
                C_reg = T.alloc_local((1,), accum_dtype)
                T.clear(C_reg)
                for bk in T.serial(T.ceildiv(K, BLOCK_K)):
                    for tk in T.serial(BLOCK_K):
                        A_shared[tk] = A[bk * BLOCK_K + tk]
                        B_shared[tn, tk] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk]
                    for tk in T.serial(BLOCK_K):
                        C_reg[0] += (A_shared[tk].astype(accum_dtype)
                                     * B_shared[tn, tk].astype(accum_dtype))
                C[bn * BLOCK_N + tn] = C_reg[0]
        return main
    return gemv_kernel


def gemv_splitk(tl, T, target="auto"):
    """TileLang's vectorised split-K GEMV: threads (BLOCK_N, reduce_threads),
    each thread's partial dot product added into a shared row sum."""
    @tl.jit(out_idx=[-1], target=target)
    def gemv_splitk_kernel(N, K, BLOCK_N=32, reduce_threads=32, TILE_K=8, dtype="float16",
                           accum_dtype="float32"):
        BLOCK_K = reduce_threads * TILE_K

        @T.prim_func
        def main(A: T.Tensor((K,), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((N,), dtype)):
            with T.Kernel(T.ceildiv(N, BLOCK_N), threads=(BLOCK_N, reduce_threads)) as bn:
                tn = T.get_thread_binding(0)
                tk = T.get_thread_binding(1)
                A_local = T.alloc_local((TILE_K,), dtype)
                B_local = T.alloc_local((TILE_K,), dtype)
                C_shared = T.alloc_shared((BLOCK_N,), accum_dtype)
                C_accum = T.alloc_local((1,), accum_dtype)
                if tk == 0:
                    C_shared[tn] = 0
                T.clear(C_accum)
                for bk in T.serial(T.ceildiv(K, BLOCK_K)):
                    for k in T.vectorized(TILE_K):
                        A_local[k] = A[bk * BLOCK_K + tk * TILE_K + k]
                        B_local[k] = B[bn * BLOCK_N + tn, bk * BLOCK_K + tk * TILE_K + k]
                    for k in T.serial(TILE_K):
                        C_accum[0] += (A_local[k].astype(accum_dtype)
                                       * B_local[k].astype(accum_dtype))
                T.atomic_add(C_shared[tn], C_accum[0])
                C[bn * BLOCK_N + tn] = C_shared[tn]
        return main
    return gemv_splitk_kernel


# --- reductions --------------------------------------------------------------

def softmax(tl, T, target="auto"):
    """Row softmax, block_m whole rows per block, fragment row reductions."""
    @tl.jit(out_idx=[-1], target=target)
    def softmax_kernel(M, N, block_m=1, threads=128, dtype="float16", accum_dtype="float32"):
        scale = LOG2E

        @T.prim_func
        def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(M, block_m), threads=threads) as bx:
                x_shared = T.alloc_shared((block_m, N), dtype)
                x = T.alloc_fragment((block_m, N), accum_dtype)
                row_max = T.alloc_fragment((block_m,), accum_dtype)
                row_sum = T.alloc_fragment((block_m,), accum_dtype)
                T.copy(X[bx * block_m, 0], x_shared)
                for i, j in T.Parallel(block_m, N):
                    x[i, j] = T.Cast(accum_dtype, x_shared[i, j])
                T.reduce_max(x, row_max, dim=1)
                for i, j in T.Parallel(block_m, N):
                    x[i, j] = T.exp2(x[i, j] * scale - row_max[i] * scale)
                T.reduce_sum(x, row_sum, dim=1)
                for i, j in T.Parallel(block_m, N):
                    x_shared[i, j] = T.Cast(dtype, x[i, j] / row_sum[i])
                T.copy(x_shared, Y[bx * block_m, 0])
        return main
    return softmax_kernel


def online_softmax(tl, T, target="auto"):
    """TileLang's online softmax: one row per block, BN columns at a time,
    the log-sum-exp carried across chunks in a one-element fragment."""
    @tl.jit(out_idx=[1], target=target)
    def online_softmax_kernel(M, N, BN=8192, threads=128, dtype="float16",
                              accum_dtype="float32"):
        NN = (N + BN - 1) // BN
        scale = LOG2E

        @T.prim_func
        def main(X: T.Tensor([M, N], dtype), Y: T.Tensor([M, N], dtype)):
            with T.Kernel(M, threads=threads) as i_m:
                x = T.alloc_fragment([BN], dtype)
                y = T.alloc_fragment([BN], dtype)
                lse = T.alloc_fragment([1], accum_dtype)
                max_x = T.alloc_fragment([1], dtype)
                exp_x = T.alloc_fragment([BN], accum_dtype)
                sum_exp_x = T.alloc_fragment([1], accum_dtype)
                T.fill(lse, -T.infinity(accum_dtype))
                for i_n in T.Pipelined(0, NN):
                    T.copy(X[i_m, i_n * BN:(i_n + 1) * BN], x)
                    T.reduce_max(x, max_x, dim=0, clear=True)
                    for j in T.Parallel(BN):
                        exp_x[j] = T.exp2(x[j] * scale - max_x[0] * scale)
                    T.reduce_sum(exp_x, sum_exp_x, dim=0, clear=True)
                    lse[0] = max_x[0] * scale + T.log2(T.exp2(lse[0] - max_x[0] * scale)
                                                       + sum_exp_x[0])
                for i_n in T.Pipelined(0, NN):
                    T.copy(X[i_m, i_n * BN:(i_n + 1) * BN], x)
                    for j in T.Parallel(BN):
                        y[j] = T.exp2(x[j] * scale - lse[0])
                    T.copy(y, Y[i_m, i_n * BN:(i_n + 1) * BN])
        return main
    return online_softmax_kernel


def layernorm(tl, T, target="auto"):
    """TileLang's layer norm forward: Y, Mean and Rstd per row."""
    @tl.jit(out_idx=[-3, -2, -1], target=target)
    def layernorm_kernel(M, D, eps=1e-5, blk_m=1, threads=256, dtype="float16",
                         accum_dtype="float32"):
        inv_D = 1.0 / D

        @T.prim_func
        def main(X: T.Tensor((M, D), dtype), gamma: T.Tensor((D,), dtype),
                 beta: T.Tensor((D,), dtype), Y: T.Tensor((M, D), dtype),
                 Mean: T.Tensor((M,), accum_dtype), Rstd: T.Tensor((M,), accum_dtype)):
            with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
                X_smem = T.alloc_shared((blk_m, D), dtype)
                G_smem = T.alloc_shared((D,), dtype)
                B_smem = T.alloc_shared((D,), dtype)
                X_local = T.alloc_fragment((blk_m, D), accum_dtype)
                X_sq_local = T.alloc_fragment((blk_m, D), accum_dtype)
                sum_row = T.alloc_fragment((blk_m,), accum_dtype)
                sumsq_row = T.alloc_fragment((blk_m,), accum_dtype)
                mean_row = T.alloc_fragment((blk_m,), accum_dtype)
                rstd_row = T.alloc_fragment((blk_m,), accum_dtype)
                T.copy(X[bx * blk_m, 0], X_smem)
                T.copy(gamma, G_smem)
                T.copy(beta, B_smem)
                for i, j in T.Parallel(blk_m, D):
                    X_local[i, j] = T.Cast(accum_dtype, X_smem[i, j])
                for i, j in T.Parallel(blk_m, D):
                    X_sq_local[i, j] = X_local[i, j] * X_local[i, j]
                T.reduce_sum(X_local, sum_row, dim=1)
                T.reduce_sum(X_sq_local, sumsq_row, dim=1)
                for i in T.Parallel(blk_m):
                    mean_row[i] = sum_row[i] * inv_D
                    rstd_row[i] = T.rsqrt(sumsq_row[i] * inv_D - mean_row[i] * mean_row[i] + eps)
                    Mean[bx * blk_m + i] = mean_row[i]
                    Rstd[bx * blk_m + i] = rstd_row[i]
                for i, j in T.Parallel(blk_m, D):
                    X_smem[i, j] = T.Cast(dtype, (X_local[i, j] - mean_row[i]) * rstd_row[i]
                                          * T.Cast(accum_dtype, G_smem[j])
                                          + T.Cast(accum_dtype, B_smem[j]))
                T.copy(X_smem, Y[bx * blk_m, 0])
        return main
    return layernorm_kernel


def rms_norm(tl, T, target="auto"):
    """TileLang's RMSNorm (whole rows in a fragment) with a weight."""
    @tl.jit(out_idx=[-1], target=target)
    def rms_norm_kernel(M, N, blk_m=1, eps=1e-6, threads=128, dtype="float32",
                        accum_dtype="float32"):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), B: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
                A_shared = T.alloc_shared((blk_m, N), dtype)
                W_shared = T.alloc_shared((N,), dtype)
                A_pow_local = T.alloc_fragment((blk_m, N), accum_dtype)
                A_local = T.alloc_fragment((blk_m, N), accum_dtype)
                A_powsum = T.alloc_fragment((blk_m,), accum_dtype)
                T.copy(A[bx * blk_m:(bx + 1) * blk_m, :], A_shared)
                T.copy(W, W_shared)
                for i, j in T.Parallel(blk_m, N):
                    A_local[i, j] = T.Cast(accum_dtype, A_shared[i, j])
                for i, j in T.Parallel(blk_m, N):
                    A_pow_local[i, j] = A_local[i, j] * A_local[i, j]
                T.reduce_sum(A_pow_local, A_powsum, dim=1)
                for i in T.Parallel(blk_m):
                    A_powsum[i] = T.rsqrt(A_powsum[i] / N + eps)
                for i, j in T.Parallel(blk_m, N):
                    A_shared[i, j] = T.Cast(dtype, A_local[i, j] * A_powsum[i]
                                            * T.Cast(accum_dtype, W_shared[j]))
                T.copy(A_shared, B[bx * blk_m:(bx + 1) * blk_m, :])
        return main
    return rms_norm_kernel


def row_reduce(tl, T, target="auto"):
    """A sum or max along rows, blk_n columns at a time through shared
    memory, folded with clear=False."""
    @tl.jit(out_idx=[-1], target=target)
    def row_reduce_kernel(M, N, kind="sum", blk_m=4, blk_n=1024, num_stages=2, threads=128,
                          dtype="float32", out_dtype="float32"):
        @T.prim_func
        def main(X: T.Tensor((M, N), dtype), S: T.Tensor((M,), out_dtype)):
            with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
                x_shared = T.alloc_shared((blk_m, blk_n), dtype)
                x = T.alloc_fragment((blk_m, blk_n), out_dtype)
                acc = T.alloc_fragment((blk_m,), out_dtype)
                if kind == "sum":
                    T.clear(acc)
                else:
                    T.fill(acc, -T.infinity(out_dtype))
                for k in T.Pipelined(T.ceildiv(N, blk_n), num_stages=num_stages):
                    T.copy(X[bx * blk_m, k * blk_n], x_shared)
                    for i, j in T.Parallel(blk_m, blk_n):
                        if kind == "sum":
                            x[i, j] = T.Cast(out_dtype, x_shared[i, j])
                        else:
                            x[i, j] = T.if_then_else(k * blk_n + j < N,
                                                     T.Cast(out_dtype, x_shared[i, j]),
                                                     -T.infinity(out_dtype))
                    if kind == "sum":
                        T.reduce_sum(x, acc, dim=1, clear=False)
                    else:
                        T.reduce_max(x, acc, dim=1, clear=False)
                T.copy(acc, S[bx * blk_m])
        return main
    return row_reduce_kernel


# --- GEMM --------------------------------------------------------------------

def matmul(tl, T, target="auto"):
    """TileLang's README GEMM (C = A @ B, or A @ B^T with B as [N, K])."""
    @tl.jit(out_idx=[-1], target=target)
    def matmul_kernel(M, N, K, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128,
                      trans_B=False, dtype="float16", accum_dtype="float32"):
        B_shape = (N, K) if trans_B else (K, N)
        B_tile = (block_N, block_K) if trans_B else (block_K, block_N)

        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor(B_shape, dtype),
                 C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M),
                          threads=threads) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared(B_tile, dtype)
                C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
                T.clear(C_local)
                for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                    if trans_B:
                        T.copy(B[bx * block_N, ko * block_K], B_shared)
                    else:
                        T.copy(B[ko * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local, transpose_B=trans_B)
                T.copy(C_local, C[by * block_M, bx * block_N])
        return main
    return matmul_kernel


def matmul_bench(tl, T, target="auto"):
    """TileLang's benchmark GEMM (benchmark/matmul/benchmark_matmul.py): C = A @ B^T with B
    as [N, K], the block's result staged through shared memory, rasterised in panels."""
    @tl.jit(out_idx=[2], target=target)
    def matmul_bench_kernel(M, N, K, block_M=128, block_N=256, block_K=64, num_stages=3,
                            threads=256, enable_rasteration=True, dtype="bfloat16",
                            accum_dtype="float32"):
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
                 C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M),
                          threads=threads) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_N, block_K), dtype)
                C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
                C_shared = T.alloc_shared((block_M, block_N), dtype)
                T.use_swizzle(panel_size=10, enable=enable_rasteration)
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                    T.gemm(A_shared, B_shared, C_local, transpose_B=True,
                           policy=T.GemmWarpPolicy.Square)
                T.copy(C_local, C_shared)
                T.copy(C_shared, C[by * block_M, bx * block_N])
        return main
    return matmul_bench_kernel


def matmul_splitk(tl, T, target="auto"):
    """TileLang's split-K GEMM: each K slice's partial tile T.atomic_add-ed
    into a float32 C that the caller zeroed (no out_idx)."""
    @tl.jit(target=target)
    def matmul_splitk_kernel(M, N, K, split_k=4, block_M=128, block_N=128, block_K=32,
                             num_stages=2, threads=128, dtype="float16", accum_dtype="float32",
                             out_dtype="float32"):
        splitK = K // split_k

        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                 C: T.Tensor((M, N), out_dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k,
                          threads=threads) as (bx, by, bz):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_K, block_N), dtype)
                C_shared = T.alloc_shared((block_M, block_N), out_dtype)
                C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
                T.clear(C_local)
                for ko in T.Pipelined(T.ceildiv(splitK, block_K), num_stages=num_stages):
                    T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
                    T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                T.copy(C_local, C_shared)
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[by * block_M + i, bx * block_N + j], C_shared[i, j])
        return main
    return matmul_splitk_kernel


# --- attention and decoding --------------------------------------------------

def flash_attention(tl, T, target="auto"):
    """TileLang's flash attention forward, [batch, seq_len, heads, dim]."""
    @tl.jit(out_idx=[3], target=target)
    def flashattn(batch, heads, seq_len, dim, is_causal, block_M=128, block_N=128, num_stages=2,
                  threads=256, dtype="float16", accum_dtype="float32"):
        scale = (1.0 / dim) ** 0.5 * LOG2E
        shape = [batch, seq_len, heads, dim]

        @T.prim_func
        def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                 Output: T.Tensor(shape, dtype)):
            with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch,
                          threads=threads) as (bx, by, bz):
                Q_shared = T.alloc_shared([block_M, dim], dtype)
                K_shared = T.alloc_shared([block_N, dim], dtype)
                V_shared = T.alloc_shared([block_N, dim], dtype)
                O_shared = T.alloc_shared([block_M, dim], dtype)
                acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
                acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
                acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
                scores_max = T.alloc_fragment([block_M], accum_dtype)
                scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
                scores_scale = T.alloc_fragment([block_M], accum_dtype)
                scores_sum = T.alloc_fragment([block_M], accum_dtype)
                logsum = T.alloc_fragment([block_M], accum_dtype)

                T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
                T.fill(acc_o, 0)
                T.fill(logsum, 0)
                T.fill(scores_max, -T.infinity(accum_dtype))
                loop_range = (T.min(T.ceildiv(seq_len, block_N),
                                    T.ceildiv((bx + 1) * block_M, block_N))
                              if is_causal else T.ceildiv(seq_len, block_N))
                for k in T.Pipelined(loop_range, num_stages=num_stages):
                    T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                    if is_causal:
                        for i, j in T.Parallel(block_M, block_N):
                            acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                                         -T.infinity(accum_dtype))
                    else:
                        for i, j in T.Parallel(block_M, block_N):
                            acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len,
                                                         -T.infinity(accum_dtype), 0)
                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True,
                           policy=T.GemmWarpPolicy.FullRow)
                    T.copy(scores_max, scores_max_prev)
                    T.fill(scores_max, -T.infinity(accum_dtype))
                    T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                    for i in T.Parallel(block_M):
                        scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                    for i in T.Parallel(block_M):
                        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                    for i in T.Parallel(block_M):
                        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                    T.copy(acc_s, acc_s_cast)
                    for i, j in T.Parallel(block_M, dim):
                        acc_o[i, j] *= scores_scale[i]
                    T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] /= logsum[i]
                T.copy(acc_o, O_shared)
                T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])
        return main
    return flashattn


def flash_attention_pipelined(tl, T, target="auto"):
    """TileLang's flash attention forward with a software-pipelined body
    (examples/flash_attention/example_mha_fwd_bshd_wgmma_pipelined.py): the
    gemm P V and the rescale of iteration k - 1 run after the gemm Q K^T of
    iteration k (T.Pipelined's order, stage and group)."""
    @tl.jit(out_idx=[3], target=target)
    def flashattn_pipelined(batch, heads, seq_len, dim, is_causal, block_M=128, block_N=128,
                            num_stages=2, threads=256, dtype="float16", accum_dtype="float32"):
        scale = (1.0 / dim) ** 0.5 * LOG2E
        shape = [batch, seq_len, heads, dim]

        @T.macro
        def MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz):
            T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
            if is_causal:
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                                 -T.infinity(acc_s.dtype))
            else:
                T.clear(acc_s)
            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

        @T.macro
        def MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz):
            T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
            T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

        @T.macro
        def Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum,
                    logsum):
            T.copy(scores_max, scores_max_prev)
            T.fill(scores_max, -T.infinity(accum_dtype))
            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
            for i in T.Parallel(block_M):
                scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
            for i, j in T.Parallel(block_M, block_N):
                acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
            T.reduce_sum(acc_s, scores_sum, dim=1)
            for i in T.Parallel(block_M):
                logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
            T.copy(acc_s, acc_s_cast)

        @T.macro
        def Rescale(acc_o, scores_scale):
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] *= scores_scale[i]

        @T.prim_func
        def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                 Output: T.Tensor(shape, dtype)):
            with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch,
                          threads=threads) as (bx, by, bz):
                Q_shared = T.alloc_shared([block_M, dim], dtype)
                K_shared = T.alloc_shared([block_N, dim], dtype)
                V_shared = T.alloc_shared([block_N, dim], dtype)
                O_shared = T.alloc_shared([block_M, dim], dtype)
                acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
                acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
                acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
                scores_max = T.alloc_fragment([block_M], accum_dtype)
                scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
                scores_scale = T.alloc_fragment([block_M], accum_dtype)
                scores_sum = T.alloc_fragment([block_M], accum_dtype)
                logsum = T.alloc_fragment([block_M], accum_dtype)

                T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
                T.fill(acc_o, 0)
                T.fill(logsum, 0)
                T.fill(scores_max, -T.infinity(accum_dtype))
                loop_range = (T.min(T.ceildiv(seq_len, block_N),
                                    T.ceildiv((bx + 1) * block_M, block_N))
                              if is_causal else T.ceildiv(seq_len, block_N))
                for k in T.Pipelined(loop_range, num_stages=num_stages,
                                     order=[-1, 0, 3, 1, -1, 2], stage=[-1, 0, 0, 1, -1, 1],
                                     group=[[0], [1, 2], [3, 4, 5, 6, 7, 8, 9, 10], [11], [12],
                                            [13]]):
                    MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz)
                    Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale,
                            scores_sum, logsum)
                    Rescale(acc_o, scores_scale)
                    MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] /= logsum[i]
                T.copy(acc_o, O_shared)
                T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])
        return main
    return flashattn_pipelined


def gqa_decode(tl, T, target="auto"):
    """TileLang's GQA flash-decoding: Q[batch, heads, dim], K / V[batch,
    seqlen_kv, groups, dim]; a split kernel (block_H query rows of one kv
    head, padded when the group is smaller) and a combine kernel, the
    partials in T.alloc_global workspaces. seqlen_kv must divide into
    num_split * block_N."""
    @tl.jit(out_idx=[3], target=target)
    def gqa_decode_kernel(batch, heads, groups, seqlen_kv, dim, block_N=128, block_H=64,
                          num_split=8, num_stages=2, threads=128, dtype="float16",
                          accum_dtype="float32"):
        scale = (1.0 / dim) ** 0.5 * LOG2E
        kv_group_num = heads // groups
        valid_block_H = min(block_H, kv_group_num)
        split_len = seqlen_kv // num_split
        assert split_len * num_split == seqlen_kv and split_len % block_N == 0

        @T.prim_func
        def main(Q: T.Tensor([batch, heads, dim], dtype),
                 K: T.Tensor([batch, seqlen_kv, groups, dim], dtype),
                 V: T.Tensor([batch, seqlen_kv, groups, dim], dtype),
                 Output: T.Tensor([batch, heads, dim], dtype)):
            glse = T.alloc_global([batch, heads, num_split], accum_dtype)
            Output_partial = T.alloc_global([batch, heads, num_split, dim], accum_dtype)
            with T.Kernel(batch, heads // valid_block_H, num_split,
                          threads=threads) as (bid, hid, sid):
                Q_shared = T.alloc_shared([block_H, dim], dtype)
                K_shared = T.alloc_shared([block_N, dim], dtype)
                V_shared = T.alloc_shared([block_N, dim], dtype)
                acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
                acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
                acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
                scores_max = T.alloc_fragment([block_H], accum_dtype)
                scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
                scores_scale = T.alloc_fragment([block_H], accum_dtype)
                scores_sum = T.alloc_fragment([block_H], accum_dtype)
                logsum = T.alloc_fragment([block_H], accum_dtype)
                cur_kv_head = hid // (kv_group_num // valid_block_H)

                T.copy(Q[bid, hid * valid_block_H:hid * valid_block_H + block_H, :], Q_shared)
                T.fill(acc_o, 0)
                T.fill(logsum, 0)
                T.fill(scores_max, -T.infinity(accum_dtype))
                for k in T.Pipelined(split_len // block_N, num_stages=num_stages):
                    start = split_len * sid + k * block_N
                    T.copy(K[bid, start:start + block_N, cur_kv_head, :], K_shared)
                    T.clear(acc_s)
                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True,
                           policy=T.GemmWarpPolicy.FullRow)
                    T.copy(scores_max, scores_max_prev)
                    T.fill(scores_max, -T.infinity(accum_dtype))
                    T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                    for i in T.Parallel(block_H):
                        scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                    for i in T.Parallel(block_H):
                        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                    for i, j in T.Parallel(block_H, block_N):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                    for i in T.Parallel(block_H):
                        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                    T.copy(acc_s, acc_s_cast)
                    for i, j in T.Parallel(block_H, dim):
                        acc_o[i, j] *= scores_scale[i]
                    T.copy(V[bid, start:start + block_N, cur_kv_head, :], V_shared)
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] /= logsum[i]
                for i in T.Parallel(block_H):
                    logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
                for i in T.Parallel(block_H):
                    if i < valid_block_H:
                        glse[bid, hid * valid_block_H + i, sid] = logsum[i]
                for i, j in T.Parallel(block_H, dim):
                    if i < valid_block_H:
                        Output_partial[bid, hid * valid_block_H + i, sid, j] = acc_o[i, j]
            with T.Kernel(heads, batch, threads=128) as (hid, bz):
                # combine: weigh each split's partial by exp2(lse_split - lse_total)
                po_local = T.alloc_fragment([dim], accum_dtype)
                o_accum_local = T.alloc_fragment([dim], accum_dtype)
                lse_local_split = T.alloc_var(accum_dtype)
                lse_logsum_local = T.alloc_var(accum_dtype)
                lse_max_local = T.alloc_var(accum_dtype)
                scale_local = T.alloc_var(accum_dtype)
                T.clear(o_accum_local)
                lse_logsum_local = 0.0
                lse_max_local = -T.infinity(accum_dtype)
                for k in T.serial(num_split):
                    lse_max_local = T.max(lse_max_local, glse[bz, hid, k])
                for k in T.serial(num_split):
                    lse_local_split = glse[bz, hid, k]
                    lse_logsum_local += T.exp2(lse_local_split - lse_max_local)
                lse_logsum_local = T.log2(lse_logsum_local) + lse_max_local
                for k in T.serial(num_split):
                    for i in T.Parallel(dim):
                        po_local[i] = Output_partial[bz, hid, k, i]
                    lse_local_split = glse[bz, hid, k]
                    scale_local = T.exp2(lse_local_split - lse_logsum_local)
                    for i in T.Parallel(dim):
                        o_accum_local[i] += po_local[i] * scale_local
                for i in T.Parallel(dim):
                    Output[bz, hid, i] = o_accum_local[i]
        return main
    return gqa_decode_kernel


def mla_decode(tl, T, target="auto"):
    """TileLang's DeepSeek MLA decoding with split KV: one kv head of dim
    (the latent, also the values) plus pe_dim rotary columns, block_H query
    heads per block; a split kernel and a combine kernel."""
    @tl.jit(out_idx=[4], target=target)
    def mla_decode_kernel(batch, heads, seqlen_kv, dim, pe_dim, block_N=64, block_H=64,
                          num_split=4, num_stages=2, threads=256, dtype="float16",
                          accum_dtype="float32"):
        scale = (dim + pe_dim) ** -0.5 * LOG2E
        split_len = seqlen_kv // num_split
        assert split_len * num_split == seqlen_kv and split_len % block_N == 0
        assert heads % block_H == 0

        @T.prim_func
        def main(Q: T.Tensor([batch, heads, dim], dtype),
                 Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
                 KV: T.Tensor([batch, seqlen_kv, 1, dim], dtype),
                 K_pe: T.Tensor([batch, seqlen_kv, 1, pe_dim], dtype),
                 Output: T.Tensor([batch, heads, dim], dtype)):
            glse = T.alloc_global([batch, heads, num_split], accum_dtype)
            Output_partial = T.alloc_global([batch, heads, num_split, dim], accum_dtype)
            with T.Kernel(batch, heads // block_H, num_split, threads=threads) as (bid, hid, bz):
                Q_shared = T.alloc_shared([block_H, dim], dtype)
                S_shared = T.alloc_shared([block_H, block_N], dtype)
                Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
                KV_shared = T.alloc_shared([block_N, dim], dtype)
                K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
                acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
                acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
                acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
                scores_max = T.alloc_fragment([block_H], accum_dtype)
                scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
                scores_scale = T.alloc_fragment([block_H], accum_dtype)
                scores_sum = T.alloc_fragment([block_H], accum_dtype)
                logsum = T.alloc_fragment([block_H], accum_dtype)

                T.copy(Q[bid, hid * block_H:(hid + 1) * block_H, :], Q_shared)
                T.copy(Q_pe[bid, hid * block_H:(hid + 1) * block_H, :], Q_pe_shared)
                T.fill(acc_o, 0)
                T.fill(logsum, 0)
                T.fill(scores_max, -T.infinity(accum_dtype))
                for k in T.Pipelined(split_len // block_N, num_stages=num_stages):
                    kv_start = split_len * bz + k * block_N
                    T.copy(KV[bid, kv_start:kv_start + block_N, 0, :], KV_shared)
                    T.copy(K_pe[bid, kv_start:kv_start + block_N, 0, :], K_pe_shared)
                    T.clear(acc_s)
                    T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True,
                           policy=T.GemmWarpPolicy.FullCol)
                    T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True,
                           policy=T.GemmWarpPolicy.FullCol)
                    T.copy(scores_max, scores_max_prev)
                    T.fill(scores_max, -T.infinity(accum_dtype))
                    T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                    for i in T.Parallel(block_H):
                        scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                    for i in T.Parallel(block_H):
                        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                    for i, j in T.Parallel(block_H, block_N):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                    T.copy(acc_s, S_shared)
                    T.copy(S_shared, acc_s_cast)
                    for i in T.Parallel(block_H):
                        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                    for i, j in T.Parallel(block_H, dim):
                        acc_o[i, j] *= scores_scale[i]
                    T.gemm(acc_s_cast, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] /= logsum[i]
                for i in T.Parallel(block_H):
                    logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
                T.copy(logsum, glse[bid, hid * block_H:(hid + 1) * block_H, bz])
                T.copy(acc_o, Output_partial[bid, hid * block_H:(hid + 1) * block_H, bz, :])
            with T.Kernel(heads, batch, threads=128) as (hid, bz):
                # combine: weigh each split's partial by exp2(lse_split - lse_total)
                po_local = T.alloc_fragment([dim], accum_dtype)
                o_accum_local = T.alloc_fragment([dim], accum_dtype)
                lse_local_split = T.alloc_var(accum_dtype)
                lse_logsum_local = T.alloc_var(accum_dtype)
                lse_max_local = T.alloc_var(accum_dtype)
                scale_local = T.alloc_var(accum_dtype)
                T.clear(o_accum_local)
                lse_logsum_local = 0.0
                lse_max_local = -T.infinity(accum_dtype)
                for k in T.serial(num_split):
                    lse_max_local = T.max(lse_max_local, glse[bz, hid, k])
                for k in T.serial(num_split):
                    lse_local_split = glse[bz, hid, k]
                    lse_logsum_local += T.exp2(lse_local_split - lse_max_local)
                lse_logsum_local = T.log2(lse_logsum_local) + lse_max_local
                for k in T.serial(num_split):
                    for i in T.Parallel(dim):
                        po_local[i] = Output_partial[bz, hid, k, i]
                    lse_local_split = glse[bz, hid, k]
                    scale_local = T.exp2(lse_local_split - lse_logsum_local)
                    for i in T.Parallel(dim):
                        o_accum_local[i] += po_local[i] * scale_local
                for i in T.Parallel(dim):
                    Output[bz, hid, i] = o_accum_local[i]
        return main
    return mla_decode_kernel
