// ZIPNET_* settings as NCCL would meet them: ZIPNET_ENABLE=0 makes init fail (so NCCL falls back),
// an invalid value makes init fail with a WARN that names the variable, and init logs one INFO
// banner with the version, the ABI and every non-default setting. Each case runs in a fresh
// process, because the plugin reads its settings once.
#include <catch2/catch.hpp>

#include <dirent.h>

#include "plugin_test_util.h"

using namespace zipperf;

namespace {

// In a child: load the plugin, init once, report the result and the INFO/WARN lines.
ChildOutcome init_in_child(const EnvList& env, Abi abi = Abi::Auto) {
  return run_in_child(env, 20, [abi] {
    set_print_level(NCCL_LOG_NONE);
    std::string err;
    auto p = Plugin::open(plugin_test::plugin_path(), abi, &err);
    if (!p) return nlohmann::json{{"open_error", err}};
    void* ctx = nullptr;
    ncclResult_t r = p->init(&ctx, 9, NCCL_NET_TRAFFIC_CLASS_UNDEF, nccl_logger());
    std::vector<std::string> info;
    for (const LogLine& l : captured_log())
      if (l.level == NCCL_LOG_INFO) info.push_back(l.text);
    if (r == ncclSuccess) p->finalize(ctx);
    return nlohmann::json{{"init", static_cast<int>(r)}, {"info", info}};
  });
}

bool any_contains(const std::vector<std::string>& lines, const std::string& a, const std::string& b = "") {
  for (const std::string& l : lines)
    if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) return true;
  return false;
}

std::vector<std::string> info_of(const ChildOutcome& o) {
  return o.value.contains("info") ? o.value["info"].get<std::vector<std::string>>() : std::vector<std::string>{};
}

}  // namespace

TEST_CASE("defaults: init succeeds and logs one banner with version, ABI and transport", "[params]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  ChildOutcome o = init_in_child({{"ZIPNET_ENABLE", std::nullopt}}, abi);
  INFO(o.error << " " << o.value.dump());
  REQUIRE(o.ok);
  REQUIRE(o.value["init"].get<int>() == ncclSuccess);
  CHECK(o.warnings.empty());
  std::vector<std::string> info = info_of(o);
  int banners = 0;
  for (const std::string& l : info) banners += l.find("git") != std::string::npos && l.find("ABI") != std::string::npos;
  CHECK(banners == 1);
  CHECK(any_contains(info, abi == Abi::V11 ? "v11" : "v12"));
  CHECK(any_contains(info, "non-default"));
}

TEST_CASE("a non-default setting is named in the banner", "[params]") {
  ChildOutcome o = init_in_child({{"ZIPNET_STREAMS", "3"}, {"ZIPNET_MIN_COMPRESS_BYTES", "64K"}});
  INFO(o.error << " " << o.value.dump());
  REQUIRE(o.ok);
  REQUIRE(o.value["init"].get<int>() == ncclSuccess);
  CHECK(any_contains(info_of(o), "non-default", "STREAMS=3"));
  CHECK(any_contains(info_of(o), "non-default", "MIN_COMPRESS_BYTES"));
}

TEST_CASE("ZIPNET_ENABLE=0 makes init fail cleanly, so NCCL falls back", "[params]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  ChildOutcome o = init_in_child({{"ZIPNET_ENABLE", "0"}}, abi);
  INFO(o.error << " " << o.value.dump());
  REQUIRE(o.ok);
  CHECK(o.value["init"].get<int>() != ncclSuccess);
  CHECK(any_contains(info_of(o), "ZIPNET_ENABLE=0"));
}

TEST_CASE("an invalid value is a WARN naming the variable and an init failure", "[params]") {
  const std::pair<const char*, const char*> bad[] = {
      {"ZIPNET_ENABLE", "perhaps"},     {"ZIPNET_COMPRESS", "2"},         {"ZIPNET_DTYPE", "bf17"},
      {"ZIPNET_MIN_COMPRESS_BYTES", "12Q"}, {"ZIPNET_CODEC_MODE", "zstd"}, {"ZIPNET_THREADS", "-3"},
      {"ZIPNET_STREAMS", "0"},          {"ZIPNET_SUBCHUNK_BYTES", "5"},   {"ZIPNET_TIMEOUT", "soon"},
      {"ZIPNET_PORT_RANGE", "9-1"},     {"ZIPNET_PTR", "gpu-magic"},      {"ZIPNET_ADAPTIVE", ""},
  };
  for (const auto& [name, value] : bad) {
    ChildOutcome o = init_in_child({{name, value}});
    INFO(name << "='" << value << "' -> " << o.error << " " << o.value.dump());
    REQUIRE(o.ok);
    CHECK(o.value["init"].get<int>() != ncclSuccess);
    CHECK(any_contains(o.warnings, name));
  }
}
