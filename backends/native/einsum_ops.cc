// Einsum (ONNX / numpy semantics): any number of operands, repeated letters (diagonals),
// '...' broadcasting, explicit ('->') and implicit output, float32 and float64.
#include <algorithm>
#include <array>
#include <string>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

// Labels: letters are 0..51; the (right-aligned) broadcast dims '...' stands for are 52 + j.
constexpr int kLetters = 52;

int letter_label(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// One side of the equation: its letters' labels, and where '...' sits (-1: absent).
struct Term {
  std::vector<int> labels;
  int ellipsis_at = -1;
};

Term parse_term(const Node& node, const std::string& text) {
  Term t;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "...") == 0) {
      if (t.ellipsis_at >= 0) invalid(node, "term '" + text + "' has more than one '...'");
      t.ellipsis_at = static_cast<int>(t.labels.size());
      i += 2;
      continue;
    }
    int l = letter_label(text[i]);
    if (l < 0) invalid(node, "term '" + text + "' has the character '" + text[i] + "', not a letter");
    t.labels.push_back(l);
  }
  return t;
}

// The term's labels per dim, '...' expanded to the last `dims` of `total` broadcast labels.
std::vector<int> expand(const Term& t, int64_t dims, int64_t total) {
  std::vector<int> out(t.labels.begin(), t.labels.end());
  if (t.ellipsis_at >= 0) {
    std::vector<int> ell;
    for (int64_t j = total - dims; j < total; ++j) ell.push_back(kLetters + static_cast<int>(j));
    out.insert(out.begin() + t.ellipsis_at, ell.begin(), ell.end());
  }
  return out;
}

template <class T>
void contract(const std::vector<const Tensor*>& ops, const std::vector<std::vector<int64_t>>& in_strides,
              const std::vector<int64_t>& out_strides, const std::vector<int64_t>& extents, Tensor& y) {
  T* out = y.data<T>();
  std::fill(out, out + y.size(), T(0));
  int64_t total = 1;
  for (int64_t e : extents) total *= e;
  if (total == 0) return;
  const size_t n = extents.size();
  std::vector<int64_t> idx(n, 0), off(ops.size(), 0);
  int64_t o = 0;
  for (int64_t it = 0; it < total; ++it) {
    T prod = T(1);
    for (size_t t = 0; t < ops.size(); ++t) prod *= ops[t]->data<T>()[off[t]];
    out[o] += prod;
    // Odometer step: offsets follow the index incrementally.
    for (size_t l = n; l-- > 0;) {
      o += out_strides[l];
      for (size_t t = 0; t < ops.size(); ++t) off[t] += in_strides[t][l];
      if (++idx[l] < extents[l]) break;
      o -= out_strides[l] * extents[l];
      for (size_t t = 0; t < ops.size(); ++t) off[t] -= in_strides[t][l] * extents[l];
      idx[l] = 0;
    }
  }
}

