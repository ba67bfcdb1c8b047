#include "core/tuning/cost_db.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/ir/error.h"
#include "core/tuning/cost_store.h"

namespace collage {

std::string CostDb::default_path() {
  if (const char* p = std::getenv("COLLAGE_COST_DB"); p && *p) return p;
  std::filesystem::path base;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::filesystem::path(h) / ".local" / "share";
  else
    base = std::filesystem::temp_directory_path();
  return (base / "collage-explorer" / "costs.sqlite").string();
}

CostDb::CostDb(const std::string& location, Access access)
    : path_(cost_store::redacted(location)),
      location_(location),
      access_(access),
      store_(cost_store::is_postgres_location(location)
                 ? cost_store::open_postgres(location)
                 : cost_store::open_sqlite(location, access == Access::ReadOnly)) {}

CostDb::Access CostDb::access_for_reading(const std::string& location) {
  std::error_code ec;
  if (cost_store::is_postgres_location(location) || !std::filesystem::exists(location, ec))
    return Access::ReadWrite;
  auto parent = std::filesystem::path(location).parent_path();
  std::string dir = parent.empty() ? "." : parent.string();
  bool writable = ::access(location.c_str(), W_OK) == 0 && ::access(dir.c_str(), W_OK) == 0;
  return writable ? Access::ReadWrite : Access::ReadOnly;
}

bool CostDb::is_shared() const { return cost_store::is_postgres_location(location_); }

void CostDb::set_busy_timeout_ms(int ms) { store_->set_busy_timeout_ms(ms); }

CostDb::~CostDb() = default;

std::optional<CostRecord> CostDb::find(const CostKey& key) const { return store_->find(key); }
void CostDb::put(const CostRecord& record) { store_->put_all({record}); }
void CostDb::put_all(const std::vector<CostRecord>& records) { store_->put_all(records); }
std::vector<CostRecord> CostDb::list(const std::string& backend_filter) const {
  return store_->list(backend_filter);
}
size_t CostDb::size() const { return store_->size(); }

std::string CostDb::export_json(const std::string& backend_filter) const {
  nlohmann::json records = nlohmann::json::array();
  for (const CostRecord& r : list(backend_filter)) {
    records.push_back({{"signature", r.key.signature},
                       {"threads", r.key.threads},
                       {"device", r.key.device},
                       {"backend", r.backend},
                       {"backend_version", r.backend_version},
                       {"label", r.label},
                       {"valid", r.cost.valid()},
                       {"status", cost_status_name(r.cost.status)},
                       {"reason", r.cost.invalid_reason},
                       {"median_ms", r.cost.median_ms},
                       {"p90_ms", r.cost.p90_ms},
                       {"stddev_ms", r.cost.stddev_ms},
                       {"samples", r.cost.samples},
                       {"build_ms", r.cost.build_ms},
                       {"measured_at", r.measured_at}});
  }
  nlohmann::json doc = {{"format", "collage-costs"}, {"version", kSchemaVersion}, {"records", records}};
  return doc.dump(1);
}

size_t CostDb::import_json(const std::string& text) {
  std::vector<CostRecord> records;
  try {
    nlohmann::json doc = nlohmann::json::parse(text);
    if (doc.value("format", "") != "collage-costs")
      throw Error(ErrorKind::InvalidInput,
                  "not a collage cost export (missing \"format\": \"collage-costs\")");
    int version = doc.at("version").get<int>();
    if (version > kSchemaVersion)
      throw Error(ErrorKind::InvalidInput, "cost export version " + std::to_string(version) +
                                               " is newer than " + std::to_string(kSchemaVersion));
    for (const auto& j : doc.at("records")) {
      CostRecord r;
      r.key.signature = j.at("signature").get<std::string>();
      r.key.threads = j.at("threads").get<int>();
      r.key.device = j.at("device").get<std::string>();
      r.backend = j.at("backend").get<std::string>();
      r.backend_version = j.at("backend_version").get<std::string>();
      r.label = j.at("label").get<std::string>();
      std::string reason = j.at("reason").get<std::string>();
      if (!j.at("valid").get<bool>() || !reason.empty())  // exports before the status field: failed
        r.cost = Cost::invalid(reason, cost_status_from_name(j.value("status", std::string("failed"))));
      r.cost.median_ms = j.at("median_ms").get<double>();
      r.cost.p90_ms = j.at("p90_ms").get<double>();
      r.cost.stddev_ms = j.at("stddev_ms").get<double>();
      r.cost.samples = j.at("samples").get<int>();
      r.cost.build_ms = j.at("build_ms").get<double>();
      r.measured_at = j.at("measured_at").get<std::string>();
      if (r.key.signature.empty() || r.key.threads < 1)
        throw Error(ErrorKind::InvalidInput, "cost export has a record without signature or thread count");
      records.push_back(std::move(r));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::InvalidInput, std::string("malformed cost export: ") + e.what());
  }
  put_all(records);
  return records.size();
}

}  // namespace collage
