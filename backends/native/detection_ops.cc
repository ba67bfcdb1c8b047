// DeformConv (opset 19, 2-D), RoiAlign (opsets 10 and 16: avg/max modes, half_pixel and output_half_pixel
// coordinates, adaptive or fixed sampling) and TfIdfVectorizer over integer
// tokens (string pools are out of scope) and NonMaxSuppression (opsets 10/11). NMS's
// output count depends on the data: the importer refuses it unless its inputs are
// bound to values (ImportOptions::bound_inputs), then it is folded at import.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

std::vector<Tensor> roi_align(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& rois = input(node, inputs, 1);
  const Tensor& batch_indices = input(node, inputs, 2);
  require_float(node, x, "X");
  require_float(node, rois, "rois");
  if (x.rank() != 4) invalid(node, "X must have rank 4 (N, C, H, W)");
  if (rois.rank() != 2 || rois.dim(1) != 4) invalid(node, "rois must have shape [num_rois, 4]");
  if (batch_indices.rank() != 1 || batch_indices.dim(0) != rois.dim(0))
    invalid(node, "batch_indices must have shape [num_rois]");
  std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") invalid(node, "mode '" + mode + "' is not avg or max");
  // Opset 10 had no attribute and behaved as output_half_pixel.
  std::string ctm = node.attr_string("coordinate_transformation_mode",
                                     node.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    invalid(node, "coordinate_transformation_mode '" + ctm + "' is not half_pixel or output_half_pixel");
  int64_t oh = node.attr_int("output_height", 1), ow = node.attr_int("output_width", 1);
  int64_t sampling = node.attr_int("sampling_ratio", 0);
  float scale = node.attr_float("spatial_scale", 1.0f);
  if (oh < 1 || ow < 1 || oh > (1 << 16) || ow > (1 << 16))
    invalid(node, "output_height/width must be in [1, 65536]");
  if (sampling < 0) invalid(node, "sampling_ratio must not be negative");
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), r = rois.dim(0);
  std::vector<int64_t> bidx = batch_indices.to_int64_vector();
  Tensor y = alloc.allocate(DType::Float32, {r, c, oh, ow});
  const float *xp = x.data<float>(), *rp = rois.data<float>();
  float* yp = y.data<float>();
  if (h == 0 || w == 0) {  // an empty feature map: every sample falls outside it
    for (int64_t b : bidx)
      if (b < 0 || b >= n)
        invalid(node, "batch index " + std::to_string(b) + " is outside [0, " + std::to_string(n) + ")");
    std::fill(yp, yp + y.size(), 0.0f);
    return {y};
  }
  bool aligned = ctm == "half_pixel";
  struct Tap {
    int64_t p[4];
    float w[4];
  };
  for (int64_t i = 0; i < r; ++i) {
    int64_t b = bidx[static_cast<size_t>(i)];
    if (b < 0 || b >= n)
      invalid(node, "batch index " + std::to_string(b) + " is outside [0, " + std::to_string(n) + ")");
    float off = aligned ? 0.5f : 0.0f;
    float x0 = rp[i * 4] * scale - off, y0 = rp[i * 4 + 1] * scale - off;
    float x1 = rp[i * 4 + 2] * scale - off, y1 = rp[i * 4 + 3] * scale - off;
    float rw = x1 - x0, rh = y1 - y0;
    if (!aligned) {
      rw = std::max(rw, 1.0f);
      rh = std::max(rh, 1.0f);
    }
    if (!std::isfinite(rw) || !std::isfinite(rh) || std::fabs(rw) > 1e7f || std::fabs(rh) > 1e7f)
      invalid(node, "roi " + std::to_string(i) + " has non-finite or huge coordinates");
    float bh = rh / static_cast<float>(oh), bw = rw / static_cast<float>(ow);
    int64_t gh = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rh / static_cast<float>(oh)));
    int64_t gw = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rw / static_cast<float>(ow)));
    gh = std::max<int64_t>(gh, 0);
    gw = std::max<int64_t>(gw, 0);
    if (gh > (1 << 16) || gw > (1 << 16) || oh * ow * gh * gw > (int64_t{1} << 28))
      invalid(node, "roi " + std::to_string(i) + " needs more than 2^28 sample points");
    float count = static_cast<float>(std::max<int64_t>(gh * gw, 1));
    // Bilinear taps of every sample point, shared by all channels.
    std::vector<Tap> taps;
    taps.reserve(static_cast<size_t>(oh * ow * gh * gw));
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy) {
          float yy = y0 + static_cast<float>(ph) * bh +
                     (static_cast<float>(iy) + 0.5f) * bh / static_cast<float>(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            float xx = x0 + static_cast<float>(pw) * bw +
                       (static_cast<float>(ix) + 0.5f) * bw / static_cast<float>(gw);
            Tap t{{0, 0, 0, 0}, {0, 0, 0, 0}};
            if (!(yy < -1.0f || yy > static_cast<float>(h) || xx < -1.0f || xx > static_cast<float>(w))) {
              float yv = std::max(yy, 0.0f), xv = std::max(xx, 0.0f);
              int64_t yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xv), yh, xh;
              if (yl >= h - 1) {
                yh = yl = h - 1;
                yv = static_cast<float>(yl);
              } else {
                yh = yl + 1;
              }
              if (xl >= w - 1) {
                xh = xl = w - 1;
                xv = static_cast<float>(xl);
              } else {
                xh = xl + 1;
              }
              float ly = yv - static_cast<float>(yl), lx = xv - static_cast<float>(xl), hy = 1 - ly,
                    hx = 1 - lx;
              t = Tap{{yl * w + xl, yl * w + xh, yh * w + xl, yh * w + xh},
                      {hy * hx, hy * lx, ly * hx, ly * lx}};
            }
            taps.push_back(t);
          }
        }
    const bool avg = mode == "avg";  // not compared per sample: that was most of a detector's RoiAlign time
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* plane = xp + (b * c + ch) * h * w;
      float* out = yp + (i * c + ch) * oh * ow;
      size_t k = 0;
      for (int64_t o = 0; o < oh * ow; ++o) {
        float acc = 0.0f;
        bool first = true;
        for (int64_t s = 0; s < gh * gw; ++s, ++k) {
          const Tap& t = taps[k];
          if (avg) {
            acc += t.w[0] * plane[t.p[0]] + t.w[1] * plane[t.p[1]] + t.w[2] * plane[t.p[2]] +
                   t.w[3] * plane[t.p[3]];
          } else {
            // Max of the weighted corner values (the ONNX reference's definition).
            float v = std::max(std::max(t.w[0] * plane[t.p[0]], t.w[1] * plane[t.p[1]]),
                               std::max(t.w[2] * plane[t.p[2]], t.w[3] * plane[t.p[3]]));
            acc = first ? v : std::max(acc, v);
            first = false;
          }
        }
        out[o] = avg ? acc / count : acc;
      }
    }
  }
  return {y};
}

