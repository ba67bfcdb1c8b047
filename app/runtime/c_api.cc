// The C API over collage::Runtime: exceptions stop here and become a non-zero
// return plus a per-thread message.
#include <cstring>
#include <string>
#include <vector>

#include "app/runtime/collage_runtime.h"
#include "app/runtime/runtime.h"

struct collage_model {
  std::unique_ptr<collage::Runtime> runtime;
  std::vector<collage::Tensor> inputs;  // set by collage_set_input, in info().inputs order
  std::vector<collage::Tensor> outputs;
};

namespace {

thread_local std::string last_error;

template <class F>
int guarded(F&& body) {
  try {
    body();
    last_error.clear();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return 1;
}

int fill_info(const collage::ArtifactTensorInfo& t, collage_tensor_info* info) {
  if (!info) {
    last_error = "info is NULL";
    return 1;
  }
  info->name = t.name.c_str();
  info->dtype = static_cast<int>(t.dtype);
  info->rank = static_cast<int>(t.shape.size());
  info->shape = t.shape.data();
  info->bytes = static_cast<size_t>(collage::shape_size(t.shape)) * collage::dtype_size(t.dtype);
  last_error.clear();
  return 0;
}

bool check_model(const collage_model* model) {
  if (model) return true;
  last_error = "model is NULL";
  return false;
}

}  // namespace

extern "C" {

collage_model* collage_load(const char* path) {
  std::unique_ptr<collage_model> model;
  int rc = guarded([&] {
    if (!path) throw collage::Error(collage::ErrorKind::InvalidInput, "path is NULL");
    model = std::make_unique<collage_model>();
    model->runtime = collage::Runtime::load(path);
    model->inputs.resize(model->runtime->info().inputs.size());
  });
  return rc == 0 ? model.release() : nullptr;
}

void collage_free(collage_model* model) { std::unique_ptr<collage_model> owned(model); }

const char* collage_last_error(void) { return last_error.c_str(); }

int collage_num_inputs(const collage_model* model) {
  return check_model(model) ? static_cast<int>(model->runtime->info().inputs.size()) : -1;
}

int collage_num_outputs(const collage_model* model) {
  return check_model(model) ? static_cast<int>(model->runtime->info().outputs.size()) : -1;
}

int collage_input_info(const collage_model* model, int index, collage_tensor_info* info) {
  if (!check_model(model)) return 1;
  const auto& list = model->runtime->info().inputs;
  if (index < 0 || static_cast<size_t>(index) >= list.size()) {
    last_error = "input index " + std::to_string(index) + " is out of range";
    return 1;
  }
  return fill_info(list[static_cast<size_t>(index)], info);
}

int collage_num_buckets(const collage_model* model) {
  return check_model(model) ? static_cast<int>(model->runtime->bucket_count()) : -1;
}

int collage_bucket_input_info(const collage_model* model, int bucket, int index, collage_tensor_info* info) {
  if (!check_model(model)) return 1;
  if (bucket < 0 || static_cast<size_t>(bucket) >= model->runtime->bucket_count()) {
    last_error = "bucket " + std::to_string(bucket) + " is out of range";
    return 1;
  }
  const auto& list = model->runtime->info(static_cast<size_t>(bucket)).inputs;
  if (index < 0 || static_cast<size_t>(index) >= list.size()) {
    last_error = "input index " + std::to_string(index) + " is out of range";
    return 1;
  }
  return fill_info(list[static_cast<size_t>(index)], info);
}

int collage_output_info(const collage_model* model, int index, collage_tensor_info* info) {
  if (!check_model(model)) return 1;
  // The shapes of the plan that ran last: with shape buckets, outputs follow the inputs.
  const auto& list = model->runtime->info(model->runtime->last_bucket()).outputs;
  if (index < 0 || static_cast<size_t>(index) >= list.size()) {
    last_error = "output index " + std::to_string(index) + " is out of range";
    return 1;
  }
  return fill_info(list[static_cast<size_t>(index)], info);
}

int collage_set_input(collage_model* model, const char* name, const void* data, int rank,
                      const int64_t* shape) {
  if (!check_model(model)) return 1;
  return guarded([&] {
    using collage::Error;
    using collage::ErrorKind;
    if (!name || !data || rank < 0 || (rank > 0 && !shape))
      throw Error(ErrorKind::InvalidInput, "collage_set_input: name, data and shape must not be NULL");
    const auto& list = model->runtime->info().inputs;
    size_t i = 0;
    while (i < list.size() && list[i].name != name) ++i;
    if (i == list.size())
      throw Error(ErrorKind::InvalidInput, std::string("the model has no input named '") + name + "'");
    collage::Shape given(shape, shape + rank);
    // Any bucket's shape for this input; collage_run picks the bucket all inputs agree on.
    std::string allowed;
    bool known = false;
    for (size_t b = 0; b < model->runtime->bucket_count(); ++b) {
      const collage::Shape& s = model->runtime->info(b).inputs.at(i).shape;
      known = known || s == given;
      allowed += (allowed.empty() ? "" : " or ") + collage::shape_to_string(s);
    }
    if (!known)
      throw Error(ErrorKind::InvalidInput, "input '" + list[i].name + "' must have shape " + allowed +
                                               ", got " + collage::shape_to_string(given));
    collage::Tensor t(list[i].dtype, given);
    std::memcpy(t.raw(), data, t.bytes());
    model->inputs[i] = std::move(t);
  });
}

int collage_run(collage_model* model) {
  if (!check_model(model)) return 1;
  return guarded([&] {
    const auto& list = model->runtime->info().inputs;
    for (size_t i = 0; i < list.size(); ++i)
      if (!model->inputs[i].defined())
        throw collage::Error(collage::ErrorKind::InvalidInput, "input '" + list[i].name + "' was not set");
    model->outputs = model->runtime->run(model->inputs);
  });
}

const void* collage_output_data(const collage_model* model, int index) {
  if (!check_model(model)) return nullptr;
  if (index < 0 || static_cast<size_t>(index) >= model->outputs.size()) {
    last_error = "no output " + std::to_string(index) + " (has the model run?)";
    return nullptr;
  }
  last_error.clear();
  return model->outputs[static_cast<size_t>(index)].raw();
}

}  // extern "C"
