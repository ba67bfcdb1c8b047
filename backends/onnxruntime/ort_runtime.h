// ONNX Runtime, loaded at run time (dlopen) through its C API (ort_abi.h): the project builds,
// tests and runs without it, and the onnxruntime backend then says why it is unavailable.
// Found through $COLLAGE_ORT_LIBRARY (a path to libonnxruntime.so.1) first, then the install
// folder scripts/install_deps.sh fills (the npm package onnxruntime-node, whose CPU library is
// ORT's MLAS build). Loaded once per process, on first use; never unloaded (its thread pools
// and sessions live to the end of the process).
#pragma once

#include <string>

#include "backends/onnxruntime/ort_abi.h"

namespace collage::ort {

struct Runtime {
  const OrtApi* api = nullptr;   // served at kMinApiVersion
  OrtEnv* env = nullptr;         // one environment for every session (logging: errors only)
  OrtMemoryInfo* cpu = nullptr;  // plain CPU memory: the executor's own buffers
  bool env_allocator = false;    // ort_allocator.h's allocator is registered: sessions use it
  std::string path;              // the library loaded
  std::string version;           // "1.30.0"

  template <typename Fn>
  Fn fn(size_t index) const {
    return api_entry<Fn>(api, index);
  }
  // Throws Error(Unsupported, "onnxruntime: <what>: <ORT's message>") for a failed status (released).
  void check(OrtStatus* status, const std::string& what) const;
};

// The loaded runtime, or null when it cannot be loaded (unavailable_reason() says why).
const Runtime* runtime();
std::string unavailable_reason();

// The library's path the loader tries after $COLLAGE_ORT_LIBRARY (the install folder's).
std::string default_library_path();

}  // namespace collage::ort
