// The identity of a guest image: the SHA-256 of exactly the bytes the runner read and loaded
// (OpenSSL's libcrypto), so the reports say which build ran.
#include "guest/runner/elf_image.hpp"
#include "text/text.hpp"

#include <openssl/evp.h>

namespace hotscope::guest {

GuestImage ElfImage::identity(const std::string& path) const {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  GuestImage image;
  image.path = path;
  image.bytes = bytes_.size();
  if (EVP_Digest(bytes_.data(), bytes_.size(), digest, &length, EVP_sha256(), nullptr) == 1) {
    for (unsigned int i = 0; i < length; ++i) {
      image.sha256 += text::hex(digest[i], 2);
    }
  }
  return image;
}

} // namespace hotscope::guest
