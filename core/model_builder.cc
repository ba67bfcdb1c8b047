#include "core/model_builder.h"
