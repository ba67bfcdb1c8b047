// Constants as oneDNN memories (onednn_common.h: constant_memory), for the op-level kernels and
// onednn-region alike; shared between kernels under a SharedConstantsScope.
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/onednn/onednn_common.h"
#include "core/backend_api/shared_constants.h"

namespace collage::onednn {

using dnnl::memory;

namespace {

memory convert_constant(const Tensor& t, const memory::desc& md, const std::optional<memory::desc>& want) {
  memory user(md, cpu());
  std::memcpy(user.get_data_handle(), t.raw(), t.bytes());
  if (!want || *want == md) return user;
  memory packed(*want, cpu());
  dnnl::stream s(cpu());
  dnnl::reorder(user, packed).execute(s, user, packed);
  s.wait();
  return packed;
}

// The descriptors' bytes: equal bytes are equal layouts (unequal padding only costs a share).
std::string layout_key(const memory::desc& md, const std::optional<memory::desc>& want) {
  std::string key = "onednn:";
  key.append(reinterpret_cast<const char*>(&md.data), sizeof md.data);
  if (want) key.append(reinterpret_cast<const char*>(&want->data), sizeof want->data);
  return key;
}

}  // namespace

// Under a SharedConstantsScope (the runtime loading a multi-shape artifact) once per tensor and layout.
memory constant_memory(const Tensor& t, const memory::desc& md, const std::optional<memory::desc>& want) {
  SharedConstants* shared = SharedConstants::current();
  if (!shared) return convert_constant(t, md, want);
  std::shared_ptr<const void> value = shared->find_or_add(
      t, layout_key(md, want), [&] { return std::make_shared<const memory>(convert_constant(t, md, want)); });
  return *std::static_pointer_cast<const memory>(value);
}

}  // namespace collage::onednn
