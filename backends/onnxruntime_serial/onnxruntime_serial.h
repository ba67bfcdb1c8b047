// onnxruntime-serial: the op-level `onnxruntime` kernels run on the calling thread alone, in a
// placement of several threads. A small kernel pays more for waking a second thread than it
// gains from it (ORT's LSTM of a 20 us classifier: 0.022 ms at 2 threads, 0.013 ms on one), and
// only measurement tells which kernels are small enough, so each ORT candidate is offered both
// ways and the search keeps the faster. Takes part only when the placement has 2 threads or
// more (BackendSpec::min_threads): at 1 thread it is `onnxruntime` itself.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onnxruntime_serial_backend();

}  // namespace collage
