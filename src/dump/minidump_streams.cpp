// Binary minidump streams: header and directory, memory lists, memory info, threads, modules,
// system and misc info. See minidump_streams.h for the contracts.
#include "minidump_streams.h"

#include "dumpsift/support/error.h"
#include "dumpsift/support/hex.h"
#include "readers.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/Minidump.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Endian.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

namespace dumpsift::detail::mdmp {

namespace md = llvm::minidump;
using llvm::ArrayRef;

namespace {

// The packed little-endian structs of llvm/BinaryFormat/Minidump.h have alignment 1, so a pointer
// into the file may be viewed as one of them once the bytes are known to be there.
template <typename T> const T *viewAs(ArrayRef<uint8_t> bytes, uint64_t offset) {
  static_assert(alignof(T) == 1, "minidump structs must be unaligned views");
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    return nullptr;
  return reinterpret_cast<const T *>(bytes.data() + offset);
}

// Reads a little-endian word at `offset`; the caller checked the bounds.
uint64_t read64(ArrayRef<uint8_t> bytes, size_t offset) {
  return llvm::support::endian::read64le(bytes.data() + offset);
}
uint32_t read32(ArrayRef<uint8_t> bytes, size_t offset) {
  return llvm::support::endian::read32le(bytes.data() + offset);
}

// Plain values of LLVM's enum-typed fields.
template <typename E> uint32_t raw(const llvm::support::little_t<E> &field) {
  return static_cast<uint32_t>(static_cast<E>(field));
}

// Decimal, for messages. (llvm::formatv on integers trips g++ 12's -Wmaybe-uninitialized.)
std::string num(uint64_t value) {
  return std::to_string(value);
}

// "0x4d7a0004": a stream type code, 8 hex digits.
std::string hex8(uint32_t value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", value);
  return buf;
}

constexpr uint32_t kMaxModuleNameBytes = 64 * 1024;      // one MINIDUMP_STRING, UTF-16 bytes
constexpr uint64_t kModuleNameBudget = 16 * 1024 * 1024; // all module names together
constexpr size_t kMaxElfBuildIdBytes = 64;
// Damaged directory entries named one by one; past that only counted (a real directory holds a
// few dozen streams, a hostile one thousands of entries that would each cost a warning).
constexpr size_t kMaxDirectoryWarnings = 32;

} // namespace

const Stream *Directory::find(uint32_t type) const {
  for (const Stream &s : streams)
    if (s.type == type)
      return &s;
  return nullptr;
}

std::string streamName(uint32_t type) {
  switch (type) {
#define HANDLE_MDMP_STREAM_TYPE(CODE, NAME)                                                        \
  case CODE:                                                                                       \
    return #NAME;
#include "llvm/BinaryFormat/MinidumpConstants.def"
  default:
    return hex8(type);
  }
}

std::string streamWhere(uint32_t type) {
  std::string name = streamName(type);
  std::string code = hex8(type);
  if (name == code)
    return "stream " + code;
  return "stream " + name + " (" + code + ")";
}

llvm::Expected<Directory> readDirectory(ArrayRef<uint8_t> file, Diagnostics &diags) {
  const md::Header *header = viewAs<md::Header>(file, 0);
  if (!header)
    return createError("truncated minidump header (" + num(file.size()) + " of " +
                       num(sizeof(md::Header)) + " bytes)");
  if (header->Signature != md::Header::MagicSignature)
    return createError("not a minidump (signature is not MDMP)");
  if ((header->Version & 0xffff) != md::Header::MagicVersion)
    return createError("unsupported minidump version " + hexAddress(header->Version & 0xffff) +
                       " (expected 0xa793)");

  Directory dir;
  dir.version = header->Version;
  dir.declared_streams = header->NumberOfStreams;
  dir.flags = header->Flags;
  const uint64_t dir_rva = header->StreamDirectoryRVA;
  const uint64_t declared = header->NumberOfStreams;
  if (declared == 0)
    return dir;
  if (dir_rva >= file.size())
    return createError("stream directory at " + hexAddress(dir_rva) +
                       " lies past the end of the file (" + num(file.size()) + " bytes)");
  uint64_t fits = (file.size() - dir_rva) / sizeof(md::Directory);
  if (fits == 0)
    return createError("stream directory at " + hexAddress(dir_rva) +
                       " is cut short by the end of the file");
  uint64_t count = declared;
  if (count > fits) {
    diags.warn("minidump directory", "claims " + num(declared) + " streams, the file holds only " +
                                         num(fits) + " entries; reading those");
    count = fits;
  }

  std::unordered_set<uint32_t> seen;
  size_t damaged = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const auto *entry = viewAs<md::Directory>(file, dir_rva + i * sizeof(md::Directory));
    const uint32_t type = raw(entry->Type);
    const uint64_t size = entry->Location.DataSize;
    const uint64_t rva = entry->Location.RVA;
    if (type == 0)
      continue; // MINIDUMP_STREAM_TYPE UnusedStream: padding some writers leave
    // True when the entry's damage is to be named (its warning then built), false past the cap.
    auto nameDamage = [&] { return damaged++ < kMaxDirectoryWarnings; };
    auto where = [&] { return streamWhere(type) + " (directory entry " + std::to_string(i) + ")"; };
    if (!seen.insert(type).second) {
      if (nameDamage())
        diags.warn(where(), "repeats a stream type seen earlier; only the first is read");
      continue;
    }
    Stream stream;
    stream.type = type;
    stream.index = static_cast<uint32_t>(i);
    stream.rva = static_cast<uint32_t>(rva);
    if (size != 0 && rva >= file.size()) {
      if (nameDamage())
        diags.warn(where(), "lies at " + hexAddress(rva) + ", past the end of the file (" +
                                num(file.size()) + " bytes); skipped");
      continue;
    }
    uint64_t avail = rva >= file.size() ? 0 : file.size() - rva;
    if (size > avail) {
      if (nameDamage())
        diags.warn(where(), "claims " + num(size) + " bytes at " + hexAddress(rva) +
                                ", the file holds only " + num(avail) + "; reading those");
      stream.truncated = true;
    }
    stream.bytes = size == 0 ? ArrayRef<uint8_t>() : file.slice(rva, std::min(size, avail));
    dir.streams.push_back(stream);
  }
  if (damaged > kMaxDirectoryWarnings)
    diags.warn("minidump directory", num(damaged - kMaxDirectoryWarnings) +
                                         " more damaged entries (repeated, past the end of the "
                                         "file or cut short) not listed");
  return dir;
}

