// collage-samples OUT_DIR [--only a,b] [--all] [--list] [--external-data-threshold BYTES] [--seed S]
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "resources/samples/zoo.h"

int main(int argc, char** argv) {
  using namespace collage;
  try {
    std::string out_dir, only;
    bool all = false;
    int64_t threshold = -1;
    uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw Error(ErrorKind::InvalidInput, a + " needs a value");
        return argv[++i];
      };
      if (a == "--list") {
        for (const auto& s : samples::sample_list())
          std::printf("%-18s %s%s\n", s.name.c_str(), s.description.c_str(), s.small ? "" : " [large]");
        return 0;
      } else if (a == "--only")
        only = value();
      else if (a == "--all")
        all = true;
      else if (a == "--external-data-threshold")
        threshold = std::stoll(value());
      else if (a == "--seed")
        seed = std::stoull(value());
      else if (!a.empty() && a[0] == '-')
        throw Error(ErrorKind::InvalidInput, "unknown option " + a);
      else
        out_dir = a;
    }
    if (out_dir.empty())
      throw Error(
          ErrorKind::InvalidInput,
          "usage: collage-samples OUT_DIR [--only a,b] [--all] [--list] [--external-data-threshold BYTES]");
    std::vector<std::string> names;
    if (!only.empty()) {
      std::stringstream ss(only);
      for (std::string n; std::getline(ss, n, ',');) names.push_back(n);
    } else {
      for (const auto& s : samples::sample_list())
        if (s.small || all) names.push_back(s.name);
    }
    std::filesystem::create_directories(out_dir);
    for (const auto& n : names) {
      OnnxBuilder b = samples::build_sample(n, seed);
      std::string path = (std::filesystem::path(out_dir) / (n + ".onnx")).string();
      b.save(path, threshold);
      std::printf("%s: %d nodes, %zu parameters -> %s (%ju bytes)\n", n.c_str(),
                  b.build().graph().node_size(), b.parameter_count(), path.c_str(),
                  static_cast<uintmax_t>(std::filesystem::file_size(path)));
    }
    return 0;
  } catch (const collage::Error& e) {
    std::cerr << "collage-samples: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "collage-samples: " << e.what() << "\n";
    return 2;
  }
}
