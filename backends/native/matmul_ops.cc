// Gemm, MatMul (numpy semantics) and Det (LU with partial pivoting).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

// C[m x n] (+)= A[m x k] * B[k x n], row-major with leading dims; i-k-j order keeps the inner loop
// contiguous.
void gemm_rows(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int64_t lda,
               int64_t ldb, bool trans_a, bool trans_b, float alpha) {
  std::vector<float> bt;
  if (trans_b) {  // materialise B^T once so the inner loop stays contiguous
    bt.resize(static_cast<size_t>(k * n));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) bt[static_cast<size_t>(p * n + j)] = b[j * ldb + p];
    b = bt.data();
    ldb = n;
  }
  for (int64_t i = 0; i < m; ++i) {
    float* crow = c + i * n;
    for (int64_t p = 0; p < k; ++p) {
      float av = alpha * (trans_a ? a[p * lda + i] : a[i * lda + p]);
      if (av == 0.0f) continue;
      const float* brow = b + p * ldb;
      for (int64_t j = 0; j < n; ++j) crow[j] += av * brow[j];
    }
  }
}

std::vector<Tensor> gemm(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a = input(node, inputs, 0);
  const Tensor& b = input(node, inputs, 1);
  const Tensor* c = optional_input(inputs, 2);
  require_float(node, a, "A");
  require_float(node, b, "B");
  if (a.rank() != 2 || b.rank() != 2) invalid(node, "A and B must be 2-D");
  bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  int64_t kb = tb ? b.dim(1) : b.dim(0), n = tb ? b.dim(0) : b.dim(1);
  if (k != kb)
    invalid(node,
            "inner dimensions differ: " + shape_to_string(a.shape()) + " x " + shape_to_string(b.shape()));
  Tensor y = alloc.allocate(DType::Float32, {m, n});
  float* out = y.data<float>();
  std::fill(out, out + m * n, 0.0f);
  if (c && c->size() > 0) {
    require_float(node, *c, "C");
    Shape bs = broadcast_shapes(node, {m, n}, c->shape());
    if (bs != Shape{m, n})
      invalid(node, "C of shape " + shape_to_string(c->shape()) + " does not broadcast to the output");
    auto st = broadcast_strides(c->shape(), {m, n});
    const float* cv = c->data<float>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) out[i * n + j] = beta * cv[i * st[0] + j * st[1]];
  }
  gemm_rows(a.data<float>(), b.data<float>(), out, m, n, k, a.dim(1), b.dim(1), ta, tb, alpha);
  return {y};
}

std::vector<Tensor> matmul(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a0 = input(node, inputs, 0);
  const Tensor& b0 = input(node, inputs, 1);
  require_float(node, a0, "A");
  require_float(node, b0, "B");
  if (a0.rank() == 0 || b0.rank() == 0) invalid(node, "MatMul operands must have rank >= 1");
  // 1-D operands: promote, multiply, then drop the added dim (numpy semantics).
  Shape as = a0.shape(), bs = b0.shape();
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k)
    invalid(node,
            "inner dimensions differ: " + shape_to_string(a0.shape()) + " x " + shape_to_string(b0.shape()));
  Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shapes(node, abatch, bbatch);
  Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(m);
  if (!b_vec) out_shape.push_back(n);
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  float* out = y.data<float>();
  int64_t batches = shape_size(batch);
  std::fill(out, out + batches * m * n, 0.0f);
  auto sa = broadcast_strides(abatch, batch), sb = broadcast_strides(bbatch, batch);
  auto bstr = strides_of(batch);
  for (int64_t t = 0; t < batches; ++t) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      int64_t idx = (t / bstr[d]) % batch[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    gemm_rows(a0.data<float>() + oa * m * k, b0.data<float>() + ob * k * n, out + t * m * n, m, n, k, k, n,
              false, false, 1.0f);
  }
  return {y};
}

// Det of [..., M, M] float32/64: LU with partial pivoting in double per matrix.
std::vector<Tensor> det(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) invalid(node, "input must be [..., M, M]");
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
    unsupported(node, std::string("input type ") + dtype_name(x.dtype()) + " is not supported");
  int64_t m = x.dim(x.rank() - 1);
  Shape out(x.shape().begin(), x.shape().end() - 2);
  Tensor y = alloc.allocate(x.dtype(), out);
  std::vector<double> all = x.to_double_vector();
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < shape_size(out); ++b) {
    std::copy(all.begin() + b * m * m, all.begin() + (b + 1) * m * m, a.begin());
    double d = 1.0;
    for (int64_t c = 0; c < m && d != 0.0; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[static_cast<size_t>(r * m + c)]) > std::fabs(a[static_cast<size_t>(p * m + c)]))
          p = r;
      if (a[static_cast<size_t>(p * m + c)] == 0.0) {
        d = 0.0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < m; ++k)
          std::swap(a[static_cast<size_t>(p * m + k)], a[static_cast<size_t>(c * m + k)]);
        d = -d;
      }
      double piv = a[static_cast<size_t>(c * m + c)];
      d *= piv;
      for (int64_t r = c + 1; r < m; ++r) {
        double f = a[static_cast<size_t>(r * m + c)] / piv;
        for (int64_t k = c; k < m; ++k)
          a[static_cast<size_t>(r * m + k)] -= f * a[static_cast<size_t>(c * m + k)];
      }
    }
    if (x.dtype() == DType::Float32)
      y.data<float>()[b] = static_cast<float>(d);
    else
      y.data<double>()[b] = d;
  }
  return {y};
}

}  // namespace

void register_matmul_ops(OpTable& table) {
  table["Gemm"] = gemm;
  table["MatMul"] = matmul;
  table["Det"] = det;
}

}  // namespace collage::native
