#include "fuzz_targets.h"

#include "../../src/report/json_values.h"
#include "dumpsift/analysis/analysis.h"
#include "dumpsift/dump/address_space.h"
#include "dumpsift/heap/walker.h"
#include "dumpsift/report/html_report.h"
#include "dumpsift/report/info.h"
#include "dumpsift/report/report.h"
#include "dumpsift/sniff/framing.h"
#include "dumpsift/sniff/json_text.h"
#include "dumpsift/sniff/sniffer.h"
#include "dumpsift/sniff/thumbnail.h"
#include "dumpsift/support/utf8.h"
#include "support/byte_builder.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// A broken library contract: print it and abort, so that both libFuzzer and ctest report a crash.
#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);           \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

namespace dumpsift::fuzz {

namespace {

/// True when `part` lies inside [whole.begin(), whole.end()).
bool within(llvm::ArrayRef<uint8_t> part, llvm::ArrayRef<uint8_t> whole) {
  if (part.empty())
    return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

/// Checks what a report needs of a sniff result: an offset inside the buffer, string details in
/// valid UTF-8.
void checkResult(const SniffResult &r, size_t size) {
  FUZZ_CHECK(r.offset <= size);
  (void)kindName(r.kind);
  for (const auto &[key, value] : r.details.entries)
    if (const auto *text = std::get_if<std::string>(&value))
      FUZZ_CHECK(isValidUtf8(*text));
}

/// True when `text` can go to a terminal as it is: no control byte but newline and tab (no ESC,
/// BEL, CR, backspace), no DEL.
bool terminalSafe(llvm::StringRef text) {
  return std::none_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<uint8_t>(c);
    return (byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f;
  });
}

/// `info`'s text for `snapshot`, checked to be safe for a terminal.
/// Every string the reader took from the dump goes into `info --json` and the report as it is:
/// nlohmann's serializer throws (and so aborts the fuzzer) on one that is not UTF-8. Each string
/// is serialized alone: the whole info JSON of a dump with thousands of entries costs more than
/// the rest of the target, and its other values are numbers and names of the tool's own.
void checkStringsJsonSafe(const Snapshot &snapshot) {
  auto check = [](const std::string &text) {
    // ASCII serializes as it is (escapes aside): only text with a byte of 0x80 or more can throw.
    if (std::any_of(text.begin(), text.end(),
                    [](char c) { return static_cast<uint8_t>(c) >= 0x80; }))
      (void)nlohmann::json(text).dump();
  };
  check(snapshot.system.arch);
  check(snapshot.process.name);
  check(snapshot.process.command_line);
  for (const Module &m : snapshot.modules) {
    check(m.path);
    check(m.build_id);
  }
  for (const Region &r : snapshot.regions)
    check(r.backing_file);
  for (const Diagnostic &d : snapshot.diagnostics.warnings()) {
    check(d.where);
    check(d.message);
  }
}

void checkInfoText(const Snapshot &snapshot) {
  std::string text_text;
  llvm::raw_string_ostream text(text_text);
  writeInfoText(snapshot, text);
  FUZZ_CHECK(terminalSafe(text.str()));
}

/// Runs `walker` over `memory` the way the analysis does (on a process its platforms include,
/// detect, then walk) and checks what the HeapWalker contract promises: allocations come in
/// address order within an area, areas are sorted, the stats match the allocations. `force`
/// walks whatever detect says.
void walkOne(const HeapWalker &walker, const AddressSpace &memory, bool force) {
  if (!walker.traits().platforms.reads(memory.snapshot().system))
    return;
  if (!walker.detect(memory) && !force)
    return;
  Diagnostics diags;
  HeapStats seen;
  uint64_t allocations = 0;
  llvm::Expected<HeapWalkResult> result = walker.walk(
      memory,
      [&](const Allocation &a) {
        seen.add(a);
        ++allocations;
        // Touch the strings a report would copy.
        if (a.managed)
          FUZZ_CHECK(a.managed->type_name.size() < (1u << 20));
      },
      diags);
  if (!result) {
    llvm::consumeError(result.takeError());
    return;
  }
  FUZZ_CHECK(
      std::is_sorted(result->areas.begin(), result->areas.end(),
                     [](const HeapArea &a, const HeapArea &b) { return a.start < b.start; }));
  FUZZ_CHECK(result->stats.used_count + result->stats.free_count + result->stats.unknown_count <=
             allocations);
  (void)diags.warnings();
}

/// What `info` and the address space do with an opened dump: the info summary and its strings,
/// checked reads at every region's edges. The walkers, the region scan and the report run on
/// the same inputs in the pipeline target (fuzzPipeline), which has their budgets.
void exerciseSnapshot(const Snapshot &snapshot, llvm::ArrayRef<uint8_t> file) {
  for (const MemoryRange &m : snapshot.memory)
    FUZZ_CHECK(within(m.bytes, file));
  FUZZ_CHECK(std::is_sorted(snapshot.regions.begin(), snapshot.regions.end(),
                            [](const Region &a, const Region &b) { return a.start < b.start; }));
  ClassTotals totals = classTotals(snapshot);
  (void)totals;
  checkStringsJsonSafe(snapshot);
  checkInfoText(snapshot);
  AddressSpace memory(snapshot);
  for (const Region &r : snapshot.regions) {
    (void)memory.classify(r.start);
    (void)memory.classify(r.end() - 1);
    uint8_t edge[16];
    llvm::consumeError(memory.read(r.start, edge));
    (void)memory.capturedRunFrom(r.start);
  }
}

/// Opens `data` as a dump from memory and exercises the snapshot; errors are ordinary answers.
int openAndExercise(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto snapshot = openDump(llvm::MemoryBuffer::getMemBuffer(bytes, "fuzz-input",
                                                            /*RequiresNullTerminator=*/false));
  if (!snapshot) {
    llvm::consumeError(snapshot.takeError());
    return 0;
  }
  exerciseSnapshot(**snapshot, llvm::ArrayRef<uint8_t>(data, size));
  return 0;
}

/// What `dumpsift analyze` does with a dump, with its defaults (every walker that detects its
/// heaps, the region scan, the run's sniffing budget) but one thread and a 4 KiB threshold: the
/// JSON report must parse, and the text summary and `info`'s text must be safe for a terminal.
void runPipeline(const Snapshot &snapshot) {
  AddressSpace memory(snapshot);
  AnalyzeOptions options;
  options.min_size = 4096;
  options.threads = 1;
  const Analysis analysis = analyze(memory, options);
  std::string json;
  llvm::raw_string_ostream json_out(json);
  writeReportJson(snapshot, analysis, nullptr, json_out);
  json_out.flush();
  FUZZ_CHECK(!nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false).is_discarded());
  std::string summary_text;
  llvm::raw_string_ostream summary(summary_text);
  writeSummaryText(snapshot, analysis, TextOptions{}, summary);
  FUZZ_CHECK(terminalSafe(summary.str()));
  // The page: whole, valid UTF-8, with a warnings list when there are warnings.
  std::string page;
  llvm::raw_string_ostream page_out(page);
  writeReportHtml(snapshot, memory, analysis, nullptr, HtmlOptions{}, page_out);
  page_out.flush();
  FUZZ_CHECK(llvm::StringRef(page).endswith("</body></html>\n"));
  FUZZ_CHECK(isValidUtf8(page));
  const bool warned = !snapshot.diagnostics.empty() || !analysis.diagnostics.empty();
  FUZZ_CHECK((page.find("<h2>Warnings</h2>") != std::string::npos) == warned);
  checkInfoText(snapshot);
}

/// Runs the walkers named in `names` over the fuzz process `data` (even when detect says no, so
/// that the walk itself is reached without the fuzzer having to find a module name first).
int walkFuzzProcess(const uint8_t *data, size_t size,
                    std::initializer_list<llvm::StringRef> names) {
  std::unique_ptr<Snapshot> snapshot = decodeFuzzProcess(data, size);
  AddressSpace memory(*snapshot);
  for (const auto &walker : heapWalkers())
    if (std::find(names.begin(), names.end(), walker->name()) != names.end())
      walkOne(*walker, memory, /*force=*/true);
  return 0;
}

} // namespace

