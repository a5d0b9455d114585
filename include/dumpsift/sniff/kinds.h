// The content kinds and what is known about each: one row of one table per kind
// (dumpsift/sniff/kinds.def), read only by the registry (src/sniff/registry.cpp). Code that needs
// a fact about a kind (its name, file extension, family, MIME type, whether it carries payloads or
// gets a thumbnail, its colour) asks kindFacts instead of naming kinds.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace dumpsift {

/// What a buffer holds, in the order of kinds.def (the order reports list kinds in).
enum class ContentKind : uint8_t {
#define DUMPSIFT_SIGNATURE_KIND(kind, name, extension, family, mime, payloads, thumbnail, colour,  \
                                factory, priority)                                                 \
  kind,
#define DUMPSIFT_STATISTICAL_KIND(kind, name, extension, family, mime, colour) kind,
#include "dumpsift/sniff/kinds.def"
};

/// What sort of content a kind is.
enum class KindFamily : uint8_t {
  Image,          // pictures: jpeg, png, ...
  Compressed,     // one compressed stream: gzip, zlib, zstd
  Archive,        // files packed together: zip
  Document,       // a page description: pdf
  Framing,        // a protocol's frames around data they carry: aws-chunked, amqp, http
  StructuredText, // text with a grammar: json, xml, html
  Text,           // characters without a grammar: text, utf16
  Statistical,    // no format: zero, random, unknown
};

/// What decoded payloads content of a kind carries (Sniffer::decodePayloads).
enum class KindPayloads : uint8_t {
  None,     // none
  One,      // the one payload its framing wraps (aws-chunked: the upload's data)
  Messages, // one body per message, numbered from 1 (amqp); Payload::message_body is true
};

/// Everything known about a kind apart from its sniffer (kinds.def has one row per kind).
struct KindFacts {
  ContentKind kind;
  llvm::StringRef name;      // the report's: "aws-chunked"
  llvm::StringRef extension; // the extracted file's: "jpg", "aws-chunked.bin", "bin"
  KindFamily family;
  llvm::StringRef mime_type; // "image/jpeg"; "application/octet-stream" when none of its own
  KindPayloads payloads;
  bool thumbnail;         // makeThumbnail shows it (dumpsift/sniff/thumbnail.h)
  llvm::StringRef colour; // the HTML page's colour for it: "#e45756"
  bool signature;         // recognised by a signature: snifferFor gives its sniffer
};

/// The row of `kind` in kinds.def.
const KindFacts &kindFacts(ContentKind kind);
llvm::StringRef kindName(ContentKind kind);            // exactly the report names: "aws-chunked"
std::optional<ContentKind> parseKind(llvm::StringRef); // inverse of kindName
llvm::StringRef kindExtension(ContentKind kind);       // "jpg", "png", "gz", "json", "txt", "bin"
/// "image", "compressed", "archive", "document", "framing", "structured-text", "text",
/// "statistical".
llvm::StringRef familyName(KindFamily family);
/// All kinds, in enum order.
const std::vector<ContentKind> &allKinds();

} // namespace dumpsift
