// XNNPACK on the OpenMP runtime. XNNPACK parallelises through the pthreadpool
// API; this project defines that API itself (omp_pthreadpool.cc) on top of
// OpenMP, and the executables' definitions take precedence over Debian's
// libpthreadpool (ELF symbol interposition), so oneDNN, OpenBLAS (its OpenMP
// build) and XNNPACK all run on libgomp's one pool of workers. With separate
// pools, the spinning workers of one library steal the cores the next kernel's
// library needs whenever kernels of different libraries alternate.
#pragma once

#include <pthreadpool.h>

namespace collage::xnnpack {

// The one pool: never destroyed; its width is the calling thread's OpenMP thread
// count (omp_set_num_threads, set by set_backend_threads).
pthreadpool_t shared_thread_pool();

// How many parallel calls reached this pool: the tests check XNNPACK's do.
long pool_calls();

}  // namespace collage::xnnpack
