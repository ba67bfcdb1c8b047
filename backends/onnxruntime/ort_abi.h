// Our own declarations of the ONNX Runtime C API entries the onnxruntime backend calls through dlopen.
// Nothing here comes from ORT's headers: the library is loaded at run time, its entry point
// (kOrtGetApiBaseSymbol) hands out an OrtApiBase, and OrtApiBase::get_api returns the OrtApi table,
// which we read as an array of function pointers by the indices below. The OrtApi table is
// append-only (members are never removed or reordered once an API version ships), so an index never
// changes. Facts (member order, signatures, enum values) were taken from ORT's public C API of
// ORT_API_VERSION 23 and cross-checked against the runtime's own per-version size checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace collage::ort {

// On Linux x86-64 the C API uses the default C calling convention (no stdcall-like annotation),
// so plain function pointer types describe every entry.

// Opaque handles: only ever used through pointers the runtime creates and releases.
struct OrtApi;
struct OrtEnv;
struct OrtStatus;  // A null OrtStatus* means success; a non-null one must be released.
struct OrtSession;
struct OrtSessionOptions;
struct OrtMemoryInfo;
struct OrtValue;
struct OrtRunOptions;
struct OrtThreadingOptions;
struct OrtTensorTypeAndShapeInfo;

// The enums are C enums on the other side: 32 bits wide, passed by value.
enum class OrtLoggingLevel : int32_t { kVerbose = 0, kInfo = 1, kWarning = 2, kError = 3, kFatal = 4 };

enum class OrtErrorCode : int32_t {
  kOk = 0,
  kFail = 1,
  kInvalidArgument = 2,
  kNoSuchFile = 3,
  kNoModel = 4,
  kEngineError = 5,
  kRuntimeException = 6,
  kInvalidProtobuf = 7,
  kModelLoaded = 8,
  kNotImplemented = 9,
  kInvalidGraph = 10,
  kEpFail = 11,
  kModelLoadCanceled = 12,
  kModelRequiresCompilation = 13,
};

// Not contiguous: the "everything" level is 99. Newer runtimes also define a level 3 that older
// ones do not know; we never pass it.
enum class GraphOptimizationLevel : int32_t { kDisableAll = 0, kBasic = 1, kExtended = 2, kAll = 99 };

enum class ExecutionMode : int32_t { kSequential = 0, kParallel = 1 };

enum class OrtAllocatorType : int32_t { kInvalid = -1, kDevice = 0, kArena = 1 };

enum class OrtMemType : int32_t {
  kCpuInput = -2,
  kCpuOutput = -1,  // Also the value of the runtime's "CPU" memory type.
  kDefault = 0,
};

enum class ONNXTensorElementDataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
  kFloat8E4M3Fn = 17,
  kFloat8E4M3Fnuz = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2Fnuz = 20,
  kUint4 = 21,
  kInt4 = 22,
};

// The C function the library exports to reach the C API. OrtApiBase is not versioned: exactly two pointers.
inline constexpr char kOrtGetApiBaseSymbol[] = "OrtGetApiBase";

struct OrtApiBase {
  const OrtApi* (*get_api)(uint32_t version);  // nullptr if the runtime is older than `version`.
  const char* (*get_version_string)();
};
static_assert(sizeof(OrtApiBase) == 2 * sizeof(void*));

using OrtGetApiBaseFn = const OrtApiBase* (*)();

// The OrtApi version we request from get_api: the highest "first appeared in" among the entries below
// (AddInitializer, version 6). Any runtime of API version 6 or later serves it.
inline constexpr uint32_t kMinApiVersion = 6;

// Entries: the zero-based index in the OrtApi table, and the function type. "vN" is the API version
// the entry first appeared in. Functions returning OrtStatus* return nullptr on success.

// Status (v1).
constexpr size_t kCreateStatus = 0;
using CreateStatusFn = OrtStatus* (*)(OrtErrorCode code, const char* message);
constexpr size_t kGetErrorCode = 1;
using GetErrorCodeFn = OrtErrorCode (*)(const OrtStatus* status);
constexpr size_t kGetErrorMessage = 2;  // The text is owned by the status.
using GetErrorMessageFn = const char* (*)(const OrtStatus* status);

