// ImageDecoder's library-backed decoders: libjpeg(-turbo), libpng, libtiff,
// libwebp and OpenJPEG, all reading from memory.
// libjpeg and libpng report errors by longjmp: every setjmp sits in a small
// function that owns no C++ object with a destructor, and the library state
// is released by an RAII holder in the caller, so a jump never skips cleanup.
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>

// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on
#include <openjpeg.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>

#include "backends/native/image_decode.h"

namespace collage::native {

namespace {

// ---- JPEG ----

struct JpegErrorManager {
  jpeg_error_mgr pub{};
  std::jmp_buf jump{};
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void jpeg_on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings that mean the data is damaged (libjpeg would pad the image with
// grey and carry on) are errors, as in PIL; the rest are ignored.
void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  int code = cinfo->err->msg_code;
  if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_MUST_RESYNC) jpeg_on_error(cinfo);
}

// Progressive files can hold thousands of scans, each a full pass: a cheap hang.
void jpeg_on_progress(j_common_ptr cinfo) {
  if (cinfo->is_decompressor && reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number > 1000) {
    cinfo->err->msg_code = JERR_BAD_PROGRESSION;
    std::snprintf(reinterpret_cast<JpegErrorManager*>(cinfo->err)->message, JMSG_LENGTH_MAX,
                  "more than 1000 progressive scans");
    std::longjmp(reinterpret_cast<JpegErrorManager*>(cinfo->err)->jump, 1);
  }
}

struct JpegDecoder {
  jpeg_decompress_struct cinfo{};
  JpegErrorManager err;
  jpeg_progress_mgr progress{};
  ~JpegDecoder() { jpeg_destroy_decompress(&cinfo); }  // safe on a zeroed or partly created struct
};

bool jpeg_read_header_guarded(JpegDecoder& d, const uint8_t* data, size_t size) {
  if (setjmp(d.err.jump)) return false;
  jpeg_create_decompress(&d.cinfo);
  d.cinfo.mem->max_memory_to_use = 1L << 30;
  d.progress.progress_monitor = jpeg_on_progress;
  d.cinfo.progress = &d.progress;
  jpeg_mem_src(&d.cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&d.cinfo, TRUE);
  return true;
}

bool jpeg_read_pixels_guarded(JpegDecoder& d, uint8_t* out) {
  if (setjmp(d.err.jump)) return false;
  d.cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d.cinfo);
  const size_t stride = static_cast<size_t>(d.cinfo.output_width) * 3;
  while (d.cinfo.output_scanline < d.cinfo.output_height) {
    JSAMPROW row = out + static_cast<size_t>(d.cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&d.cinfo, &row, 1);
  }
  jpeg_finish_decompress(&d.cinfo);
  return true;
}

// ---- PNG ----

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char message[200];
};

void png_on_read(png_structp png, png_bytep out, size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "the stream is truncated");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

void png_on_error(png_structp png, png_const_charp msg) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof(src->message), "%s", msg);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

struct PngDecoder {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngDecoder() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

bool png_read_header_guarded(PngDecoder& d, png_uint_32& width, png_uint_32& height) {
  if (setjmp(png_jmpbuf(d.png))) return false;
  png_set_user_limits(d.png, 1u << 20, 1u << 20);
  png_read_info(d.png, d.info);
  width = png_get_image_width(d.png, d.info);
  height = png_get_image_height(d.png, d.info);
  return true;
}

bool png_read_pixels_guarded(PngDecoder& d, uint8_t* out, size_t stride) {
  if (setjmp(png_jmpbuf(d.png))) return false;
  const int color = png_get_color_type(d.png, d.info);
  // PIL keeps the high byte of 16-bit samples and drops alpha (no compositing);
  // palette transparency (tRNS) is ignored by convert("RGB").
  png_set_strip_16(d.png);
  png_set_packing(d.png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(d.png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(d.png);
    png_set_gray_to_rgb(d.png);
  }
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(d.png);
  const int passes = png_set_interlace_handling(d.png);
  png_read_update_info(d.png, d.info);
  if (png_get_rowbytes(d.png, d.info) != stride)
    png_error(d.png, "unexpected row size after conversion to RGB");
  const png_uint_32 height = png_get_image_height(d.png, d.info);
  for (int p = 0; p < passes; ++p)
    for (png_uint_32 y = 0; y < height; ++y)
      png_read_row(d.png, out + static_cast<size_t>(y) * stride, nullptr);
  png_read_end(d.png, nullptr);
  return true;
}

// ---- TIFF ----

struct TiffSource {
  const uint8_t* data;
  toff_t size;
  toff_t pos;
  std::string message;
};

tmsize_t tiff_read(thandle_t h, void* buf, tmsize_t n) {
  auto* s = static_cast<TiffSource*>(h);
  if (n < 0) return -1;
  toff_t avail = s->pos < s->size ? s->size - s->pos : 0;
  auto take = static_cast<toff_t>(n) < avail ? static_cast<toff_t>(n) : avail;
  if (take) std::memcpy(buf, s->data + s->pos, static_cast<size_t>(take));
  s->pos += take;
  return static_cast<tmsize_t>(take);
}
tmsize_t tiff_write(thandle_t, void*, tmsize_t) { return -1; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<TiffSource*>(h);
  toff_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : 0;
  s->pos = base + off;  // reads past the end return 0 bytes
  return s->pos;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TiffSource*>(h)->size; }
int tiff_map(thandle_t, void**, toff_t*) { return 0; }
void tiff_unmap(thandle_t, void*, toff_t) {}

int tiff_on_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* s = static_cast<TiffSource*>(user);
  char buf[300];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  if (s->message.empty()) s->message = std::string(module ? module : "libtiff") + ": " + buf;
  return 1;
}
int tiff_on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

// ---- JPEG 2000 ----

struct J2kSource {
  const uint8_t* data;
  OPJ_UINT64 size;
  OPJ_UINT64 pos;
  std::string message;
};

OPJ_SIZE_T j2k_read(void* buf, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (s->pos >= s->size) return static_cast<OPJ_SIZE_T>(-1);
  OPJ_UINT64 take = n < s->size - s->pos ? n : s->size - s->pos;
  std::memcpy(buf, s->data + s->pos, static_cast<size_t>(take));
  s->pos += take;
  return static_cast<OPJ_SIZE_T>(take);
}
OPJ_OFF_T j2k_skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (n < 0 || static_cast<OPJ_UINT64>(n) > s->size - s->pos) return -1;
  s->pos += static_cast<OPJ_UINT64>(n);
  return n;
}
OPJ_BOOL j2k_seek(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (n < 0 || static_cast<OPJ_UINT64>(n) > s->size) return OPJ_FALSE;
  s->pos = static_cast<OPJ_UINT64>(n);
  return OPJ_TRUE;
}
void j2k_on_error(const char* msg, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (s->message.empty()) {
    s->message = msg;
    while (!s->message.empty() && s->message.back() == '\n') s->message.pop_back();
  }
}
void j2k_quiet(const char*, void*) {}

