// Words for an analysis shared by the text summary and the HTML report (group_labels.h).
#include "group_labels.h"

#include "dumpsift/support/hex.h"
#include "dumpsift/support/sizes.h"
#include "dumpsift/support/terminal_text.h"

#include <map>

namespace dumpsift::detail {

namespace {

/// A holder in words: "+0x10 of a `ChunkedUploader` allocation", "global `g_buffer`", ...
std::string holderWords(const Holder &h, bool with_offset) {
  const std::string offset = with_offset ? "+" + hexAddress(h.offset()) + " of " : "";
  switch (h.kind) {
  case HolderKind::Heap:
    if (h.is_static && !h.class_name.empty() && !h.field.empty())
      return "static `" + h.class_name.str() + "." + h.field.str() + "`";
    if (!h.handle.empty()) // in a block of another allocator (Mono's buckets in the C heap)
      return h.handle.str() + " slots";
    if (!h.class_name.empty() && h.field.startswith("["))
      return "elements of `" + h.class_name.str() + "` arrays";
    if (!h.class_name.empty() && !h.field.empty())
      return "`" + h.class_name.str() + "." + h.field.str() + "`";
    if (!h.class_name.empty())
      return offset + "`" + h.class_name.str() + "` allocations";
    if (h.block_size)
      return offset + std::to_string(h.block_size) + "-byte allocations";
    return "objects of the " + h.walker.str() + " heap it does not list";
  case HolderKind::Stack:
    return (h.goroutine ? "the stack of goroutine " + std::to_string(h.goroutine)
                        : "the stack of thread " + std::to_string(h.thread)) +
           (h.function.empty() ? "" : ", in `" + h.function.str() + "`");
  case HolderKind::Register:
    return "register " + h.register_name.str() + " of thread " + std::to_string(h.thread);
  case HolderKind::Global:
    return "global `" +
           (h.symbol.empty() ? h.module.str() + "+" + hexAddress(h.symbol_offset)
                             : h.symbol.str()) +
           "` (" + h.module.str() + ")";
  case HolderKind::Other:
    return h.handle.empty() ? "other writable memory"
                            : "a " + h.walker.str() + " " + h.handle.str() + " slot";
  }
  return "";
}

// "12 truncated", "payload jpeg": what the members of one kind have in common.
std::string kindQualifiers(const Analysis &analysis, const SizeGroup &group, ContentKind kind) {
  uint64_t truncated = 0, final_chunk = 0, members = 0;
  std::map<std::string, uint64_t> payloads;
  for (size_t i : group.members) {
    const Buffer &b = analysis.buffers[i];
    if (b.content.kind != kind)
      continue;
    ++members;
    if (b.content.cut())
      ++truncated;
    if (b.content.final_chunk.value_or(false))
      ++final_chunk;
    if (b.content.payload_kind) // by name: the list is in the names' order
      ++payloads[kindName(*b.content.payload_kind).str()];
  }
  std::vector<std::string> parts;
  if (truncated)
    parts.push_back(std::to_string(truncated) + " truncated");
  if (!payloads.empty()) {
    uint64_t with_payload = 0;
    std::string list;
    for (const auto &[payload, n] : payloads) {
      list += (list.empty() ? "payload " : ", ") + payload + " " + std::to_string(n);
      with_payload += n;
    }
    if (with_payload < members)
      list += ", none " + std::to_string(members - with_payload);
    parts.push_back(list);
  }
  if (final_chunk)
    parts.push_back(std::to_string(final_chunk) + " with final chunk");
  std::string out;
  for (const std::string &p : parts)
    out += (out.empty() ? "" : "; ") + p;
  return out;
}

} // namespace

std::string dumpLine(const Snapshot &snapshot) {
  const ProcessInfo &p = snapshot.process;
  std::string line = printable(snapshot.path) + ": " + formatName(snapshot.format).str() + " " +
                     osName(snapshot.system.os).str() + "/" + printable(snapshot.system.arch);
  if (p.pid)
    line += ", pid " + std::to_string(*p.pid);
  if (!p.name.empty())
    line += " (" + printable(p.name) + ")";
  return line + ", " + humanBytes(snapshot.capturedBytes()) + " captured";
}

std::string heapsLine(const Analysis &analysis) {
  std::string line;
  if (analysis.heaps.empty())
    line = "no allocator recognised";
  for (const HeapWalkResult &h : analysis.heaps)
    line += (line.empty() ? "" : " ") + h.walker + " (" + groupedDigits(h.stats.used_count) +
            " used " + humanBytes(h.stats.used_bytes) + ", " + groupedDigits(h.stats.free_count) +
            " free " + humanBytes(h.stats.free_bytes) + ")";
  uint64_t unclaimed = 0;
  for (const UnclaimedRange &u : analysis.unclaimed)
    unclaimed += u.size;
  return line + "; unclaimed heap/anonymous memory " + humanBytes(unclaimed) +
         (analysis.options.region_scan ? " (scanned)" : " (not scanned)");
}

const HeapWalkResult *sizeClassHeap(const Analysis &analysis, const SizeGroup &g) {
  if (g.members.empty())
    return nullptr;
  const Buffer &first = analysis.buffers[g.members.front()];
  if (first.source >= analysis.heaps.size() || !analysis.heaps[first.source].size_classes)
    return nullptr;
  for (size_t i : g.members)
    if (analysis.buffers[i].allocation.whole_pages)
      return nullptr;
  return &analysis.heaps[first.source];
}

std::string sizeLabel(const Analysis &analysis, const SizeGroup &g) {
  std::string label = groupedDigits(g.size);
  if (const HeapWalkResult *heap = sizeClassHeap(analysis, g))
    return heap->walker + " size class " + label;
  if (!g.members.empty()) {
    const Allocation &a = analysis.buffers[g.members.front()].allocation;
    if (a.managed)
      label +=
          " " +
          (a.managed->type_name.empty() ? std::string("array") : printable(a.managed->type_name)) +
          " len " + groupedDigits(a.managed->length);
  }
  return label;
}

std::string describeKinds(const Analysis &analysis, const SizeGroup &group) {
  std::string out;
  for (const auto &[kind, count] : group.kinds) {
    if (!out.empty())
      out += ", ";
    out += kindName(kind).str() + " x" + std::to_string(count);
    std::string q = kindQualifiers(analysis, group, kind);
    if (!q.empty())
      out += " (" + q + ")";
  }
  return out;
}

std::string holdersSentence(const GroupHolders &s) {
  std::string text;
  if (s.holder)
    text = std::to_string(s.held_alike) + " of " + std::to_string(s.members) +
           (s.holder->kind == HolderKind::Heap && !s.holder->field.empty() ? " held in "
                                                                           : " held at ") +
           holderWords(*s.holder,
                       s.holder->kind == HolderKind::Heap && s.holder->block_size && s.same_offset);
  else
    text = "nothing holds " + std::string(s.members == 1 ? "it" : "them");
  if (s.owner)
    text += ", owned by " + holderWords(*s.owner, false);
  // A root that is the holder itself (a global, a stack, a register, a static) is not said twice.
  if (s.root && !(s.holder && holderWords(*s.holder, false) == holderWords(*s.root, false)))
    text += ", anchored from " + holderWords(*s.root, false);
  std::string verdicts;
  for (const auto &[verdict, count] : s.verdicts)
    verdicts +=
        (verdicts.empty() ? "" : ", ") + std::to_string(count) + " " + verdictName(verdict).str();
  return text + " (" + verdicts + ")";
}

std::string bufferHoldersSentence(const BufferHolders &b) {
  std::string text = verdictName(b.verdict).str();
  if (b.holders.empty())
    return b.verdict == Verdict::Unreferenced ? text + ": nothing points at it" : text;
  const Holder &first = b.holders.front();
  text += ": held by ";
  if (first.is_static && !first.class_name.empty() && !first.field.empty())
    text += holderWords(first, false) + " (in the object at " + hexAddress(first.block) + ")";
  else if (first.kind == HolderKind::Heap && !first.class_name.empty() && !first.field.empty())
    text += (first.field.startswith("[")
                 ? "element " + first.field.str() + " of a `" + first.class_name.str() + "`"
                 : "`" + first.class_name.str() + "." + first.field.str() + "` of the object") +
            " at " + hexAddress(first.block);
  else if (first.kind == HolderKind::Heap && first.block_size)
    text += "+" + hexAddress(first.offset()) + " of " +
            (first.class_name.empty() ? "a " + std::to_string(first.block_size) + "-byte"
                                      : "a `" + first.class_name.str() + "`") +
            " allocation at " + hexAddress(first.block);
  else
    text += holderWords(first, false);
  if (b.references > 1)
    text += " (" + std::to_string(b.references) + " references)";
  if (b.verdict == Verdict::Anchored && !b.path.empty() &&
      holderWords(pathRoot(b), false) != holderWords(first, false))
    text += ", anchored from " + holderWords(pathRoot(b), false) + " in " +
            std::to_string(b.path_steps) + (b.path_complete ? "" : "+") +
            (b.path_steps == 1 ? " step" : " steps");
  return text;
}

} // namespace dumpsift::detail