// Environment and session (v1).
constexpr size_t kCreateEnv = 3;
using CreateEnvFn = OrtStatus* (*)(OrtLoggingLevel level, const char* log_id, OrtEnv** out);
constexpr size_t kDisableTelemetryEvents = 6;
using DisableTelemetryEventsFn = OrtStatus* (*)(const OrtEnv* env);
constexpr size_t kCreateSessionFromArray = 8;
using CreateSessionFromArrayFn = OrtStatus* (*)(const OrtEnv* env, const void* model_bytes, size_t model_size,
                                                const OrtSessionOptions* options, OrtSession** out);
constexpr size_t kRun = 9;  // run_options may be null; null output slots are allocated by the runtime.
using RunFn = OrtStatus* (*)(OrtSession* session, const OrtRunOptions* run_options,
                             const char* const* input_names, const OrtValue* const* inputs,
                             size_t input_count, const char* const* output_names, size_t output_count,
                             OrtValue** outputs);

// Session options (v1).
constexpr size_t kCreateSessionOptions = 10;
using CreateSessionOptionsFn = OrtStatus* (*)(OrtSessionOptions** out);
constexpr size_t kSetSessionExecutionMode = 13;
using SetSessionExecutionModeFn = OrtStatus* (*)(OrtSessionOptions* options, ExecutionMode mode);
constexpr size_t kDisableCpuMemArena = 19;
using DisableCpuMemArenaFn = OrtStatus* (*)(OrtSessionOptions* options);
constexpr size_t kSetSessionLogSeverityLevel = 22;  // Takes an OrtLoggingLevel value as a plain int.
using SetSessionLogSeverityLevelFn = OrtStatus* (*)(OrtSessionOptions* options, int level);
constexpr size_t kSetSessionGraphOptimizationLevel = 23;
using SetSessionGraphOptimizationLevelFn = OrtStatus* (*)(OrtSessionOptions* options,
                                                          GraphOptimizationLevel level);
constexpr size_t kSetIntraOpNumThreads = 24;  // 0 lets the runtime choose.
using SetIntraOpNumThreadsFn = OrtStatus* (*)(OrtSessionOptions* options, int threads);
constexpr size_t kSetInterOpNumThreads = 25;
using SetInterOpNumThreadsFn = OrtStatus* (*)(OrtSessionOptions* options, int threads);

// Tensors and memory descriptions (v1).
// Borrows `data`: releasing the value does not free it.
constexpr size_t kCreateTensorWithDataAsOrtValue = 49;
using CreateTensorWithDataAsOrtValueFn = OrtStatus* (*)(const OrtMemoryInfo* info, void* data,
                                                        size_t data_bytes, const int64_t* shape, size_t rank,
                                                        ONNXTensorElementDataType type, OrtValue** out);
constexpr size_t kGetTensorMutableData = 51;
using GetTensorMutableDataFn = OrtStatus* (*)(OrtValue* value, void** out);
constexpr size_t kGetTensorTypeAndShape = 65;  // The result must be released.
using GetTensorTypeAndShapeFn = OrtStatus* (*)(const OrtValue* value, OrtTensorTypeAndShapeInfo** out);
constexpr size_t kCreateCpuMemoryInfo = 69;
using CreateCpuMemoryInfoFn = OrtStatus* (*)(OrtAllocatorType allocator_type, OrtMemType mem_type,
                                             OrtMemoryInfo** out);

// Releases (v1). Each accepts nullptr.
constexpr size_t kReleaseEnv = 92;
using ReleaseEnvFn = void (*)(OrtEnv* env);
constexpr size_t kReleaseStatus = 93;
using ReleaseStatusFn = void (*)(OrtStatus* status);
constexpr size_t kReleaseMemoryInfo = 94;
using ReleaseMemoryInfoFn = void (*)(OrtMemoryInfo* info);
constexpr size_t kReleaseSession = 95;
using ReleaseSessionFn = void (*)(OrtSession* session);
constexpr size_t kReleaseValue = 96;
using ReleaseValueFn = void (*)(OrtValue* value);
constexpr size_t kReleaseTensorTypeAndShapeInfo = 99;
using ReleaseTensorTypeAndShapeInfoFn = void (*)(OrtTensorTypeAndShapeInfo* info);
constexpr size_t kReleaseSessionOptions = 100;
using ReleaseSessionOptionsFn = void (*)(OrtSessionOptions* options);

