#include "core/search/placement_buckets.h"

#include <nlohmann/json.hpp>

#include "core/ir/error.h"

namespace collage {

using nlohmann::json;

namespace {

Error bad(const std::string& what) { return Error(ErrorKind::InvalidInput, "placement: " + what); }

}  // namespace

std::vector<PlacementFileBucket> read_placement_buckets(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw bad(std::string("malformed JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "collage-placement")
    throw bad("not a placement file (missing \"format\": \"collage-placement\")");
  if (!doc.contains("buckets")) return {{DimValues{}, text}};  // version 1 (its reader checks the rest)
  std::vector<PlacementFileBucket> out;
  try {
    int version = doc.at("version").get<int>();
    if (version > kBucketedPlacementVersion)
      throw bad("format version " + std::to_string(version) + " is newer than this build reads (" +
                std::to_string(kBucketedPlacementVersion) + ")");
    const json& buckets = doc.at("buckets");
    if (!buckets.is_array() || buckets.empty()) throw bad("\"buckets\" must be a non-empty list");
    for (const json& b : buckets) {
      PlacementFileBucket bucket;
      for (const auto& [name, value] : b.at("dims").items()) {
        int64_t v = value.get<int64_t>();
        if (name.empty() || v <= 0)
          throw bad("a bucket's dims must be names with positive values, not " + b.at("dims").dump());
        bucket.dims[name] = v;
      }
      if (bucket.dims.empty()) throw bad("a bucket without dims (a one-shape placement is a version-1 file)");
      for (const PlacementFileBucket& earlier : out)
        if (earlier.dims == bucket.dims)
          throw bad("bucket " + bucket_label(bucket.dims) + " is listed twice");
      const json& placement = b.at("placement");
      if (!placement.is_object()) throw bad("bucket " + bucket_label(bucket.dims) + ": no placement object");
      bucket.placement_json = placement.dump();
      out.push_back(std::move(bucket));
    }
  } catch (const json::exception& e) {
    throw bad(std::string("missing or mistyped field: ") + e.what());
  }
  return out;
}

std::string write_placement_buckets(const std::vector<PlacementFileBucket>& buckets) {
  if (buckets.size() == 1) return buckets.front().placement_json;
  json list = json::array();
  for (const PlacementFileBucket& b : buckets)
    list.push_back({{"dims", b.dims}, {"placement", json::parse(b.placement_json)}});
  json doc = {{"format", "collage-placement"}, {"version", kBucketedPlacementVersion}, {"buckets", list}};
  return doc.dump(1);
}

const PlacementFileBucket& find_bucket(const std::vector<PlacementFileBucket>& buckets, const DimValues& dims,
                                       const std::string& origin) {
  for (const PlacementFileBucket& b : buckets)
    if (b.dims == dims) return b;
  std::vector<DimValues> there;
  for (const PlacementFileBucket& b : buckets) there.push_back(b.dims);
  throw Error(ErrorKind::InvalidInput, origin + " has no placement for " + bucket_label(dims) +
                                           "; its buckets: " + bucket_list(there));
}

}  // namespace collage
