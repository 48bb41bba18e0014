#pragma once
// SHA-256 identities: patches, configs, archives, bzImages, initramfs; and base64, for
// what a mail carries (OpenSSL does both).
#include <filesystem>
#include <string>
#include <string_view>

namespace ks {

std::string sha256_hex(std::string_view data);
std::string sha256_file(const std::filesystem::path& path);  // streams; throws SystemError

// Git's id of an object of TYPE ("blob", "tree", "commit") holding CONTENT, or the file at
// PATH (streamed), in a repository's object format ("sha1" or "sha256"): the hash of
// "TYPE SIZE\0CONTENT", in hex, or the raw bytes a tree entry holds when RAW.
std::string git_object_id(std::string_view format, std::string_view type, std::string_view content, bool raw = false);
std::string git_blob_id(std::string_view format, const std::filesystem::path& path, bool raw = false);
std::string base64(std::string_view data);  // RFC 4648, padded, one line
std::string hex(std::string_view raw);     // lowercase, two digits a byte

}  // namespace ks
