#include "scan.h"

#include <iterator>

namespace dumpsift::managed {

std::vector<ScanRange> heapCandidateRanges(const AddressSpace &memory) {
  const Snapshot &snap = memory.snapshot();
  std::vector<ScanRange> out;
  for (const MemoryRange &m : snap.memory) {
    const Region *r = memory.regionContaining(m.start);
    if (!snap.regions.empty()) {
      // A region known only from its captured bytes may be writable: its protection is unknown.
      bool may_write = r && (r->perms.write || !r->perms.exact);
      if (!r || !may_write || !r->backing_file.empty() || r->cls == RegionClass::Stack ||
          r->cls == RegionClass::Image)
        continue;
    }
    if (m.bytes.size() < 8)
      continue;
    out.push_back({m.start, m.bytes.data(), m.bytes.size(), r});
  }
  return out;
}

CapturedBounds::CapturedBounds(const Snapshot &snapshot) {
  if (snapshot.memory.empty())
    return;
  lo = snapshot.memory.front().start;
  hi = snapshot.memory.back().end();
}

llvm::StringRef elementTypeFullName(uint8_t element_type) {
  static constexpr const char *kNames[] = {
      nullptr,        "System.Void",   "System.Boolean", "System.Char",   "System.SByte",
      "System.Byte",  "System.Int16",  "System.UInt16",  "System.Int32",  "System.UInt32",
      "System.Int64", "System.UInt64", "System.Single",  "System.Double", "System.String"};
  if (element_type < std::size(kNames) && kNames[element_type])
    return kNames[element_type];
  switch (element_type) {
  case 0x18:
    return "System.IntPtr";
  case 0x19:
    return "System.UIntPtr";
  case 0x1c:
    return "System.Object";
  default:
    return "";
  }
}

bool primitiveElementType(uint8_t element_type) {
  return (element_type >= 0x02 && element_type <= 0x0d) || element_type == 0x18 ||
         element_type == 0x19;
}

llvm::StringRef csharpArrayName(uint8_t element_type) {
  switch (element_type) {
  case 0x02:
    return "bool[]";
  case 0x03:
    return "char[]";
  case 0x04:
    return "sbyte[]";
  case 0x05:
    return "byte[]";
  case 0x06:
    return "short[]";
  case 0x07:
    return "ushort[]";
  case 0x08:
    return "int[]";
  case 0x09:
    return "uint[]";
  case 0x0a:
    return "long[]";
  case 0x0b:
    return "ulong[]";
  case 0x0c:
    return "float[]";
  case 0x0d:
    return "double[]";
  case 0x0e:
    return "string[]";
  case 0x18:
    return "nint[]";
  case 0x19:
    return "nuint[]";
  case 0x1c:
    return "object[]";
  default:
    return "";
  }
}

} // namespace dumpsift::managed
