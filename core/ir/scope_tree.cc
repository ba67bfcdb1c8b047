#include "core/ir/scope_tree.h"

#include <algorithm>
#include <functional>
#include <set>

namespace collage {

std::vector<NodeShare> split_evenly(int num_nodes, const std::vector<KernelTime>& kernels) {
  std::vector<NodeShare> shares(static_cast<size_t>(std::max(0, num_nodes)));
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelTime& kernel = kernels[k];
    if (kernel.nodes.empty()) continue;
    const double each = kernel.ms / static_cast<double>(kernel.nodes.size());
    for (NodeId n : kernel.nodes)
      if (n >= 0 && n < num_nodes)
        shares[static_cast<size_t>(n)] = {each, kernel.backend, static_cast<int>(k)};
  }
  return shares;
}

namespace {

// "/a/b/Conv" -> {"a", "b"}: the scopes of a node (its own name dropped).
std::vector<std::string> scope_components(const std::string& name) {
  std::vector<std::string> parts;
  if (name.empty() || name[0] != '/') return parts;
  size_t start = 1;
  while (true) {
    size_t slash = name.find('/', start);
    if (slash == std::string::npos) break;  // the rest names the node
    if (slash > start) parts.push_back(name.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

}  // namespace

ScopeTree::ScopeTree(const std::vector<std::string>& node_names) {
  // A trie of scope paths, children in order of their first node.
  struct TrieNode {
    std::string name, path;
    std::vector<int> children;
    std::map<std::string, int> child_of;
    std::vector<NodeId> nodes;
  };
  std::vector<TrieNode> trie(1);
  std::vector<int> deepest(node_names.size(), 0);
  for (size_t n = 0; n < node_names.size(); ++n) {
    int at = 0;
    trie[0].nodes.push_back(static_cast<NodeId>(n));
    for (const std::string& part : scope_components(node_names[n])) {
      auto it = trie[static_cast<size_t>(at)].child_of.find(part);
      int next;
      if (it == trie[static_cast<size_t>(at)].child_of.end()) {
        next = static_cast<int>(trie.size());
        TrieNode child;
        child.name = part;
        child.path = trie[static_cast<size_t>(at)].path + "/" + part;
        trie.push_back(std::move(child));
        trie[static_cast<size_t>(at)].child_of[part] = next;
        trie[static_cast<size_t>(at)].children.push_back(next);
      } else {
        next = it->second;
      }
      at = next;
      trie[static_cast<size_t>(at)].nodes.push_back(static_cast<NodeId>(n));
    }
    deepest[n] = at;
  }
  // Preorder renumbering; a trie node of fewer than two nodes (and so its subtree) is dropped.
  std::vector<int> id_of(trie.size(), -1);
  std::function<void(int, int)> visit = [&](int t, int parent) {
    const int id = static_cast<int>(scopes_.size());
    id_of[static_cast<size_t>(t)] = id;
    Scope s;
    s.path = trie[static_cast<size_t>(t)].path;
    s.name = trie[static_cast<size_t>(t)].name;
    s.parent = parent;
    s.depth = parent < 0 ? 0 : scopes_[static_cast<size_t>(parent)].depth + 1;
    s.nodes = trie[static_cast<size_t>(t)].nodes;
    scopes_.push_back(std::move(s));
    if (parent >= 0) scopes_[static_cast<size_t>(parent)].children.push_back(id);
    for (int c : trie[static_cast<size_t>(t)].children)
      if (trie[static_cast<size_t>(c)].nodes.size() >= 2) visit(c, id);
  };
  visit(0, -1);
  // Parent links in the trie, to climb from a dropped scope to its nearest kept ancestor.
  std::vector<int> trie_parent(trie.size(), -1);
  for (size_t t = 0; t < trie.size(); ++t)
    for (int c : trie[t].children) trie_parent[static_cast<size_t>(c)] = static_cast<int>(t);
  innermost_.resize(node_names.size(), 0);
  for (size_t n = 0; n < node_names.size(); ++n) {
    int t = deepest[n];
    while (id_of[static_cast<size_t>(t)] < 0) t = trie_parent[static_cast<size_t>(t)];
    innermost_[n] = id_of[static_cast<size_t>(t)];
  }
}

ScopeTree ScopeTree::of(const Graph& graph) {
  std::vector<std::string> names;
  names.reserve(graph.nodes.size());
  for (const Node& n : graph.nodes) names.push_back(n.name);
  return ScopeTree(names);
}

int ScopeTree::find(const std::string& path) const {
  for (size_t s = 0; s < scopes_.size(); ++s)
    if (scopes_[s].path == path) return static_cast<int>(s);
  return -1;
}

int ScopeTree::max_depth() const {
  int depth = 0;
  for (const Scope& s : scopes_) depth = std::max(depth, s.depth);
  return depth;
}

ScopeCost ScopeTree::cost(int scope, const std::vector<NodeShare>& shares) const {
  ScopeCost c;
  std::set<int> kernels;
  for (NodeId n : this->scope(scope).nodes) {
    if (n < 0 || static_cast<size_t>(n) >= shares.size()) continue;
    const NodeShare& share = shares[static_cast<size_t>(n)];
    c.ms += share.ms;
    c.backend_ms[share.backend] += share.ms;
    if (share.kernel >= 0) kernels.insert(share.kernel);
  }
  c.kernels = static_cast<int>(kernels.size());
  return c;
}

int ScopeTree::units_at_depth(int depth) const {
  int units = 0;
  for (size_t s = 1; s < scopes_.size(); ++s) units += scopes_[s].depth == depth;
  for (int innermost : innermost_) units += scopes_[static_cast<size_t>(innermost)].depth < depth;
  return units;
}

int ScopeTree::deepest_depth_within(int max_units) const {
  int best = 0;
  for (int d = 1; d <= max_depth(); ++d)
    if (units_at_depth(d) <= max_units) best = d;
  return best;
}

std::vector<bool> ScopeTree::collapsed_at_depth(int depth) const {
  std::vector<bool> collapsed(scopes_.size(), false);
  for (size_t s = 1; s < scopes_.size(); ++s) collapsed[s] = scopes_[s].depth == depth;
  return collapsed;
}

void ScopeTree::expand(std::vector<bool>& collapsed, int scope) const {
  collapsed.resize(scopes_.size(), false);
  collapsed[static_cast<size_t>(scope)] = false;
  // A scope holding nothing but one child scope would open into one box again.
  while (this->scope(scope).children.size() == 1 &&
         this->scope(this->scope(scope).children[0]).nodes.size() == this->scope(scope).nodes.size()) {
    scope = this->scope(scope).children[0];
    collapsed[static_cast<size_t>(scope)] = false;
  }
  for (int c : this->scope(scope).children) collapsed[static_cast<size_t>(c)] = true;
}

int ScopeTree::collapsed_owner(NodeId node, const std::vector<bool>& collapsed) const {
  int owner = -1;
  for (int s = innermost(node); s > 0; s = scopes_[static_cast<size_t>(s)].parent)
    if (static_cast<size_t>(s) < collapsed.size() && collapsed[static_cast<size_t>(s)]) owner = s;
  return owner;
}

CollapsedGraph collapse(const ScopeTree& tree, const NodeEdges& edges, const std::vector<bool>& collapsed) {
  CollapsedGraph g;
  const size_t num_nodes = edges.succs.size();
  g.unit_of.assign(num_nodes, -1);
  std::vector<int> unit_of_scope(static_cast<size_t>(tree.size()), -1);
  for (size_t n = 0; n < num_nodes; ++n) {
    int owner = tree.collapsed_owner(static_cast<NodeId>(n), collapsed);
    if (owner < 0) {
      g.unit_of[n] = static_cast<int>(g.units.size());
      g.units.push_back({static_cast<NodeId>(n), -1});
    } else {
      int& unit = unit_of_scope[static_cast<size_t>(owner)];
      if (unit < 0) {
        unit = static_cast<int>(g.units.size());
        g.units.push_back({kNoNode, owner});
      }
      g.unit_of[n] = unit;
    }
  }
  std::map<std::pair<int, int>, size_t> edge_of;
  for (size_t n = 0; n < num_nodes; ++n)
    for (NodeId s : edges.succs[n]) {
      const int from = g.unit_of[n], to = g.unit_of[static_cast<size_t>(s)];
      if (from == to) continue;
      auto [it, fresh] = edge_of.emplace(std::make_pair(from, to), g.edges.size());
      if (fresh) g.edges.push_back({from, to, {}});
      g.edges[it->second].members.emplace_back(static_cast<NodeId>(n), s);
    }
  return g;
}

}  // namespace collage
