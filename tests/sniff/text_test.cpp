// HTTP, JSON, XML, HTML and the statistical kinds: text, utf16, zero, random, unknown.
#include "sniff_test_util.h"

using namespace dumpsift;
using namespace dumpsift::test;

TEST_CASE("http: request with an aws-chunked body") {
  const ByteVec jpeg = contentFixture("photo_gray.jpg");
  ByteVec body;
  append(body, "2000;chunk-signature=" + std::string(64, 'a') + "\r\n");
  body.insert(body.end(), jpeg.begin(), jpeg.begin() + 8192);
  append(body, "\r\n");
  const std::string rest = "7cc;chunk-signature=" + std::string(64, 'b') + "\r\n";
  append(body, rest);
  body.insert(body.end(), jpeg.begin() + 8192, jpeg.end());
  REQUIRE(jpeg.size() - 8192 == 0x7cc);
  append(body, "\r\n0;chunk-signature=" + std::string(64, 'c') + "\r\n\r\n");

  ByteVec request = bytesOf("PUT /bucket/photo.jpg HTTP/1.1\r\n"
                            "Host: examplebucket.s3.amazonaws.com\r\n"
                            "Content-Encoding: aws-chunked\r\n"
                            "x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\r\n"
                            "x-amz-decoded-content-length: " +
                            std::to_string(jpeg.size()) +
                            "\r\n"
                            "Content-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n");
  const size_t head = request.size();
  append(request, body);
  request.resize(request.size() + 64, 0);
  const SniffResult r = sniff(view(request));
  REQUIRE(kindOf(r) == "http");
  CHECK(str(r, "method") == "PUT");
  CHECK(str(r, "target") == "/bucket/photo.jpg");
  CHECK(str(r, "version") == "1.1");
  CHECK(u64(r, "header_count") == 5);
  CHECK(u64(r, "head_length") == head);
  CHECK(u64(r, "content_length") == body.size());
  CHECK(str(r, "content_encoding") == "aws-chunked");
  CHECK(str(r, "host") == "examplebucket.s3.amazonaws.com");
  CHECK(flag(r, "complete"));
  CHECK(r.length == head + body.size());
  CHECK(str(r, "body_kind") == "aws-chunked");
}

TEST_CASE("http: response with a JSON body, and near misses") {
  const ByteVec response = bytesOf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   "Content-Length: 26\r\n\r\n{\"ok\": true, \"items\": [1]}");
  const SniffResult r = sniff(view(response));
  REQUIRE(kindOf(r) == "http");
  CHECK(u64(r, "status") == 200);
  CHECK(str(r, "reason") == "OK");
  CHECK(str(r, "content_type") == "application/json");
  CHECK(flag(r, "complete"));
  CHECK(r.length == response.size());
  CHECK(str(r, "body_kind") == "json");

  CHECK(kindOf(sniff(view(bytesOf("GETX / HTTP/1.1\r\nHost: a\r\n\r\n")))) != "http");
  CHECK(kindOf(sniff(view(bytesOf("GET / HTTP/1.1 and more words on the same line")))) != "http");
  CHECK(kindOf(sniff(view(bytesOf("HTTP/1.1 2000 OK\r\n\r\n")))) != "http");

  ByteVec embedded = binaryHeader(16);
  append(embedded, "GET /index.html HTTP/1.1\r\nHost: example.org\r\n\r\n");
  const SniffResult e = sniff(view(embedded));
  REQUIRE(kindOf(e) == "http");
  CHECK(e.offset == 16);
  CHECK(str(e, "method") == "GET");
  CHECK(e.length == embedded.size() - 16);
}

TEST_CASE("json: complete, truncated and invalid documents") {
  const std::string doc =
      R"({"name": "dumpsift", "sizes": [1, 2.5, -3e4, 0], "nested": {"a": [true, false, null], "s": "x\"y\u00e9"}})";
  ByteVec buffer = bytesOf(doc);
  buffer.resize(doc.size() + 100, 0); // NUL padding after the document
  SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "json");
  CHECK(r.length == doc.size());
  CHECK(flag(r, "complete"));
  CHECK(str(r, "top_level") == "object");
  CHECK(u64(r, "max_depth") == 3);

  const ByteVec cut = bytesOf(doc.substr(0, 60));
  r = sniff(view(cut));
  REQUIRE(kindOf(r) == "json");
  CHECK(flag(r, "truncated"));
  CHECK(r.length == 60);

  const ByteVec array = bytesOf("[\n  {\"id\": 1},\n  {\"id\": 2}\n]\n");
  r = sniff(view(array));
  REQUIRE(kindOf(r) == "json");
  CHECK(str(r, "top_level") == "array");
  CHECK(r.length == array.size() - 1);

  CHECK(kindOf(sniff(view(bytesOf("{ this is not json, just braces }")))) == "text");
  CHECK(kindOf(sniff(view(bytesOf("[1, 2, ] is a trailing comma in a list")))) == "text");
  CHECK(kindOf(sniff(view(bytesOf("{\"a\": 01}")))) != "json");
}

