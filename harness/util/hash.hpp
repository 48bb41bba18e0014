#pragma once
// SHA-256 identities: patches, configs, archives, bzImages, initramfs.
#include <filesystem>
#include <string>
#include <string_view>

namespace ks {

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::filesystem::path& path);  // streams; throws SystemError

}  // namespace ks
