// One Catch2 main shared by every test binary, compiled once.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
