// The kinds table (kinds.def) against what depends on it: the report schema's kind enum, the table
// of docs/kinds.md, the sniffers (which kinds have one, which decode payloads, which get a
// thumbnail in which MIME type), and the typed facts of SniffResult against their details.
#include "dumpsift/sniff/thumbnail.h"
#include "sniff_test_util.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

/// The kind names in kinds.def's order.
std::vector<std::string> kindNames() {
  std::vector<std::string> names;
  for (ContentKind kind : allKinds())
    names.push_back(kindName(kind).str());
  return names;
}

llvm::StringRef payloadsName(KindPayloads payloads) {
  switch (payloads) {
  case KindPayloads::None:
    return "none";
  case KindPayloads::One:
    return "one";
  case KindPayloads::Messages:
    return "messages";
  }
  return "?";
}

/// The rows of the table under "## The kinds at a glance" in docs/kinds.md, cells unquoted.
std::vector<std::vector<std::string>> documentedKinds() {
  std::ifstream in(sourceDir() + "/docs/kinds.md");
  REQUIRE(in.good());
  std::vector<std::vector<std::string>> rows;
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0)
      in_section = line == "## The kinds at a glance";
    if (!in_section || line.rfind("| `", 0) != 0)
      continue;
    std::vector<std::string> cells;
    std::stringstream cellsIn(line.substr(1));
    for (std::string cell; std::getline(cellsIn, cell, '|');) {
      cell = std::regex_replace(cell, std::regex("^ +| +$|`"), "");
      cells.push_back(cell);
    }
    rows.push_back(cells);
  }
  return rows;
}

/// The detail `key` as T, or nullopt when it is absent; fails when it has another type.
template <class T> std::optional<T> optionalDetail(const SniffResult &r, const std::string &key) {
  const DetailValue *v = r.details.get(key);
  if (!v)
    return std::nullopt;
  INFO("detail " << key);
  REQUIRE(std::holds_alternative<T>(*v));
  return std::get<T>(*v);
}

/// Checks that every typed fact of `r` is the detail of the same name (and unset where the detail
/// is absent): the report prints the details, the pipeline reads the typed facts.
void checkTypedFacts(const SniffResult &r) {
  INFO("kind " << kindName(r.kind).str());
  CHECK(r.complete == optionalDetail<bool>(r, "complete"));
  CHECK(r.truncated == optionalDetail<bool>(r, "truncated"));
  CHECK(r.final_chunk == optionalDetail<bool>(r, "final_chunk"));
  CHECK(r.stale_bytes == optionalDetail<uint64_t>(r, "stale_bytes"));
  const std::optional<std::string> payload = optionalDetail<std::string>(r, "payload_kind");
  CHECK(r.payload_kind.has_value() == payload.has_value());
  if (r.payload_kind && payload)
    CHECK(kindName(*r.payload_kind) == *payload);
  CHECK(r.width == optionalDetail<uint64_t>(r, "width").value_or(0));
  CHECK(r.height == optionalDetail<uint64_t>(r, "height").value_or(0));
  const std::optional<uint64_t> head = optionalDetail<uint64_t>(r, "head_length");
  const std::optional<std::string> body_kind = optionalDetail<std::string>(r, "body_kind");
  REQUIRE(r.body.has_value() == head.has_value());
  if (r.body) {
    CHECK(r.body->offset == *head);
    CHECK(r.body->kind.has_value() == body_kind.has_value());
    if (r.body->kind && body_kind)
      CHECK(kindName(*r.body->kind) == *body_kind);
    CHECK(r.body->transfer_coded == has(r, "transfer_encoding"));
  }
}

/// A whole signed upload of `data` in two chunks and the final one.
ByteVec awsUpload(const ByteVec &data) {
  const size_t half = data.size() / 2;
  ByteVec body = awsSignedChunk(ByteVec(data.begin(), data.begin() + half), 'a');
  append(body, awsSignedChunk(ByteVec(data.begin() + half, data.end()), 'b'));
  append(body, "0;chunk-signature=" + std::string(64, 'c') + "\r\n\r\n");
  return body;
}

/// An HTTP request with `body` after `headers` (which end in CRLF).
ByteVec httpRequest(const std::string &headers, const ByteVec &body) {
  ByteVec request = bytesOf("POST /upload HTTP/1.1\r\nHost: example.test\r\n" + headers + "\r\n");
  append(request, body);
  return request;
}

const std::vector<std::string> kContentFixtures = {
    "archive.zip", "doc.pdf",    "image.bmp",          "image.gif",
    "image.png",   "image.webp", "photo_baseline.jpg", "photo_gray.jpg",
    "text.gz",     "text.zlib",  "text.zst",           "photo_progressive.jpg"};

} // namespace

