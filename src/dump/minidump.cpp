// The minidump reader: turns the streams of an MDMP file into a Snapshot.
//
// Sources, in order of preference:
// - memory bytes: Memory64List, then MemoryList, then the threads' own stack descriptors (each
//   only where the earlier ones did not already capture the bytes);
// - region map: MemoryInfoList; else LinuxMaps; else the captured ranges themselves, classed from
//   the lists that name parts of the address space (see regionsFromCapture);
// - thread stacks: each thread's stack descriptor, else (Windows) the bounds in its TEB;
// - process: MiscInfo and LinuxProcStatus (pid), LinuxProcStatus (name), LinuxCMDLine, LinuxAuxv.
//
// MemoryInfoList policy: MEM_FREE entries are not regions, nor is a WOW64 process's reservation of
// the address space above 4 GiB (a MEM_RESERVE private entry there). MEM_RESERVE entries are
// regions with no permissions and nothing captured (address space the process holds but cannot
// touch, like a PROT_NONE line in /proc/PID/maps); they are class Image when the reservation is
// MEM_IMAGE or MEM_MAPPED and Other otherwise. Committed MEM_IMAGE and MEM_MAPPED regions are
// Image; committed writable MEM_PRIVATE regions are Anonymous (the heap candidates on Windows;
// finalizeSnapshot turns the ones that hold a thread's stack pointer or lie inside its stack into
// Stack); other committed ones are Other. When a LinuxMaps line covers exactly the same range it
// decides the class and the backing file instead (Linux writers mark file mappings MEM_PRIVATE).
// Image regions inside a module's range take the module's path as their backing file when nothing
// better is known.
#include "dumpsift/dump/address_space.h"
#include "dumpsift/support/hex.h"
#include "minidump_streams.h"
#include "readers.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace dumpsift::detail {

