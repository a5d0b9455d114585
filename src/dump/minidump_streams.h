// Minidump stream parsers, internal to the dump layer (and its tests).
//
// Every parser works on bytes that were already checked against the file: a `Stream` holds its
// bytes clipped to the end of the file, and every RVA a stream points at goes through
// `fileSlice`. Counts read from the file are capped by what the bytes can hold, so nothing here
// allocates or loops in proportion to a number the file merely claims. Damage local to one
// stream is a warning in the given Diagnostics; the parser returns what it could read.
//
// Struct layouts come from llvm/BinaryFormat/Minidump.h (LLVM 14). LLVM's MinidumpFile is not used
// for parsing because it refuses a whole file for one bad stream (duplicate type, location past
// EOF) and lacks Memory64List; the tests use it as an independent oracle instead.
#pragma once

#include "dumpsift/dump/snapshot.h"
#include "dumpsift/support/diagnostics.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dumpsift::detail::mdmp {

// Stream type codes dumpsift reads (values from MINIDUMP_STREAM_TYPE and Breakpad's extensions).
inline constexpr uint32_t kThreadList = 3;
inline constexpr uint32_t kModuleList = 4;
inline constexpr uint32_t kMemoryList = 5;
inline constexpr uint32_t kSystemInfo = 7;
inline constexpr uint32_t kMemory64List = 9;
inline constexpr uint32_t kMiscInfo = 0xf;
inline constexpr uint32_t kMemoryInfoList = 0x10;
inline constexpr uint32_t kLinuxProcStatus = 0x47670004;
inline constexpr uint32_t kLinuxCmdLine = 0x47670006;
inline constexpr uint32_t kLinuxAuxv = 0x47670008;
inline constexpr uint32_t kLinuxMaps = 0x47670009;

// MEMORY_BASIC_INFORMATION words (MemoryInfoList).
inline constexpr uint32_t kMemCommit = 0x1000;
inline constexpr uint32_t kMemReserve = 0x2000;
inline constexpr uint32_t kMemFree = 0x10000;
inline constexpr uint32_t kMemPrivate = 0x20000;
inline constexpr uint32_t kMemMapped = 0x40000;
inline constexpr uint32_t kMemImage = 0x1000000;

/// One usable directory entry. `bytes` lie inside the file; when the directory claimed more than
/// the file holds they are clipped and `truncated` is set (a warning was already given).
struct Stream {
  uint32_t type = 0;
  uint32_t index = 0; // position in the directory
  uint32_t rva = 0;
  llvm::ArrayRef<uint8_t> bytes;
  bool truncated = false;
};

/// The header and the usable part of the stream directory.
struct Directory {
  uint32_t version = 0;
  uint32_t declared_streams = 0; // NumberOfStreams as written
  uint64_t flags = 0;            // MINIDUMP_TYPE
  /// Usable streams in directory order; only the first stream of each type is kept.
  std::vector<Stream> streams;

  /// The stream of `type`, or nullptr.
  const Stream *find(uint32_t type) const;
};

/// Reads the 32-byte header and the stream directory. Fails (one line, naming the cause) only when
/// the header is cut short, the signature or version is wrong, or the directory starts past the
/// end of the file. A directory that claims more entries than the file holds, a stream that
/// starts past EOF (dropped), one that runs past EOF (clipped), and a repeated stream type (the
/// first wins) are warnings. Entries of type 0 (Unused) are skipped silently. Does not look inside
/// any stream.
llvm::Expected<Directory> readDirectory(llvm::ArrayRef<uint8_t> file, Diagnostics &diags);

/// "MemoryList", "LinuxMaps", ... for known types; "0x4d7a0004" otherwise.
std::string streamName(uint32_t type);

/// "stream LinuxMaps (0x47670009)": the `where` of a stream's warnings.
std::string streamWhere(uint32_t type);

/// Builds the message of one warning (only when the warning is kept).
using MessageFn = llvm::function_ref<std::string()>;
/// Receives one warning about damage (its caller knows where it is).
using DamageFn = llvm::function_ref<void(MessageFn message)>;

/// The warnings about the entries of one list (threads, modules, memory ranges): each of the
/// first kMaxEntryWarnings is kept, the rest are only counted, and finish() says how many were
/// left out. A hostile list holds thousands of damaged entries; each would otherwise cost a
/// warning in every report.
class EntryWarnings {
public:
  static constexpr size_t kMaxEntryWarnings = 16;

  /// `list` is the `where` of the closing count ("stream ModuleList (0x4)").
  EntryWarnings(Diagnostics &diags, std::string list) : diags_(diags), list_(std::move(list)) {}