TEST_CASE("kinds: the report schema's kind enum is kinds.def's names, in its order") {
  std::ifstream in(sourceDir() + "/docs/report.schema.json");
  REQUIRE(in.good());
  const nlohmann::json schema = nlohmann::json::parse(in);
  CHECK(schema["$defs"]["kind"]["enum"].get<std::vector<std::string>>() == kindNames());
  for (ContentKind kind : allKinds()) {
    CHECK(parseKind(kindName(kind)) == kind);
    CHECK(kindFacts(kind).kind == kind);
  }
  CHECK_FALSE(parseKind("jpg"));
  CHECK(kindExtension(ContentKind::Jpeg) == "jpg");
}

TEST_CASE("kinds: docs/kinds.md's table gives every kind's facts as kinds.def does") {
  std::vector<std::vector<std::string>> expected;
  for (ContentKind kind : allKinds()) {
    const KindFacts &facts = kindFacts(kind);
    expected.push_back({facts.name.str(), familyName(facts.family).str(), facts.extension.str(),
                        facts.mime_type.str(), payloadsName(facts.payloads).str(),
                        facts.thumbnail ? "yes" : "no"});
  }
  CHECK(documentedKinds() == expected);
}

TEST_CASE("kinds: each kind's facts agree with its sniffer") {
  for (ContentKind kind : allKinds()) {
    const KindFacts &facts = kindFacts(kind);
    INFO(facts.name.str());
    CHECK(facts.signature == (snifferFor(kind) != nullptr));
    CHECK((!facts.thumbnail || (facts.signature && facts.family == KindFamily::Image)));
    CHECK((facts.payloads == KindPayloads::None || facts.signature));
    CHECK(std::regex_match(facts.extension.str(), std::regex("[a-z0-9][a-z0-9.-]*")));
    CHECK(std::regex_match(facts.mime_type.str(), std::regex("[a-z]+/[a-z0-9.+-]+(; .+)?")));
    CHECK(std::regex_match(facts.colour.str(), std::regex("#[0-9a-f]{6}")));
  }
}

TEST_CASE("kinds: makeThumbnail shows the kinds that have thumbnails, in their MIME type") {
  for (const std::string &name : kContentFixtures) {
    const ByteVec bytes = contentFixture(name);
    const SniffResult r = sniff(view(bytes));
    INFO(name << ": " << kindOf(r));
    REQUIRE(r.offset == 0);
    const std::optional<Thumbnail> thumb = makeThumbnail(r.kind, view(bytes));
    CHECK(thumb.has_value() == kindFacts(r.kind).thumbnail);
    CHECK(hasThumbnail(r.kind) == kindFacts(r.kind).thumbnail);
    if (!thumb)
      continue;
    // Small images are shown as they are; JPEGs and large PNGs are decoded and shown as JPEG.
    const bool inline_shown = r.kind != ContentKind::Jpeg && bytes.size() <= 24 * 1024;
    CHECK(thumb->mime == kindFacts(inline_shown ? r.kind : ContentKind::Jpeg).mime_type);
  }
}

TEST_CASE("kinds: the payloads column says what decodePayloads gives") {
  const ByteVec jpeg = contentFixture("photo_gray.jpg");
  const std::vector<ByteVec> framed = {awsUpload(jpeg), amqpImagePublish(jpeg)};
  for (const ByteVec &content : framed) {
    const SniffResult r = sniff(view(content));
    INFO(kindOf(r));
    REQUIRE(r.offset == 0);
    const KindPayloads column = kindFacts(r.kind).payloads;
    REQUIRE(column != KindPayloads::None);
    const std::vector<Payload> payloads = snifferFor(r.kind)->decodePayloads(view(content));
    REQUIRE(payloads.size() == 1);
    CHECK(payloads.front().message_body == (column == KindPayloads::Messages));
    CHECK(r.payload_kind == ContentKind::Jpeg);
  }
  for (const std::string &name : kContentFixtures) {
    const ByteVec bytes = contentFixture(name);
    const SniffResult r = sniff(view(bytes));
    INFO(name);
    CHECK(kindFacts(r.kind).payloads == KindPayloads::None);
    CHECK(snifferFor(r.kind)->decodePayloads(view(bytes)).empty());
  }
}

