#pragma once
// SHA-256 identities: patches, configs, archives, bzImages, initramfs; and base64, for
// what a mail carries (OpenSSL does both).
#include <filesystem>
#include <string>
#include <string_view>

namespace ks {

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::filesystem::path& path);  // streams; throws SystemError
std::string base64(std::string_view data);                   // RFC 4648, padded, one line

}  // namespace ks
