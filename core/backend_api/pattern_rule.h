// Pattern rules (Collage §3, Fig. 4): `op_rule` says whether a backend can run a
// node; `fusion_rule` whether a group may grow to the next post-dominator.
// The generator seeds a group at every accepted node and grows it along the
// post-dominator tree, emitting every valid (convex, bounded) group.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/index_set.h"
#include "core/ir/subgraph.h"

namespace collage {

class PatternRule {
 public:
  virtual ~PatternRule() = default;
  virtual bool op_rule(const Graph& graph, NodeId node) const = 0;
  // May `group` (already valid, seeded at `src`) be extended to `grown`, which
  // adds `sink` and every node on paths between them?
  virtual bool fusion_rule(const Graph& graph, const IndexSet& grown, NodeId src, NodeId sink) const = 0;
};

struct GroupLimits {
  size_t max_nodes = 16;         // largest group emitted
  size_t max_depth = 8;          // post-dominator steps from the seed
  size_t max_exits = 1;          // nodes whose outputs leave the group
  size_t max_pattern_nodes = 0;  // largest pattern match kept; 0: max_nodes
};

// Every valid group the rule generates, singletons included, without duplicates.
std::vector<IndexSet> generate_groups(const Graph& graph, const PatternRule& rule, const GroupLimits& limits);

// Nodes on some path from `from` to `to` (both included); empty if none.
IndexSet nodes_between(const Graph& graph, const NodeEdges& edges, const IndexSet& from, NodeId to);

// TVM's operator categories.
enum class OpCategory { ElemWise, Broadcast, Injective, Reduction, OutEWiseFusable, Opaque };
OpCategory op_category(const std::string& op_type);
const char* op_category_name(OpCategory category);

// TVM-style fusion: a complex-out-fusable seed (Conv, MatMul, ...) absorbs following
// element-wise/broadcast ops; injective chains fuse; a reduction sink may absorb its
// injective inputs. `supported` filters the ops the backend can run at all.
class TvmStyleRule : public PatternRule {
 public:
  using Supported = std::function<bool(const Graph&, const Node&)>;
  explicit TvmStyleRule(Supported supported) : supported_(std::move(supported)) {}
  bool op_rule(const Graph& graph, NodeId node) const override;
  bool fusion_rule(const Graph& graph, const IndexSet& grown, NodeId src, NodeId sink) const override;

 private:
  Supported supported_;
};

}  // namespace collage