TEST_CASE("typed facts: each is the detail of the same name") {
  std::vector<ByteVec> buffers;
  for (const std::string &name : kContentFixtures) {
    const ByteVec bytes = contentFixture(name);
    buffers.push_back(bytes);
    buffers.emplace_back(bytes.begin(), bytes.begin() + bytes.size() / 2); // cut
  }
  const ByteVec jpeg = contentFixture("photo_gray.jpg");
  const ByteVec upload = awsUpload(jpeg);
  buffers.push_back(upload);
  buffers.emplace_back(upload.begin(), upload.begin() + upload.size() / 2);
  ByteVec stale = awsSignedChunk(jpeg, 'd'); // a final chunk written over an earlier chunk
  const std::string final_chunk = "0;chunk-signature=" + std::string(64, 'e') + "\r\n\r\n";
  std::copy(final_chunk.begin(), final_chunk.end(), stale.begin());
  buffers.push_back(stale);
  buffers.push_back(amqpImagePublish(jpeg));
  const ByteVec json = bytesOf("{\"photo\": \"" + std::string(300, 'x') + "\"}");
  buffers.push_back(httpRequest("Content-Length: " + std::to_string(json.size()) + "\r\n", json));
  buffers.push_back(httpRequest("Transfer-Encoding: chunked\r\n", bytesOf("5\r\nhello\r\n0\r\n")));
  buffers.push_back(bytesOf("POST /upload HTTP/1.1\r\nHost: exa")); // a head cut short
  buffers.push_back(json);

  std::set<ContentKind> seen;
  for (const ByteVec &buffer : buffers) {
    const SniffResult r = sniff(view(buffer));
    seen.insert(r.kind);
    checkTypedFacts(r);
  }
  // Every typed fact was seen set, so none of the comparisons above was between two unset ones.
  for (ContentKind kind : {ContentKind::Jpeg, ContentKind::Png, ContentKind::Gzip,
                           ContentKind::AwsChunked, ContentKind::Amqp, ContentKind::Http,
                           ContentKind::Json, ContentKind::Zip, ContentKind::Pdf})
    CHECK(seen.count(kind) == 1);
  const SniffResult stale_result = sniff(view(stale));
  CHECK(stale_result.stale_bytes == stale.size() - final_chunk.size());
  CHECK(stale_result.final_chunk == true);
  const SniffResult cut = sniff(view(ByteVec(upload.begin(), upload.begin() + 100)));
  CHECK(cut.final_chunk == false);
  CHECK(cut.cut());
  const SniffResult request = sniff(view(buffers[buffers.size() - 4]));
  REQUIRE(request.body);
  CHECK(request.body->kind == ContentKind::Json);
  CHECK_FALSE(request.body->transfer_coded);
  const SniffResult chunked = sniff(view(buffers[buffers.size() - 3]));
  REQUIRE(chunked.body);
  CHECK(chunked.body->transfer_coded);
  const SniffResult photo = sniff(view(jpeg));
  CHECK(photo.width > 0);
  CHECK(photo.complete == true);
  CHECK_FALSE(photo.cut());
}

TEST_CASE("reference-free bytes: what a format's walk vouched for, zeros checked in full") {
  const ByteVec jpeg = contentFixture("photo_baseline.jpg");
  ByteVec buffer = jpeg;
  buffer.resize(jpeg.size() + 4096, 0x5A);
  const SniffResult whole = sniff(view(buffer));
  REQUIRE(kindOf(whole) == "jpeg");
  CHECK(whole.referenceFreeLength() == jpeg.size()); // not the bytes after its end

  // A JPEG cut by the buffer's end: the walk checked every byte up to there.
  const ByteVec cut(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(jpeg.size() / 2));
  const SniffResult slice = sniff(view(cut));
  REQUIRE(kindOf(slice) == "jpeg");
  REQUIRE(slice.cut());
  CHECK(slice.referenceFreeLength() == cut.size());

  // Zeros checked in full, and zeros judged on samples.
  CHECK(sniff(view(ByteVec(1 << 20, 0))).referenceFreeLength() == 1u << 20);
  const SniffResult sampled = sniff(view(ByteVec(32u << 20, 0)));
  REQUIRE(kindOf(sampled) == "zero");
  CHECK(sampled.referenceFreeLength() == 0);

  // Random bytes are judged on samples: a pointer among them would not change the verdict.
  ByteVec random(256 << 10);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (uint8_t &b : random) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    b = static_cast<uint8_t>(state >> 24);
  }
  const SniffResult noise = sniff(view(random));
  REQUIRE(kindOf(noise) == "random");
  CHECK(noise.referenceFreeLength() == 0);

  // Text longer than its check: only what its structure vouches for (none).
  const ByteVec text(64 << 10, 'a');
  const SniffResult long_text = sniff(view(text));
  REQUIRE(kindOf(long_text) == "text");
  REQUIRE(long_text.length_estimated);
  CHECK(long_text.referenceFreeLength() == long_text.structure_length);
}