namespace {

using llvm::ArrayRef;

// Sorts the captured ranges and makes them disjoint without copying bytes: a range inside an
// earlier one is dropped (stacks are usually listed twice), one that overlaps an earlier one loses
// its overlapping front. Ranges that wrap past 2^64 are dropped with a warning.
void normalizeMemory(std::vector<MemoryRange> &memory, Diagnostics &diags) {
  std::erase_if(memory, [&](const MemoryRange &m) {
    if (m.start + m.bytes.size() >= m.start)
      return m.bytes.empty();
    diags.warn("memory range at " + hexAddress(m.start),
               "runs past the end of the address space; ignored");
    return true;
  });
  // Larger first among equal starts, so an exact duplicate or a shorter copy is the one dropped.
  std::stable_sort(memory.begin(), memory.end(), [](const MemoryRange &a, const MemoryRange &b) {
    return a.start != b.start ? a.start < b.start : a.bytes.size() > b.bytes.size();
  });
  std::vector<MemoryRange> kept;
  kept.reserve(memory.size());
  size_t trimmed = 0;
  for (MemoryRange &m : memory) {
    if (!kept.empty()) {
      uint64_t prev_end = kept.back().end();
      if (m.end() <= prev_end)
        continue;
      if (m.start < prev_end) {
        m.bytes = m.bytes.drop_front(prev_end - m.start);
        m.start = prev_end;
        ++trimmed;
      }
    }
    kept.push_back(m);
  }
  if (trimmed)
    diags.warn("minidump memory", std::to_string(trimmed) +
                                      " captured ranges overlap earlier ones; the earlier "
                                      "copy of the overlapping bytes is used");
  memory = std::move(kept);
}

// The module whose [start, end) holds `addr`, or nullptr. `modules` is sorted by start.
const Module *moduleContaining(const std::vector<Module> &modules, uint64_t addr) {
  auto it = std::upper_bound(modules.begin(), modules.end(), addr,
                             [](uint64_t a, const Module &m) { return a < m.start; });
  if (it == modules.begin())
    return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

// Region for one LinuxMaps line.
Region regionFromMaps(const mdmp::MapsEntry &e) {
  Region r;
  r.start = e.start;
  r.size = e.end - e.start;
  r.perms = e.perms;
  r.cls = mdmp::classifyMapsEntry(e);
  r.class_source = RegionSource::LinuxMaps;
  if (r.cls == RegionClass::Image && llvm::StringRef(e.path).startswith("/")) {
    r.backing_file = e.path;
    r.file_offset = e.offset;
  }
  return r;
}

// Regions from MemoryInfoList entries (policy in the file comment). `maps` (sorted by start) may
// be empty.
std::vector<Region> regionsFromMemoryInfo(const std::vector<mdmp::MemoryInfoEntry> &entries,
                                          const std::vector<mdmp::MapsEntry> &maps, bool wow64,
                                          Diagnostics &diags) {
  std::vector<Region> regions;
  regions.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const mdmp::MemoryInfoEntry &e = entries[i];
    if (e.size == 0 || (e.state & mdmp::kMemFree))
      continue;
    // A WOW64 process's reservation of the 64-bit address space (128 TiB that keep 64-bit
    // allocations out of the 32-bit program's way) is address space nothing uses: no region.
    if (wow64 && (e.state & mdmp::kMemReserve) && !(e.state & mdmp::kMemCommit) &&
        !(e.type & (mdmp::kMemImage | mdmp::kMemMapped)) && e.base + e.size > (uint64_t(1) << 32))
      continue;
    if (e.base + e.size < e.base) {
      diags.warn("MemoryInfoList entry " + std::to_string(i),
                 "region at " + hexAddress(e.base) +
                     " runs past the end of the address space; "
                     "ignored");
      continue;
    }
    Region r;
    r.start = e.base;
    r.size = e.size;
    r.mdmp_state = e.state;
    r.mdmp_type = e.type;
    r.class_source = RegionSource::MemoryInfo;
    const bool image = e.type & (mdmp::kMemImage | mdmp::kMemMapped);
    if ((e.state & mdmp::kMemReserve) && !(e.state & mdmp::kMemCommit)) {
      r.cls = image ? RegionClass::Image : RegionClass::Other;
    } else {
      r.perms = mdmp::permsFromProtect(e.protect);
      if (image)
        r.cls = RegionClass::Image;
      else
        r.cls = r.perms.write ? RegionClass::Anonymous : RegionClass::Other;
    }
    auto it = std::lower_bound(maps.begin(), maps.end(), r.start,
                               [](const mdmp::MapsEntry &m, uint64_t a) { return m.start < a; });
    if (it != maps.end() && it->start == r.start && it->end == r.end()) {
      Region from_maps = regionFromMaps(*it);
      r.cls = from_maps.cls;
      r.class_source = RegionSource::LinuxMaps;
      r.backing_file = from_maps.backing_file;
      r.file_offset = from_maps.file_offset;
    }
    regions.push_back(std::move(r));
  }
  return regions;
}

// Regions when no map of the address space exists (a full-memory dump written without
// MemoryInfoList, as Wine's MiniDumpWriteDump and `MiniDumpWithFullMemory` alone write it): the
// captured ranges, cut where a module image or a thread's stack begins or ends. A piece inside a
// module's range is Image with the module's path; every other piece is captured private memory,
// Anonymous, which the heap walkers and the region scan read (finalizeSnapshot turns the pieces
// inside a thread's stack into Stack). Only `read` is known of their permissions. `memory` and
// `modules` are sorted by start.
std::vector<Region> regionsFromCapture(const std::vector<MemoryRange> &memory,
                                       const std::vector<Module> &modules,
                                       const std::vector<Thread> &threads) {
  std::vector<uint64_t> cuts;
  cuts.reserve(2 * (modules.size() + threads.size()));
  for (const Module &m : modules)
    cuts.insert(cuts.end(), {m.start, m.end});
  for (const Thread &t : threads) {
    if (t.stack_end > t.stack_start)
      cuts.insert(cuts.end(), {t.stack_start, t.stack_end});
    if (t.wow64_stack_end > t.wow64_stack_start)
      cuts.insert(cuts.end(), {t.wow64_stack_start, t.wow64_stack_end});
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

  std::vector<Region> regions;
  regions.reserve(memory.size());
  for (const MemoryRange &m : memory) {
    for (uint64_t at = m.start; at < m.end();) {
      auto cut = std::upper_bound(cuts.begin(), cuts.end(), at);
      uint64_t end = cut == cuts.end() ? m.end() : std::min(m.end(), *cut);
      Region r;
      r.start = at;
      r.size = end - at;
      r.perms.read = true;
      r.perms.exact = false;
      r.cls = RegionClass::Anonymous;
      r.class_source = RegionSource::Captured;
      if (const Module *mod = moduleContaining(modules, at)) {
        r.cls = RegionClass::Image;
        r.class_source = RegionSource::ModuleList;
        r.backing_file = mod->path;
      }
      regions.push_back(std::move(r));
      at = end;
    }
  }
  return regions;
}

// The stack a thread's TEB records (NT_TIB: StackBase at one pointer, StackLimit at two, Self at
// six), when the TEB is captured and consistent: Self points back at it and StackLimit lies below
// StackBase. nullopt otherwise.
std::optional<std::pair<uint64_t, uint64_t>> stackFromTeb(const AddressSpace &memory, uint64_t teb,
                                                          unsigned pointer_size) {
  if (teb == 0 || (pointer_size != 4 && pointer_size != 8))
    return std::nullopt;
  const uint8_t *tib = memory.tryView(teb, 7 * pointer_size);
  if (!tib)
    return std::nullopt;
  auto word = [&](unsigned index) -> uint64_t {
    const uint8_t *p = tib + index * pointer_size;
    return pointer_size == 8 ? llvm::support::endian::read64le(p)
                             : llvm::support::endian::read32le(p);
  };
  const uint64_t base = word(1), limit = word(2), self = word(6);
  if (self != teb || limit >= base)
    return std::nullopt;
  return std::make_pair(limit, base);
}

// The process environment block a thread's TEB names (+0x60 in a 64-bit TEB, +0x30 in a 32-bit
// one), when the TEB is captured and its NT_TIB.Self points back at it; nullopt otherwise.
std::optional<uint64_t> pebFromTeb(const AddressSpace &memory, uint64_t teb,
                                   unsigned pointer_size) {
  if (teb == 0 || (pointer_size != 4 && pointer_size != 8))
    return std::nullopt;
  const bool wide = pointer_size == 8;
  const std::optional<uint64_t> self =
      wide ? memory.readU64(teb + 0x30) : std::optional<uint64_t>(memory.readU32(teb + 0x18));
  const std::optional<uint64_t> peb =
      wide ? memory.readU64(teb + 0x60) : std::optional<uint64_t>(memory.readU32(teb + 0x30));
  if (self != teb || !peb || *peb == 0)
    return std::nullopt;
  return peb;
}

// The distance from a WOW64 thread's 64-bit TEB to its 32-bit one (Windows 7 to 11), whose
// address the 64-bit TEB's NT_TIB.ExceptionList holds.
constexpr uint64_t kWow64Teb32Offset = 0x2000;

// A WOW64 thread: its 64-bit stack and stack pointer move to the wow64_ fields; its 32-bit TEB
// (named by the 64-bit TEB's first word and at kWow64Teb32Offset from it, or pointing back at
// itself) gives the 32-bit PEB and stack bounds when the dump holds it. The 32-bit stack pointer
// is the start of the thread's stack descriptor, which lies below 4 GiB and does not hold the
// 64-bit stack pointer: Windows' minidump writers save a stack from its stack pointer up (the
// 32-bit context itself lies in the 64-bit TEB's TLS slot 1, which is not read).
void readWow64Thread(const AddressSpace &memory, Thread &t, ProcessInfo &process) {
  t.wow64_stack_pointer = t.stack_pointer;
  if (auto stack = stackFromTeb(memory, t.teb, 8)) {
    std::tie(t.wow64_stack_start, t.wow64_stack_end) = *stack;
  }
  const bool descriptor_is_32bit =
      t.stack_source == RegionSource::ThreadList && t.stack_end <= (uint64_t(1) << 32) &&
      (t.stack_pointer < t.stack_start || t.stack_pointer >= t.stack_end);
  if (descriptor_is_32bit)
    t.stack_pointer = t.stack_start;
  const std::optional<uint64_t> named = t.teb ? memory.readU64(t.teb) : std::nullopt;
  if (named && *named != 0 && *named < (uint64_t(1) << 32) &&
      (*named == t.teb + kWow64Teb32Offset || memory.readU32(*named + 0x18) == *named))
    t.teb32 = *named;
  if (!t.teb32)
    return;
  if (std::optional<uint64_t> peb32 = pebFromTeb(memory, t.teb32, 4); peb32 && !process.peb32)
    process.peb32 = *peb32;
  if (auto stack = stackFromTeb(memory, t.teb32, 4)) {
    std::tie(t.stack_start, t.stack_end) = *stack;
    t.stack_source = RegionSource::Teb;
  }
}

} // namespace

llvm::Error readMinidump(Snapshot &snapshot) {
  llvm::StringRef buffer = snapshot.file->getBuffer();
  ArrayRef<uint8_t> file(reinterpret_cast<const uint8_t *>(buffer.data()), buffer.size());
  Diagnostics &diags = snapshot.diagnostics;

  auto dir = mdmp::readDirectory(file, diags);
  if (!dir)
    return dir.takeError();
  if (dir->streams.empty())
    diags.warn("minidump directory", "holds no usable stream; the snapshot is empty");

  // System.
  uint16_t arch = 0xffff;
  snapshot.system.os = Os::Unknown;
  snapshot.system.arch = "unknown";
  if (const mdmp::Stream *s = dir->find(mdmp::kSystemInfo)) {
    if (auto si = mdmp::parseSystemInfo(*s, diags)) {
      snapshot.system = si->info;
      arch = si->arch;
    }
  } else {
    diags.warn("minidump", "no SystemInfo stream; OS and architecture unknown, pointer size 8 "
                           "assumed");
  }

  // Process.
  if (const mdmp::Stream *s = dir->find(mdmp::kMiscInfo))
    snapshot.process.pid = mdmp::parseMiscInfoPid(*s);
  if (const mdmp::Stream *s = dir->find(mdmp::kLinuxProcStatus)) {
    mdmp::ProcStatus status = mdmp::parseProcStatus(
        llvm::StringRef(reinterpret_cast<const char *>(s->bytes.data()), s->bytes.size()));
    snapshot.process.name = status.name;
    if (!snapshot.process.pid)
      snapshot.process.pid = status.pid;
  }
  std::string argv0;
  if (const mdmp::Stream *s = dir->find(mdmp::kLinuxCmdLine)) {
    snapshot.process.command_line = mdmp::parseCmdLine(s->bytes);
    llvm::StringRef raw(reinterpret_cast<const char *>(s->bytes.data()), s->bytes.size());
    argv0 = raw.split('\0').first.rtrim('\n').str();
  }
  if (const mdmp::Stream *s = dir->find(mdmp::kLinuxAuxv))
    snapshot.auxv = mdmp::parseAuxv(*s, snapshot.system.pointer_size, diags);

  // Modules.
  if (const mdmp::Stream *s = dir->find(mdmp::kModuleList)) {
    for (mdmp::ModuleEntry &e : mdmp::parseModuleList(file, *s, diags)) {
      Module m;
      m.path = std::move(e.name);
      m.start = e.base;
      m.end = e.base + e.size < e.base ? std::numeric_limits<uint64_t>::max() : e.base + e.size;
      m.build_id = std::move(e.build_id);
      snapshot.modules.push_back(std::move(m));
    }
  }
  if (snapshot.process.name.empty()) {
    // Windows paths take either separator; elsewhere '\\' and ':' may be part of a name
    // ("nginx: worker process").
    const auto style = snapshot.system.os == Os::Windows ? llvm::sys::path::Style::windows
                                                         : llvm::sys::path::Style::posix;
    if (!argv0.empty())
      snapshot.process.name = llvm::sys::path::filename(argv0, style).str();
    else if (!snapshot.modules.empty()) // the first module is the main executable
      snapshot.process.name = llvm::sys::path::filename(snapshot.modules.front().path, style).str();
  }
  std::vector<Module> modules_by_start = snapshot.modules;
  std::sort(modules_by_start.begin(), modules_by_start.end(),
            [](const Module &a, const Module &b) { return a.start < b.start; });

  // Captured memory: Memory64List, MemoryList, then stacks the lists do not hold.
  std::vector<MemoryRange> memory;
  if (const mdmp::Stream *s = dir->find(mdmp::kMemory64List))
    memory = mdmp::parseMemory64List(file, *s, diags);
  if (const mdmp::Stream *s = dir->find(mdmp::kMemoryList))
    for (const MemoryRange &m : mdmp::parseMemoryList(file, *s, diags))
      memory.push_back(m);

  // Threads.
  if (const mdmp::Stream *s = dir->find(mdmp::kThreadList)) {
    mdmp::EntryWarnings stack_warnings(diags, mdmp::streamWhere(s->type) + " stacks");
    for (const mdmp::ThreadEntry &e : mdmp::parseThreadList(file, *s, diags)) {
      Thread t;
      t.tid = e.tid;
      t.teb = e.teb;
      t.stack_pointer = mdmp::stackPointerFromContext(arch, e.context).value_or(e.stack_start);
      t.registers = mdmp::registersFromContext(arch, e.context);
      if (e.stack_size != 0 && e.stack_start + e.stack_size > e.stack_start) {
        t.stack_start = e.stack_start;
        t.stack_end = e.stack_start + e.stack_size;
        t.stack_source = RegionSource::ThreadList;
        // RVA 0 is the header: full-memory dumps leave stack descriptors pointing nowhere.
        if (e.stack_rva != 0)
          if (auto bytes =
                  mdmp::fileSlice(file, e.stack_rva, e.stack_size, [&](mdmp::MessageFn message) {
                    stack_warnings.warn(
                        [&] { return "thread " + std::to_string(e.tid) + " stack"; }, message);
                  }))
            memory.push_back({e.stack_start, *bytes});
      }
      snapshot.threads.push_back(t);
    }
    stack_warnings.finish();
  }
  normalizeMemory(memory, diags);
  snapshot.memory = memory;

  // Windows: the TEBs give the PEB, and a thread without a stack descriptor (the thread that wrote
  // the dump, in Wine's and some Windows full-memory dumps) still has its stack bounds in its TEB
  // when the dump holds it. A 64-bit dump of a process that loaded wow64.dll is of a WOW64
  // process, whose threads have a 32-bit TEB and stack beside the 64-bit ones (readWow64Thread).
  if (snapshot.system.os == Os::Windows) {
    static constexpr ModuleName kWow64[] = {{"wow64.dll", ModuleName::Match::AnyCase}};
    snapshot.system.wow64 =
        snapshot.system.pointer_size == 8 && snapshot.findModule(kWow64).has_value();
    AddressSpace captured(snapshot);
    for (Thread &t : snapshot.threads) {
      if (!snapshot.process.peb)
        snapshot.process.peb =
            pebFromTeb(captured, t.teb, snapshot.system.pointer_size).value_or(0);
      if (snapshot.system.wow64)
        readWow64Thread(captured, t, snapshot.process);
      if (t.stack_end == 0)
        if (auto stack = stackFromTeb(captured, t.teb, snapshot.system.pointer_size)) {
          std::tie(t.stack_start, t.stack_end) = *stack;
          t.stack_source = RegionSource::Teb;
        }
    }
  }

  // Regions: MemoryInfoList, else LinuxMaps, else the captured ranges.
  std::vector<mdmp::MapsEntry> maps;
  if (const mdmp::Stream *s = dir->find(mdmp::kLinuxMaps)) {
    maps = mdmp::parseLinuxMaps(*s, diags).entries;
    std::stable_sort(maps.begin(), maps.end(),
                     [](const auto &a, const auto &b) { return a.start < b.start; });
  }
  std::optional<std::vector<mdmp::MemoryInfoEntry>> info;
  if (const mdmp::Stream *s = dir->find(mdmp::kMemoryInfoList))
    info = mdmp::parseMemoryInfoList(*s, diags);
  if (info) {
    snapshot.regions = regionsFromMemoryInfo(*info, maps, snapshot.system.wow64, diags);
  } else if (!maps.empty()) {
    snapshot.regions.reserve(maps.size());
    for (const mdmp::MapsEntry &e : maps)
      snapshot.regions.push_back(regionFromMaps(e));
  } else {
    snapshot.regions = regionsFromCapture(snapshot.memory, modules_by_start, snapshot.threads);
  }
  for (Region &r : snapshot.regions)
    if (r.cls == RegionClass::Image && r.backing_file.empty())
      if (const Module *mod = moduleContaining(modules_by_start, r.start))
        r.backing_file = mod->path;
  return llvm::Error::success();
}

} // namespace dumpsift::detail
