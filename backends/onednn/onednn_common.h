// oneDNN helpers shared by the op-level backend (onednn) and the region backend
// (onednn-region): the engine, plain layouts, constants, and the exact mapping of
// ONNX convolution / pooling attributes onto oneDNN's geometry.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <variant>

#include "core/ir/graph.h"
#include "core/ir/tensor.h"

namespace collage::onednn {

dnnl::engine& cpu();  // one CPU engine per process

// Scalars are [1] to oneDNN, which has no rank-0 memory.
dnnl::memory::dims dims_of(const Shape& s);
dnnl::memory::format_tag plain_tag(size_t rank);  // a, ab, abc ... (rank 1-6); Unsupported otherwise
dnnl::memory::desc plain(const Shape& s);         // f32, row-major
// Matmul weights a primitive chose to read row-major, when their rows lie a multiple of
// 1 KiB apart: the same with each row padded by 64 bytes (nullopt otherwise). At such
// strides oneDNN 2.6's AVX2 gemm:jit reads the weights in place and rows fall into the
// same cache sets: ViT's and BERT's [768, 3072] MLP weights took 23 ms a product instead of
// 12 (N 1024-4096: 1.8-1.9x; 768, 2304: 1.1x; measured standalone on an AVX2 EPYC).
std::optional<dnnl::memory::desc> padded_weights(const dnnl::memory::desc& chosen);
dnnl::memory::desc any(const Shape& s);  // f32, layout left to the primitive

// A constant tensor copied into a memory of `md` (plain), reordered to `want` when given and different.
dnnl::memory constant_memory(const Tensor& t, const dnnl::memory::desc& md,
                             const std::optional<dnnl::memory::desc>& want = std::nullopt);

// Convolution weights in oneDNN's order: [M, C/g, k...] or [g, M/g, C/g, k...] when
// grouped; ConvTranspose's ONNX [C, M/g, k...] becomes [M, C, k...] / [g, M/g, C/g, k...].
// Returns the tensor and sets `dims` to its oneDNN dims.
Tensor conv_weights(const Tensor& w, int64_t group, bool transposed, Shape& dims);

struct ConvGeometry {
  dnnl::memory::dims strides, dilates, pad_l, pad_r;  // dilates count from 0, as oneDNN does
};
// Convolution (or deconvolution) geometry of `n` for input x, weights w, output y. Throws Unsupported.
ConvGeometry conv_geometry(const Node& n, const Shape& x, const Shape& w, const Shape& y, bool transposed);

// Whether a forward convolution with OIHW weights `w` (group 1) and output `y` runs as
// Winograd (oneDNN's jit_wino_4x3 / jit_fp32_wino_2x3 on AVX-512) rather than direct. Every
// 3x3, stride 1, undilated layer on this machine's grid (hw 7-112, 16-512 channels in and out,
// 1 thread; tests/bench/winograd_grid.cc) ran 1.1-3.4x faster as Winograd except at 7x7 with
// 16 output channels (0.9x). One fixed rule, not a measurement, so a placement compiles the
// same way every time; both oneDNN backends use it and fall back to direct where oneDNN has
// no Winograd kernel (other ISAs).
bool winograd_pays(const Shape& w, const Shape& y, const ConvGeometry& geo);

// The inference primitive descriptor of a convolution (Prim = dnnl::convolution_forward) or
// deconvolution (dnnl::deconvolution_forward) with geometry `geo`, with or without a bias.
template <class Prim>
typename Prim::primitive_desc conv_primitive(dnnl::algorithm alg, const dnnl::memory::desc& src,
                                             const dnnl::memory::desc& weights,
                                             const std::optional<dnnl::memory::desc>& bias,
                                             const dnnl::memory::desc& dst, const ConvGeometry& geo,
                                             const dnnl::primitive_attr& attr) {
  const auto p = dnnl::prop_kind::forward_inference;
  auto d =
      bias ? typename Prim::desc(p, alg, src, weights, *bias, dst, geo.strides, geo.dilates, geo.pad_l,
                                 geo.pad_r)
           : typename Prim::desc(p, alg, src, weights, dst, geo.strides, geo.dilates, geo.pad_l, geo.pad_r);
  return typename Prim::primitive_desc(d, attr, cpu());
}

struct PoolGeometry {
  dnnl::algorithm alg;
  dnnl::memory::dims kernel, strides, dilates, pad_l, pad_r;
};
// The oneDNN pooling that computes `n` exactly, or the reason there is none.
std::variant<PoolGeometry, std::string> pool_geometry(const Graph& g, const Node& n);

}  // namespace collage::onednn
