#pragma once

#include "core/backend.h"

namespace collage {

const BackendSpec& blas_backend();

}  // namespace collage
