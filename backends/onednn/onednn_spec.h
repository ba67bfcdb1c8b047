#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onednn_backend();

}  // namespace collage