int fuzzElfCore(const uint8_t *data, size_t size) {
  if (size < 4 || std::memcmp(data,
                              "\x7f"
                              "ELF",
                              4) != 0)
    return 0;
  return openAndExercise(data, size);
}

int fuzzMinidump(const uint8_t *data, size_t size) {
  if (size < 4 || std::memcmp(data, "MDMP", 4) != 0)
    return 0;
  return openAndExercise(data, size);
}

int fuzzGlibcWalker(const uint8_t *data, size_t size) {
  return walkFuzzProcess(data, size, {"glibc"});
}

int fuzzJemallocWalker(const uint8_t *data, size_t size) {
  return walkFuzzProcess(data, size, {"jemalloc"});
}

int fuzzManagedWalkers(const uint8_t *data, size_t size) {
  return walkFuzzProcess(data, size, {"coreclr", "netfx", "mono", "hotspot"});
}

int fuzzMimallocWalker(const uint8_t *data, size_t size) {
  return walkFuzzProcess(data, size, {"mimalloc"});
}

int fuzzMuslWalker(const uint8_t *data, size_t size) {
  return walkFuzzProcess(data, size, {"musl"});
}
int fuzzTcmallocWalker(const uint8_t *data, size_t size) {
  return walkFuzzProcess(data, size, {"tcmalloc"});
}

