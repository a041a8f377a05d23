// NCCL dlcloses the plugin when its last communicator ends and may load it again in the same
// process. Each cycle here: dlopen, init, connect, transfer, close, finalize, dlclose. Afterwards
// no thread of the plugin may be left running (no detached threads), and a fresh load must work.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <dlfcn.h>

#include "plugin_test_util.h"

using namespace zipperf;

namespace {

int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

}  // namespace

TEST_CASE("dlopen, use, dlclose, dlopen again: three cycles in one process, no threads left", "[reload]") {
  // In a child: a clean process whose thread count is ours alone.
  ChildOutcome o = run_in_child({}, 60, [] {
    set_print_level(NCCL_LOG_WARN);
    nlohmann::json out = nlohmann::json::array();
    const int threads_before = thread_count();
    for (int cycle = 0; cycle < 3; ++cycle) {
      std::string err;
      {
        auto pair = LocalPair::create(plugin_test::plugin_path(), cycle % 2 ? Abi::V11 : Abi::V12, 10, &err);
        if (!pair) return nlohmann::json{{"cycle", cycle}, {"error", err}};
        TransferSpec spec;
        spec.sizes = {1 << 20, 4096};
        err = pair->transfer(spec, plugin_test::tensors(), 16, 20);
        if (err.empty()) err = pair->close();
        if (!err.empty()) return nlohmann::json{{"cycle", cycle}, {"error", err}};
      }  // dlclose here
      void* h = dlopen(plugin_test::plugin_path(), RTLD_NOW | RTLD_NOLOAD);  // a reference only if still mapped
      out.push_back({{"cycle", cycle}, {"threads_after", thread_count()}, {"still_mapped", h != nullptr}});
      if (h) dlclose(h);
    }
    return nlohmann::json{{"threads_before", threads_before}, {"cycles", out}};
  });
  INFO(o.error << " " << o.value.dump());
  REQUIRE(o.ok);
  REQUIRE_FALSE(o.value.contains("error"));
  const int before = o.value["threads_before"].get<int>();
  for (const auto& c : o.value["cycles"]) {
    INFO("cycle " << c["cycle"].get<int>());
    CHECK(c["threads_after"].get<int>() == before);  // every worker thread joined at finalize
    // Staying mapped is allowed (e.g. unique symbols pin it), but worth knowing.
    if (c["still_mapped"].get<bool>()) WARN("the plugin stayed mapped after dlclose (cycle " << c["cycle"] << ")");
  }
}
