// The .so exports ncclNetPlugin_v12 and ncclNetPlugin_v11 and nothing else, and carries no
// dependency on the host's C++ runtime (it must load in any container NCCL runs in).
#include <catch2/catch.hpp>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "plugin_test_util.h"

namespace {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  REQUIRE(pclose(f) == 0);
  return out;
}

}  // namespace

TEST_CASE("only ncclNetPlugin_v* is exported", "[symbols]") {
  // nm -D --defined-only: "<value> <type> <name>" per dynamic symbol the .so defines.
  std::istringstream lines(run(std::string("nm -D --defined-only ") + plugin_test::plugin_path()));
  std::set<std::string> names;
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string value, type, name;
    if (!(f >> value >> type >> name)) continue;
    name = name.substr(0, name.find('@'));
    names.insert(name);
  }
  INFO("exported: " << [&] {
    std::string s;
    for (const auto& n : names) s += n + " ";
    return s;
  }());
  CHECK(names.count("ncclNetPlugin_v12") == 1);
  CHECK(names.count("ncclNetPlugin_v11") == 1);
  for (const std::string& n : names) {
    INFO(n);
    CHECK(n.rfind("ncclNetPlugin_v", 0) == 0);
  }
}

TEST_CASE("no dependency on the host's libstdc++", "[symbols]") {
  const std::string undefined = run(std::string("nm -D --undefined-only ") + plugin_test::plugin_path());
  CHECK(undefined.find("GLIBCXX") == std::string::npos);
  CHECK(undefined.find("CXXABI") == std::string::npos);
  const std::string dynamic = run(std::string("readelf -d ") + plugin_test::plugin_path());
  CHECK(dynamic.find("libstdc++") == std::string::npos);
  CHECK(dynamic.find("libcuda") == std::string::npos);  // GPU parts must be dlopened, never linked
}
