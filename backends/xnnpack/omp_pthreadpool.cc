#include "backends/xnnpack/omp_pthreadpool.h"

#include <omp.h>

#include <algorithm>
#include <atomic>

// The pthreadpool API (Debian's libpthreadpool 0.0~git20210507, the version
// libXNNPACK links) on OpenMP. Every entry point XNNPACK imports is defined here;
// a task grid is flattened into one index range split statically over the threads.
struct pthreadpool {
  int unused = 0;
};

namespace {

pthreadpool the_pool;
std::atomic<long> calls{0};

size_t width(pthreadpool_t pool) {
  return pool ? static_cast<size_t>(std::max(1, omp_get_max_threads())) : 1;
}
size_t tiles(size_t range, size_t tile) { return tile == 0 ? 0 : (range + tile - 1) / tile; }

// Runs body(t) for t in [0, n) on the pool's threads (inline for one thread or one item).
template <class Body>
void parallel(pthreadpool_t pool, size_t n, Body&& body) {
  calls.fetch_add(1, std::memory_order_relaxed);
  size_t threads = std::min(width(pool), n);
  if (threads <= 1) {
    for (size_t t = 0; t < n; ++t) body(t);
    return;
  }
  const long count = static_cast<long>(n);
#pragma omp parallel for num_threads(static_cast <int>(threads)) schedule(static)
  for (long t = 0; t < count; ++t) body(static_cast<size_t>(t));
}

}  // namespace