int fuzzGoWalker(const uint8_t *data, size_t size) {
  return walkFuzzProcess(data, size, {"go"});
}

int fuzzNtHeapWalker(const uint8_t *data, size_t size) {
  return walkFuzzProcess(data, size, {"ntheap"});
}

int fuzzPipeline(const uint8_t *data, size_t size) {
  const bool dump = size >= 4 && (std::memcmp(data,
                                              "\x7f"
                                              "ELF",
                                              4) == 0 ||
                                  std::memcmp(data, "MDMP", 4) == 0);
  if (!dump) {
    runPipeline(*decodeFuzzProcess(data, size));
    return 0;
  }
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  auto snapshot = openDump(llvm::MemoryBuffer::getMemBuffer(bytes, "fuzz-input",
                                                            /*RequiresNullTerminator=*/false));
  if (!snapshot) {
    llvm::consumeError(snapshot.takeError());
    return 0;
  }
  {
    const AddressSpace memory(**snapshot);
    for (const auto &walker : heapWalkers())
      walkOne(*walker, memory, /*force=*/false);
  }
  runPipeline(**snapshot);
  return 0;
}

int fuzzSniff(const uint8_t *data, size_t size) {
  const llvm::ArrayRef<uint8_t> buffer(data, size);
  checkResult(sniff(buffer), size);
  const llvm::ArrayRef<uint8_t> head = buffer.take_front(Sniffer::kHeadBytes);
  const size_t window = std::min(size, Sniffer::kEmbeddedWindow);
  for (const auto &sniffer : sniffers()) {
    if (sniffer->quickCheck(head)) {
      std::optional<SniffResult> r = sniffer->validate(buffer);
      if (r)
        checkResult(*r, size);
    }
    size_t at = sniffer->findCandidate(buffer, 0, window);
    FUZZ_CHECK(at == Sniffer::kNoCandidate || at < window);
    if (at != Sniffer::kNoCandidate)
      (void)sniffer->quickCheck(buffer.drop_front(at).take_front(Sniffer::kHeadBytes));
  }
  if (std::optional<AwsChunkedLayout> aws = parseAwsChunked(buffer)) {
    FUZZ_CHECK(aws->length <= size);
    FUZZ_CHECK(aws->chunks.size() <= AwsChunkedLayout::kMaxChunks);
    (void)awsChunkedVariantName(aws->variant);
  }
  for (llvm::ArrayRef<uint8_t> part : awsChunkedPayload(buffer))
    FUZZ_CHECK(within(part, buffer));
  if (std::optional<AmqpLayout> amqp = parseAmqp(buffer)) {
    FUZZ_CHECK(amqp->length <= size);
    FUZZ_CHECK(amqp->frames.size() <= AmqpLayout::kMaxFrames);
    // Frames in order, each right after the last but for a pool's padding (under 8 bytes), the
    // extent ending with the last.
    uint64_t end = amqp->protocol_header ? 8 : 0, padding = 0;
    for (const AmqpFrame &frame : amqp->frames) {
      FUZZ_CHECK(frame.offset >= end && frame.offset - end < 8);
      padding += frame.offset - end;
      end = frame.offset + 8 + uint64_t(frame.size);
    }
    FUZZ_CHECK(end == amqp->length && padding == amqp->padding_bytes);
    (void)amqpMethodName(amqp->class_id, amqp->method_id);
  }
  for (llvm::ArrayRef<uint8_t> body : amqpBodies(buffer))
    FUZZ_CHECK(within(body, buffer));
  // The region scan's JSON lead: a closed value lies inside the buffer.
  if (std::optional<uint64_t> json = closedJsonValueLength(buffer, size))
    FUZZ_CHECK(*json >= 2 && *json <= size);
  // Thumbnails (the HTML report) decode what the sniff calls an image, and any PNG header: a
  // small picture or none, within the limits.
  const SniffResult content = sniff(buffer);
  for (ContentKind kind : {content.kind, ContentKind::Png}) {
    if (!hasThumbnail(kind) || content.offset >= size)
      continue;
    const ThumbnailLimits limits;
    if (std::optional<Thumbnail> t = makeThumbnail(kind, buffer.drop_front(content.offset), limits))
      FUZZ_CHECK(!t->bytes.empty() && t->width <= limits.max_side && t->height <= limits.max_side);
  }
  return 0;
}

