#include "app/model_loading.h"

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

}  // namespace collage::cli
