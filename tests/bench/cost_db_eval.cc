// What one stored cost costs, per store: `collage_cost_db_eval N LOCATION...` puts N
// records one transaction each (as the measurer stores every candidate), then finds
// each once, per location, rounds alternated; prints the median per operation in µs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/tuning/cost_db.h"
#include "core/tuning/cost_store.h"

using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: collage_cost_db_eval N LOCATION...\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  std::vector<std::string> locations(argv + 2, argv + argc);
  std::vector<std::vector<double>> put_us(locations.size()), find_us(locations.size());
  for (int round = 0; round < 3; ++round)
    for (size_t k = 0; k < locations.size(); ++k) {
      size_t l = round % 2 ? locations.size() - 1 - k : k;  // alternate the order
      collage::CostDb db(locations[l]);
      for (int i = 0; i < n; ++i) {
        collage::CostRecord r;
        r.key = {"bench-" + std::to_string(round) + "-" + std::to_string(i), 1, "bench-cpu"};
        r.backend = "native";
        r.backend_version = "1";
        r.label = "Relu";
        r.cost = collage::Cost::of_ms(0.001 * i);
        auto t0 = Clock::now();
        db.put(r);
        put_us[l].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      for (int i = 0; i < n; ++i) {
        auto t0 = Clock::now();
        db.find({"bench-" + std::to_string(round) + "-" + std::to_string(i), 1, "bench-cpu"});
        find_us[l].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (size_t l = 0; l < locations.size(); ++l)
    std::printf("%-12s put %8.1f us   find %7.1f us   (medians of %zu)\n",
                collage::cost_store::is_postgres_location(locations[l]) ? "postgresql" : "sqlite",
                median(put_us[l]), median(find_us[l]), put_us[l].size());
  return 0;
}
