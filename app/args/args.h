// Minimal command-line parsing for `collage` and `collage-run`: positional arguments and
// `--flag value` / `--flag=value` options, some repeatable.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace collage::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> options;  // "--input" -> values
  std::set<std::string> flags;                              // value-less, e.g. "--json"

  bool has(const std::string& key) const { return options.count(key) || flags.count(key); }
  std::string get(const std::string& key, const std::string& fallback) const;
  const std::vector<std::string>& all(const std::string& key) const;
  int get_int(const std::string& key, int fallback, int min, int max) const;
  double get_double(const std::string& key, double fallback, double min, double max) const;
  // A duration in seconds: "90", "90s", "10m", "1.5h".
  double get_seconds(const std::string& key, double fallback, double min, double max) const;
};

// `value_options` take a value, `flag_options` do not; anything else is an error (InvalidInput).
Args parse_args(const std::vector<std::string>& argv, const std::set<std::string>& value_options,
                const std::set<std::string>& flag_options);

// "name=value" -> {name, value}; throws InvalidInput naming `option`.
std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& option);

}  // namespace collage::cli