void EntryWarnings::warn(MessageFn where, MessageFn message) {
  if (kept_ == kMaxEntryWarnings) {
    ++left_out_;
    return;
  }
  ++kept_;
  diags_.warn(where(), message());
}

void EntryWarnings::finish() {
  if (left_out_ != 0)
    diags_.warn(list_, num(left_out_) + " more warnings about its entries not listed");
  left_out_ = 0;
}

std::optional<ArrayRef<uint8_t>> fileSlice(ArrayRef<uint8_t> file, uint64_t rva, uint64_t size,
                                           DamageFn damage) {
  if (size == 0)
    return ArrayRef<uint8_t>();
  if (rva >= file.size()) {
    damage(
        [&] { return "data at " + hexAddress(rva) + " lies past the end of the file; not read"; });
    return std::nullopt;
  }
  uint64_t avail = file.size() - rva;
  if (size > avail) {
    damage([&] {
      return "data at " + hexAddress(rva) + " is cut short by the end of the file (" + num(avail) +
             " of " + num(size) + " bytes)";
    });
    size = avail;
  }
  return file.slice(rva, size);
}

std::optional<ArrayRef<uint8_t>> fileSlice(ArrayRef<uint8_t> file, uint64_t rva, uint64_t size,
                                           const std::string &where, Diagnostics &diags) {
  return fileSlice(file, rva, size, [&](MessageFn message) { diags.warn(where, message()); });
}

ArrayRef<uint8_t> listEntries(const Stream &stream, size_t entry_size, Diagnostics &diags,
                              size_t &count) {
  count = 0;
  ArrayRef<uint8_t> bytes = stream.bytes;
  if (bytes.size() < 4) {
    diags.warn(streamWhere(stream.type), "too short to hold its entry count");
    return {};
  }
  const uint64_t declared = read32(bytes, 0);
  if (declared == 0)
    return {};
  // Some writers pad the u32 count to 8 bytes; the spare room says so (LLVM's rule).
  uint64_t offset = 4;
  if (4 + declared * entry_size < bytes.size())
    offset = 8;
  uint64_t fits = (bytes.size() - offset) / entry_size;
  uint64_t n = declared;
  if (n > fits) {
    if (!stream.truncated) // a clipped stream was reported already
      diags.warn(streamWhere(stream.type), "claims " + num(declared) + " entries, only " +
                                               num(fits) + " fit in its " + num(bytes.size()) +
                                               " bytes");
    n = fits;
  }
  count = static_cast<size_t>(n);
  return bytes.slice(offset, n * entry_size);
}

