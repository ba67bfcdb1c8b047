/* Stand-ins for ONNX Runtime libraries that go wrong, one per build of this file:
 * - by default, a library older than the C API version Collage requests: it exports the entry
 *   point, says it is 1.5.0 and serves no API table for any version (as a runtime of API
 *   version 5 answers a request for version 6);
 * - with FAKE_ORT_CRASHES_IN_RUN, a library that loads, creates sessions and then dies of
 *   SIGSEGV inside OrtApi::Run, as a runtime with a kernel bug would: every entry of its table
 *   succeeds (returns a null status and leaves out-parameters null) except Run. */
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const void* (*get_api)(uint32_t version);
  const char* (*get_version_string)(void);
} FakeApiBase;

#ifdef FAKE_ORT_CRASHES_IN_RUN

#include <signal.h>

enum { kEntries = 512, kRun = 9 };
typedef void* (*Entry)(void);

static void* succeed(void) { return NULL; }
static void* crash(void) {
  raise(SIGSEGV);
  return NULL;
}
static Entry table[kEntries];

static const void* api(uint32_t version) {
  if (version > 24) return NULL;
  for (int i = 0; i < kEntries; ++i) table[i] = i == kRun ? crash : succeed;
  return table;
}
static const char* version(void) { return "1.30.0"; }

#else

static const void* api(uint32_t version) {
  (void)version;
  return NULL;
}
static const char* version(void) { return "1.5.0"; }

#endif

static const FakeApiBase base = {api, version};

const FakeApiBase* OrtGetApiBase(void) { return &base; }