const std::vector<Target> &targets() {
  static const std::vector<Target> list = {
#define DUMPSIFT_FUZZ_TARGET(name, function) {#name, function},
#include "fuzz_targets.def"
#undef DUMPSIFT_FUZZ_TARGET
  };
  return list;
}

const std::vector<std::string> &fuzzProcessFiles() {
  static const std::vector<std::string> files = {
      "",
      "/usr/lib/x86_64-linux-gnu/libc.so.6",
      "/usr/lib/x86_64-linux-gnu/libc-2.31.so",
      "/opt/app/program",
      "/usr/share/dotnet/shared/Microsoft.NETCore.App/9.0.0/libcoreclr.so",
      "/usr/lib/libmonosgen-2.0.so.1",
      "/usr/bin/mono-sgen",
      "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", // and any other file
  };
  return files;
}

std::unique_ptr<Snapshot> decodeFuzzProcess(const uint8_t *data, size_t size) {
  auto snap = std::make_unique<Snapshot>();
  snap->path = "fuzz-process";
  if (size == 0)
    return snap;
  const uint8_t flags = data[0];
  snap->system.pointer_size = (flags & 1) ? 4 : 8;
  snap->system.arch = (flags & 1) ? "x86" : "x86_64";
  snap->system.os = (flags & 2) ? Os::Windows : Os::Linux;
  if (flags & 4) // a .NET Framework 2.0 process: the netfx walker reads CLR 2's layout
    snap->modules.push_back(
        {"C:\\Windows\\Microsoft.NET\\Framework\\v2.0.50727\\mscorwks.dll", 0, 0, ""});
  const std::vector<std::string> &files = fuzzProcessFiles();
  struct Decoded {
    Region region;
    llvm::ArrayRef<uint8_t> bytes;
    bool module = false;
  };
  std::vector<Decoded> decoded;
  size_t p = 1;
  constexpr size_t kRegionHeader = 1 + 8 + 4 + 4;
  while (p < size && decoded.size() < kMaxFuzzRegions) {
    const uint8_t attrs = data[p];
    if (attrs == kAuxvRecord) {
      if (size - p < 17)
        break;
      snap->auxv.push_back({llvm::support::endian::read64le(data + p + 1),
                            llvm::support::endian::read64le(data + p + 9)});
      p += 17;
      continue;
    }
    if (size - p < kRegionHeader)
      break;
    Decoded d;
    Region &r = d.region;
    r.start = llvm::support::endian::read64le(data + p + 1);
    r.size = llvm::support::endian::read32le(data + p + 9);
    uint64_t captured = llvm::support::endian::read32le(data + p + 13);
    p += kRegionHeader;
    captured = std::min<uint64_t>({captured, r.size, size - p});
    d.bytes = llvm::ArrayRef<uint8_t>(data + p, captured);
    p += captured;
    r.backing_file = files[attrs & 7];
    r.cls = static_cast<RegionClass>(((attrs >> 3) & 7) % 5);
    r.perms.read = true;
    r.perms.write = (attrs & 0x40) != 0;
    r.captured = captured;
    d.module = (attrs & 0x80) != 0;
    if (r.size != 0 && r.start + r.size > r.start)
      decoded.push_back(std::move(d));
  }
  // Keep the Snapshot invariants: sorted by start, no overlap (a region that overlaps the one
  // before it in address order is dropped).
  std::stable_sort(decoded.begin(), decoded.end(), [](const Decoded &a, const Decoded &b) {
    return a.region.start < b.region.start;
  });
  std::vector<bool> module_flags;
  for (const Decoded &d : decoded) {
    if (!snap->regions.empty() && d.region.start < snap->regions.back().end())
      continue;
    snap->regions.push_back(d.region);
    module_flags.push_back(d.module);
    if (!d.bytes.empty())
      snap->memory.push_back({d.region.start, d.bytes});
  }
  // Modules: a flagged region and the regions of the same file right after it.
  for (size_t i = 0; i < snap->regions.size(); ++i) {
    const Region &r = snap->regions[i];
    if (!module_flags[i] || r.backing_file.empty())
      continue;
    uint64_t end = r.end();
    for (size_t j = i + 1; j < snap->regions.size() && snap->regions[j].start == end &&
                           snap->regions[j].backing_file == r.backing_file;
         ++j)
      end = snap->regions[j].end();
    snap->modules.push_back({r.backing_file, r.start, end, ""});
  }
  return snap;
}

