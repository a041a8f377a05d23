// Catch2 main of the GPU tests: without a usable GPU they exit 77 (meson: SKIP) and say why.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "zipnet/codec_cuda.h"

int main(int argc, char** argv) {
  std::string why;
  if (!zipnet::codec::cuda::available(&why)) {
    std::printf("SKIP: the CUDA codec tests need a GPU: %s\n", why.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