std::vector<MemoryRange> parseMemoryList(ArrayRef<uint8_t> file, const Stream &stream,
                                         Diagnostics &diags) {
  size_t count = 0;
  ArrayRef<uint8_t> entries = listEntries(stream, sizeof(md::MemoryDescriptor), diags, count);
  count = cappedRangeCount(count, streamWhere(stream.type), diags);
  std::vector<MemoryRange> out;
  out.reserve(count);
  EntryWarnings warnings(diags, streamWhere(stream.type));
  for (size_t i = 0; i < count; ++i) {
    const auto *d = viewAs<md::MemoryDescriptor>(entries, i * sizeof(md::MemoryDescriptor));
    auto bytes = fileSlice(file, d->Memory.RVA, d->Memory.DataSize, [&](MessageFn message) {
      warnings.warn([&] { return "MemoryList range " + std::to_string(i); }, message);
    });
    if (!bytes || bytes->empty())
      continue;
    out.push_back({d->StartOfMemoryRange, *bytes});
  }
  warnings.finish();
  return out;
}

std::vector<MemoryRange> parseMemory64List(ArrayRef<uint8_t> file, const Stream &stream,
                                           Diagnostics &diags) {
  const std::string where = streamWhere(stream.type);
  ArrayRef<uint8_t> bytes = stream.bytes;
  std::vector<MemoryRange> out;
  if (bytes.size() < 16) {
    diags.warn(where, "too short to hold its 16-byte header");
    return out;
  }
  const uint64_t declared = read64(bytes, 0);
  const uint64_t base_rva = read64(bytes, 8);
  const uint64_t fits = (bytes.size() - 16) / 16;
  uint64_t n = declared;
  if (n > fits) {
    if (!stream.truncated)
      diags.warn(where, "claims " + num(declared) + " ranges, only " + num(fits) + " fit in its " +
                            num(bytes.size()) + " bytes");
    n = fits;
  }
  n = cappedRangeCount(n, where, diags);
  out.reserve(static_cast<size_t>(n));
  uint64_t rva = base_rva;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t start = read64(bytes, 16 + i * 16);
    const uint64_t size = read64(bytes, 16 + i * 16 + 8);
    if (size == 0)
      continue;
    if (rva >= file.size()) {
      diags.warn(where, "range " + num(i) + " at " + hexAddress(start) +
                            ": its data at file offset " + hexAddress(rva) +
                            " lies past the end of the file; it and " + num(n - i - 1) +
                            " later ranges not read");
      break;
    }
    uint64_t avail = file.size() - rva;
    if (size > avail) {
      diags.warn(where, "range " + num(i) + " at " + hexAddress(start) + ": " + num(avail) +
                            " of " + num(size) + " bytes in the file; the rest and " +
                            num(n - i - 1) + " later ranges not read");
      out.push_back({start, file.slice(rva, avail)});
      break;
    }
    out.push_back({start, file.slice(rva, size)});
    rva += size; // cannot wrap: size <= file.size() - rva
  }
  return out;
}

