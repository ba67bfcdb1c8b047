#pragma once

#include "core/backend.h"

namespace collage {

const BackendSpec& xnnpack_backend();

}  // namespace collage
