// The user's constraints on a placement: per node, the backends allowed to cover it.
// A pin allows exactly one backend; a forbid removes one. The op-level search and the
// graph-level refinement honour them, and a placement carries the ones it was made with.
#pragma once

#include <map>
#include <set>
#include <string>

#include "core/ir/graph.h"

namespace collage {

struct Pins {
  std::map<NodeId, std::string> pinned;
  std::map<NodeId, std::set<std::string>> forbidden;
  bool allows(NodeId node, const std::string& backend) const;
  bool empty() const { return pinned.empty() && forbidden.empty(); }
};

}  // namespace collage
