// ImageDecoder (opset 20): a 1-D uint8 encoded stream -> uint8 [H, W, 3] (RGB
// or BGR) or [H, W, 1] (Grayscale). Matches ONNX's reference, which decodes
// with PIL: palettes expanded, alpha dropped, Grayscale as PIL's convert("L").
// The format is recognised by its magic bytes; BMP and PNM are parsed here,
// the others by their libraries (image_codecs.cc). Damaged streams are
// InvalidInput naming node and format, never a crash or a read out of bounds.
#include <cstring>

#include "backends/native/image_decode.h"
#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

[[noreturn]] void image_error(const char* format, const std::string& what) {
  throw Error(ErrorKind::InvalidInput, std::string(format) + ": " + what);
}

void check_image_dims(const char* format, int64_t width, int64_t height) {
  if (width <= 0 || height <= 0)
    image_error(format, "invalid dimensions " + std::to_string(width) + "x" + std::to_string(height));
  if (width > kMaxImagePixels / height)
    image_error(format, "dimensions " + std::to_string(width) + "x" + std::to_string(height) +
                            " exceed the limit of 2^28 pixels");
}

void allocate_image(DecodedImage& img, const char* format, int64_t width, int64_t height) {
  check_image_dims(format, width, height);
  img.width = width;
  img.height = height;
  img.rgb.assign(static_cast<size_t>(width * height * 3), 0);
}

namespace {

// ---- BMP ----

uint32_t le16(const uint8_t* p) { return p[0] | (uint32_t{p[1]} << 8); }
uint32_t le32(const uint8_t* p) { return le16(p) | (le16(p + 2) << 16); }

// One channel of a bit-field pixel scaled to 8 bits like PIL's unpackers (v * 255 / max).
struct BitField {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;
  explicit BitField(uint32_t m) : mask(m) {
    if (!m) return;
    while (!((m >> shift) & 1)) ++shift;
    max = m >> shift;
  }
  uint8_t operator()(uint32_t px) const {
    if (!max) return 0;
    uint64_t v = (px & mask) >> shift;
    return static_cast<uint8_t>(max == 255 ? v : v * 255 / max);
  }
};

}  // namespace

DecodedImage decode_bmp(const uint8_t* data, size_t size) {
  const char* fmt = "BMP";
  if (size < 26) image_error(fmt, "the header is truncated");
  const uint32_t pixel_offset = le32(data + 10);
  const uint32_t dib = le32(data + 14);
  const bool core = dib == 12;
  if (!core && (dib < 40 || dib > 124)) image_error(fmt, "unknown header size " + std::to_string(dib));
  if (size < 14 + static_cast<size_t>(dib)) image_error(fmt, "the header is truncated");
  const uint8_t* h = data + 14;
  int64_t width, height;
  uint32_t bpp, compression = 0, colours_used = 0;
  if (core) {
    width = le16(h + 4);
    height = le16(h + 6);
    bpp = le16(h + 10);
  } else {
    width = static_cast<int32_t>(le32(h + 4));
    height = static_cast<int32_t>(le32(h + 8));
    bpp = le16(h + 14);
    compression = le32(h + 16);
    colours_used = le32(h + 32);
  }
  const bool top_down = height < 0;
  if (top_down) height = -height;
  check_image_dims(fmt, width, height);
  if (compression == 1 || compression == 2)
    throw Error(ErrorKind::Unsupported, "BMP: RLE-compressed images are not supported");
  if (compression != 0 && compression != 3 && compression != 6)
    throw Error(ErrorKind::Unsupported,
                "BMP: compression " + std::to_string(compression) + " is not supported");
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
    image_error(fmt, std::to_string(bpp) + " bits per pixel");
  if (compression != 0 && bpp != 16 && bpp != 32) image_error(fmt, "bit fields need 16 or 32 bits per pixel");

  // Channel masks: in the V4/V5 header, after a 40-byte header (bit fields), or the defaults.
  size_t after_header = 14 + dib;
  uint32_t masks[3] = {0x00FF0000, 0x0000FF00, 0x000000FF};
  if (bpp == 16) {
    masks[0] = 0x7C00;
    masks[1] = 0x03E0;
    masks[2] = 0x001F;
  }
  if (compression != 0) {
    const uint8_t* m = h + 40;
    if (dib == 40) {
      const size_t extra = compression == 6 ? 16 : 12;
      if (size < after_header + extra) image_error(fmt, "the bit-field masks are truncated");
      after_header += extra;
    } else if (dib < 52) {
      image_error(fmt, "bit fields without masks");
    }
    for (int c = 0; c < 3; ++c) masks[c] = le32(m + 4 * c);
  }
  const BitField red(masks[0]), green(masks[1]), blue(masks[2]);

  std::vector<uint8_t> palette;  // RGB triples
  if (bpp <= 8) {
    const uint32_t max_colours = 1u << bpp;
    const uint32_t n = colours_used == 0 || colours_used > max_colours ? max_colours : colours_used;
    const size_t entry = core ? 3 : 4;
    if (after_header + n * entry > size) image_error(fmt, "the palette is truncated");
    palette.assign(size_t{max_colours} * 3, 0);  // indices past the palette read black
    for (uint32_t i = 0; i < n; ++i) {
      const uint8_t* e = data + after_header + i * entry;
      palette[3 * i] = e[2];
      palette[3 * i + 1] = e[1];
      palette[3 * i + 2] = e[0];
    }
  }

  const size_t stride = (static_cast<size_t>(width) * bpp + 31) / 32 * 4;
  if (pixel_offset > size || stride * static_cast<size_t>(height) > size - pixel_offset)
    image_error(fmt, "the pixel data is truncated");
  DecodedImage img;
  allocate_image(img, fmt, width, height);
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = data + pixel_offset + stride * static_cast<size_t>(top_down ? y : height - 1 - y);
    uint8_t* out = img.rgb.data() + static_cast<size_t>(y * width * 3);
    for (int64_t x = 0; x < width; ++x, out += 3) {
      if (bpp <= 8) {
        const size_t bit = static_cast<size_t>(x) * bpp;
        const uint32_t idx = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        std::memcpy(out, &palette[3 * idx], 3);
      } else if (bpp == 24) {
        out[0] = row[3 * x + 2];
        out[1] = row[3 * x + 1];
        out[2] = row[3 * x];
      } else {
        const uint32_t px = bpp == 16 ? le16(row + 2 * x) : le32(row + 4 * x);
        out[0] = red(px);
        out[1] = green(px);
        out[2] = blue(px);
      }
    }
  }
  return img;
}

