#include "tests/faulty/faulty_backend.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace collage::testing {
namespace {

enum class Fault { None, Crash, Abort, Hang, Hog };

Fault fault_of(const Shape& shape) {
  switch (shape.empty() ? 0 : shape[0]) {
    case 2:
      return Fault::Crash;
    case 4:
      return Fault::Abort;
    case 8:
      return Fault::Hang;
    case 16:
      return Fault::Hog;
    default:
      return Fault::None;
  }
}

class FaultyRelu : public Kernel {
 public:
  explicit FaultyRelu(Fault fault) : fault_(fault) {}
  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    switch (fault_) {
      case Fault::Crash:
        std::raise(SIGSEGV);
        break;
      case Fault::Abort:
        std::abort();
      case Fault::Hang:
        // $COLLAGE_FAULTY_HANG_FD: a pipe on which this process writes its pid as it starts to hang,
        // so a test knows the moment and the process without polling.
        if (const char* fd = std::getenv("COLLAGE_FAULTY_HANG_FD")) {
          pid_t self = ::getpid();
          if (::write(std::atoi(fd), &self, sizeof self) != sizeof self) std::abort();
        }
        for (;;) ::pause();  // a kernel that never returns (until a signal ends the process)
      case Fault::Hog: {
        std::vector<std::unique_ptr<char[]>> hoard;
        for (;;) {
          hoard.push_back(std::make_unique<char[]>(size_t{256} << 20));
          std::memset(hoard.back().get(), 1, size_t{256} << 20);
        }
      }
      case Fault::None:
        // $COLLAGE_FAULTY_RELU_MS: a healthy but slow kernel, so a test can kill the
        // process that measures it while it does (tests/unit/remote_measure_test.cc).
        if (const char* ms = std::getenv("COLLAGE_FAULTY_RELU_MS"))
          std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
        break;
    }
    const Tensor& x = *inputs[0];
    Tensor y = alloc.allocate(DType::Float32, x.shape());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    for (int64_t i = 0; i < x.size(); ++i) out[i] = in[i] > 0 ? in[i] : 0;
    std::vector<Tensor> outs;
    outs.push_back(y);
    return outs;
  }

 private:
  Fault fault_;
};

}  // namespace

const BackendSpec& faulty_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "faulty";
    s.version = "1";
    s.patterns.push_back(op("Relu")->where(all_float32()));
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
      return std::make_unique<FaultyRelu>(fault_of(g.value(g.node(sub.node_list.at(0)).inputs.at(0)).shape));
    };
    return s;
  }();
  return spec;
}

}  // namespace collage::testing
