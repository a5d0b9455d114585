// The analysis report as JSON: each part's value, and the streamed writer (report.h).
#include "dumpsift/report/report.h"
#include "dumpsift/support/hex.h"
#include "dumpsift/support/version.h"
#include "group_labels.h"
#include "json_values.h"

#include <variant>

namespace dumpsift {

using namespace detail;

namespace {

/// One holder: its kind, where the reference lies and what names it.
Json holderJson(const Holder &h) {
  Json j;
  j["kind"] = holderKindName(h.kind).str();
  if (h.kind != HolderKind::Register)
    j["address"] = hexAddress(h.slot);
  switch (h.kind) {
  case HolderKind::Heap:
    if (h.block_size) {
      j["allocation"] = hexAddress(h.block);
      j["allocation_size"] = h.block_size;
      j["offset"] = h.offset();
    }
    if (!h.walker.empty())
      j["allocator"] = h.walker.str();
    if (!h.class_name.empty())
      j["class"] = h.class_name.str();
    if (!h.field.empty())
      j["field"] = h.field.str();
    if (h.is_static)
      j["static"] = true;
    break;
  case HolderKind::Stack:
    if (h.goroutine)
      j["goroutine"] = h.goroutine;
    else
      j["thread"] = h.thread;
    if (!h.function.empty())
      j["function"] = h.function.str();
    break;
  case HolderKind::Register:
    j["thread"] = h.thread;
    j["register"] = h.register_name.str();
    break;
  case HolderKind::Global:
    j["module"] = h.module.str();
    if (!h.symbol.empty())
      j["symbol"] = h.symbol.str();
    j["symbol_offset"] = h.symbol_offset;
    break;
  case HolderKind::Other:
    break;
  }
  if (!h.handle.empty()) {
    j["handle"] = h.handle.str();
    j["allocator"] = h.walker.str();
  }
  j["points_to"] = hexAddress(h.points_to);
  return j;
}

/// The holders summary of group `g`.
Json groupHoldersJson(const Analysis &analysis, const SizeGroup &g) {
  const GroupHolders s = summarizeHolders(analysis.holders, g.members);
  Json j;
  Json verdicts = Json::object();
  for (const auto &[verdict, count] : s.verdicts)
    verdicts[verdictName(verdict).str()] = count;
  j["verdicts"] = std::move(verdicts);
  if (s.holder) {
    j["holder"] = holderJson(*s.holder);
    j["held_alike"] = s.held_alike;
    j["same_offset"] = s.same_offset;
  }
  if (s.root) {
    j["root"] = holderJson(*s.root);
    j["rooted_alike"] = s.rooted_alike;
  }
  if (s.owner) {
    j["owner"] = holderJson(*s.owner);
    j["owned_alike"] = s.owned_alike;
  }
  j["summary"] = holdersSentence(s);
  return j;
}

/// What the holders pass did.
Json holdersRunJson(const HoldersRun &run) {
  Json j;
  j["requested"] = holdersModeName(run.requested).str();
  j["ran"] = holdersModeName(run.ran).str();
  j["reachability"] = run.reachability;
  j["heap_holders_named"] = run.heap_holders_named;
  if (!run.limited.empty())
    j["limited"] = run.limited;
  j["blocks"] = run.blocks;
  j["references"] = run.references;
  j["scanned_bytes"] = run.scanned_bytes;
  j["opaque_bytes"] = run.opaque_bytes;
  Json roots = Json::object();
  for (HolderKind k :
       {HolderKind::Stack, HolderKind::Register, HolderKind::Global, HolderKind::Other})
    roots[holderKindName(k).str()] = run.roots[static_cast<size_t>(k)];
  j["roots"] = std::move(roots);
  j["module_files"] = run.module_files;
  j["modules_unread"] = run.modules_unread;
  return j;
}

Json groupJson(const Analysis &analysis, const SizeGroup &g) {
  Json j;
  j["size"] = g.size;
  j["state"] = stateName(g.state).str();
  if (g.kind)
    j["kind"] = kindName(*g.kind).str();
  j["allocator"] = g.allocator;
  j["count"] = g.count;
  j["total_bytes"] = g.total_bytes;
  Json kinds = Json::object();
  for (const auto &[kind, count] : g.kinds)
    kinds[kindName(kind).str()] = count;
  j["kinds"] = std::move(kinds);
  // .NET arrays: the object size and the array length the story speaks of.
  if (!g.members.empty()) {
    const Buffer &first = analysis.buffers[g.members.front()];
    if (first.allocation.managed) {
      const ManagedArray &m = *first.allocation.managed;
      j["managed_type"] = m.type_name.empty() ? "array" : m.type_name;
      j["array_length"] = m.length;
    }
  }
  Json addresses = Json::array();
  for (size_t i : g.members)
    addresses.push_back(hexAddress(analysis.buffers[i].allocation.address));
  j["addresses"] = std::move(addresses);
  if (analysis.holders.run.requested != HoldersMode::None)
    j["holders"] = groupHoldersJson(analysis, g);
  return j;
}

} // namespace

Json detail::heapJson(const HeapWalkResult &h) {
  Json j;
  j["walker"] = h.walker;
  Json facts = Json::object();
  for (const auto &[key, value] : h.facts)
    facts[key] = value;
  j["facts"] = std::move(facts);
  if (h.size_classes)
    j["size_classes"] = true;
  j["stats"] =
      Json{{"used_count", h.stats.used_count},       {"used_bytes", h.stats.used_bytes},
           {"free_count", h.stats.free_count},       {"free_bytes", h.stats.free_bytes},
           {"unknown_count", h.stats.unknown_count}, {"unknown_bytes", h.stats.unknown_bytes}};
  Json areas = Json::array();
  for (const HeapArea &a : h.areas) {
    Json aj{{"kind", a.kind}, {"start", hexAddress(a.start)}, {"size", a.size}};
    if (a.arena)
      aj["arena"] = hexAddress(a.arena);
    areas.push_back(std::move(aj));
  }
  j["areas"] = std::move(areas);
  return j;
}

Json detail::detailsJson(const Details &details) {
  Json j = Json::object();
  for (const auto &[key, value] : details.entries)
    std::visit([&, &k = key](const auto &v) { j[k] = v; }, value);
  return j;
}

Json detail::bufferJson(const Analysis &analysis, const Buffer &b) {
  const Allocation &a = b.allocation;
  Json j;
  j["address"] = hexAddress(a.address);
  j["size"] = a.size;
  j["allocator"] = bufferSource(analysis, b).str();
  j["state"] = stateName(a.state).str();
  j["kind"] = kindName(b.content.kind).str();
  if (b.content.offset)
    j["offset"] = b.content.offset;
  j["content_length"] = b.content.length;
  if (b.content.length_estimated || b.estimated)
    j["length_estimated"] = true;
  j["details"] = detailsJson(b.content.details);
  j["hash"] = (b.hash_sampled ? "xxh64-sampled:" : "xxh64:") + hexAddress(b.hash).substr(2);
  if (b.captured < b.payloadSize())
    j["captured_bytes"] = b.captured;
  if (a.chunk_address != a.address) {
    j["chunk"] = hexAddress(a.chunk_address);
    j["chunk_size"] = a.chunk_size;
  }
  if (a.mmapped)
    j["mmapped"] = true;
  if (a.whole_pages)
    j["whole_pages"] = true;
  if (a.arena)
    j["arena"] = hexAddress(a.arena);
  if (a.data_offset)
    j["data_offset"] = a.data_offset;
  if (a.size_class >= 0)
    j["size_class"] = a.size_class;
  if (a.noscan)
    j["noscan"] = true;
  const size_t index = static_cast<size_t>(&b - analysis.buffers.data());
  if (analysis.holders.run.requested != HoldersMode::None && index < analysis.buffers.size() &&
      index < analysis.holders.buffers.size()) {
    const BufferHolders &h = analysis.holders.buffers[index];
    j["verdict"] = verdictName(h.verdict).str();
    if (h.verdict == Verdict::Anchored)
      j["anchor"] = holderKindName(h.anchor).str();
    Json holders = Json::array();
    for (const Holder &holder : h.holders)
      holders.push_back(holderJson(holder));
    j["holders"] = std::move(holders);
    j["references"] = h.references;
    if (!h.path.empty()) {
      Json path = Json::array();
      for (const Holder &step : h.path)
        path.push_back(holderJson(step));
      j["path"] = std::move(path);
      j["path_steps"] = h.path_steps;
    }
  }
  if (a.managed) {
    const ManagedArray &m = *a.managed;
    j["managed"] = Json{{"type", m.type_name.empty() ? "array" : m.type_name},
                        {"method_table", hexAddress(m.method_table)},
                        {"length", m.length},
                        {"element_size", m.element_size},
                        {"large_object_heap", m.large_object_heap}};
    if (!m.heap_kind.empty())
      j["managed"]["heap_kind"] = m.heap_kind;
  }
  if (!b.stale_content.empty()) {
    Json stale = Json::array();
    for (const StaleContent &c : b.stale_content) {
      Json cj{{"offset", c.offset}, {"length", c.length}, {"kind", kindName(c.kind).str()}};
      if (c.estimated)
        cj["length_estimated"] = true;
      stale.push_back(std::move(cj));
    }
    j["stale_content"] = std::move(stale);
  }
  return j;
}

Json detail::findingJson(llvm::StringRef type, uint64_t bytes,
                         llvm::ArrayRef<std::pair<std::string, uint64_t>> numbers,
                         const std::vector<uint64_t> *addresses, llvm::StringRef explanation) {
  Json j;
  j["type"] = type.str();
  j["bytes"] = bytes;
  for (const auto &[key, value] : numbers)
    j[key] = value;
  if (addresses) {
    Json list = Json::array();
    for (uint64_t a : *addresses)
      list.push_back(hexAddress(a));
    j["addresses"] = std::move(list);
  }
  j["explanation"] = explanation.str();
  return j;
}

std::string detail::dumpJson(const Json &json, int indent) {
  return json.dump(indent, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

namespace {

/// The report with an empty `buffers` array (the buffers are the bulk: writeReportJson streams
/// them one at a time).
Json reportJsonWithoutBuffers(const Snapshot &snapshot, const Analysis &analysis,
                              const Extraction *extracted, const ReportLabels &labels) {
  Json j;
  j["schema_version"] = kReportSchemaVersion;
  j["tool"] = Json{{"name", kToolName}, {"version", toolVersion().str()}};
  j["dump"] = dumpSummaryJson(snapshot);
  if (!labels.empty()) {
    Json label_values = Json::object();
    for (const auto &[key, value] : labels)
      label_values[key] = value;
    j["labels"] = std::move(label_values);
  }
  j["options"] = optionsJson(analysis.options);

  Json heaps = Json::array();
  for (const HeapWalkResult &h : analysis.heaps)
    heaps.push_back(heapJson(h));
  j["heaps"] = std::move(heaps);
  if (analysis.holders.run.requested != HoldersMode::None)
    j["holders"] = holdersRunJson(analysis.holders.run);

  uint64_t unclaimed_bytes = 0;
  Json unclaimed = Json::array();
  for (const UnclaimedRange &u : analysis.unclaimed) {
    unclaimed_bytes += u.size;
    if (u.size >= analysis.options.min_size)
      unclaimed.push_back(Json{
          {"start", hexAddress(u.start)}, {"size", u.size}, {"class", className(u.cls).str()}});
  }

  uint64_t buffer_bytes = 0;
  Json by_kind = Json::object();
  for (ContentKind k : allKinds()) {
    uint64_t count = 0, bytes = 0;
    for (const Buffer &b : analysis.buffers)
      if (b.content.kind == k) {
        ++count;
        bytes += b.allocation.size;
      }
    if (count)
      by_kind[kindName(k).str()] = Json{{"count", count}, {"bytes", bytes}};
  }
  for (const Buffer &b : analysis.buffers)
    buffer_bytes += b.allocation.size;
  j["summary"] = Json{{"allocations_seen", analysis.allocations_seen},
                      {"buffers", analysis.buffers.size()},
                      {"buffer_bytes", buffer_bytes},
                      {"groups", analysis.groups.size()},
                      {"by_kind", std::move(by_kind)},
                      {"unclaimed_bytes", unclaimed_bytes}};

  Json groups = Json::array();
  for (const SizeGroup &g : analysis.groups)
    groups.push_back(groupJson(analysis, g));
  j["groups"] = std::move(groups);

  j["buffers"] = Json::array();

  Json findings = Json::array();
  for (const Finding &f : analysis.findings)
    findings.push_back(findingJson(f.type, f.bytes, f.numbers, &f.addresses, f.explanation));
  j["findings"] = std::move(findings);
  j["unclaimed"] = std::move(unclaimed);
  if (extracted)
    j["extracted"] = extractedJson(*extracted);

  Json diagnostics = diagnosticsJson(snapshot.diagnostics);
  for (Json &d : diagnosticsJson(analysis.diagnostics))
    diagnostics.push_back(std::move(d));
  if (extracted)
    for (Json &d : diagnosticsJson(extracted->diagnostics))
      diagnostics.push_back(std::move(d));
  j["diagnostics"] = std::move(diagnostics);
  return j;
}

} // namespace

Json detail::reportJson(const Snapshot &snapshot, const Analysis &analysis,
                        const Extraction *extracted, const ReportLabels &labels) {
  Json j = reportJsonWithoutBuffers(snapshot, analysis, extracted, labels);
  Json &buffers = j["buffers"];
  for (const Buffer &b : analysis.buffers)
    buffers.push_back(bufferJson(analysis, b));
  return j;
}

void writeReportJson(const Snapshot &snapshot, const Analysis &analysis,
                     const Extraction *extracted, llvm::raw_ostream &out,
                     const ReportLabels &labels) {
  writeJsonStreamingArray(out, reportJsonWithoutBuffers(snapshot, analysis, extracted, labels),
                          "buffers", analysis.buffers.size(),
                          [&](size_t i) { return bufferJson(analysis, analysis.buffers[i]); });
  out << "\n";
}

namespace {

/// Writes `text` (a dumped JSON value, lines indented from 0) with every line after the first
/// indented by `indent` more spaces, as nlohmann's dump does for a nested value. Strings in dumped
/// JSON hold no raw newlines, so every newline starts a line of the value.
void writeIndented(llvm::raw_ostream &out, llvm::StringRef text, unsigned indent) {
  for (;;) {
    auto [line, rest] = text.split('\n');
    out << line;
    if (line.size() == text.size()) // no newline left
      return;
    out << '\n';
    out.indent(indent);
    text = rest;
  }
}

} // namespace

void detail::writeJsonStreamingArray(llvm::raw_ostream &out, const Json &object,
                                     llvm::StringRef key, size_t count,
                                     llvm::function_ref<Json(size_t)> element) {
  out << "{";
  bool first_key = true;
  for (const auto &[name, value] : object.items()) {
    out << (first_key ? "\n  " : ",\n  ") << Json(name).dump() << ": ";
    first_key = false;
    if (name != key || count == 0) {
      writeIndented(out, dumpJson(value, 2), 2);
      continue;
    }
    out << "[";
    for (size_t i = 0; i < count; ++i) {
      out << (i ? ",\n    " : "\n    ");
      writeIndented(out, dumpJson(element(i), 2), 4);
    }
    out << "\n  ]";
  }
  out << (first_key ? "}" : "\n}");
}

} // namespace dumpsift