std::vector<Tensor> einsum(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  std::string eq = node.attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const auto arrow = eq.find("->");
  const bool implicit = arrow == std::string::npos;
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(node, lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != inputs.size())
    invalid(node, "the equation has " + std::to_string(terms.size()) + " terms for " +
                      std::to_string(inputs.size()) + " operands");
  std::vector<const Tensor*> ops;
  for (size_t t = 0; t < terms.size(); ++t) ops.push_back(&input(node, inputs, t));
  const DType dtype = ops[0]->dtype();
  if (dtype != DType::Float32 && dtype != DType::Float64)
    unsupported(node, std::string("operand has type ") + dtype_name(dtype) + "; supported: float32, float64");
  for (const Tensor* x : ops)
    if (x->dtype() != dtype) invalid(node, "operands have different types");

  // Dims covered by each operand's '...', and their numpy broadcast (right-aligned).
  std::vector<int64_t> ell_dims(terms.size(), 0);
  Shape ell_shape;
  for (size_t t = 0; t < terms.size(); ++t) {
    const int64_t named = static_cast<int64_t>(terms[t].labels.size());
    ell_dims[t] = ops[t]->rank() - named;
    if (ell_dims[t] < 0 || (terms[t].ellipsis_at < 0 && ell_dims[t] != 0))
      invalid(node, "term " + std::to_string(t) + " does not match its operand's rank " +
                        std::to_string(ops[t]->rank()));
    const auto first = ops[t]->shape().begin() + std::max(terms[t].ellipsis_at, 0);
    Shape own(first, first + ell_dims[t]);
    ell_shape = broadcast_shapes(node, ell_shape, own);
  }
  const int64_t ell_total = static_cast<int64_t>(ell_shape.size());

  // Extent of every label; a broadcast dim of size 1 reads with stride 0.
  std::array<int64_t, 128> extent;
  extent.fill(-1);
  std::array<int, 128> uses{};
  for (int64_t j = 0; j < ell_total; ++j)
    extent[static_cast<size_t>(kLetters + j)] = ell_shape[static_cast<size_t>(j)];
  std::vector<std::vector<int>> dim_labels;
  for (size_t t = 0; t < terms.size(); ++t) {
    dim_labels.push_back(expand(terms[t], ell_dims[t], ell_total));
    for (size_t d = 0; d < dim_labels[t].size(); ++d) {
      const size_t l = static_cast<size_t>(dim_labels[t][d]);
      const int64_t e = ops[t]->dim(static_cast<int64_t>(d));
      ++uses[l];
      if (static_cast<int>(l) >= kLetters) continue;
      if (extent[l] >= 0 && extent[l] != e)
        invalid(node, "a letter has sizes " + std::to_string(extent[l]) + " and " + std::to_string(e));
      extent[l] = e;
    }
  }

  // Output labels: explicit, or implicit = '...' then the letters used once, alphabetically.
  std::vector<int> out_labels;
  if (implicit) {
    for (int64_t j = 0; j < ell_total; ++j) out_labels.push_back(kLetters + static_cast<int>(j));
    std::string once;
    for (int l = 0; l < kLetters; ++l)
      if (uses[static_cast<size_t>(l)] == 1) once += static_cast<char>(l < 26 ? 'a' + l : 'A' + (l - 26));
    std::sort(once.begin(), once.end());  // numpy: ASCII order, capitals first
    for (char c : once) out_labels.push_back(letter_label(c));
  } else {
    Term rhs = parse_term(node, eq.substr(arrow + 2));
    out_labels = expand(rhs, rhs.ellipsis_at >= 0 ? ell_total : 0, ell_total);
    std::vector<int> seen;
    for (int l : out_labels) {
      if (extent[static_cast<size_t>(l)] < 0) invalid(node, "an output letter is not in any input");
      if (std::find(seen.begin(), seen.end(), l) != seen.end()) invalid(node, "an output letter repeats");
      seen.push_back(l);
    }
  }

  // Loop order: output labels, then the summed ones innermost.
  std::vector<int> loop = out_labels;
  for (int l = 0; l < kLetters + ell_total; ++l)
    if (extent[static_cast<size_t>(l)] >= 0 && std::find(loop.begin(), loop.end(), l) == loop.end())
      loop.push_back(l);
  auto pos = [&](int l) {
    return static_cast<size_t>(std::find(loop.begin(), loop.end(), l) - loop.begin());
  };
  std::vector<int64_t> extents;
  for (int l : loop) extents.push_back(extent[static_cast<size_t>(l)]);
  std::vector<std::vector<int64_t>> in_strides;
  for (size_t t = 0; t < terms.size(); ++t) {
    std::vector<int64_t> s(loop.size(), 0), own = strides_of(ops[t]->shape());
    for (size_t d = 0; d < dim_labels[t].size(); ++d)
      if (ops[t]->dim(static_cast<int64_t>(d)) != 1 || extent[static_cast<size_t>(dim_labels[t][d])] == 1)
        s[pos(dim_labels[t][d])] += own[d];  // repeated letters add up: the diagonal
    in_strides.push_back(std::move(s));
  }
  Shape out_shape;
  for (int l : out_labels) out_shape.push_back(extent[static_cast<size_t>(l)]);
  std::vector<int64_t> out_strides(loop.size(), 0), own = strides_of(out_shape);
  for (size_t d = 0; d < out_labels.size(); ++d) out_strides[pos(out_labels[d])] = own[d];
  Tensor y = alloc.allocate(dtype, out_shape);
  if (dtype == DType::Float32)
    contract<float>(ops, in_strides, out_strides, extents, y);
  else
    contract<double>(ops, in_strides, out_strides, extents, y);
  return {y};
}

}  // namespace

void register_einsum_ops(OpTable& table) { table["Einsum"] = einsum; }

}  // namespace collage::native