TEST_CASE("xml: declaration, root element, mismatched tags") {
  const std::string doc =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<!-- inventory -->\n<root xmlns:a='urn:x'><a:item id=\"1\">t&amp;u</a:item>"
      "<empty/><![CDATA[<raw>]]></root>";
  ByteVec buffer = bytesOf(doc);
  append(buffer, "\n\n");
  SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "xml");
  CHECK(flag(r, "declaration"));
  CHECK(str(r, "encoding") == "UTF-8");
  CHECK(str(r, "root") == "root");
  CHECK(flag(r, "complete"));
  CHECK(r.length == doc.size());

  const ByteVec bare =
      bytesOf("<note><to>Tove</to><from>Jani</from><body>Hello there</body></note>");
  r = sniff(view(bare));
  REQUIRE(kindOf(r) == "xml");
  CHECK_FALSE(flag(r, "declaration"));
  CHECK(str(r, "root") == "note");

  CHECK(kindOf(sniff(view(bytesOf("<note><to>Tove</from></note> and so on, for a while")))) !=
        "xml");
}

TEST_CASE("html: doctype, title and end") {
  const std::string doc =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><title>Upload done</title></head>"
      "<body><p>ok</p></body></HTML>";
  ByteVec buffer = bytesOf(doc);
  buffer.resize(doc.size() + 50, 0);
  SniffResult r = sniff(view(buffer));
  REQUIRE(kindOf(r) == "html");
  CHECK(flag(r, "doctype"));
  CHECK(str(r, "title") == "Upload done");
  CHECK(flag(r, "complete"));
  CHECK(r.length == doc.size());

  r = sniff(view(bytesOf("<html><body>no doctype, cut")));
  REQUIRE(kindOf(r) == "html");
  CHECK_FALSE(flag(r, "doctype"));
  CHECK_FALSE(flag(r, "complete"));
}

TEST_CASE("text: ASCII, UTF-8, NUL-terminated, after a header") {
  std::string lines;
  for (int i = 0; i < 100; ++i)
    lines += "line " + std::to_string(i) + " of an ordinary log file\n";
  SniffResult r = sniff(view(bytesOf(lines)));
  REQUIRE(kindOf(r) == "text");
  CHECK(str(r, "encoding") == "ascii");
  CHECK(r.length == lines.size());

  r = sniff(view(bytesOf("Grüße aus Köln — naïve café, 東京")));
  REQUIRE(kindOf(r) == "text");
  CHECK(str(r, "encoding") == "utf-8");

  ByteVec terminated = bytesOf(std::string_view("user=alice; role=admin; session=42\0", 35));
  append(terminated, randomBytes(200));
  r = sniff(view(terminated));
  REQUIRE(kindOf(r) == "text");
  CHECK(r.length == 34);
  CHECK(flag(r, "nul_terminated"));

  ByteVec java_string = binaryHeader(16);
  append(java_string, "SELECT id, name FROM users WHERE id = ? ORDER BY name");
  r = sniff(view(java_string));
  REQUIRE(kindOf(r) == "text");
  CHECK(r.offset == 16);
  CHECK(r.length == java_string.size() - 16);

  // Invalid UTF-8 early on is not text.
  CHECK(kindOf(sniff(view(bytesOf("ab\xc3\x28 this continues as text for a while longer")))) !=
        "text");
}

TEST_CASE("utf16: LE, BE, with and without BOM") {
  const std::u16string s = u"C:\\Users\\alice\\Documents\\report-2024.docx";
  auto encode = [&](bool be, bool bom) {
    ByteVec out;
    if (bom)
      append(out, be ? std::string_view("\xfe\xff") : std::string_view("\xff\xfe"));
    for (char16_t c : s) {
      const uint8_t lo = static_cast<uint8_t>(c), hi = static_cast<uint8_t>(c >> 8);
      out.push_back(be ? hi : lo);
      out.push_back(be ? lo : hi);
    }
    out.push_back(0);
    out.push_back(0);
    return out;
  };
  for (bool be : {false, true})
    for (bool bom : {false, true}) {
      INFO("be " << be << " bom " << bom);
      const ByteVec bytes = encode(be, bom);
      const SniffResult r = sniff(view(bytes));
      REQUIRE(kindOf(r) == "utf16");
      CHECK(str(r, "byte_order") == (be ? "be" : "le"));
      CHECK(flag(r, "bom") == bom);
      CHECK(u64(r, "code_units") == s.size());
      CHECK(r.length == bytes.size() - 2);
      CHECK(flag(r, "nul_terminated"));
    }
  const std::u16string cyrillic = u"Привет, мир! Это строка в кодировке UTF-16.";
  ByteVec bytes;
  for (char16_t c : cyrillic) {
    bytes.push_back(static_cast<uint8_t>(c));
    bytes.push_back(static_cast<uint8_t>(c >> 8));
  }
  CHECK(kindOf(sniff(view(bytes))) == "utf16");
}

TEST_CASE("zero, random and unknown") {
  const ByteVec zeros(64 * 1024, 0);
  SniffResult r = sniff(view(zeros));
  CHECK(kindOf(r) == "zero");
  CHECK(r.length == zeros.size());

  ByteVec almost = zeros;
  almost.back() = 1;
  CHECK(kindOf(sniff(view(almost))) != "zero");

  const ByteVec noise = randomBytes(128 * 1024);
  r = sniff(view(noise));
  REQUIRE(kindOf(r) == "random");
  CHECK(detail<double>(r, "entropy") > 7.9);

  // Structured binary: an array of small little-endian counters.
  ByteVec table;
  for (uint32_t i = 0; i < 4096; ++i) {
    table.push_back(static_cast<uint8_t>(i * 7));
    table.push_back(static_cast<uint8_t>(i >> 8));
    table.push_back(0);
    table.push_back(0);
  }
  r = sniff(view(table));
  CHECK(kindOf(r) == "unknown");
  CHECK(r.length == table.size());
  CHECK(r.details.entries.empty());

  r = sniff({});
  CHECK(kindOf(r) == "unknown");
  CHECK(r.length == 0);
}
