#pragma once

#include "core/backend.h"

namespace collage {

const BackendSpec& onednn_backend();

}  // namespace collage
