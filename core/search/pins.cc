#include "core/search/pins.h"

namespace collage {

bool Pins::allows(NodeId node, const std::string& backend) const {
  if (auto p = pinned.find(node); p != pinned.end() && p->second != backend) return false;
  if (auto f = forbidden.find(node); f != forbidden.end() && f->second.count(backend)) return false;
  return true;
}

}  // namespace collage
