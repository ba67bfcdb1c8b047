#include "app/args/args.h"

#include <cstdio>

#include "core/ir/error.h"

namespace collage::cli {

std::string Args::get(const std::string& key, const std::string& fallback) const {
  auto it = options.find(key);
  return it == options.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& Args::all(const std::string& key) const {
  static const std::vector<std::string> kNone;
  auto it = options.find(key);
  return it == options.end() ? kNone : it->second;
}

int Args::get_int(const std::string& key, int fallback, int min, int max) const {
  if (!options.count(key)) return fallback;
  std::string text = get(key, "");
  size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value < min || value > max)
    throw Error(ErrorKind::InvalidInput, key + " expects an integer from " + std::to_string(min) + " to " +
                                             std::to_string(max) + ", got '" + text + "'");
  return static_cast<int>(value);
}

double Args::get_double(const std::string& key, double fallback, double min, double max) const {
  if (!options.count(key)) return fallback;
  std::string text = get(key, "");
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !(value >= min && value <= max)) {
    char range[64];
    std::snprintf(range, sizeof range, "from %g to %g", min, max);
    throw Error(ErrorKind::InvalidInput, key + " expects a number " + range + ", got '" + text + "'");
  }
  return value;
}

double Args::get_seconds(const std::string& key, double fallback, double min, double max) const {
  if (!options.count(key)) return fallback;
  std::string text = get(key, "");
  double scale = 1;
  if (!text.empty() && std::string("smh").find(text.back()) != std::string::npos) {
    scale = text.back() == 'h' ? 3600 : text.back() == 'm' ? 60 : 1;
    text.pop_back();
  }
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used) * scale;
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !(value >= min && value <= max))
    throw Error(ErrorKind::InvalidInput,
                key + " expects a duration (\"90\", \"90s\", \"10m\", \"1h\") from " +
                    std::to_string(static_cast<int>(min)) + " s to " + std::to_string(static_cast<int>(max)) +
                    " s, got '" + get(key, "") + "'");
  return value;
}

Args parse_args(const std::vector<std::string>& argv, const std::set<std::string>& value_options,
                const std::set<std::string>& flag_options) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    bool short_option = value_options.count(a) || flag_options.count(a);  // e.g. "-o"
    if (!short_option && (a.size() < 2 || a.rfind("--", 0) != 0)) {
      args.positional.push_back(a);
      continue;
    }
    std::string key = a, value;
    bool inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      key = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    if (flag_options.count(key)) {
      if (inline_value) throw Error(ErrorKind::InvalidInput, "option " + key + " takes no value");
      args.flags.insert(key);
    } else if (value_options.count(key)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw Error(ErrorKind::InvalidInput, "option " + key + " needs a value");
        value = argv[++i];
      }
      args.options[key].push_back(value);
    } else {
      throw Error(ErrorKind::InvalidInput, "unknown option " + key + " (see collage --help)");
    }
  }
  return args;
}

std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& option) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw Error(ErrorKind::InvalidInput, option + " expects NAME=VALUE, got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace collage::cli
