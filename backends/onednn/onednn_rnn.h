// ONNX LSTM as oneDNN's vanilla LSTM primitive (forward inference): forward, reverse
// and bidirectional, layout 0, constant W/R/B, optional initial states (constant or
// runtime). The kernel returns the node's outputs in the sub-graph's output order.
// Claimed only where oneDNN computes exactly what ONNX specifies: the default
// activations (Sigmoid, Tanh, Tanh), no clip, no peepholes, no input_forget and no
// sequence_lens (oneDNN runs every batch entry for the whole sequence).
#pragma once

#include <memory>

#include "core/backend_api/backend.h"

namespace collage::onednn {

bool lstm_supported(const Graph& graph, const Node& node);
// Throws Error(Unsupported) outside lstm_supported().
std::unique_ptr<Kernel> compile_lstm(const Graph& graph, const SubGraph& sub, const Node& node);

}  // namespace collage::onednn
