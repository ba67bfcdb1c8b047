// A placement file holding one placement per shape bucket (core/ir/shape_buckets.h):
// format version 2 (docs/placement-format.md). Each bucket's placement is a complete
// version-1 document, validated against the graph imported with that bucket's dims, so
// every check of the one-shape format holds per bucket. Version-1 files read as one bucket
// without dims; a one-bucket placement is still written as version 1.
#pragma once

#include <string>
#include <vector>

#include "core/ir/shape_buckets.h"

namespace collage {

struct PlacementFileBucket {
  DimValues dims;
  std::string placement_json;  // a version-1 placement document
};

constexpr int kBucketedPlacementVersion = 2;

// The file's buckets in file order. Version 1: one bucket with no dims. Version 2: at least
// one bucket, each with dims (names and positive values) and a placement, no two alike.
// InvalidInput naming the problem (the same prefix as placement_from_json's errors).
std::vector<PlacementFileBucket> read_placement_buckets(const std::string& text);

// One bucket: its placement document as is (version 1). Several: a version-2 document.
std::string write_placement_buckets(const std::vector<PlacementFileBucket>& buckets);

// The bucket of `buckets` with exactly `dims`; InvalidInput listing the buckets otherwise.
const PlacementFileBucket& find_bucket(const std::vector<PlacementFileBucket>& buckets, const DimValues& dims,
                                       const std::string& origin);

}  // namespace collage
