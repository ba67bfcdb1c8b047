// Zoo samples of the architectures users bring beyond CNNs and BERT: a ViT-style
// encoder, a GPT-style decoder block with a causal mask, an LSTM text classifier,
// a segmentation head ending in ArgMax, and the opset-18 / float16 copies of
// other samples. Built as torch.onnx.export writes them (PyTorch scopes and node
// names); zoo.cc registers them.
#pragma once

#include <cstdint>

#include "resources/samples/onnx_builder.h"

namespace collage::samples {

OnnxBuilder vit_small(uint64_t seed);           // patch Conv, class token Concat, position Add, pre-LN blocks
OnnxBuilder gpt_block(uint64_t seed);           // causal mask via Trilu + Where, tanh-GELU, pre-LN
OnnxBuilder gpt_block_inf_mask(uint64_t seed);  // the same with masked_fill(float('-inf')): Where(m, -inf, s)
OnnxBuilder gpt2_small(
    uint64_t seed);  // gpt_block_inf_mask at GPT-2-small size: 12 layers, d 768, seq 128, ~660 MB
// A 12-layer Llama-style decoder written out head by head (RMSNorm, rotary, SwiGLU): ~8,000 nodes, small
// weights.
OnnxBuilder llama_decoder_8k(uint64_t seed);
OnnxBuilder lstm_classifier(uint64_t seed);    // Gather embedding -> LSTM -> last hidden -> Gemm
OnnxBuilder segmentation_head(uint64_t seed);  // conv encoder, 1x1 classifier, Resize up, ArgMax over classes

}  // namespace collage::samples
