#include "util/hash.hpp"

#include <openssl/evp.h>

#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "util/error.hpp"
#include "util/files.hpp"

namespace ks {
namespace {

class Digest {
 public:
  explicit Digest(const EVP_MD* md = EVP_sha256()) : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), md, nullptr) != 1) throw SystemError("digest init", "OpenSSL failed");
  }
  void update(const void* data, size_t n) { EVP_DigestUpdate(ctx_.get(), data, n); }
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::string raw() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest, &len);
    return std::string(reinterpret_cast<const char*>(digest), len);
  }
  std::string hex() { return ks::hex(raw()); }
  // The regular file at PATH, streamed; throws SystemError (forty-fifth attack: a FIFO planted
  // where a kernel was cached held root's build, and its machine lock, forever).
  void update_file(const std::filesystem::path& path) {
    const int fd = open_regular_file(path, Links::follow);
    std::vector<char> buf(1 << 20);
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        if (n < 0) throw SystemError("read " + path.string(), err);
        return;
      }
      update(buf.data(), static_cast<size_t>(n));
    }
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

Digest git_digest(std::string_view format, std::string_view type, uintmax_t size) {
  if (format != "sha1" && format != "sha256") throw SystemError("git object id", "unknown object format " + std::string(format));
  Digest h(format == "sha1" ? EVP_sha1() : EVP_sha256());
  h.update(std::string(type) + " " + std::to_string(size));
  h.update("", 1);  // the header's NUL
  return h;
}

}  // namespace

std::string hex(std::string_view raw) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Digest h;
  h.update(data);
  return h.hex();
}

std::string sha256_file(const std::filesystem::path& path) {
  Digest h;
  h.update_file(path);
  return h.hex();
}

std::string git_object_id(std::string_view format, std::string_view type, std::string_view content, bool raw) {
  auto h = git_digest(format, type, content.size());
  h.update(content);
  return raw ? h.raw() : h.hex();
}

std::string git_blob_id(std::string_view format, const std::filesystem::path& path, bool raw) {
  auto h = git_digest(format, "blob", std::filesystem::file_size(path));
  h.update_file(path);
  return raw ? h.raw() : h.hex();
}

std::string base64(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock adds a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace ks
