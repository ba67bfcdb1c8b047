#include "core/ir/accuracy.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/ir/error.h"

namespace collage {

namespace {

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

double parse_number(const std::string& item, const std::string& text, double lo, double hi) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v >= lo && v <= hi))
    throw Error(ErrorKind::InvalidInput, "--accuracy: '" + item + "': the value must be a number in [" +
                                             format_number(lo) + ", " + format_number(hi) + "]");
  return v;
}

}  // namespace

std::string AccuracyBudget::to_string() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ",") + part; };
  if (top1) add("top1");
  if (max_rel >= 0) add("max-rel=" + format_number(max_rel));
  if (cosine >= 0) add("cosine=" + format_number(cosine));
  return s;
}

AccuracyBudget with_margin(const AccuracyBudget& budget, double margin) {
  AccuracyBudget out = budget;
  if (out.max_rel >= 0) out.max_rel *= margin;
  if (out.cosine >= 0) out.cosine = 1 - (1 - out.cosine) * margin;
  return out;
}

AccuracyBudget parse_accuracy(const std::string& spec) {
  AccuracyBudget b;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "top1" && eq == std::string::npos)
      b.top1 = true;
    else if (key == "max-rel" && eq != std::string::npos)
      b.max_rel = parse_number(item, value, 0, 1);
    else if (key == "cosine" && eq != std::string::npos)
      b.cosine = parse_number(item, value, -1, 1);
    else
      throw Error(ErrorKind::InvalidInput,
                  "--accuracy: '" + item + "' is not max-rel=R, cosine=C or top1 (e.g. top1,max-rel=5e-2)");
  }
  if (!b.enabled())
    throw Error(ErrorKind::InvalidInput, "--accuracy: no bound given (e.g. top1,max-rel=5e-2)");
  return b;
}

AccuracyMeasure measure_accuracy(const Tensor& got, const Tensor& want, const AccuracyBudget& budget,
                                 const std::string& name, bool end_to_end) {
  AccuracyMeasure m;
  if (got.shape() != want.shape()) {
    m.failure = name + ": shape differs from the reference";
    return m;
  }
  std::vector<double> a = got.to_double_vector(), b = want.to_double_vector();
  double peak = 0, max_err = 0, dot = 0, na = 0, nb = 0;
  bool non_finite_mismatch = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(b[i]) || !std::isfinite(a[i])) {
      // Equal infinities (a -inf mask) agree; anything else non-finite is unbounded error.
      bool same = (std::isnan(b[i]) && std::isnan(a[i])) || (std::isinf(b[i]) && a[i] == b[i]);
      non_finite_mismatch = non_finite_mismatch || !same;
      continue;
    }
    peak = std::max(peak, std::fabs(b[i]));
    max_err = std::max(max_err, std::fabs(a[i] - b[i]));
    dot += a[i] * b[i], na += a[i] * a[i], nb += b[i] * b[i];
  }
  m.max_rel = non_finite_mismatch ? std::numeric_limits<double>::infinity()
              : peak > 0          ? max_err / peak
              : max_err > 0       ? std::numeric_limits<double>::infinity()
                                  : 0;
  m.cosine = na == 0 && nb == 0 ? 1 : na == 0 || nb == 0 ? 0 : dot / std::sqrt(na * nb);
  if (non_finite_mismatch) m.cosine = 0;
  const Shape& s = want.shape();
  if (!s.empty() && s.back() > 1) {
    size_t cols = static_cast<size_t>(s.back());
    for (size_t row = 0; row + cols <= b.size() && m.top1; row += cols) {
      size_t ia = row, ib = row;
      for (size_t j = row; j < row + cols; ++j) {
        if (a[j] > a[ia]) ia = j;
        if (b[j] > b[ib]) ib = j;
      }
      m.top1 = ia == ib;
    }
  }
  if (budget.max_rel >= 0 && !(m.max_rel <= budget.max_rel))
    m.failure = name + ": error " + format_number(m.max_rel) +
                " of the output's peak, budget max-rel=" + format_number(budget.max_rel);
  else if (budget.cosine >= 0 && !(m.cosine >= budget.cosine))
    m.failure =
        name + ": cosine " + format_number(m.cosine) + ", budget cosine=" + format_number(budget.cosine);
  else if (end_to_end && budget.top1 && !m.top1)
    m.failure = name + ": the top-1 class differs in some row (budget top1)";
  return m;
}

}  // namespace collage