// opj_codec_t and opj_stream_t are both void*: one deleter each.
struct OpjCodecDeleter {
  void operator()(opj_codec_t* c) const { opj_destroy_codec(c); }
};
struct OpjStreamDeleter {
  void operator()(opj_stream_t* s) const { opj_stream_destroy(s); }
};
struct OpjImageDeleter {
  void operator()(opj_image_t* i) const { opj_image_destroy(i); }
};

// One sample scaled to 8 bits the way PIL does (high bits kept; signed shifted to unsigned).
uint8_t j2k_sample(const opj_image_comp_t& c, size_t i) {
  int64_t v = c.data[i];
  if (c.sgnd) v += int64_t{1} << (c.prec - 1);
  if (c.prec > 8) v >>= (c.prec - 8);
  if (c.prec < 8) v <<= (8 - c.prec);
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

}  // namespace

DecodedImage decode_jpeg(const uint8_t* data, size_t size) {
  auto d = std::make_unique<JpegDecoder>();
  d->cinfo.err = jpeg_std_error(&d->err.pub);
  d->err.pub.error_exit = jpeg_on_error;
  d->err.pub.emit_message = jpeg_on_message;
  if (!jpeg_read_header_guarded(*d, data, size)) image_error("JPEG", d->err.message);
  if (d->cinfo.jpeg_color_space == JCS_CMYK || d->cinfo.jpeg_color_space == JCS_YCCK)
    throw Error(ErrorKind::Unsupported, "JPEG: CMYK/YCCK images are not supported");
  DecodedImage img;
  allocate_image(img, "JPEG", d->cinfo.image_width, d->cinfo.image_height);
  if (!jpeg_read_pixels_guarded(*d, img.rgb.data())) image_error("JPEG", d->err.message);
  return img;
}

DecodedImage decode_png(const uint8_t* data, size_t size) {
  PngSource src{data, size, 0, {}};
  PngDecoder d;
  d.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error, png_on_warning);
  if (d.png) d.info = png_create_info_struct(d.png);
  if (!d.png || !d.info) throw Error(ErrorKind::Internal, "PNG: cannot create the libpng reader");
  png_set_read_fn(d.png, &src, png_on_read);
  png_uint_32 width = 0, height = 0;
  if (!png_read_header_guarded(d, width, height)) image_error("PNG", src.message);
  DecodedImage img;
  allocate_image(img, "PNG", width, height);
  if (!png_read_pixels_guarded(d, img.rgb.data(), static_cast<size_t>(width) * 3))
    image_error("PNG", src.message);
  return img;
}

