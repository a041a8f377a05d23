#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "plugin/params.h"

using namespace zipnet::params;

namespace {
std::map<std::string, std::string> g_env;
const char* fake_env(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
}  // namespace

TEST_CASE("defaults are documented values", "[params]") {
  Params p = defaults();
  CHECK(p.ENABLE);
  CHECK(p.COMPRESS);
  CHECK(p.DTYPE == Dtype::auto_detect);
  CHECK(p.MIN_COMPRESS_BYTES == 128u << 10);
  CHECK(p.CODEC_MODE == 0xF);
  CHECK(p.STREAMS == 2);
  CHECK(p.SUBCHUNK_BYTES == 128u << 10);
  CHECK(p.TIMEOUT == 30);
  CHECK(p.FAULT_INJECT == 0);
  CHECK(p.PORT_RANGE.lo == 0);
}

TEST_CASE("valid values parse and are listed as non-default", "[params]") {
  g_env = {{"ZIPNET_COMPRESS", "off"},          {"ZIPNET_DTYPE", "bf16"},
           {"ZIPNET_MIN_COMPRESS_BYTES", "1M"}, {"ZIPNET_CODEC_MODE", "planes,rans"},
           {"ZIPNET_STREAMS", "4"},             {"ZIPNET_SUBCHUNK_BYTES", "256KiB"},
           {"ZIPNET_PORT_RANGE", "50000-50100"}, {"ZIPNET_FAULT_INJECT", "corrupt_frame,reset"},
           {"ZIPNET_ENABLE", "1"}};
  Params p;
  std::string err;
  REQUIRE(load(p, err, fake_env));
  CHECK(err.empty());
  CHECK(!p.COMPRESS);
  CHECK(p.DTYPE == Dtype::bf16);
  CHECK(p.MIN_COMPRESS_BYTES == 1u << 20);
  CHECK(p.CODEC_MODE == (1 | 2 | 8));  // raw always allowed
  CHECK(p.STREAMS == 4);
  CHECK(p.SUBCHUNK_BYTES == 256u << 10);
  CHECK(p.PORT_RANGE.lo == 50000);
  CHECK(p.PORT_RANGE.hi == 50100);
  CHECK(p.FAULT_INJECT == (kFaultCorruptFrame | kFaultReset));
  // ZIPNET_ENABLE=1 equals the default, so it is not listed.
  CHECK(p.non_default.size() == 8);
  CHECK(std::find(p.non_default.begin(), p.non_default.end(), "ZIPNET_STREAMS=4") != p.non_default.end());
}

TEST_CASE("invalid values fail with a message naming variable and value", "[params]") {
  struct Case { const char* var; const char* value; const char* expect; };
  for (Case c : {Case{"ZIPNET_STREAMS", "0", "1..16"}, Case{"ZIPNET_STREAMS", "two", "1..16"},
                 Case{"ZIPNET_ENABLE", "maybe", "expected 0/1"}, Case{"ZIPNET_DTYPE", "int8", "auto|bf16"},
                 Case{"ZIPNET_SUBCHUNK_BYTES", "1000", "multiple of 4K"},
                 Case{"ZIPNET_SUBCHUNK_BYTES", "1G", "4K..16M"},
                 Case{"ZIPNET_MIN_COMPRESS_BYTES", "12Q", "byte count"},
                 Case{"ZIPNET_CODEC_MODE", "zstd", "unknown mode 'zstd'"},
                 Case{"ZIPNET_PORT_RANGE", "9-3", "LO-HI"}, Case{"ZIPNET_TIMEOUT", "0", "1..86400"},
                 Case{"ZIPNET_PTR", "cuda", "not implemented"},
                 Case{"ZIPNET_FAULT_INJECT", "meteor", "unknown fault 'meteor'"}}) {
    g_env = {{c.var, c.value}};
    Params p;
    std::string err;
    INFO(c.var << "=" << c.value);
    CHECK_FALSE(load(p, err, fake_env));
    CHECK_THAT(err, Catch::Contains(std::string(c.var) + "='" + c.value + "'"));
    CHECK_THAT(err, Catch::Contains(c.expect));
  }
}

TEST_CASE("several bad values are all reported", "[params]") {
  g_env = {{"ZIPNET_STREAMS", "99"}, {"ZIPNET_THREADS", "-1"}};
  Params p;
  std::string err;
  CHECK_FALSE(load(p, err, fake_env));
  CHECK_THAT(err, Catch::Contains("ZIPNET_STREAMS"));
  CHECK_THAT(err, Catch::Contains("ZIPNET_THREADS"));
}

TEST_CASE("docs/params.md carries the generated table", "[params]") {
  std::ifstream f(ZIPNET_SOURCE_DIR "/docs/params.md");
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  INFO("regenerate with: build/plugin/tests/zipnet-params-md > table, and paste it into docs/params.md");
  CHECK_THAT(ss.str(), Catch::Contains(markdown_table()));
}