std::vector<Tensor> tfidf_vectorizer(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.dtype() != DType::Int32 && x.dtype() != DType::Int64)
    unsupported(node, std::string("input has type ") + dtype_name(x.dtype()) + "; supported: int32, int64");
  if (node.has_attr("pool_strings")) unsupported(node, "pool_strings (string tokens) are not supported");
  if (x.rank() > 2) invalid(node, "input must have rank 1 or 2");
  int64_t min_n = node.attr_int("min_gram_length", 0), max_n = node.attr_int("max_gram_length", 0);
  int64_t max_skip = node.attr_int("max_skip_count", 0);
  std::string mode = node.attr_string("mode", "");
  auto counts = node.attr_ints("ngram_counts"), indexes = node.attr_ints("ngram_indexes");
  auto pool = node.attr_ints("pool_int64s");
  auto weights = node.attr_floats("weights");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    invalid(node, "mode '" + mode + "' is not TF, IDF or TFIDF");
  if (min_n < 1 || max_n < min_n || max_n > static_cast<int64_t>(counts.size()))
    invalid(node, "min/max_gram_length must satisfy 1 <= min <= max <= len(ngram_counts)");
  if (max_skip < 0 || max_skip > (1 << 20)) invalid(node, "max_skip_count must be in [0, 2^20]");
  if (indexes.empty()) invalid(node, "ngram_indexes must not be empty");
  if (!weights.empty() && weights.size() != indexes.size())
    invalid(node, "weights must match ngram_indexes in size");
  int64_t out_size = 0;
  for (int64_t v : indexes) {
    if (v < 0 || v >= (int64_t{1} << 24)) invalid(node, "ngram_indexes values must be in [0, 2^24)");
    out_size = std::max(out_size, v + 1);
  }
  // Pool: n-grams of size k occupy [counts[k-1], counts[k]); ids run over the pool in order.
  std::map<std::vector<int64_t>, int64_t> ngram_id;
  int64_t id = 0, total = static_cast<int64_t>(pool.size());
  for (size_t k = 0; k < counts.size(); ++k) {
    int64_t size = static_cast<int64_t>(k) + 1, begin = counts[k];
    int64_t end = k + 1 < counts.size() ? counts[k + 1] : total;
    if (begin < 0 || end < begin || end > total || (end - begin) % size != 0)
      invalid(node, "ngram_counts do not split pool_int64s into whole " + std::to_string(size) + "-grams");
    for (int64_t s = begin; s < end; s += size, ++id) {
      if (size < min_n || size > max_n) continue;
      ngram_id[std::vector<int64_t>(pool.begin() + s, pool.begin() + s + size)] = id;
    }
  }
  if (id > static_cast<int64_t>(indexes.size()))
    invalid(node, "ngram_indexes has fewer entries than the pool has n-grams");
  int64_t rows = x.rank() == 2 ? x.dim(0) : 1, cols = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
  std::vector<int64_t> xv = x.to_int64_vector();
  std::vector<float> freq(static_cast<size_t>(rows * out_size), 0.0f);
  std::vector<int64_t> gram;
  for (int64_t rrow = 0; rrow < rows; ++rrow) {
    const int64_t* row = xv.data() + rrow * cols;
    auto count = [&](int64_t out_row_id) {
      auto it = ngram_id.find(gram);
      if (it != ngram_id.end())
        freq[static_cast<size_t>(out_row_id * out_size + indexes[static_cast<size_t>(it->second)])] += 1.0f;
    };
    int64_t start_n = min_n;
    if (start_n == 1) {  // unigrams are counted once, whatever the skip
      for (int64_t i = 0; i < cols; ++i) {
        gram.assign(1, row[i]);
        count(rrow);
      }
      ++start_n;
    }
    if (start_n > max_n) continue;
    for (int64_t dist = 1; dist <= max_skip + 1; ++dist)
      for (int64_t i = 0; i + dist * (start_n - 1) < cols; ++i) {
        gram.clear();
        for (int64_t k = 1, j = i; k <= max_n && j < cols; ++k, j += dist) {
          gram.push_back(row[j]);
          if (k >= start_n) count(rrow);
        }
      }
  }
  // Weights belong to n-grams; place them at each n-gram's output column.
  std::vector<float> col_weight(static_cast<size_t>(out_size), 1.0f);
  if (!weights.empty())
    for (size_t j = 0; j < indexes.size(); ++j) col_weight[static_cast<size_t>(indexes[j])] = weights[j];
  Shape out_shape = x.rank() == 2 ? Shape{rows, out_size} : Shape{out_size};
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  float* yp = y.data<float>();
  for (size_t i = 0; i < freq.size(); ++i) {
    float wgt = col_weight[i % static_cast<size_t>(out_size)];
    yp[i] = mode == "TF" ? freq[i] : mode == "IDF" ? (freq[i] > 0 ? wgt : 0.0f) : freq[i] * wgt;
  }
  return {y};
}

