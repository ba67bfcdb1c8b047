// Shape buckets: one value per symbolic input dim ("seq" -> 64). A placement, and a plan in
// an artifact, serve exactly one bucket; `--dim seq=16,32 --dim batch=1,4` asks for the
// four combinations. Buckets are compared by their values, never padded or rounded: a shape
// no bucket holds is refused, naming the buckets there are.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/graph.h"

namespace collage {

// One bucket. Empty: the model's static shapes (or every symbolic dim at its default, 1).
using DimValues = std::map<std::string, int64_t>;

// Several values per dim name, in the order the user named the dims.
using DimChoices = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// "seq=16,32" per spec (repeated --dim options): a name and positive integer values (at most
// 2^31). InvalidInput naming `option` and the spec otherwise.
DimChoices parse_dim_choices(const std::vector<std::string>& specs, const std::string& option = "--dim");

// Every combination, the first-named dim varying slowest; values in the order given. A dim
// named twice, or a value listed twice for one dim, is InvalidInput; more than `max_buckets`
// combinations too (a typo such as seq=1..512 written out must not start hundreds of tunes).
std::vector<DimValues> expand_buckets(const DimChoices& choices, size_t max_buckets = 64);

// "seq=64" / "batch=1,seq=64" (names in order); "static shapes" for the empty bucket.
std::string bucket_label(const DimValues& dims);
// "seq=16, seq=32, seq=64": for errors that list the buckets there are.
std::string bucket_list(const std::vector<DimValues>& buckets);

// Points each constant of `graph` at the storage of the constant of the same name in `with`
// when the two hold the same bytes (dtype, shape and contents), so the buckets of one model
// keep one copy of the weights in memory; returns the bytes now shared.
size_t share_equal_constants(Graph& graph, const Graph& with);

}  // namespace collage
