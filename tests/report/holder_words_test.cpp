// A buffer's holders in one sentence (group_labels.h), as the HTML page's "held by" column says
// them: the verdict, the first holder and the root its path starts at.
#include "../../src/report/group_labels.h"

#include <catch2/catch.hpp>

using namespace dumpsift;

TEST_CASE("holder words: a heap holder with a class, anchored from a global two steps up") {
  Holder field;
  field.kind = HolderKind::Heap;
  field.block = 0x55d0c0a01290;
  field.slot = field.block + 0x10;
  field.block_size = 48;
  field.class_name = "ChunkedUploader";
  Holder global;
  global.kind = HolderKind::Global;
  global.module = "app";
  global.symbol = "g_uploader";
  BufferHolders b;
  b.verdict = Verdict::Anchored;
  b.holders = {field};
  b.references = 2;
  b.path = {field, global};
  b.path_steps = 2;
  CHECK(detail::bufferHoldersSentence(b) ==
        "anchored: held by +0x10 of a `ChunkedUploader` allocation at 0x55d0c0a01290 (2 "
        "references), anchored from global `g_uploader` (app) in 2 steps");

  // A holder without a class is an allocation of its size; a path cut by the pass says so.
  b.holders[0].class_name = "";
  b.references = 1;
  b.path_complete = false;
  CHECK(detail::bufferHoldersSentence(b) ==
        "anchored: held by +0x10 of a 48-byte allocation at 0x55d0c0a01290, anchored from global "
        "`g_uploader` (app) in 2+ steps");

  // A root that holds it directly is not said twice.
  b.holders = {global};
  b.path = {global};
  b.path_steps = 1;
  CHECK(detail::bufferHoldersSentence(b) == "anchored: held by global `g_uploader` (app)");
}

TEST_CASE("holder words: unreferenced, heap-only and free buffers") {
  BufferHolders b;
  b.verdict = Verdict::Unreferenced;
  CHECK(detail::bufferHoldersSentence(b) == "unreferenced: nothing points at it");
  b.verdict = Verdict::Free;
  CHECK(detail::bufferHoldersSentence(b) == "free");
  Holder lost;
  lost.kind = HolderKind::Heap;
  lost.block = 0x1000;
  lost.slot = 0x1028;
  lost.block_size = 256;
  b.verdict = Verdict::HeapOnly;
  b.holders = {lost};
  b.references = 1;
  CHECK(detail::bufferHoldersSentence(b) ==
        "heap-only: held by +0x28 of a 256-byte allocation at 0x1000");
}