// ---- PNM (P1-P6) ----

namespace {

class PnmReader {
 public:
  PnmReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // The next header/plain-text number, skipping whitespace and # comments.
  uint32_t number(uint32_t limit) {
    skip_space();
    if (pos_ >= size_ || data_[pos_] < '0' || data_[pos_] > '9') image_error("PNM", "expected a number");
    uint64_t v = 0;
    while (pos_ < size_ && data_[pos_] >= '0' && data_[pos_] <= '9') {
      v = v * 10 + (data_[pos_++] - '0');
      if (v > limit) image_error("PNM", "value above " + std::to_string(limit));
    }
    return static_cast<uint32_t>(v);
  }
  // A plain PBM bit: digits need no separator.
  uint32_t bit() {
    skip_space();
    if (pos_ >= size_ || (data_[pos_] != '0' && data_[pos_] != '1')) image_error("PNM", "expected 0 or 1");
    return data_[pos_++] - '0';
  }
  // After the header of a raw format: exactly one whitespace byte, then `bytes` of samples.
  const uint8_t* raw(size_t bytes) {
    if (pos_ >= size_ || !is_space(data_[pos_])) image_error("PNM", "missing whitespace after the header");
    ++pos_;
    if (bytes > size_ - pos_) image_error("PNM", "the pixel data is truncated");
    return data_ + pos_;
  }