DecodedImage decode_tiff(const uint8_t* data, size_t size) {
  TiffSource src{data, size, 0, {}};
  std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> opts(TIFFOpenOptionsAlloc(),
                                                                    TIFFOpenOptionsFree);
  if (!opts) throw Error(ErrorKind::Internal, "TIFF: cannot create libtiff options");
  TIFFOpenOptionsSetErrorHandlerExtR(opts.get(), tiff_on_error, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(opts.get(), tiff_on_warning, &src);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts.get(), tmsize_t{1} << 30);
  // "m": no memory mapping (the client procs serve the bytes).
  std::unique_ptr<TIFF, void (*)(TIFF*)> tif(
      TIFFClientOpenExt("memory", "rm", &src, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                        tiff_map, tiff_unmap, opts.get()),
      TIFFClose);
  if (!tif) image_error("TIFF", src.message.empty() ? "cannot read the header" : src.message);
  uint32_t width = 0, height = 0;
  TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &height);
  check_image_dims("TIFF", width, height);
  char why[1024] = {};
  if (!TIFFRGBAImageOK(tif.get(), why)) throw Error(ErrorKind::Unsupported, std::string("TIFF: ") + why);
  std::vector<uint32_t> raster(static_cast<size_t>(width) * height);
  if (!TIFFReadRGBAImageOriented(tif.get(), width, height, raster.data(), ORIENTATION_TOPLEFT, 0) ||
      !src.message.empty())
    image_error("TIFF", src.message.empty() ? "cannot decode the pixels" : src.message);
  DecodedImage img;
  allocate_image(img, "TIFF", width, height);
  for (size_t i = 0; i < raster.size(); ++i) {
    img.rgb[3 * i] = static_cast<uint8_t>(TIFFGetR(raster[i]));
    img.rgb[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
    img.rgb[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
  }
  return img;
}

DecodedImage decode_webp(const uint8_t* data, size_t size) {
  int width = 0, height = 0;
  if (!WebPGetInfo(data, size, &width, &height)) image_error("WebP", "invalid or truncated header");
  DecodedImage img;
  allocate_image(img, "WebP", width, height);
  const int stride = width * 3;
  if (!WebPDecodeRGBInto(data, size, img.rgb.data(), img.rgb.size(), stride))
    image_error("WebP", "cannot decode the stream (corrupt, truncated or animated)");
  return img;
}

DecodedImage decode_jpeg2000(const uint8_t* data, size_t size, bool codestream) {
  J2kSource src{data, size, 0, {}};
  std::unique_ptr<opj_codec_t, OpjCodecDeleter> codec(
      opj_create_decompress(codestream ? OPJ_CODEC_J2K : OPJ_CODEC_JP2));
  std::unique_ptr<opj_stream_t, OpjStreamDeleter> stream(
      opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE));
  if (!codec || !stream) throw Error(ErrorKind::Internal, "JPEG 2000: cannot create the OpenJPEG decoder");
  opj_set_error_handler(codec.get(), j2k_on_error, &src);
  opj_set_warning_handler(codec.get(), j2k_quiet, nullptr);
  opj_set_info_handler(codec.get(), j2k_quiet, nullptr);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(codec.get(), &params)) image_error("JPEG 2000", "cannot set up the decoder");
  opj_stream_set_user_data(stream.get(), &src, nullptr);
  opj_stream_set_user_data_length(stream.get(), size);
  opj_stream_set_read_function(stream.get(), j2k_read);
  opj_stream_set_skip_function(stream.get(), j2k_skip);
  opj_stream_set_seek_function(stream.get(), j2k_seek);
  opj_image_t* raw = nullptr;
  if (!opj_read_header(stream.get(), codec.get(), &raw)) {
    opj_image_destroy(raw);
    image_error("JPEG 2000", src.message.empty() ? "cannot read the header" : src.message);
  }
  std::unique_ptr<opj_image_t, OpjImageDeleter> image(raw);
  const int64_t width = int64_t{image->x1} - image->x0, height = int64_t{image->y1} - image->y0;
  check_image_dims("JPEG 2000", width, height);
  const OPJ_UINT32 n = image->numcomps;
  if (n < 1 || n > 4) throw Error(ErrorKind::Unsupported, "JPEG 2000: " + std::to_string(n) + " components");
  if (!opj_decode(codec.get(), stream.get(), image.get()) || !opj_end_decompress(codec.get(), stream.get()))
    image_error("JPEG 2000", src.message.empty() ? "cannot decode the stream" : src.message);
  const OPJ_UINT32 colour = n >= 3 ? 3 : 1;  // gray(+alpha) or RGB(+alpha); alpha dropped
  for (OPJ_UINT32 c = 0; c < colour; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (!comp.data || comp.w != width || comp.h != height || comp.prec < 1 || comp.prec > 31)
      throw Error(ErrorKind::Unsupported, "JPEG 2000: subsampled or unusual components are not supported");
  }
  if (image->color_space == OPJ_CLRSPC_SYCC || image->color_space == OPJ_CLRSPC_CMYK ||
      image->color_space == OPJ_CLRSPC_EYCC)
    throw Error(ErrorKind::Unsupported, "JPEG 2000: YCC/CMYK colour spaces are not supported");
  DecodedImage img;
  allocate_image(img, "JPEG 2000", width, height);
  const auto pixels = static_cast<size_t>(width * height);
  for (size_t i = 0; i < pixels; ++i)
    for (size_t c = 0; c < 3; ++c) img.rgb[3 * i + c] = j2k_sample(image->comps[colour == 3 ? c : 0], i);
  return img;
}

}  // namespace collage::native