std::optional<std::vector<MemoryInfoEntry>> parseMemoryInfoList(const Stream &stream,
                                                                Diagnostics &diags) {
  const std::string where = streamWhere(stream.type);
  const auto *header = viewAs<md::MemoryInfoListHeader>(stream.bytes, 0);
  if (!header) {
    diags.warn(where, "too short to hold its 16-byte header; not used");
    return std::nullopt;
  }
  const uint64_t header_size = header->SizeOfHeader;
  const uint64_t entry_size = header->SizeOfEntry;
  const uint64_t declared = header->NumberOfEntries;
  if (header_size < sizeof(md::MemoryInfoListHeader) || header_size > stream.bytes.size()) {
    diags.warn(where, "SizeOfHeader " + num(header_size) +
                          " is not between 16 and the stream size " + num(stream.bytes.size()) +
                          "; not used");
    return std::nullopt;
  }
  if (entry_size < sizeof(md::MemoryInfo)) {
    diags.warn(where,
               "SizeOfEntry " + num(entry_size) + " is smaller than a MemoryInfo (48); not used");
    return std::nullopt;
  }
  const uint64_t fits = (stream.bytes.size() - header_size) / entry_size;
  uint64_t n = declared;
  if (n > fits) {
    if (!stream.truncated)
      diags.warn(where, "claims " + num(declared) + " entries, only " + num(fits) + " fit in its " +
                            num(stream.bytes.size()) + " bytes");
    n = fits;
  }
  n = cappedRangeCount(n, where, diags);
  std::vector<MemoryInfoEntry> out;
  out.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    const auto *info = viewAs<md::MemoryInfo>(stream.bytes, header_size + i * entry_size);
    MemoryInfoEntry e;
    e.base = info->BaseAddress;
    e.size = info->RegionSize;
    e.state = raw(info->State);
    e.protect = raw(info->Protect);
    e.type = raw(info->Type);
    out.push_back(e);
  }
  return out;
}

Permissions permsFromProtect(uint32_t protect) {
  Permissions p;
  switch (protect & 0xff) {
  case 0x02:
    p.read = true;
    break;   // READONLY
  case 0x04: // READWRITE
  case 0x08:
    p.read = p.write = true;
    break; // WRITECOPY
  case 0x10:
    p.execute = true;
    break; // EXECUTE
  case 0x20:
    p.read = p.execute = true;
    break;   // EXECUTE_READ
  case 0x40: // EXECUTE_READWRITE
  case 0x80:
    p.read = p.write = p.execute = true;
    break; // EXECUTE_WRITECOPY
  default:
    break; // NOACCESS, 0, combinations
  }
  return p;
}

std::vector<ThreadEntry> parseThreadList(ArrayRef<uint8_t> file, const Stream &stream,
                                         Diagnostics &diags) {
  size_t count = 0;
  ArrayRef<uint8_t> entries = listEntries(stream, sizeof(md::Thread), diags, count);
  std::vector<ThreadEntry> out;
  out.reserve(count);
  EntryWarnings warnings(diags, streamWhere(stream.type));
  for (size_t i = 0; i < count; ++i) {
    const auto *t = viewAs<md::Thread>(entries, i * sizeof(md::Thread));
    ThreadEntry e;
    e.tid = t->ThreadId;
    e.teb = t->EnvironmentBlock;
    e.stack_start = t->Stack.StartOfMemoryRange;
    e.stack_size = t->Stack.Memory.DataSize;
    e.stack_rva = t->Stack.Memory.RVA;
    if (auto ctx = fileSlice(file, t->Context.RVA, t->Context.DataSize, [&](MessageFn message) {
          warnings.warn([&] { return "thread " + std::to_string(e.tid) + " context"; }, message);
        }))
      e.context = *ctx;
    out.push_back(e);
  }
  warnings.finish();
  return out;
}