 private:
  static bool is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  }
  void skip_space() {
    while (pos_ < size_) {
      if (is_space(data_[pos_])) {
        ++pos_;
      } else if (data_[pos_] == '#') {
        while (pos_ < size_ && data_[pos_] != '\n' && data_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
  }
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 2;  // after the magic
};

}  // namespace

DecodedImage decode_pnm(const uint8_t* data, size_t size) {
  const char* fmt = "PNM";
  const int kind = data[1] - '0';  // 1-3 plain, 4-6 raw; bitmap, graymap, pixmap
  PnmReader r(data, size);
  const int64_t width = r.number(1u << 30), height = r.number(1u << 30);
  check_image_dims(fmt, width, height);
  const bool bitmap = kind == 1 || kind == 4;
  const uint32_t maxval = bitmap ? 1 : r.number(65535);
  if (maxval == 0) image_error(fmt, "maxval 0");
  const int channels = kind == 3 || kind == 6 ? 3 : 1;
  const auto pixels = static_cast<size_t>(width * height);
  const size_t samples = pixels * channels;
  const size_t sample_bytes = maxval > 255 ? 2 : 1;
  const uint8_t* raw = nullptr;
  const size_t row_bytes = (static_cast<size_t>(width) + 7) / 8;
  if (kind == 4) raw = r.raw(row_bytes * static_cast<size_t>(height));
  if (kind == 5 || kind == 6) raw = r.raw(samples * sample_bytes);
  if ((kind == 1 || kind == 2 || kind == 3) && samples > size)
    image_error(fmt, "the pixel data is truncated");
  DecodedImage img;
  allocate_image(img, fmt, width, height);
  // Samples scaled to 0..255 with rounding; values above maxval clamp.
  auto scale = [maxval](uint32_t v) -> uint8_t {
    if (v > maxval) v = maxval;
    return static_cast<uint8_t>(maxval == 255 ? v : (uint64_t{v} * 510 + maxval) / (2 * uint64_t{maxval}));
  };
  std::vector<uint8_t> values(samples);
  for (size_t i = 0; i < samples; ++i) {
    if (kind == 1) {
      values[i] = r.bit() ? 0 : 255;  // 1 is black
    } else if (kind == 4) {
      const size_t y = i / static_cast<size_t>(width), x = i % static_cast<size_t>(width);
      values[i] = (raw[y * row_bytes + x / 8] >> (7 - x % 8)) & 1 ? 0 : 255;
    } else if (kind == 2 || kind == 3) {
      values[i] = scale(r.number(65535));
    } else {
      values[i] = scale(sample_bytes == 2 ? (uint32_t{raw[2 * i]} << 8) | raw[2 * i + 1] : raw[i]);
    }
  }
  for (size_t p = 0; p < pixels; ++p)
    for (size_t c = 0; c < 3; ++c) img.rgb[3 * p + c] = values[channels == 3 ? 3 * p + c : p];
  return img;
}

namespace {

bool starts_with(const uint8_t* data, size_t size, const char* magic, size_t n) {
  return size >= n && std::memcmp(data, magic, n) == 0;
}

DecodedImage decode_any(const uint8_t* data, size_t size) {
  if (size == 0) throw Error(ErrorKind::InvalidInput, "the encoded stream is empty");
  if (starts_with(data, size, "\xFF\xD8\xFF", 3)) return decode_jpeg(data, size);
  if (starts_with(data, size, "\x89PNG\r\n\x1A\n", 8)) return decode_png(data, size);
  if (starts_with(data, size, "BM", 2)) return decode_bmp(data, size);
  if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return decode_pnm(data, size);
  if (starts_with(data, size, "II*\0", 4) || starts_with(data, size, "MM\0*", 4) ||
      starts_with(data, size, "II+\0", 4) || starts_with(data, size, "MM\0+", 4))
    return decode_tiff(data, size);
  if (size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WEBP", 4) == 0)
    return decode_webp(data, size);
  if (starts_with(data, size, "\0\0\0\x0CjP  \r\n\x87\n", 12)) return decode_jpeg2000(data, size, false);
  if (starts_with(data, size, "\xFF\x4F\xFF\x51", 4)) return decode_jpeg2000(data, size, true);
  throw Error(ErrorKind::InvalidInput,
              "unrecognised image format (supported: JPEG, PNG, BMP, PNM, TIFF, WebP, JPEG 2000)");
}

std::vector<Tensor> image_decoder(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.dtype() != DType::UInt8)
    unsupported(node, std::string("encoded_stream has type ") + dtype_name(x.dtype()) + "; expected uint8");
  if (x.rank() != 1) invalid(node, "encoded_stream must be 1-D");
  const std::string pixel_format = node.attr_string("pixel_format", "RGB");
  if (pixel_format != "RGB" && pixel_format != "BGR" && pixel_format != "Grayscale")
    invalid(node, "pixel_format '" + pixel_format + "' is not RGB, BGR or Grayscale");
  DecodedImage img;
  try {
    img = decode_any(static_cast<const uint8_t*>(x.raw()), static_cast<size_t>(x.size()));
  } catch (const Error& e) {
    throw Error(e.kind(), node.describe() + ": " + e.what());
  }
  const int64_t channels = pixel_format == "Grayscale" ? 1 : 3;
  Tensor y = alloc.allocate(DType::UInt8, {img.height, img.width, channels});
  auto* out = static_cast<uint8_t*>(y.raw());
  const auto pixels = static_cast<size_t>(img.height * img.width);
  const uint8_t* rgb = img.rgb.data();
  if (pixel_format == "RGB") {
    std::memcpy(out, rgb, pixels * 3);
  } else if (pixel_format == "BGR") {
    for (size_t p = 0; p < pixels; ++p)
      for (size_t c = 0; c < 3; ++c) out[3 * p + c] = rgb[3 * p + 2 - c];
  } else {
    // PIL's ITU-R 601-2 luma in 16-bit fixed point, rounded half up.
    for (size_t p = 0; p < pixels; ++p)
      out[p] = static_cast<uint8_t>(
          (rgb[3 * p] * 19595u + rgb[3 * p + 1] * 38470u + rgb[3 * p + 2] * 7471u + 0x8000u) >> 16);
  }
  return {y};
}

}  // namespace

void register_image_ops(OpTable& table) { table["ImageDecoder"] = image_decoder; }

}  // namespace collage::native
