// The tags the holders fixtures (fixtures/java/Holders.java, fixtures/go/go_holders.go) start
// their planted buffers with, read back from a dump.
#pragma once

#include "dumpsift/dump/address_space.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dumpsift::test {

/// The tag the bytes at `address` start with ("holders:input:0", up to a NUL), or "" when they
/// do not start with "holders:" or are not in the dump.
inline std::string plantedTag(const AddressSpace &memory, uint64_t address) {
  std::vector<uint8_t> bytes(32);
  if (llvm::Error err = memory.read(address, bytes)) {
    llvm::consumeError(std::move(err));
    return "";
  }
  const std::string text(bytes.begin(), bytes.end());
  const std::string tag = text.substr(0, text.find('\0'));
  return tag.rfind("holders:", 0) == 0 ? tag : "";
}

} // namespace dumpsift::test
