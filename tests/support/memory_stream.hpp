#pragma once
// A FILE* that writes into memory (open_memstream), for a test to read back what was
// printed to it: the progress lines, say.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ks::test {

struct MemoryStream {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* file = open_memstream(&data, &size);

  MemoryStream() = default;
  MemoryStream(const MemoryStream&) = delete;
  MemoryStream& operator=(const MemoryStream&) = delete;
  ~MemoryStream() {
    std::fclose(file);
    std::free(data);
  }
  std::string text() {
    std::fflush(file);
    return std::string(data, size);
  }
};

}  // namespace ks::test