extern "C" {

pthreadpool_t pthreadpool_create(size_t) { return &the_pool; }
void pthreadpool_destroy(pthreadpool_t) {}
size_t pthreadpool_get_threads_count(pthreadpool_t pool) { return width(pool); }

void pthreadpool_parallelize_1d(pthreadpool_t pool, pthreadpool_task_1d_t f, void* ctx, size_t range,
                                uint32_t) {
  parallel(pool, range, [&](size_t i) { f(ctx, i); });
}

void pthreadpool_parallelize_1d_tile_1d(pthreadpool_t pool, pthreadpool_task_1d_tile_1d_t f, void* ctx,
                                        size_t range, size_t tile, uint32_t) {
  parallel(pool, tiles(range, tile), [&](size_t t) {
    size_t i = t * tile;
    f(ctx, i, std::min(tile, range - i));
  });
}

void pthreadpool_parallelize_2d(pthreadpool_t pool, pthreadpool_task_2d_t f, void* ctx, size_t range_i,
                                size_t range_j, uint32_t) {
  parallel(pool, range_i * range_j, [&](size_t t) { f(ctx, t / range_j, t % range_j); });
}

void pthreadpool_parallelize_2d_tile_1d(pthreadpool_t pool, pthreadpool_task_2d_tile_1d_t f, void* ctx,
                                        size_t range_i, size_t range_j, size_t tile_j, uint32_t) {
  size_t tj = tiles(range_j, tile_j);
  parallel(pool, range_i * tj, [&](size_t t) {
    size_t i = t / tj, j = (t % tj) * tile_j;
    f(ctx, i, j, std::min(tile_j, range_j - j));
  });
}

void pthreadpool_parallelize_2d_tile_2d(pthreadpool_t pool, pthreadpool_task_2d_tile_2d_t f, void* ctx,
                                        size_t range_i, size_t range_j, size_t tile_i, size_t tile_j,
                                        uint32_t) {
  size_t ti = tiles(range_i, tile_i), tj = tiles(range_j, tile_j);
  parallel(pool, ti * tj, [&](size_t t) {
    size_t i = (t / tj) * tile_i, j = (t % tj) * tile_j;
    f(ctx, i, j, std::min(tile_i, range_i - i), std::min(tile_j, range_j - j));
  });
}

void pthreadpool_parallelize_3d(pthreadpool_t pool, pthreadpool_task_3d_t f, void* ctx, size_t range_i,
                                size_t range_j, size_t range_k, uint32_t) {
  parallel(pool, range_i * range_j * range_k, [&](size_t t) {
    size_t k = t % range_k, ij = t / range_k;
    f(ctx, ij / range_j, ij % range_j, k);
  });
}

void pthreadpool_parallelize_3d_tile_2d(pthreadpool_t pool, pthreadpool_task_3d_tile_2d_t f, void* ctx,
                                        size_t range_i, size_t range_j, size_t range_k, size_t tile_j,
                                        size_t tile_k, uint32_t) {
  size_t tj = tiles(range_j, tile_j), tk = tiles(range_k, tile_k);
  parallel(pool, range_i * tj * tk, [&](size_t t) {
    size_t k = (t % tk) * tile_k, r = t / tk, j = (r % tj) * tile_j, i = r / tj;
    f(ctx, i, j, k, std::min(tile_j, range_j - j), std::min(tile_k, range_k - k));
  });
}

void pthreadpool_parallelize_4d(pthreadpool_t pool, pthreadpool_task_4d_t f, void* ctx, size_t range_i,
                                size_t range_j, size_t range_k, size_t range_l, uint32_t) {
  parallel(pool, range_i * range_j * range_k * range_l, [&](size_t t) {
    size_t l = t % range_l, r = t / range_l, k = r % range_k;
    r /= range_k;
    f(ctx, r / range_j, r % range_j, k, l);
  });
}

void pthreadpool_parallelize_4d_tile_2d(pthreadpool_t pool, pthreadpool_task_4d_tile_2d_t f, void* ctx,
                                        size_t range_i, size_t range_j, size_t range_k, size_t range_l,
                                        size_t tile_k, size_t tile_l, uint32_t) {
  size_t tk = tiles(range_k, tile_k), tl = tiles(range_l, tile_l);
  parallel(pool, range_i * range_j * tk * tl, [&](size_t t) {
    size_t l = (t % tl) * tile_l, r = t / tl, k = (r % tk) * tile_k;
    r /= tk;
    f(ctx, r / range_j, r % range_j, k, l, std::min(tile_k, range_k - k), std::min(tile_l, range_l - l));
  });
}

void pthreadpool_parallelize_5d(pthreadpool_t pool, pthreadpool_task_5d_t f, void* ctx, size_t range_i,
                                size_t range_j, size_t range_k, size_t range_l, size_t range_m, uint32_t) {
  parallel(pool, range_i * range_j * range_k * range_l * range_m, [&](size_t t) {
    size_t m = t % range_m, r = t / range_m, l = r % range_l;
    r /= range_l;
    size_t k = r % range_k;
    r /= range_k;
    f(ctx, r / range_j, r % range_j, k, l, m);
  });
}

void pthreadpool_parallelize_5d_tile_2d(pthreadpool_t pool, pthreadpool_task_5d_tile_2d_t f, void* ctx,
                                        size_t range_i, size_t range_j, size_t range_k, size_t range_l,
                                        size_t range_m, size_t tile_l, size_t tile_m, uint32_t) {
  size_t tl = tiles(range_l, tile_l), tm = tiles(range_m, tile_m);
  parallel(pool, range_i * range_j * range_k * tl * tm, [&](size_t t) {
    size_t m = (t % tm) * tile_m, r = t / tm, l = (r % tl) * tile_l;
    r /= tl;
    size_t k = r % range_k;
    r /= range_k;
    f(ctx, r / range_j, r % range_j, k, l, m, std::min(tile_l, range_l - l), std::min(tile_m, range_m - m));
  });
}

void pthreadpool_parallelize_6d_tile_2d(pthreadpool_t pool, pthreadpool_task_6d_tile_2d_t f, void* ctx,
                                        size_t range_i, size_t range_j, size_t range_k, size_t range_l,
                                        size_t range_m, size_t range_n, size_t tile_m, size_t tile_n,
                                        uint32_t) {
  size_t tm = tiles(range_m, tile_m), tn = tiles(range_n, tile_n);
  parallel(pool, range_i * range_j * range_k * range_l * tm * tn, [&](size_t t) {
    size_t n = (t % tn) * tile_n, r = t / tn, m = (r % tm) * tile_m;
    r /= tm;
    size_t l = r % range_l;
    r /= range_l;
    size_t k = r % range_k;
    r /= range_k;
    f(ctx, r / range_j, r % range_j, k, l, m, n, std::min(tile_m, range_m - m),
      std::min(tile_n, range_n - n));
  });
}

}  // extern "C"

namespace collage::xnnpack {

pthreadpool_t shared_thread_pool() { return &the_pool; }

long pool_calls() { return calls.load(); }

}  // namespace collage::xnnpack
