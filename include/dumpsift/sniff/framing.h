// Decoders for framing formats whose payload is worth extracting: AWS SigV4 chunked upload bodies
// (Content-Encoding: aws-chunked) and AMQP 0-9-1 frames. They parse a buffer that starts with the
// framing (offset 0; use SniffResult::offset first) and return zero-copy views into it. The
// sniffers (aws-chunked, amqp) use the same parsers, so what is sniffed is what is extracted.
//
// Nothing here verifies signatures or checksums: AWS chunk signatures need the secret key, and the
// trailer checksum is reported by name only.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dumpsift {

// ---------------------------------------------------------------------------------------------
// AWS SigV4 streaming bodies.
//   signed:   <hex size>;chunk-signature=<64 hex>\r\n<data>\r\n ... 0;chunk-signature=<64
//   hex>\r\n\r\n unsigned: <hex size>\r\n<data>\r\n ... 0\r\n\r\n trailer variants end with
//   0[;chunk-signature=..]\r\n  name:value\r\n ...  \r\n  where the names are x-amz-checksum-* (and
//   x-amz-trailer-signature:<64 hex> when signed).
// SigV4a (ECDSA) signatures are 144 characters: hex right-padded with '*'.
// ---------------------------------------------------------------------------------------------

enum class AwsChunkedVariant : uint8_t { Signed, SignedTrailer, Unsigned, UnsignedTrailer };
/// "signed", "signed-trailer", "unsigned", "unsigned-trailer".
llvm::StringRef awsChunkedVariantName(AwsChunkedVariant variant);

struct AwsChunk {
  uint64_t header_offset = 0; // where the "<hex>[;chunk-signature=...]\r\n" line starts
  uint64_t data_offset = 0;   // first data byte (just after the header line)
  uint64_t size = 0;          // declared data size
  uint64_t available = 0;     // data bytes inside the buffer (< size only for a cut last chunk)
};

struct AwsChunkedLayout {
  AwsChunkedVariant variant = AwsChunkedVariant::Signed;
  unsigned signature_chars = 0; // 64 (HMAC-SHA256), 144 (SigV4a ECDSA) or 0 (unsigned)
  std::vector<AwsChunk> chunks; // in order, including the final zero-size chunk when present
  bool chunks_capped = false;   // more than kMaxChunks chunks: the rest were not listed
  bool final_chunk = false;     // the zero-size chunk was seen
  bool complete = false;        // the body's terminating empty line is inside the buffer
  bool cut = false;             // the buffer ends inside a chunk's header or data
  uint64_t length = 0;          // bytes of well-formed body from offset 0
  uint64_t payload_bytes = 0;   // sum of AwsChunk::available
  std::vector<std::string> trailer_names; // e.g. "x-amz-checksum-crc32", "x-amz-trailer-signature"

  static constexpr size_t kMaxChunks = 1u << 16;
};

/// Parses an aws-chunked body starting at data[0]. nullopt unless the first chunk header is
/// well-formed and (for the unsigned variants, which have no signature to vouch for them) the
/// structure is confirmed by a second header or a checksum trailer. Stops at the first malformed
/// byte: `length` then ends after the last well-formed chunk. Work is linear in the number of
/// chunks (data is skipped, never scanned); never reads outside `data`.
std::optional<AwsChunkedLayout> parseAwsChunked(llvm::ArrayRef<uint8_t> data);

/// The decoded payload of an aws-chunked body starting at data[0]: the data of each chunk, in
/// order, as views into `data` (a cut last chunk is clipped to the buffer). Empty when `data` is
/// not aws-chunked or carries no data (for example a lone final chunk over stale bytes).
std::vector<llvm::ArrayRef<uint8_t>> awsChunkedPayload(llvm::ArrayRef<uint8_t> data);

// ---------------------------------------------------------------------------------------------
// AMQP 0-9-1: an optional protocol header "AMQP\0\0\x09\x01", then frames
//   type u8 (1 method, 2 content header, 3 body, 8 heartbeat), channel u16 BE, size u32 BE,
//   payload[size], frame-end 0xCE.
// ---------------------------------------------------------------------------------------------

struct AmqpFrame {
  uint8_t type = 0;
  uint16_t channel = 0;
  uint64_t offset = 0; // of the 7-byte frame header
  uint32_t size = 0;   // payload size; the payload is at offset + 7
};

struct AmqpLayout {
  bool protocol_header = false;
  std::vector<AmqpFrame> frames; // whole, valid frames in order (at most kMaxFrames)
  uint64_t length = 0;           // end of the last whole frame (or of the protocol header)
  bool truncated = false;        // a plausible frame header follows but its frame is cut
  // The method most of its method frames carry (the first seen on a tie; 0/0 when none), and how
  // many carry it: a write-buffer pool may begin with a stale frame of another method.
  uint16_t class_id = 0, method_id = 0;
  uint64_t method_frames = 0;
  std::optional<uint64_t> body_size; // from the first content header frame
  std::string content_type;          // from that header, when its content-type flag is set
  uint64_t padding_bytes = 0; // skipped between frames: a write-buffer pool's 8-byte alignment

  static constexpr size_t kMaxFrames = 1u << 16;
};

/// Parses AMQP frames starting at data[0]. nullopt unless data starts with the protocol header or
/// at least one whole valid frame (a body frame first must be followed by another valid frame, or
/// fill `data` but for an allocator's rounding: docs/kinds.md).
/// Stops at the first invalid frame, except that up to 7 bytes to the next multiple of 8 are
/// skipped when a whole method or content header frame starts there (node's Buffer pool leaves
/// such padding between a client's writes). Never reads outside `data`.
std::optional<AmqpLayout> parseAmqp(llvm::ArrayRef<uint8_t> data);

/// "basic.publish" for 60/40 and so on; "" for ids not in the AMQP 0-9-1 method table.
llvm::StringRef amqpMethodName(uint16_t class_id, uint16_t method_id);

/// The payloads of the body frames (type 3) among the frames parseAmqp finds at data[0], in order,
/// as views into `data`; a cut body frame at the end is included, clipped to the buffer.
std::vector<llvm::ArrayRef<uint8_t>> amqpBodies(llvm::ArrayRef<uint8_t> data);

} // namespace dumpsift