  /// Warns about one entry; `where` and `message` are built only for a warning that is kept.
  void warn(MessageFn where, MessageFn message);
  /// Warns, once, how many warnings were left out (when any were).
  void finish();

private:
  Diagnostics &diags_;
  std::string list_;
  size_t kept_ = 0;
  size_t left_out_ = 0;
};

/// File bytes [rva, rva + size), clipped to the file. nullopt when `rva` lies past the end;
/// `damage` gets a message for a clipped or missing slice. An empty request gives an empty slice.
std::optional<llvm::ArrayRef<uint8_t>> fileSlice(llvm::ArrayRef<uint8_t> file, uint64_t rva,
                                                 uint64_t size, DamageFn damage);

/// fileSlice with its warnings under `where`.
std::optional<llvm::ArrayRef<uint8_t>> fileSlice(llvm::ArrayRef<uint8_t> file, uint64_t rva,
                                                 uint64_t size, const std::string &where,
                                                 Diagnostics &diags);

/// The entries of a MINIDUMP_*_LIST stream (u32 count, entries at offset 4, or at 8 when the
/// writer padded the header): a view of whole entries only. A count larger than the stream
/// holds is a warning and gives the entries that fit.
llvm::ArrayRef<uint8_t> listEntries(const Stream &stream, size_t entry_size, Diagnostics &diags,
                                    size_t &count);

/// MemoryList: one zero-copy view per descriptor, clipped to the file (warning), in stream order.
/// Descriptors whose data lies wholly past EOF are dropped with a warning.
std::vector<MemoryRange> parseMemoryList(llvm::ArrayRef<uint8_t> file, const Stream &stream,
                                         Diagnostics &diags);

/// Memory64List: u64 count, u64 BaseRva, then {u64 start, u64 size} descriptors whose data lies
/// back to back from BaseRva. The count is capped by the stream size; the data by the file size
/// (the range that reaches EOF is clipped, later ones dropped, one warning each). Does not insist
/// that the stream size be exactly 16 + 16 * count.
std::vector<MemoryRange> parseMemory64List(llvm::ArrayRef<uint8_t> file, const Stream &stream,
                                           Diagnostics &diags);

/// One MINIDUMP_MEMORY_INFO, reduced to what dumpsift uses.
struct MemoryInfoEntry {
  uint64_t base = 0;
  uint64_t size = 0;
  uint32_t state = 0;
  uint32_t protect = 0;
  uint32_t type = 0;
};

/// MemoryInfoList. nullopt (with a warning) when the header is unusable: shorter than 16 bytes,
/// SizeOfHeader < 16 or past the stream, SizeOfEntry < 48. Otherwise the entries that fit (a
/// larger NumberOfEntries is a warning). Entries are not checked for overlap or wrap-around.
std::optional<std::vector<MemoryInfoEntry>> parseMemoryInfoList(const Stream &stream,
                                                                Diagnostics &diags);

/// Permissions of a PAGE_* protection word (Guard, NoCache and WriteCombine bits ignored).
Permissions permsFromProtect(uint32_t protect);

/// One ThreadList entry; `context` is a view clipped to the file (empty when unreadable).
struct ThreadEntry {
  uint32_t tid = 0;
  uint64_t teb = 0; // MINIDUMP_THREAD.Teb (Windows: the thread environment block)
  uint64_t stack_start = 0;
  uint32_t stack_size = 0;
  uint32_t stack_rva = 0;
  llvm::ArrayRef<uint8_t> context;
};

/// ThreadList entries that fit in the stream (warnings about their contexts: EntryWarnings).
std::vector<ThreadEntry> parseThreadList(llvm::ArrayRef<uint8_t> file, const Stream &stream,
                                         Diagnostics &diags);

/// The stack pointer stored in a thread context, for the layouts whose offset is fixed: AMD64
/// CONTEXT (Rsp at 0x98), x86 CONTEXT (Esp at 0xc4), ARM64 (Windows, Breakpad old and new: SP at
/// 0x100). nullopt for other architectures or a context too short to hold it.
std::optional<uint64_t> stackPointerFromContext(uint16_t arch, llvm::ArrayRef<uint8_t> context);

/// The general registers stored in a thread context, for the same layouts (AMD64: rax ... r15,
/// rip; x86: edi ... esp; ARM64: x0 ... x30, sp, pc), each one the context is long enough to hold;
/// empty for other architectures.
std::vector<Register> registersFromContext(uint16_t arch, llvm::ArrayRef<uint8_t> context);

/// One ModuleList entry: the name decoded from its MINIDUMP_STRING, the build id from its CodeView
/// record ("" when neither is readable; each failure is a warning).
struct ModuleEntry {
  uint64_t base = 0;
  uint32_t size = 0;
  std::string name;
  std::string build_id;
};