// Bilinear sample of an H x W plane at (y, x); taps outside the plane read 0.
float bilinear_zero_padded(const float* plane, int64_t h, int64_t w, float y, float x) {
  if (y <= -1.0f || y >= static_cast<float>(h) || x <= -1.0f || x >= static_cast<float>(w)) return 0.0f;
  float fy = std::floor(y), fx = std::floor(x);
  int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx), y1 = y0 + 1, x1 = x0 + 1;
  float ly = y - fy, lx = x - fx, hy = 1 - ly, hx = 1 - lx;
  auto at = [&](int64_t yy, int64_t xx) {
    return yy >= 0 && yy < h && xx >= 0 && xx < w ? plane[yy * w + xx] : 0.0f;
  };
  return hy * hx * at(y0, x0) + hy * lx * at(y0, x1) + ly * hx * at(y1, x0) + ly * lx * at(y1, x1);
}

// DeformConv (opset 19), 2-D: each kernel tap samples the input at its regular
// position plus a learned (dy, dx) offset, optionally scaled by a mask.
std::vector<Tensor> deform_conv(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& wt = input(node, inputs, 1);
  const Tensor& offset = input(node, inputs, 2);
  const Tensor* bias = optional_input(inputs, 3);
  const Tensor* mask = optional_input(inputs, 4);
  for (const Tensor* t : {&x, &wt, &offset, bias, mask})
    if (t) require_float(node, *t, "an input");
  if (x.rank() != 4) unsupported(node, "only 2-D deformable convolution is supported (input rank 4)");
  if (wt.rank() != 4) invalid(node, "W must have rank 4");
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  int64_t m = wt.dim(0), kh = wt.dim(2), kw = wt.dim(3);
  int64_t group = node.attr_int("group", 1), og = node.attr_int("offset_group", 1);
  if (group < 1 || c % group != 0 || m % group != 0 || wt.dim(1) != c / group)
    invalid(node, "group " + std::to_string(group) + " does not fit input channels " + std::to_string(c) +
                      " and W shape " + shape_to_string(wt.shape()));
  if (og < 1 || c % og != 0)
    invalid(node, "offset_group " + std::to_string(og) + " does not divide the channels");
  auto ints = [&](const char* key, size_t cnt, int64_t fallback) {
    auto v = node.attr_ints(key, std::vector<int64_t>(cnt, fallback));
    if (v.size() != cnt)
      invalid(node, std::string("attribute ") + key + " must have " + std::to_string(cnt) + " values");
    return v;
  };
  auto strides = ints("strides", 2, 1), dils = ints("dilations", 2, 1), pads = ints("pads", 4, 0);
  auto kshape = node.attr_ints("kernel_shape", {});
  if (!kshape.empty() && kshape != std::vector<int64_t>{kh, kw})
    invalid(node, "kernel_shape does not match W");
  for (int64_t v : strides)
    if (v < 1) invalid(node, "strides must be positive");
  for (int64_t v : dils)
    if (v < 1) invalid(node, "dilations must be positive");
  for (int64_t v : pads)
    if (v < 0) invalid(node, "pads must not be negative");
  int64_t oh = (h + pads[0] + pads[2] - ((kh - 1) * dils[0] + 1)) / strides[0] + 1;
  int64_t ow = (w + pads[1] + pads[3] - ((kw - 1) * dils[1] + 1)) / strides[1] + 1;
  if (oh < 1 || ow < 1) invalid(node, "the convolution leaves an empty output extent");
  int64_t taps = kh * kw;
  if (offset.shape() != Shape{n, og * 2 * taps, oh, ow})
    invalid(node, "offset has shape " + shape_to_string(offset.shape()) + "; expected " +
                      shape_to_string({n, og * 2 * taps, oh, ow}));
  if (mask && mask->shape() != Shape{n, og * taps, oh, ow})
    invalid(node, "mask has shape " + shape_to_string(mask->shape()) + "; expected " +
                      shape_to_string({n, og * taps, oh, ow}));
  if (bias && bias->shape() != Shape{m}) invalid(node, "B must have shape [" + std::to_string(m) + "]");
  Tensor y = alloc.allocate(DType::Float32, {n, m, oh, ow});
  const float *xp = x.data<float>(), *wp = wt.data<float>(), *op = offset.data<float>();
  const float* mp = mask ? mask->data<float>() : nullptr;
  float* yp = y.data<float>();
  int64_t cg = c / group, mg = m / group, cpo = c / og, plane = oh * ow;
  // Sampled input columns [c * taps, oh * ow] of one image, then a plain grouped product.
  std::vector<float> cols(static_cast<size_t>(c * taps * plane));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t g = ch / cpo;
      const float* img = xp + (b * c + ch) * h * w;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          int64_t t = i * kw + j;
          const float* dy = op + ((b * og + g) * 2 * taps + 2 * t) * plane;
          const float* dx = dy + plane;
          const float* mk = mp ? mp + ((b * og + g) * taps + t) * plane : nullptr;
          float* col = cols.data() + (ch * taps + t) * plane;
          for (int64_t yo = 0; yo < oh; ++yo)
            for (int64_t xo = 0; xo < ow; ++xo) {
              int64_t p = yo * ow + xo;
              float sy = static_cast<float>(yo * strides[0] - pads[0] + i * dils[0]) + dy[p];
              float sx = static_cast<float>(xo * strides[1] - pads[1] + j * dils[1]) + dx[p];
              float v = bilinear_zero_padded(img, h, w, sy, sx);
              col[p] = mk ? v * mk[p] : v;
            }
        }
    }
    for (int64_t oc = 0; oc < m; ++oc) {
      int64_t g = oc / mg;
      float* out = yp + (b * m + oc) * plane;
      float init = bias ? bias->data<float>()[oc] : 0.0f;
      std::fill(out, out + plane, init);
      for (int64_t k = 0; k < cg * taps; ++k) {
        float wv = wp[oc * cg * taps + k];
        const float* col = cols.data() + (g * cg * taps + k) * plane;
        for (int64_t p = 0; p < plane; ++p) out[p] += wv * col[p];
      }
    }
  }
  return {y};
}

