#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

void register_shape_ops(OpTable& table) { (void)table; }

}  // namespace collage::native
