// ImageDecoder's per-format decoders (image_ops.cc: BMP, PNM and the kernel;
// image_codecs.cc: JPEG, PNG, TIFF, WebP, JPEG 2000 through their libraries).
// Every decoder returns 8-bit interleaved RGB (palettes expanded, alpha
// dropped, like PIL's convert("RGB")) or throws collage::Error with a message
// that names the format but not the node (the kernel prefixes it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/error.h"

namespace collage::native {

// Larger images are refused before any pixel buffer is allocated.
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

struct DecodedImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> rgb;  // height * width * 3
};

// Throws InvalidInput "<format>: <what>".
[[noreturn]] void image_error(const char* format, const std::string& what);
// Throws InvalidInput unless 0 < width, height and width * height <= kMaxImagePixels.
void check_image_dims(const char* format, int64_t width, int64_t height);
// Sizes img.rgb for the checked dims.
void allocate_image(DecodedImage& img, const char* format, int64_t width, int64_t height);

DecodedImage decode_jpeg(const uint8_t* data, size_t size);
DecodedImage decode_png(const uint8_t* data, size_t size);
DecodedImage decode_tiff(const uint8_t* data, size_t size);
DecodedImage decode_webp(const uint8_t* data, size_t size);
DecodedImage decode_jpeg2000(const uint8_t* data, size_t size, bool codestream);
DecodedImage decode_bmp(const uint8_t* data, size_t size);
DecodedImage decode_pnm(const uint8_t* data, size_t size);

}  // namespace collage::native