namespace {

/// A general register in a thread CONTEXT: its name, its offset and its width in bytes.
struct ContextSlot {
  const char *name;
  uint16_t offset;
  uint8_t width;
};

/// The general registers of the CONTEXT layouts whose offsets are fixed (winnt.h): AMD64 (Rax at
/// 0x78 ... Rip at 0xf8), x86 (Edi at 0x9c ... Esp at 0xc4), ARM64 (Windows and Breakpad, old
/// and new: X0 at 8 ... Pc at 0x108). Empty for other architectures.
ArrayRef<ContextSlot> contextRegisters(uint16_t arch) {
  static const ContextSlot amd64[] = {
      {"rax", 0x78, 8}, {"rcx", 0x80, 8}, {"rdx", 0x88, 8}, {"rbx", 0x90, 8}, {"rsp", 0x98, 8},
      {"rbp", 0xa0, 8}, {"rsi", 0xa8, 8}, {"rdi", 0xb0, 8}, {"r8", 0xb8, 8},  {"r9", 0xc0, 8},
      {"r10", 0xc8, 8}, {"r11", 0xd0, 8}, {"r12", 0xd8, 8}, {"r13", 0xe0, 8}, {"r14", 0xe8, 8},
      {"r15", 0xf0, 8}, {"rip", 0xf8, 8}};
  static const ContextSlot x86[] = {{"edi", 0x9c, 4}, {"esi", 0xa0, 4}, {"ebx", 0xa4, 4},
                                    {"edx", 0xa8, 4}, {"ecx", 0xac, 4}, {"eax", 0xb0, 4},
                                    {"ebp", 0xb4, 4}, {"eip", 0xb8, 4}, {"esp", 0xc4, 4}};
  static const ContextSlot arm64[] = {
      {"x0", 0x08, 8},  {"x1", 0x10, 8},  {"x2", 0x18, 8},  {"x3", 0x20, 8},  {"x4", 0x28, 8},
      {"x5", 0x30, 8},  {"x6", 0x38, 8},  {"x7", 0x40, 8},  {"x8", 0x48, 8},  {"x9", 0x50, 8},
      {"x10", 0x58, 8}, {"x11", 0x60, 8}, {"x12", 0x68, 8}, {"x13", 0x70, 8}, {"x14", 0x78, 8},
      {"x15", 0x80, 8}, {"x16", 0x88, 8}, {"x17", 0x90, 8}, {"x18", 0x98, 8}, {"x19", 0xa0, 8},
      {"x20", 0xa8, 8}, {"x21", 0xb0, 8}, {"x22", 0xb8, 8}, {"x23", 0xc0, 8}, {"x24", 0xc8, 8},
      {"x25", 0xd0, 8}, {"x26", 0xd8, 8}, {"x27", 0xe0, 8}, {"x28", 0xe8, 8}, {"x29", 0xf0, 8},
      {"x30", 0xf8, 8}, {"sp", 0x100, 8}, {"pc", 0x108, 8}};
  switch (static_cast<md::ProcessorArchitecture>(arch)) {
  case md::ProcessorArchitecture::AMD64:
    return amd64;
  case md::ProcessorArchitecture::ARM64:
  case md::ProcessorArchitecture::BP_ARM64:
    return arm64;
  case md::ProcessorArchitecture::X86:
  case md::ProcessorArchitecture::X86Win64:
    return x86;
  default:
    return {};
  }
}

/// The value of `slot` in `context`, or nullopt when the context is too short to hold it.
std::optional<uint64_t> contextValue(const ContextSlot &slot, ArrayRef<uint8_t> context) {
  if (context.size() < size_t(slot.offset) + slot.width)
    return std::nullopt;
  return slot.width == 8 ? read64(context, slot.offset) : read32(context, slot.offset);
}

} // namespace

std::optional<uint64_t> stackPointerFromContext(uint16_t arch, ArrayRef<uint8_t> context) {
  for (const ContextSlot &slot : contextRegisters(arch))
    if (llvm::StringRef(slot.name) == "rsp" || llvm::StringRef(slot.name) == "esp" ||
        llvm::StringRef(slot.name) == "sp")
      return contextValue(slot, context);
  return std::nullopt;
}

std::vector<Register> registersFromContext(uint16_t arch, ArrayRef<uint8_t> context) {
  std::vector<Register> out;
  for (const ContextSlot &slot : contextRegisters(arch))
    if (std::optional<uint64_t> value = contextValue(slot, context))
      out.push_back({slot.name, *value});
  return out;
}

std::optional<std::string> readString(ArrayRef<uint8_t> file, uint64_t rva, uint32_t max_bytes,
                                      DamageFn damage) {
  if (rva >= file.size() || file.size() - rva < 4) {
    damage([&] { return "string at " + hexAddress(rva) + " lies past the end of the file"; });
    return std::nullopt;
  }
  uint64_t length = read32(file, rva);
  if (length > max_bytes) {
    damage([&] {
      return "string at " + hexAddress(rva) + " is " + num(length) +
             " bytes long; only the first " + num(max_bytes) + " read";
    });
    length = max_bytes;
  }
  auto bytes = fileSlice(file, rva + 4, length, damage);
  if (!bytes)
    return std::nullopt;
  // One pass, no allocation per unit: hostile names are long and full of unpaired surrogates.
  std::string out;
  out.reserve(bytes->size() / 2);
  const size_t units = bytes->size() / 2;
  auto unit = [&](size_t i) -> uint32_t {
    return llvm::support::endian::read16le(bytes->data() + 2 * i);
  };
  auto isHigh = [](uint32_t u) { return u >= 0xd800 && u < 0xdc00; };
  auto isLow = [](uint32_t u) { return u >= 0xdc00 && u < 0xe000; };
  for (size_t i = 0; i < units; ++i) {
    uint32_t code_point = unit(i);
    if (code_point == 0)
      break; // a name ends at its first NUL, as the Win32 calls that take it read it
    if (isHigh(code_point) && i + 1 < units && isLow(unit(i + 1))) {
      code_point = 0x10000 + ((code_point - 0xd800) << 10) + (unit(i + 1) - 0xdc00);
      ++i;
    } else if (isHigh(code_point) || isLow(code_point)) {
      code_point = 0xfffd;
    }
    char utf8[4];
    char *end = utf8;
    llvm::ConvertCodePointToUTF8(code_point, end);
    out.append(utf8, end);
  }
  return out;
}

