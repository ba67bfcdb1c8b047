// A backend compiled only into test binaries: it claims Relu and computes it
// correctly, except on chosen shapes (the cost key is the shape, so the fault must
// be too): a first dim of
//   2: SIGSEGV, 4: SIGABRT, 8: never returns, 16: allocates (and touches) memory
//   without bound --
// so the isolated-measurement paths can be proved end to end.
#pragma once

#include "core/backend_api/backend.h"

namespace collage::testing {

const BackendSpec& faulty_backend();

}  // namespace collage::testing
