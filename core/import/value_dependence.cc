#include "core/import/value_dependence.h"

#include <map>
#include <set>

namespace collage::import_detail {

namespace {

constexpr int kAllSlots = -1;

// Op type -> the input slots whose values steer output shapes (kAllSlots: every
// input, the output extent depends on the data itself). The one table: add new
// value-dependent ops here.
const std::map<std::string, std::vector<int>>& steering_table() {
  static const std::map<std::string, std::vector<int>> kTable = {
      {"Reshape", {1}},
      {"Expand", {1}},
      {"Tile", {1}},
      {"ConstantOfShape", {0}},
      {"Range", {0, 1, 2}},
      {"Pad", {1, 3}},          // pads, axes (opset >= 11)
      {"Slice", {1, 2, 3, 4}},  // starts, ends, axes, steps (opset >= 10)
      {"Squeeze", {1}},         // axes (opset >= 13)
      {"Unsqueeze", {1}},       // axes (opset >= 13)
      {"Split", {1}},           // split (opset >= 13)
      {"TopK", {1}},            // K (opset >= 10)
      {"OneHot", {1}},          // depth
      {"Upsample", {1}},        // scales
      {"CenterCropPad", {1}},   // shape
      {"HannWindow", {0}},      // size
      {"HammingWindow", {0}},
      {"BlackmanWindow", {0}},
      {"DFT", {1, 2}},              // dft_length, axis (opset 20)
      {"STFT", {1, 3}},             // frame_step, frame_length
      {"MelWeightMatrix", {0, 1}},  // num_mel_bins, dft_length
      {"Col2Im", {1, 2}},           // image_shape, block_shape
      {"MaxUnpool", {2}},           // output_shape
      {"AffineGrid", {1}},          // size
      {"Compress", {1}},            // condition
      {"NonZero", {kAllSlots}},
      {"Unique", {kAllSlots}},
      {"NonMaxSuppression", {kAllSlots}},
      {"ImageDecoder", {0}},  // the encoded image: its header holds the dimensions
  };
  return kTable;
}

}  // namespace

bool steers_shape(const Node& node, size_t slot) {
  if (!node.domain.empty()) return false;
  const std::string& op = node.op_type;
  if (op.rfind("Reduce", 0) == 0) return slot == 1;  // axes (ReduceSum >= 13, the others >= 18)
  // (X, roi, scales, sizes): roi does not steer. Opset-10 Resize (X, scales) and Upsample
  // have this form too once normalize.cc rewrote them (their opset stays the model's).
  if (op == "Resize") return slot == 2 || slot == 3;
  // Loop's M and cond decide how many iterations stack into its scan outputs; without scan
  // outputs the loop-carried values keep their shapes (checked as the loop runs).
  if (op == "Loop") {
    const size_t formal = node.inputs.size() - static_cast<size_t>(node.captured);
    return slot < 2 && node.outputs.size() + 2 > formal;
  }
  auto it = steering_table().find(op);
  if (it == steering_table().end()) return false;
  for (int s : it->second)
    if (s == kAllSlots || static_cast<size_t>(s) == slot) return true;
  return false;
}

std::vector<std::string> graph_inputs_feeding(const Graph& graph, ValueId v) {
  // Producers from the nodes themselves: shape completion adds and rewires nodes
  // without refreshing the values' links.
  std::map<ValueId, NodeId> producer;
  for (NodeId n = 0; n < graph.num_nodes(); ++n)
    for (ValueId out : graph.node(n).outputs)
      if (out != kNoValue) producer[out] = n;
  std::set<ValueId> graph_inputs(graph.inputs.begin(), graph.inputs.end()), seen, found;
  std::vector<ValueId> stack = {v};
  while (!stack.empty()) {
    ValueId cur = stack.back();
    stack.pop_back();
    if (cur == kNoValue || !seen.insert(cur).second || graph.value(cur).constant) continue;
    if (graph_inputs.count(cur)) found.insert(cur);
    auto it = producer.find(cur);
    // Shape and Size read only their input's shape: a shape left unknown is itself
    // value-dependent and reported on its own.
    if (it != producer.end() && graph.node(it->second).domain.empty() &&
        (graph.node(it->second).op_type == "Shape" || graph.node(it->second).op_type == "Size"))
      continue;
    if (it != producer.end())
      for (ValueId in : graph.node(it->second).inputs) stack.push_back(in);
  }
  std::vector<std::string> names;
  for (ValueId in : graph.inputs)
    if (found.count(in)) names.push_back(graph.value(in).name);
  return names;
}

}  // namespace collage::import_detail
