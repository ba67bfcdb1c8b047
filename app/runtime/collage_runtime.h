/* collage_runtime, C API: load a compiled Collage artifact and run it.
 *
 *   collage_model* m = collage_load("model.collage");
 *   if (!m) { fprintf(stderr, "%s\n", collage_last_error()); ... }
 *   collage_set_input(m, "input", data, rank, shape);   // copied; once per input
 *   collage_run(m);
 *   collage_output_info(m, 0, &info); collage_output_data(m, 0);
 *   collage_free(m);
 *
 * Functions returning int give 0 on success and non-zero on failure; then
 * collage_last_error() (per thread) says why. A collage_model is one context
 * (kernels, arena, inputs, outputs): separate models may run concurrently from
 * several threads; one model is used by one thread at a time. Tensors are dense, row-major; dtype codes are
 * ONNX's TensorProto.DataType (1 = float32, 7 = int64, ...). */
#ifndef COLLAGE_RUNTIME_H
#define COLLAGE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct collage_model collage_model;

typedef struct {
  const char* name;
  int dtype; /* ONNX TensorProto.DataType */
  int rank;
  const int64_t* shape; /* rank entries */
  size_t bytes;         /* dense size */
} collage_tensor_info;

collage_model* collage_load(const char* path); /* NULL on failure */
void collage_free(collage_model* model);       /* NULL is ignored */
const char* collage_last_error(void);          /* "" when the last call succeeded */

int collage_num_inputs(const collage_model* model);
int collage_num_outputs(const collage_model* model);
int collage_input_info(const collage_model* model, int index, collage_tensor_info* info);
int collage_output_info(const collage_model* model, int index, collage_tensor_info* info);

/* Shape buckets: an artifact exported from a placement tuned for several shapes
 * (collage tune --dim seq=16,32,...) holds one plan per bucket. collage_input_info gives
 * the first bucket's shapes; collage_bucket_input_info any bucket's. collage_run picks
 * the bucket whose shapes the inputs set have, and fails naming the buckets when none
 * has; collage_output_info then gives that bucket's output shapes. */
int collage_num_buckets(const collage_model* model); /* 1 for a one-shape artifact; -1 for NULL */
int collage_bucket_input_info(const collage_model* model, int bucket, int index, collage_tensor_info* info);

/* Copies `data` (dtype and a shape of some bucket must match the input's) into the model. */
int collage_set_input(collage_model* model, const char* name, const void* data, int rank,
                      const int64_t* shape);
/* Runs on the inputs set; fails if one is missing. */
int collage_run(collage_model* model);
/* The index-th output of the last successful run; valid until the next run or free. */
const void* collage_output_data(const collage_model* model, int index);

#ifdef __cplusplus
}
#endif

#endif /* COLLAGE_RUNTIME_H */
