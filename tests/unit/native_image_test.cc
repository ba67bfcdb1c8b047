// ImageDecoder (backends/native/image_ops.cc, image_codecs.cc): the ONNX node suite's
// images decode exactly (checked by onnx_node_conformance); here, every damaged or
// hostile stream is a clean InvalidInput naming the format -- never a crash, a read
// out of bounds (ASan preset) or an allocation for absurd dimensions.
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/native/native_ops.h"
#include "core/tensor_io/tensor_proto.h"

#ifndef COLLAGE_CONFORMANCE_DIR
#error "COLLAGE_CONFORMANCE_DIR must name tests/data/onnx"
#endif

namespace collage {
namespace {

namespace fs = std::filesystem;

Node decoder(const std::string& format = "RGB") {
  Node n;
  n.name = "decode";
  n.op_type = "ImageDecoder";
  n.opset = 20;
  n.attrs["pixel_format"] = Attribute::of_string(format);
  return n;
}

Tensor bytes(const std::vector<uint8_t>& v) {
  return Tensor::from_vector<uint8_t>({static_cast<int64_t>(v.size())}, v);
}

std::vector<Tensor> decode(const Tensor& stream, const std::string& format = "RGB") {
  HeapAllocator alloc;
  std::vector<const Tensor*> in = {&stream};
  return native::evaluate_node(decoder(format), in, alloc);
}

void expect_invalid(const Tensor& stream, const std::string& what) {
  try {
    decode(stream);
    FAIL() << what << ": expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.kind() == ErrorKind::InvalidInput || e.kind() == ErrorKind::Unsupported)
        << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find("decode"), std::string::npos) << "names the node: " << e.what();
  }
}

TEST(NativeImage, EveryTruncatedOrFlippedStreamIsACleanError) {
  fs::path node = fs::path(COLLAGE_CONFORMANCE_DIR) / "node";
  if (!fs::exists(node)) GTEST_SKIP() << "no ONNX conformance cases at " << node;
  int formats = 0;
  for (const char* name : {"bmp", "jpeg2k", "jpeg", "png", "pnm", "tiff", "webp"}) {
    fs::path input =
        node / ("test_image_decoder_decode_" + std::string(name) + "_rgb") / "test_data_set_0" / "input_0.pb";
    if (!fs::exists(input)) continue;
    ++formats;
    Tensor whole = read_tensor_file(input.string());
    std::vector<double> all = whole.to_double_vector();
    std::vector<uint8_t> data(all.begin(), all.end());
    auto out = decode(whole);  // the intact stream decodes (exact values: the node suite)
    ASSERT_EQ(out.at(0).rank(), 3) << name;
    for (size_t keep : {size_t{0}, size_t{1}, size_t{8}, data.size() / 4, data.size() / 2, data.size() - 1}) {
      std::vector<uint8_t> cut(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(keep));
      if (cut.empty()) {
        HeapAllocator alloc;
        Tensor empty(DType::UInt8, {0});
        std::vector<const Tensor*> in = {&empty};
        EXPECT_THROW(native::evaluate_node(decoder(), in, alloc), Error) << name;
        continue;
      }
      // A truncated tail may still decode (some formats pad); it must never crash.
      try {
        decode(bytes(cut));
      } catch (const Error& e) {
        EXPECT_NE(e.kind(), ErrorKind::Internal) << name << " cut at " << keep << ": " << e.what();
      }
    }
    for (size_t at : {size_t{0}, size_t{2}, size_t{6}, size_t{12}, size_t{20}, data.size() / 3}) {
      std::vector<uint8_t> flipped = data;
      flipped[at % flipped.size()] ^= 0xff;
      try {
        decode(bytes(flipped));
      } catch (const Error& e) {
        EXPECT_NE(e.kind(), ErrorKind::Internal) << name << " flipped at " << at << ": " << e.what();
      }
    }
  }
  EXPECT_EQ(formats, 7);
}

TEST(NativeImage, AbsurdDimensionsAreRefusedBeforeAllocating) {
  // A 54-byte BMP header claiming 1,000,000 x 1,000,000 pixels, 24 bits, no pixel data.
  std::vector<uint8_t> bmp(54, 0);
  auto le32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bmp[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
  };
  bmp[0] = 'B';
  bmp[1] = 'M';
  le32(2, 54);
  le32(10, 54);
  le32(14, 40);
  le32(18, 1000000);
  le32(22, 1000000);
  bmp[26] = 1;
  bmp[28] = 24;
  expect_invalid(bytes(bmp), "huge BMP");
  // A P6 PNM of 100000 x 100000 with no pixels.
  std::string pnm = "P6\n100000 100000\n255\n";
  expect_invalid(bytes(std::vector<uint8_t>(pnm.begin(), pnm.end())), "huge PNM");
  // Not an image at all.
  std::string text = "this is not an image";
  expect_invalid(bytes(std::vector<uint8_t>(text.begin(), text.end())), "text");
}

}  // namespace
}  // namespace collage
