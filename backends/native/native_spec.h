#pragma once

#include "core/backend_api/backend.h"

namespace collage {

// The reference backend: runs every op, so every model has a complete placement.
const BackendSpec& native_backend();

}  // namespace collage