std::string encodeFuzzProcess(const Snapshot &snapshot,
                              const std::function<bool(const Region &)> &keep,
                              uint64_t max_bytes_per_region) {
  std::string exe;
  AddressSpace memory(snapshot);
  for (const auto &[type, value] : snapshot.auxv)
    if (type == 9 || type == 3) // AT_ENTRY, AT_PHDR
      if (const Region *r = memory.regionContaining(value))
        exe = r->backing_file;
  auto fileIndex = [&](const std::string &path) -> uint8_t {
    llvm::StringRef base = llvm::StringRef(path).rsplit('/').second;
    if (base.empty())
      base = path;
    if (path.empty())
      return 0;
    if (base.startswith("libc.so"))
      return 1;
    if (base.startswith("libc-"))
      return 2;
    if (path == exe)
      return 3;
    if (base == "libcoreclr.so")
      return 4;
    if (base.startswith("libmonosgen-2.0.so") || base.startswith("libmono-2.0.so"))
      return 5;
    if (base == "mono" || base == "mono-sgen")
      return 6;
    return 7;
  };
  test::ByteWriter out;
  out.u8((snapshot.system.pointer_size == 4 ? 1 : 0) | (snapshot.system.os == Os::Windows ? 2 : 0));
  for (const auto &[type, value] : snapshot.auxv)
    out.u8(kAuxvRecord).u64(type).u64(value);
  size_t kept = 0;
  for (size_t i = 0; i < snapshot.regions.size() && kept < kMaxFuzzRegions; ++i) {
    const Region &r = snapshot.regions[i];
    if (!keep(r) || r.size > UINT32_MAX)
      continue;
    ++kept;
    bool module_start = false;
    for (const Module &m : snapshot.modules)
      module_start |= m.start == r.start;
    uint8_t attrs = fileIndex(r.backing_file) | uint8_t(unsigned(r.cls) << 3) |
                    (r.perms.write ? 0x40 : 0) | (module_start ? 0x80 : 0);
    const MemoryRange *range = memory.rangeContaining(r.start);
    llvm::ArrayRef<uint8_t> bytes;
    if (range && range->start == r.start)
      bytes = range->bytes.take_front(std::min<uint64_t>(r.size, max_bytes_per_region));
    out.u8(attrs).u64(r.start).u32(uint32_t(r.size)).u32(uint32_t(bytes.size())).raw(bytes);
  }
  return std::string(out.bytes.begin(), out.bytes.end());
}

} // namespace dumpsift::fuzz