// Global thread pools (v3).
constexpr size_t kCreateEnvWithGlobalThreadPools = 119;
using CreateEnvWithGlobalThreadPoolsFn = OrtStatus* (*)(OrtLoggingLevel level, const char* log_id,
                                                        const OrtThreadingOptions* threading, OrtEnv** out);
constexpr size_t kDisablePerSessionThreads = 120;
using DisablePerSessionThreadsFn = OrtStatus* (*)(OrtSessionOptions* options);
constexpr size_t kCreateThreadingOptions = 121;
using CreateThreadingOptionsFn = OrtStatus* (*)(OrtThreadingOptions** out);
constexpr size_t kReleaseThreadingOptions = 122;
using ReleaseThreadingOptionsFn = void (*)(OrtThreadingOptions* threading);

// Session config entries (v5).
constexpr size_t kAddSessionConfigEntry = 130;
using AddSessionConfigEntryFn = OrtStatus* (*)(OrtSessionOptions* options, const char* key,
                                               const char* value);

// Global thread pool settings (v5).
constexpr size_t kSetGlobalIntraOpNumThreads = 147;
using SetGlobalIntraOpNumThreadsFn = OrtStatus* (*)(OrtThreadingOptions* threading, int threads);
constexpr size_t kSetGlobalInterOpNumThreads = 148;
using SetGlobalInterOpNumThreadsFn = OrtStatus* (*)(OrtThreadingOptions* threading, int threads);
constexpr size_t kSetGlobalSpinControl = 149;  // 0 = block when idle, 1 = spin first.
using SetGlobalSpinControlFn = OrtStatus* (*)(OrtThreadingOptions* threading, int allow_spinning);

// Shared initializers (v6). The value (and its buffer) must outlive every session using it.
constexpr size_t kAddInitializer = 150;
using AddInitializerFn = OrtStatus* (*)(OrtSessionOptions* options, const char* name, const OrtValue* value);

// An allocator of ours, shared by every session through the environment (v11). ORT reads `version`
// to know which members exist: below 18 it calls these three only. `info` must describe device
// (not arena) CPU memory.
struct OrtAllocator {
  uint32_t version;
  void* (*alloc)(OrtAllocator* self, size_t size);
  void (*free)(OrtAllocator* self, void* p);
  const OrtMemoryInfo* (*info)(const OrtAllocator* self);
};
inline constexpr uint32_t kRegisterAllocatorApiVersion = 11;
constexpr size_t kRegisterAllocator = 176;
using RegisterAllocatorFn = OrtStatus* (*)(OrtEnv* env, OrtAllocator* allocator);

// Session config keys for AddSessionConfigEntry; values are the strings "0" or "1".
inline constexpr char kConfigIntraOpAllowSpinning[] = "session.intra_op.allow_spinning";
// Spin only while a Run is under way: the pool stops spinning when Run returns (ORT >= 1.12).
inline constexpr char kConfigForceSpinningStop[] = "session.force_spinning_stop";
inline constexpr char kConfigInterOpAllowSpinning[] = "session.inter_op.allow_spinning";
inline constexpr char kConfigUseEnvAllocators[] = "session.use_env_allocators";

// Reads entry `index` of the OrtApi table as a function pointer of type Fn. memcpy keeps the read
// well defined: the table is a struct of function pointers, each the size of a data pointer.
template <typename Fn>
Fn api_entry(const OrtApi* api, size_t index) {
  static_assert(sizeof(Fn) == sizeof(void*), "OrtApi entries are pointer-sized");
  Fn fn;
  std::memcpy(&fn, reinterpret_cast<const unsigned char*>(api) + index * sizeof(void*), sizeof(fn));
  return fn;
}

}  // namespace collage::ort
