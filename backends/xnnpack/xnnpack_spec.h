#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& xnnpack_backend();

}  // namespace collage
