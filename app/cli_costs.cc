// `collage costs`: list, export and import the cost database.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/workflow/workflow.h"
#include "core/ir/error.h"
#include "core/tuning/cost_db.h"

namespace collage::cli {

int command_costs(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, {"--backend", "--cost-db", "--export", "--import"}, {"--json"});
  if (!args.positional.empty())
    throw Error(ErrorKind::InvalidInput,
                "usage: collage costs [--backend B] [--json] [--export F] [--import F]");
  std::string path = workflow::cost_db_path(args.get("--cost-db", ""));
  // Listing and exporting only read: they work on a read-only DB; importing writes.
  CostDb db(path, args.has("--import") ? CostDb::Access::ReadWrite : CostDb::access_for_reading(path));
  std::string backend = args.get("--backend", "");
  if (args.has("--import")) {
    std::string file = args.get("--import", "");
    std::ifstream in(file);
    if (!in) throw Error(ErrorKind::Io, "cannot open '" + file + "'");
    std::stringstream text;
    text << in.rdbuf();
    size_t n = db.import_json(text.str());
    std::printf("imported %zu cost records into %s\n", n, db.path().c_str());
    return 0;
  }
  if (args.has("--export")) {
    std::string file = args.get("--export", "");
    std::ofstream out(file, std::ios::trunc);
    out << db.export_json(backend) << "\n";
    if (!out) throw Error(ErrorKind::Io, "cannot write '" + file + "'");
    std::printf("exported %zu cost records to %s\n", db.list(backend).size(), file.c_str());
    return 0;
  }
  if (args.has("--json")) {
    std::cout << db.export_json(backend) << "\n";
    return 0;
  }
  auto records = db.list(backend);
  std::printf("cost DB %s: %zu records%s\n", db.path().c_str(), records.size(),
              backend.empty() ? "" : (" for backend " + backend).c_str());
  std::printf("%-18s %-28s %7s %10s %10s %8s %9s  %s\n", "backend", "label", "threads", "median ms", "p90 ms",
              "samples", "build ms", "status");
  for (const CostRecord& r : records)
    std::printf("%-18s %-28.28s %7d %10.4f %10.4f %8d %9.2f  %s\n", r.backend.c_str(), r.label.c_str(),
                r.key.threads, r.cost.median_ms, r.cost.p90_ms, r.cost.samples, r.cost.build_ms,
                r.cost.valid() ? "ok" : ("invalid: " + r.cost.invalid_reason).c_str());
  return 0;
}

}  // namespace collage::cli
