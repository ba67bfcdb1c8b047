/* Runs a Collage artifact with the C API: run_artifact MODEL.collage */
#include <stdio.h>
#include <stdlib.h>

#include "collage_runtime.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.collage\n", argv[0]);
    return 2;
  }
  collage_model* model = collage_load(argv[1]);
  if (!model) {
    fprintf(stderr, "load failed: %s\n", collage_last_error());
    return 1;
  }
  for (int i = 0; i < collage_num_inputs(model); ++i) {
    collage_tensor_info in;
    collage_input_info(model, i, &in);
    float* data = malloc(in.bytes); /* a fixed pattern; assumes float inputs */
    for (size_t k = 0; k < in.bytes / sizeof(float); ++k) data[k] = (float)(k % 7) * 0.25f;
    int rc = collage_set_input(model, in.name, data, in.rank, in.shape);
    free(data);
    if (rc) {
      fprintf(stderr, "%s\n", collage_last_error());
      collage_free(model);
      return 1;
    }
  }
  if (collage_run(model)) {
    fprintf(stderr, "run failed: %s\n", collage_last_error());
    collage_free(model);
    return 1;
  }
  collage_tensor_info out;
  collage_output_info(model, 0, &out);
  const float* y = collage_output_data(model, 0);
  printf("%s:", out.name);
  for (size_t k = 0; k < out.bytes / sizeof(float) && k < 5; ++k) printf(" %.5f", y[k]);
  printf("\n");
  collage_free(model);
  return 0;
}
