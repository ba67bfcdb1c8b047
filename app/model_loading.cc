#include "app/model_loading.h"

#include <algorithm>

#include "app/cli_args.h"
#include "backends/native/native_kernel.h"

namespace collage::cli {

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dim_options) {
  std::map<std::string, int64_t> dims;
  for (const std::string& text : dim_options) {
    auto [name, value] = split_assignment(text, "--dim");
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || v <= 0 || v > (int64_t{1} << 31))
      throw Error(ErrorKind::InvalidInput, "--dim " + text + ": the value must be a positive integer");
    dims[name] = v;
  }
  return dims;
}

Graph load_model(const std::string& path, const std::map<std::string, int64_t>& dims, ImportReport* report) {
  ImportOptions options;
  options.dims = dims;
  options.evaluator = native::node_evaluator();
  return import_onnx_file(path, options, report);
}

NodeId node_by_ref(const Graph& graph, const std::string& ref, const std::string& option) {
  for (NodeId n = 0; n < graph.num_nodes(); ++n)
    if (graph.node(n).name == ref) return n;
  if (!ref.empty() && ref.size() < 10 && std::all_of(ref.begin(), ref.end(), ::isdigit)) {
    long id = std::stol(ref);
    if (id >= 0 && id < graph.num_nodes()) return static_cast<NodeId>(id);
  }
  throw Error(ErrorKind::InvalidInput, option + " " + ref + ": the model has no node with that name or id");
}

}  // namespace collage::cli
