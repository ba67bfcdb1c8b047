#include "core/ir/shape_buckets.h"

#include <cstring>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "core/ir/error.h"

namespace collage {

DimChoices parse_dim_choices(const std::vector<std::string>& specs, const std::string& option) {
  DimChoices choices;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error(ErrorKind::InvalidInput, option + " " + spec + ": expected NAME=VALUE[,VALUE...]");
    std::vector<int64_t> values;
    for (size_t at = eq + 1;;) {
      size_t comma = spec.find(',', at);
      std::string text = spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (text.empty() || used != text.size() || v <= 0 || v > (int64_t{1} << 31))
        throw Error(ErrorKind::InvalidInput, option + " " + spec + ": the value must be a positive integer");
      values.push_back(v);
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    choices.emplace_back(spec.substr(0, eq), std::move(values));
  }
  return choices;
}

std::vector<DimValues> expand_buckets(const DimChoices& choices, size_t max_buckets) {
  std::set<std::string> names;
  size_t count = 1;
  for (const auto& [name, values] : choices) {
    if (!names.insert(name).second)
      throw Error(ErrorKind::InvalidInput,
                  "--dim " + name + " is given twice; list its values once: " + name + "=V1,V2,...");
    if (values.empty()) throw Error(ErrorKind::InvalidInput, "--dim " + name + " has no value");
    std::set<int64_t> seen;
    for (int64_t v : values)
      if (!seen.insert(v).second)
        throw Error(ErrorKind::InvalidInput, "--dim " + name + " lists " + std::to_string(v) + " twice");
    count *= values.size();
    if (count > max_buckets)
      throw Error(ErrorKind::InvalidInput, "--dim values make more than " + std::to_string(max_buckets) +
                                               " shape buckets; each bucket is a whole tune, so list fewer");
  }
  std::vector<DimValues> out(1);
  for (const auto& [name, values] : choices) {
    std::vector<DimValues> next;
    for (const DimValues& partial : out)
      for (int64_t v : values) {
        DimValues b = partial;
        b[name] = v;
        next.push_back(std::move(b));
      }
    out = std::move(next);
  }
  return out;
}

std::string bucket_label(const DimValues& dims) {
  if (dims.empty()) return "static shapes";
  std::string text;
  for (const auto& [name, v] : dims) text += (text.empty() ? "" : ",") + name + "=" + std::to_string(v);
  return text;
}

std::string bucket_list(const std::vector<DimValues>& buckets) {
  std::string text;
  for (const DimValues& b : buckets) text += (text.empty() ? "" : "; ") + bucket_label(b);
  return text;
}

size_t share_equal_constants(Graph& graph, const Graph& with) {
  std::unordered_map<std::string, const Tensor*> by_name;
  for (const Value& v : with.values)
    if (v.constant) by_name.emplace(v.name, &*v.constant);
  size_t shared = 0;
  for (Value& v : graph.values) {
    if (!v.constant) continue;
    auto it = by_name.find(v.name);
    if (it == by_name.end()) continue;
    const Tensor& other = *it->second;
    Tensor& mine = *v.constant;
    if (other.dtype() != mine.dtype() || other.shape() != mine.shape() || other.bytes() != mine.bytes())
      continue;
    if (other.raw() != mine.raw() &&
        (mine.bytes() == 0 || std::memcmp(other.raw(), mine.raw(), mine.bytes()) != 0))
      continue;
    mine = other;
    shared += mine.bytes();
  }
  return shared;
}

}  // namespace collage
