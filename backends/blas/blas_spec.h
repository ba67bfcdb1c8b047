#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& blas_backend();

}  // namespace collage
