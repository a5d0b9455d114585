// Linux streams that Breakpad and Crashpad add to minidumps: /proc/PID/maps, status, cmdline and
// auxv. See minidump_streams.h for the contracts.
#include "minidump_streams.h"
#include "readers.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"

namespace dumpsift::detail::mdmp {

namespace {

// The stream's bytes as text (they may hold NULs and anything else; nothing is assumed).
llvm::StringRef asText(llvm::ArrayRef<uint8_t> bytes) {
  return llvm::StringRef(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

// Splits off the next blank-separated field of `rest`; empty when none is left.
llvm::StringRef nextField(llvm::StringRef &rest) {
  rest = rest.ltrim(" \t");
  size_t end = rest.find_first_of(" \t");
  llvm::StringRef field = rest.substr(0, end);
  rest = end == llvm::StringRef::npos ? llvm::StringRef() : rest.substr(end);
  return field;
}

} // namespace

std::optional<MapsEntry> parseMapsLine(llvm::StringRef line) {
  llvm::StringRef rest = line.trim(" \t\r");
  llvm::StringRef range = nextField(rest);
  llvm::StringRef perms = nextField(rest);
  llvm::StringRef offset = nextField(rest);
  llvm::StringRef dev = nextField(rest);
  llvm::StringRef inode = nextField(rest);
  if (inode.empty() || !dev.contains(':'))
    return std::nullopt;
  auto [lo, hi] = range.split('-');
  MapsEntry e;
  // getAsInteger returns true on failure (bad digit, empty, overflow).
  if (lo.getAsInteger(16, e.start) || hi.getAsInteger(16, e.end) || e.end < e.start)
    return std::nullopt;
  if (offset.getAsInteger(16, e.offset) || inode.getAsInteger(10, e.inode))
    return std::nullopt;
  if (perms.size() != 4 || (perms[0] != 'r' && perms[0] != '-') ||
      (perms[1] != 'w' && perms[1] != '-') || (perms[2] != 'x' && perms[2] != '-') ||
      (perms[3] != 'p' && perms[3] != 's'))
    return std::nullopt;
  e.perms.read = perms[0] == 'r';
  e.perms.write = perms[1] == 'w';
  e.perms.execute = perms[2] == 'x';
  e.shared = perms[3] == 's';
  e.path = rest.trim(" \t").str();
  return e;
}

RegionClass classifyMapsEntry(const MapsEntry &entry) {
  llvm::StringRef path = entry.path;
  if (path == "[heap]")
    return RegionClass::Heap;
  if (path == "[stack]" || path.startswith("[stack:"))
    return RegionClass::Stack;
  if (path == "[vdso]")
    return RegionClass::Image;
  bool anonymous_like = path.empty() || path.startswith("[anon:") || path.startswith("/dev/zero") ||
                        path.startswith("/memfd:") || path.startswith("/SYSV");
  if (anonymous_like)
    return entry.perms.write ? RegionClass::Anonymous : RegionClass::Other;
  if (path.startswith("/"))
    return RegionClass::Image;
  return RegionClass::Other; // [vvar], [vsyscall], other kernel names
}

MapsParse parseLinuxMaps(const Stream &stream, Diagnostics &diags) {
  MapsParse out;
  llvm::StringRef text = asText(stream.bytes);
  size_t line_no = 0;
  size_t first_bad = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++line_no;
    llvm::StringRef trimmed = line.trim(llvm::StringRef(" \t\r\0", 4));
    if (trimmed.empty())
      continue;
    ++out.lines;
    if (out.entries.size() == kMaxRanges) {
      cappedRangeCount(kMaxRanges + 1, streamWhere(stream.type), diags);
      break;
    }
    if (auto entry = parseMapsLine(trimmed)) {
      out.entries.push_back(std::move(*entry));
    } else {
      if (out.bad++ == 0)
        first_bad = line_no;
    }
  }
  if (out.bad)
    diags.warn(streamWhere(stream.type), std::to_string(out.bad) + " of " +
                                             std::to_string(out.lines) +
                                             " lines are not /proc/PID/maps lines (first: line " +
                                             std::to_string(first_bad) + "); they were skipped");
  return out;
}

ProcStatus parseProcStatus(llvm::StringRef text) {
  ProcStatus out;
  std::optional<uint64_t> pid, tgid;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    auto [key, value] = line.split(':');
    value = value.trim(" \t\r");
    uint64_t number = 0;
    if (key == "Name")
      out.name = value.str();
    else if (key == "Tgid" && !value.getAsInteger(10, number))
      tgid = number;
    else if (key == "Pid" && !value.getAsInteger(10, number))
      pid = number;
  }
  out.pid = tgid ? tgid : pid;
  return out;
}

std::string parseCmdLine(llvm::ArrayRef<uint8_t> bytes) {
  llvm::StringRef text = asText(bytes).rtrim(llvm::StringRef("\0\n", 2));
  llvm::SmallVector<llvm::StringRef, 8> args;
  text.split(args, '\0', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  return llvm::join(args, " ");
}

std::vector<std::pair<uint64_t, uint64_t>> parseAuxv(const Stream &stream, unsigned word_size,
                                                     Diagnostics &diags) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (word_size != 4 && word_size != 8)
    return out;
  const size_t pair_size = 2 * word_size;
  llvm::ArrayRef<uint8_t> bytes = stream.bytes;
  auto word = [&](size_t offset) -> uint64_t {
    return word_size == 8 ? llvm::support::endian::read64le(bytes.data() + offset)
                          : llvm::support::endian::read32le(bytes.data() + offset);
  };
  size_t offset = 0;
  for (; offset + pair_size <= bytes.size(); offset += pair_size) {
    uint64_t type = word(offset);
    if (type == 0) // AT_NULL ends the vector
      return out;
    out.emplace_back(type, word(offset + word_size));
  }
  if (offset != bytes.size())
    diags.warn(streamWhere(stream.type), "ends with " + std::to_string(bytes.size() - offset) +
                                             " bytes that are not a whole (type, value) pair");
  return out;
}

} // namespace dumpsift::detail::mdmp