std::optional<std::string> readString(ArrayRef<uint8_t> file, uint64_t rva, uint32_t max_bytes,
                                      const std::string &where, Diagnostics &diags) {
  return readString(file, rva, max_bytes, [&](MessageFn message) { diags.warn(where, message()); });
}

std::string buildIdFromCodeView(ArrayRef<uint8_t> record) {
  if (record.size() < 4)
    return "";
  const uint32_t signature = read32(record, 0);
  if (signature == 0x53445352 /* "RSDS" */) {
    if (record.size() < 24)
      return "";
    // GUID Data1 (u32), Data2 and Data3 (u16) are little-endian in the file, printed big-endian.
    uint8_t guid[16];
    size_t n = 0;
    for (int i : {7, 6, 5, 4, 9, 8, 11, 10})
      guid[n++] = record[i];
    for (int i = 12; i < 20; ++i)
      guid[n++] = record[i];
    return llvm::toHex(guid, /*LowerCase=*/true) +
           llvm::utohexstr(read32(record, 20), /*LowerCase=*/true);
  }
  if (signature == 0x4270454c /* "LEpB" */)
    return llvm::toHex(record.drop_front(4).take_front(kMaxElfBuildIdBytes), /*LowerCase=*/true);
  return "";
}

std::vector<ModuleEntry> parseModuleList(ArrayRef<uint8_t> file, const Stream &stream,
                                         Diagnostics &diags) {
  size_t count = 0;
  ArrayRef<uint8_t> entries = listEntries(stream, sizeof(md::Module), diags, count);
  std::vector<ModuleEntry> out;
  out.reserve(count);
  // Names are UTF-16 in the file, so all of them together take at most 1.5x the file's size as
  // UTF-8 unless entries share one string: the budget stops that amplification (and still lets
  // one name of the largest size be read).
  const uint64_t budget_total = std::min<uint64_t>(
      kModuleNameBudget, std::max<uint64_t>(2 * uint64_t(file.size()), kMaxModuleNameBytes));
  uint64_t budget = budget_total;
  EntryWarnings warnings(diags, streamWhere(stream.type));
  for (size_t i = 0; i < count; ++i) {
    const auto *m = viewAs<md::Module>(entries, i * sizeof(md::Module));
    ModuleEntry e;
    e.base = m->BaseOfImage;
    e.size = m->SizeOfImage;
    auto damage_to = [&](const char *part) {
      return [&, part](MessageFn message) {
        warnings.warn(
            [&] { return "module " + std::to_string(i) + " at " + hexAddress(e.base) + part; },
            message);
      };
    };
    if (budget > 0) {
      uint32_t cap = static_cast<uint32_t>(std::min<uint64_t>(kMaxModuleNameBytes, budget));
      if (auto name = readString(file, m->ModuleNameRVA, cap, damage_to(" name"))) {
        e.name = std::move(*name);
        budget -= std::min<uint64_t>(budget, e.name.size() + 4);
      }
      if (budget == 0)
        diags.warn(streamWhere(stream.type), "module names exceed " + num(budget_total) +
                                                 " bytes (twice the file size, 64 KiB to 16 MiB); "
                                                 "later names not read");
    }
    const uint64_t cv_size = std::min<uint64_t>(m->CvRecord.DataSize, 24 + kMaxElfBuildIdBytes);
    if (cv_size != 0)
      if (auto cv = fileSlice(file, m->CvRecord.RVA, cv_size, damage_to(" CodeView record")))
        e.build_id = buildIdFromCodeView(*cv);
    out.push_back(std::move(e));
  }
  warnings.finish();
  return out;
}

