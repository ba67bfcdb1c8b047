/* A stand-in for an ONNX Runtime library older than the C API version Collage requests: it
 * exports the entry point, says it is 1.5.0 and serves no API table for any version (as a
 * runtime of API version 5 answers a request for version 6). */
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const void* (*get_api)(uint32_t version);
  const char* (*get_version_string)(void);
} FakeApiBase;

static const void* no_api(uint32_t version) {
  (void)version;
  return NULL;
}
static const char* version(void) { return "1.5.0"; }
static const FakeApiBase base = {no_api, version};

const FakeApiBase* OrtGetApiBase(void) { return &base; }
