#include "backends/onnxruntime/ort_runtime.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "backends/onnxruntime/ort_allocator.h"
#include "core/ir/error.h"

#ifndef COLLAGE_ORT_DEFAULT_LIBRARY
#define COLLAGE_ORT_DEFAULT_LIBRARY ""
#endif

namespace collage::ort {

namespace {

struct Loaded {
  Runtime runtime;
  std::string reason;  // "" when loaded
};

const char* status_message(const Runtime& r, OrtStatus* status) {
  return r.fn<GetErrorMessageFn>(kGetErrorMessage)(status);
}

Loaded load() {
  Loaded out;
  const char* env = std::getenv("COLLAGE_ORT_LIBRARY");
  const std::string path = env && *env ? env : default_library_path();
  const std::string install = "install it with scripts/install_deps.sh or set COLLAGE_ORT_LIBRARY";
  if (path.empty()) {
    out.reason = "ONNX Runtime library not configured (" + install + ")";
    return out;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    out.reason = "ONNX Runtime library not loaded from " + path + " (" + (why ? why : "dlopen failed") +
                 "; " + install + ")";
    return out;
  }
  auto get_base = reinterpret_cast<OrtGetApiBaseFn>(dlsym(handle, kOrtGetApiBaseSymbol));
  const OrtApiBase* base = get_base ? get_base() : nullptr;
  if (!base) {
    out.reason = path + " is not an ONNX Runtime library (no " + std::string(kOrtGetApiBaseSymbol) + ")";
    return out;
  }
  Runtime& r = out.runtime;
  r.path = path;
  r.version = base->get_version_string ? base->get_version_string() : "?";
  r.api = base->get_api(kMinApiVersion);
  if (!r.api) {
    out.reason = "ONNX Runtime " + r.version + " at " + path + " is too old: Collage needs C API version " +
                 std::to_string(kMinApiVersion) + " (ONNX Runtime 1." + std::to_string(kMinApiVersion) +
                 " or later)";
    return out;
  }
  // ORT's telemetry stays off: the CPU build would otherwise start it with the environment and
  // leave a session-id file and a log in $TMPDIR for every process.
  setenv("ORT_DISABLE_TELEMETRY", "1", 0);
  if (OrtStatus* s = r.fn<CreateEnvFn>(kCreateEnv)(OrtLoggingLevel::kError, "collage", &r.env)) {
    out.reason = std::string("ONNX Runtime could not create its environment: ") + status_message(r, s);
    r.fn<ReleaseStatusFn>(kReleaseStatus)(s);
    r.api = nullptr;
    return out;
  }
  // No telemetry events either.
  if (OrtStatus* s = r.fn<DisableTelemetryEventsFn>(kDisableTelemetryEvents)(r.env))
    r.fn<ReleaseStatusFn>(kReleaseStatus)(s);
  if (OrtStatus* s = r.fn<CreateCpuMemoryInfoFn>(kCreateCpuMemoryInfo)(OrtAllocatorType::kDevice,
                                                                       OrtMemType::kDefault, &r.cpu)) {
    out.reason = std::string("ONNX Runtime has no CPU memory info: ") + status_message(r, s);
    r.fn<ReleaseStatusFn>(kReleaseStatus)(s);
    r.api = nullptr;
    return out;
  }
  // One allocator for every session (ort_allocator.h), where the runtime takes one (API 11, ORT
  // 1.11); COLLAGE_ORT_SHARED_ALLOCATOR=0 leaves each session its own arena.
  const char* shared = std::getenv("COLLAGE_ORT_SHARED_ALLOCATOR");
  if (const OrtApi* v11 = base->get_api(kRegisterAllocatorApiVersion);
      v11 && !(shared && std::string(shared) == "0")) {
    if (OrtStatus* s =
            api_entry<RegisterAllocatorFn>(v11, kRegisterAllocator)(r.env, shared_allocator(r.cpu)))
      r.fn<ReleaseStatusFn>(kReleaseStatus)(s);  // sessions keep their own arenas
    else
      r.env_allocator = true;
  }
  return out;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

void Runtime::check(OrtStatus* status, const std::string& what) const {
  if (!status) return;
  std::string message = status_message(*this, status);
  fn<ReleaseStatusFn>(kReleaseStatus)(status);
  throw Error(ErrorKind::Unsupported, "onnxruntime: " + what + ": " + message);
}

const Runtime* runtime() { return loaded().reason.empty() ? &loaded().runtime : nullptr; }

std::string unavailable_reason() { return loaded().reason; }

std::string default_library_path() { return COLLAGE_ORT_DEFAULT_LIBRARY; }

}  // namespace collage::ort