/// ModuleList entries that fit in the stream. Module names share a total budget (twice the file
/// size, 64 KiB to 16 MiB), so a list that points every entry at one long string cannot blow up
/// memory.
std::vector<ModuleEntry> parseModuleList(llvm::ArrayRef<uint8_t> file, const Stream &stream,
                                         Diagnostics &diags);

/// A MINIDUMP_STRING (u32 length in bytes, then UTF-16LE) at `rva`, as UTF-8. At most
/// `max_bytes` bytes of UTF-16 are read (longer strings are cut, with a warning); an odd length
/// loses its last byte; unpaired surrogates become U+FFFD; the string ends at its first NUL (no
/// path holds one). nullopt when the length word itself is unreadable.
std::optional<std::string> readString(llvm::ArrayRef<uint8_t> file, uint64_t rva,
                                      uint32_t max_bytes, DamageFn damage);

/// readString with its warnings under `where`.
std::optional<std::string> readString(llvm::ArrayRef<uint8_t> file, uint64_t rva,
                                      uint32_t max_bytes, const std::string &where,
                                      Diagnostics &diags);

/// The build id in a CodeView record, as lowercase hex: for "RSDS" (PDB 7.0) the GUID in its
/// printed order (Data1, Data2, Data3 byte-swapped to big-endian, then Data4) followed by the age
/// in hex, as symbol servers name it; for "LEpB" (Breakpad's ELF build id) the id bytes as they
/// are. "" for anything else or a record too short.
std::string buildIdFromCodeView(llvm::ArrayRef<uint8_t> record);

/// What SystemInfo says: the raw architecture code (for context decoding) and the mapped names.
struct SystemInfoEntry {
  uint16_t arch = 0xffff;
  uint32_t platform = 0;
  SystemInfo info;
};

/// SystemInfo; nullopt (warning) when the stream is shorter than its 56 bytes. Unknown
/// architectures become "machine-<n>" (decimal) with pointer size 8; unknown platforms "unknown".
std::optional<SystemInfoEntry> parseSystemInfo(const Stream &stream, Diagnostics &diags);

/// The process id in MiscInfo when its Flags1 has MINIDUMP_MISC1_PROCESS_ID; nullopt otherwise.
std::optional<uint64_t> parseMiscInfoPid(const Stream &stream);

// ---- Linux streams written by Breakpad and Crashpad --------------------------------------------

/// One line of /proc/PID/maps. `end` is exclusive.
struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  Permissions perms;
  bool shared = false;
  uint64_t offset = 0;
  uint64_t inode = 0;
  std::string path; // "" for anonymous mappings; "[heap]", "[stack]", or a file path
};

/// Parses `start-end perms offset dev inode [path]`. nullopt when a field is missing or not a
/// number, or when end < start. Trailing "\r" and surrounding blanks are ignored.
std::optional<MapsEntry> parseMapsLine(llvm::StringRef line);

/// The class a maps entry gets: [heap] Heap, [stack] and [stack:tid] Stack, a file path Image
/// (except /dev/zero, /memfd:, /SYSV shared memory, which count as anonymous), [vdso] Image,
/// anonymous writable Anonymous, anything else Other.
RegionClass classifyMapsEntry(const MapsEntry &entry);

/// Counts of a LinuxMaps parse, for callers and tests.
struct MapsParse {
  std::vector<MapsEntry> entries;
  size_t lines = 0; // non-blank lines seen
  size_t bad = 0;   // lines that did not parse
};

/// Every line of a LinuxMaps stream. Lines that do not parse are counted and reported in one
/// warning (with the first bad line's number); the others are kept in stream order.
MapsParse parseLinuxMaps(const Stream &stream, Diagnostics &diags);

/// Name and pid (Tgid, else Pid) from /proc/PID/status text; fields absent stay empty.
struct ProcStatus {
  std::optional<uint64_t> pid;
  std::string name;
};
ProcStatus parseProcStatus(llvm::StringRef text);

/// A NUL-separated argv (LinuxCMDLine) joined with single spaces; trailing NULs and newlines
/// dropped.
std::string parseCmdLine(llvm::ArrayRef<uint8_t> bytes);

/// LinuxAuxv: (type, value) word pairs of `word_size` (4 or 8) bytes up to AT_NULL or the end of
/// the stream. A trailing partial pair is a warning.
std::vector<std::pair<uint64_t, uint64_t>> parseAuxv(const Stream &stream, unsigned word_size,
                                                     Diagnostics &diags);

} // namespace dumpsift::detail::mdmp
