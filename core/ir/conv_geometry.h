// ONNX's window arithmetic (convolution, pooling) for one spatial axis, in one place.
// Import resolves auto_pad (SAME_UPPER, SAME_LOWER, VALID) of every forward window op
// into explicit `pads` once shapes are static (core/import: resolve_auto_pad), so the
// backends see explicit pads; ConvTranspose keeps auto_pad / output_shape, whose pads
// may be negative (which an explicit `pads` cannot state), and its kernels call
// transposed_padding(). Kernels run on hand-built nodes too, so they resolve auto_pad
// through these same functions rather than refusing it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace collage {

// The extent one window covers: (k - 1) * dilation + 1.
inline int64_t window_span(int64_t kernel, int64_t dilation) { return (kernel - 1) * dilation + 1; }

// true for SAME_UPPER / SAME_LOWER; throws InvalidModel naming `node` for an unknown value.
bool is_same_auto_pad(const std::string& auto_pad, const std::string& node);

// {begin, end} pads of a forward window op under SAME_UPPER (`upper`) or SAME_LOWER: the
// output is ceil(in / stride), the odd pad goes to the end (UPPER) or the start (LOWER).
std::pair<int64_t, int64_t> same_padding(bool upper, int64_t in, int64_t stride, int64_t span);

// {begin, end} pads of a ConvTranspose whose output extent is `target` (output_shape, or
// in * stride under SAME_*) instead of its natural stride * (in - 1) + output_padding + span:
// total = natural - target split with floor division as the ONNX reference does, so a
// target beyond the natural extent gives a negative end pad.
std::pair<int64_t, int64_t> transposed_padding(bool upper, int64_t natural, int64_t target);

}  // namespace collage