namespace {

/// An architecture as target triples spell it (the ELF reader's names) and its pointer size.
struct MinidumpArch {
  const char *name; // nullptr: not known
  unsigned pointer_size;
};

/// The architecture of a SystemInfo ProcessorArchitecture value: Microsoft's
/// PROCESSOR_ARCHITECTURE_* (winnt.h: INTEL 0, MIPS 1, ALPHA 2, PPC 3, SHX 4, ARM 5, IA64 6,
/// ALPHA64 7, MSIL 8, AMD64 9, IA32_ON_WIN64 10, ARM64 12, ARM32_ON_WIN64 13, IA32_ON_ARM64 14)
/// and Breakpad's own (minidump_format.h: SPARC 0x8001, PPC64 0x8002, ARM64_OLD 0x8003, MIPS64
/// 0x8004, RISCV 0x8005, RISCV64 0x8006). A value not listed is {nullptr, 8}; MSIL (managed code,
/// no processor) is named but keeps that pointer size, and SPARC, whose Breakpad context does not
/// say 32 or 64 bits, too.
MinidumpArch minidumpArch(uint16_t value) {
  switch (value) {
  case 0:
  case 10: // a 32-bit process on 64-bit Windows (WoW64)
  case 14: // an x86 process on ARM64 Windows
    return {"x86", 4};
  case 1:
    return {"mips", 4};
  case 2:
    return {"alpha", 8};
  case 3:
    return {"ppc", 4};
  case 4:
    return {"sh", 4};
  case 5:
  case 13: // a 32-bit ARM process on ARM64 Windows
    return {"arm", 4};
  case 6:
    return {"ia64", 8};
  case 7:
    return {"alpha64", 8};
  case 8:
    return {"msil", 8};
  case 9:
    return {"x86_64", 8};
  case 12:
  case 0x8003:
    return {"aarch64", 8};
  case 0x8001:
    return {"sparc", 8};
  case 0x8002:
    return {"ppc64", 8};
  case 0x8004:
    return {"mips64", 8};
  case 0x8005:
    return {"riscv32", 4};
  case 0x8006:
    return {"riscv64", 8};
  default:
    return {nullptr, 8};
  }
}

} // namespace

std::optional<SystemInfoEntry> parseSystemInfo(const Stream &stream, Diagnostics &diags) {
  const auto *si = viewAs<md::SystemInfo>(stream.bytes, 0);
  if (!si) {
    diags.warn(streamWhere(stream.type),
               num(stream.bytes.size()) + " bytes, shorter than its 56-byte layout; not used");
    return std::nullopt;
  }
  SystemInfoEntry e;
  e.arch = static_cast<uint16_t>(raw(si->ProcessorArch));
  e.platform = raw(si->PlatformId);
  SystemInfo &info = e.info;
  const MinidumpArch arch = minidumpArch(e.arch);
  info.arch = arch.name ? std::string(arch.name) : "machine-" + std::to_string(e.arch);
  info.pointer_size = arch.pointer_size;
  using OS = md::OSPlatform;
  switch (static_cast<OS>(e.platform)) {
  case OS::Win32S:
  case OS::Win32Windows:
  case OS::Win32NT:
  case OS::Win32CE:
    info.os = Os::Windows;
    break;
  case OS::MacOSX:
    info.os = Os::MacOs;
    break;
  case OS::IOS:
    info.os = Os::Ios;
    break;
  case OS::Linux:
    info.os = Os::Linux;
    break;
  case OS::Android:
    info.os = Os::Android;
    break;
  case OS::Solaris:
    info.os = Os::Solaris;
    break;
  case OS::Unix:
    info.os = Os::Unix;
    break;
  case OS::PS3:
    info.os = Os::Ps3;
    break;
  case OS::NaCl:
    info.os = Os::NaCl;
    break;
  default:
    info.os = Os::Unknown;
    break;
  }
  info.little_endian = true; // only little-endian minidumps are read (the header's signature)
  return e;
}

std::optional<uint64_t> parseMiscInfoPid(const Stream &stream) {
  // MINIDUMP_MISC_INFO: u32 SizeOfInfo, u32 Flags1, u32 ProcessId, ...
  if (stream.bytes.size() < 12)
    return std::nullopt;
  constexpr uint32_t kMisc1ProcessId = 0x1;
  if (!(read32(stream.bytes, 4) & kMisc1ProcessId))
    return std::nullopt;
  return read32(stream.bytes, 8);
}

} // namespace dumpsift::detail::mdmp