// A box as (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2.
struct Box {
  float y1, x1, y2, x2;
  float area() const { return (y2 - y1) * (x2 - x1); }
};

Box read_box(const float* p, bool center_point) {
  if (center_point) {  // [x_center, y_center, width, height]
    float hw = p[2] / 2, hh = p[3] / 2;
    return {p[1] - hh, p[0] - hw, p[1] + hh, p[0] + hw};
  }
  // [y1, x1, y2, x2] with the corners of either diagonal.
  return {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
}

// IoU above the threshold; degenerate boxes overlap nothing.
bool overlaps(const Box& a, const Box& b, float iou_threshold) {
  float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return false;
  float inter = ih * iw, uni = a.area() + b.area() - inter;
  if (a.area() <= 0 || b.area() <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

std::vector<Tensor> non_max_suppression(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& boxes = input(node, inputs, 0);
  const Tensor& scores = input(node, inputs, 1);
  require_float(node, boxes, "boxes");
  require_float(node, scores, "scores");
  if (boxes.rank() != 3 || boxes.dim(2) != 4) invalid(node, "boxes must have shape [batches, boxes, 4]");
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    invalid(node, "scores must have shape [batches, classes, boxes] matching boxes");
  int64_t center = node.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) invalid(node, "center_point_box must be 0 or 1");
  auto scalar = [&](size_t i, const char* role) -> const Tensor* {
    const Tensor* t = optional_input(inputs, i);
    if (t && t->size() > 1) invalid(node, std::string(role) + " must hold one value");
    return t && t->size() == 1 ? t : nullptr;
  };
  const Tensor* max_t = scalar(2, "max_output_boxes_per_class");
  const Tensor* iou_t = scalar(3, "iou_threshold");
  const Tensor* score_t = scalar(4, "score_threshold");
  if (max_t && max_t->dtype() != DType::Int64) invalid(node, "max_output_boxes_per_class must be int64");
  if (iou_t) require_float(node, *iou_t, "iou_threshold");
  if (score_t) require_float(node, *score_t, "score_threshold");
  int64_t max_out = max_t ? max_t->data<int64_t>()[0] : 0;
  float iou = iou_t ? iou_t->data<float>()[0] : 0.0f;
  if (iou < 0 || iou > 1) invalid(node, "iou_threshold must be in [0, 1]");
  int64_t nb = boxes.dim(0), nc = scores.dim(1), n = boxes.dim(1);
  const float *bp = boxes.data<float>(), *sp = scores.data<float>();
  std::vector<int64_t> selected;  // (batch, class, box) triples
  for (int64_t b = 0; b < nb && max_out > 0; ++b) {
    std::vector<Box> bx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) bx[static_cast<size_t>(i)] = read_box(bp + (b * n + i) * 4, center == 1);
    for (int64_t c = 0; c < nc; ++c) {
      const float* s = sp + (b * nc + c) * n;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i)
        if (!score_t || s[i] > score_t->data<float>()[0]) order.push_back(i);
      // Highest score first; ties keep the lower box index first.
      std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      // Only kept boxes whose x-range meets the candidate's can suppress it: the kept boxes are
      // held sorted by x1, and those starting within the widest kept width before it are checked
      // (a detector's thousands of boxes, classes offset apart: a few checks instead of all).
      std::vector<int64_t> kept;
      std::vector<std::pair<float, int64_t>> by_x1;
      float widest = 0;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Box& box = bx[static_cast<size_t>(i)];
        if (std::isnan(box.x1) || std::isnan(box.x2) || std::isnan(box.y1) || std::isnan(box.y2)) {
          kept.push_back(i);  // overlaps nothing (as overlaps() says), and stays out of the ordered list
          continue;
        }
        bool suppressed = false;
        auto it = std::lower_bound(by_x1.begin(), by_x1.end(), std::make_pair(box.x1 - widest, int64_t{-1}));
        for (; it != by_x1.end() && it->first < box.x2 && !suppressed; ++it)
          suppressed = overlaps(bx[static_cast<size_t>(it->second)], box, iou);
        if (suppressed) continue;
        kept.push_back(i);
        by_x1.insert(std::upper_bound(by_x1.begin(), by_x1.end(), std::make_pair(box.x1, i)), {box.x1, i});
        widest = std::max(widest, box.x2 - box.x1);
      }
      for (int64_t k : kept) selected.insert(selected.end(), {b, c, k});
    }
  }
  int64_t count = static_cast<int64_t>(selected.size() / 3);
  Tensor y = alloc.allocate(DType::Int64, {count, 3});
  std::copy(selected.begin(), selected.end(), y.data<int64_t>());
  return {y};
}

}  // namespace

void register_detection_ops(OpTable& table) {
  table["RoiAlign"] = roi_align;
  table["TfIdfVectorizer"] = tfidf_vectorizer;
  table["DeformConv"] = deform_conv;
  table["NonMaxSuppression"] = non_max_suppression;
}

}  // namespace collage::native
