// Prints the ZIPNET_* table as markdown (the body of docs/params.md).
#include <cstdio>

#include "plugin/params.h"

int main() {
  std::fputs(zipnet::params::markdown_table().c_str(), stdout);
  return 0;
}
