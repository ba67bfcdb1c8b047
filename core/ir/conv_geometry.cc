#include "core/ir/conv_geometry.h"

#include <algorithm>

#include "core/ir/error.h"

namespace collage {

bool is_same_auto_pad(const std::string& auto_pad, const std::string& node) {
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return true;
  if (auto_pad == "NOTSET" || auto_pad == "VALID") return false;
  throw Error(ErrorKind::InvalidModel, "node '" + node + "': auto_pad='" + auto_pad +
                                           "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

std::pair<int64_t, int64_t> same_padding(bool upper, int64_t in, int64_t stride, int64_t span) {
  int64_t out = (in + stride - 1) / stride;
  int64_t total = std::max<int64_t>(0, (out - 1) * stride + span - in);
  int64_t begin = upper ? total / 2 : total - total / 2;
  return {begin, total - begin};
}

std::pair<int64_t, int64_t> transposed_padding(bool upper, int64_t natural, int64_t target) {
  int64_t total = natural - target;
  int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
  int64_t begin = upper ? half : total - half;
  return {begin, total - begin};
}

}  // namespace collage
