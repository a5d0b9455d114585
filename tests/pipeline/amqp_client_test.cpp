// A real AMQP 0-9-1 client's frames: amqplib (fixtures/amqp/publish.js, run by node) publishes
// the content fixtures' JPEGs to Debian's RabbitMQ on loopback. The broker runs with a memory
// alarm (vm_memory_high_watermark.absolute = 1), so it blocks publishers: it stops reading the
// connection and the frames pile up in the client, each body frame in a buffer of its own
// (amqplib's makeBodyFrame) and each message's method and header frames in node's Buffer pool.
// The node process is dumped with gcore and `dumpsift analyze` must report every body frame found
// in the captured memory, by a search of the core's bytes that shares no code with dumpsift, as
// an `amqp` buffer that starts with it and carries a jpeg, and every basic.publish frame found
// there inside the content of an `amqp` buffer.
//
// Needs node, fixtures/amqp/node_modules (npm ci, scripts/setup.sh --tests), rabbitmq-server, epmd
// and gcore. Without one of them the test is skipped with a visible warning, except under CI (CI
// set), where it fails. About 30 s: RabbitMQ's start takes 12 to 17 s, the core (0.9 GB, most of
// it V8's and glibc's PROT_NONE reservations written as zeros) 5 s; it is deleted afterwards.
#include "dumpsift/support/hex.h"
#include "support/test_support.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"

#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <netinet/in.h>
#include <optional>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace dumpsift;
using namespace dumpsift::test;

namespace {

const char *const kRabbitmqServer = "/usr/lib/rabbitmq/bin/rabbitmq-server"; // runs as the caller
const char *const kEpmd = "/usr/bin/epmd";
const char *const kNode = "/usr/bin/node";
/// Each JPEG is published this many times: 750 messages, 11.9 MB, more than loopback's socket
/// buffers take (4 MiB for the client's send buffer at most, tcp_wmem), so most stay in node.
constexpr int kCopies = 250;

/// A TCP port on 127.0.0.1 that nothing listens on now.
uint16_t freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0);
  close(fd);
  return ntohs(address.sin_port);
}

bool accepts(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  const bool connected = connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0;
  close(fd);
  return connected;
}

/// A program started in a process group of its own, with `environment` added to this process's,
/// its output into `log`; the destructor kills the group.
class Daemon {
public:
  Daemon(const std::vector<std::string> &argv, const std::vector<std::string> &environment,
         const std::string &log) {
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      setpgid(0, 0);
      const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
      for (const std::string &assignment : environment)
        putenv(const_cast<char *>(assignment.c_str()));
      std::vector<char *> args;
      for (const std::string &a : argv)
        args.push_back(const_cast<char *>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_); // also here, so that the group exists before the destructor can run
  }
  ~Daemon() {
    kill(-pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  Daemon(const Daemon &) = delete;
  Daemon &operator=(const Daemon &) = delete;

  bool running() const {
    int status;
    return waitpid(pid_, &status, WNOHANG) == 0;
  }

private:
  pid_t pid_ = -1;
};

/// RabbitMQ on 127.0.0.1 with everything of its own (state, logs, config, Erlang cookie, epmd)
/// under `dir`, and a memory alarm that blocks publishers from the start.
class Broker {
public:
  explicit Broker(const std::string &dir)
      : port_(freePort()), epmd_port_(freePort()),
        epmd_({kEpmd, "-port", std::to_string(epmd_port_)}, {}, dir + "/epmd.log") {
    // Erlang starts an epmd of its own, outside the process group, when none answers yet.
    waitUntilListening(epmd_port_, epmd_, "epmd", dir);
    server_.emplace(std::vector<std::string>{kRabbitmqServer}, environment(dir),
                    dir + "/server.log");
    waitUntilListening(port_, *server_, "RabbitMQ", dir);
  }
  uint16_t port() const { return port_; }

private:
  static void waitUntilListening(uint16_t port, const Daemon &daemon, const char *name,
                                 const std::string &dir) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!accepts(port)) {
      INFO(name << " exited or did not listen within 60 s; its output is in " << dir);
      REQUIRE(daemon.running());
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  std::vector<std::string> environment(const std::string &dir) const {
    for (const char *sub : {"/mnesia", "/log", "/home"})
      std::filesystem::create_directories(dir + sub);
    std::ofstream(dir + "/rabbitmq.conf")
        << "listeners.tcp.default = 127.0.0.1:" << port_ << "\n"
        << "vm_memory_high_watermark.absolute = 1\n"; // always above it: publishers are blocked
    std::ofstream(dir + "/enabled_plugins") << "[].\n";
    return {"HOME=" + dir + "/home",
            "RABBITMQ_NODENAME=dumpsift" + std::to_string(getpid()) + "@localhost",
            "RABBITMQ_NODE_PORT=" + std::to_string(port_),
            "RABBITMQ_DIST_PORT=" + std::to_string(freePort()),
            "ERL_EPMD_PORT=" + std::to_string(epmd_port_),
            "RABBITMQ_MNESIA_BASE=" + dir + "/mnesia",
            "RABBITMQ_LOG_BASE=" + dir + "/log",
            "RABBITMQ_CONFIG_FILE=" + dir + "/rabbitmq.conf",
            "RABBITMQ_ADVANCED_CONFIG_FILE=" + dir + "/advanced.config",
            "RABBITMQ_CONF_ENV_FILE=" + dir + "/rabbitmq-env.conf",
            "RABBITMQ_ENABLED_PLUGINS_FILE=" + dir + "/enabled_plugins",
            "RABBITMQ_PID_FILE=" + dir + "/rabbitmq.pid"};
  }

  uint16_t port_, epmd_port_;
  Daemon epmd_;
  std::optional<Daemon> server_; // after epmd_, so that it is stopped first
};

/// A read-only mapping of a whole file.
class MappedFile {
public:
  explicit MappedFile(const std::string &path) {
    const int fd = open(path.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    struct stat st {};
    REQUIRE(fstat(fd, &st) == 0);
    size_ = size_t(st.st_size);
    void *p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    REQUIRE(p != MAP_FAILED);
    data_ = static_cast<const uint8_t *>(p);
  }
  ~MappedFile() { munmap(const_cast<uint8_t *>(data_), size_); }
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  llvm::ArrayRef<uint8_t> bytes() const { return {data_, size_}; }

private:
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

struct FoundFrame {
  uint64_t address; // of the frame's first byte in the dumped process
  size_t body_size; // payload bytes
};

/// Calls `visit(vaddr, bytes)` for each captured memory range of the core (its PT_LOAD segments
/// with file bytes), read with <elf.h> alone.
template <typename Visit> void forEachSegment(llvm::ArrayRef<uint8_t> core, Visit visit) {
  REQUIRE(core.size() >= sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, core.data(), sizeof eh);
  REQUIRE(std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0);
  REQUIRE(eh.e_type == ET_CORE);
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    REQUIRE(eh.e_phoff + (i + 1) * sizeof ph <= core.size());
    std::memcpy(&ph, core.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD || ph.p_filesz == 0)
      continue;
    REQUIRE(ph.p_offset + ph.p_filesz <= core.size());
    visit(ph.p_vaddr, llvm::ArrayRef<uint8_t>(core.data() + ph.p_offset, ph.p_filesz));
  }
}

/// The offsets in `bytes` where `needle` occurs (glibc's memmem, which a needle of a few dozen
/// bytes takes through the core's zeros in long strides).
std::vector<size_t> occurrences(llvm::ArrayRef<uint8_t> bytes, llvm::ArrayRef<uint8_t> needle) {
  std::vector<size_t> at;
  for (size_t from = 0; from + needle.size() <= bytes.size();) {
    const void *hit =
        memmem(bytes.data() + from, bytes.size() - from, needle.data(), needle.size());
    if (!hit)
      break;
    at.push_back(size_t(static_cast<const uint8_t *>(hit) - bytes.data()));
    from = at.back() + 1;
  }
  return at;
}

/// Every body frame in the core's captured memory (its PT_LOAD segments, read with <elf.h> alone)
/// that carries one of `bodies` whole: type 3, channel `channel`, the body's size big-endian, the
/// body's bytes, 0xCE.
std::vector<FoundFrame> bodyFramesIn(llvm::ArrayRef<uint8_t> core,
                                     const std::vector<std::vector<uint8_t>> &bodies,
                                     uint16_t channel) {
  std::vector<FoundFrame> found;
  forEachSegment(core, [&](uint64_t vaddr, llvm::ArrayRef<uint8_t> segment) {
    for (const std::vector<uint8_t> &body : bodies) {
      // The frame header and the body's first bytes, then the rest compared where they match.
      std::vector<uint8_t> head(7 + std::min<size_t>(body.size(), 32));
      head[0] = 3;
      llvm::support::endian::write16be(&head[1], channel);
      llvm::support::endian::write32be(&head[3], uint32_t(body.size()));
      std::memcpy(&head[7], body.data(), head.size() - 7);
      const size_t header_size = 7, frame_size = header_size + body.size() + 1;
      for (const size_t at : occurrences(segment, head))
        if (at + frame_size <= segment.size() &&
            std::memcmp(segment.data() + at + header_size, body.data(), body.size()) == 0 &&
            segment[at + frame_size - 1] == 0xCE)
          found.push_back({vaddr + at, body.size()});
    }
  });
  return found;
}

/// The address of every basic.publish method frame on `channel` to the default exchange with
/// `routing_key` in the core's captured memory that a content header frame follows: type 1, the
/// channel, a size, class 60 and method 40, ticket 0, exchange "", the routing key, 0xCE where the
/// size says, then type 2 on the same channel.
std::vector<uint64_t> publishFramesIn(llvm::ArrayRef<uint8_t> core, uint16_t channel,
                                      const std::string &routing_key) {
  std::vector<uint64_t> found;
  std::string ids("\x00\x3c\x00\x28\x00\x00\x00", 7); // 60/40, ticket 0, exchange ""
  ids += char(routing_key.size());
  ids += routing_key;
  forEachSegment(core, [&](uint64_t vaddr, llvm::ArrayRef<uint8_t> segment) {
    for (const size_t at : occurrences(segment, llvm::arrayRefFromStringRef(ids))) {
      if (at < 7 || segment[at - 7] != 1 || segment[at - 6] != uint8_t(channel >> 8) ||
          segment[at - 5] != uint8_t(channel))
        continue;
      const size_t start = at - 7;
      const uint32_t size = uint32_t(segment[at - 4]) << 24 | uint32_t(segment[at - 3]) << 16 |
                            uint32_t(segment[at - 2]) << 8 | segment[at - 1];
      const size_t end = start + 8 + size_t(size);
      if (size < 4 || end + 3 > segment.size() || segment[end - 1] != 0xCE || segment[end] != 2 ||
          segment[end + 1] != uint8_t(channel >> 8) || segment[end + 2] != uint8_t(channel))
        continue;
      found.push_back(vaddr + start);
    }
  });
  return found;
}

// The reported buffer whose [address, address + size) holds `address`, or null.
const nlohmann::json *bufferHolding(const std::map<uint64_t, const nlohmann::json *> &buffers,
                                    uint64_t address) {
  auto it = buffers.upper_bound(address);
  if (it == buffers.begin())
    return nullptr;
  --it;
  return address < it->first + it->second->at("size").get<uint64_t>() ? it->second : nullptr;
}

// True when `address` is in one of the report's unclaimed ranges (memory no walker claims).
bool inUnclaimedRange(const nlohmann::json &report, uint64_t address) {
  for (const nlohmann::json &range : report.at("unclaimed")) {
    const uint64_t start = *parseHexAddress(range.at("start").get<std::string>());
    if (address >= start && address - start < range.at("size").get<uint64_t>())
      return true;
  }
  return false;
}

} // namespace

TEST_CASE("amqp client: the frames amqplib holds for a blocked broker are amqp buffers", "[live]") {
  const std::string client = sourceDir() + "/fixtures/amqp/publish.js";
  const std::string amqplib = sourceDir() + "/fixtures/amqp/node_modules/amqplib/package.json";
  if (!availableOrSkipped(access(kNode, X_OK) == 0, "node is missing (scripts/setup.sh --tests)") ||
      !availableOrSkipped(
          std::filesystem::exists(amqplib),
          "amqplib is not installed in fixtures/amqp (scripts/setup.sh --tests runs npm "
          "ci there)") ||
      !availableOrSkipped(access(kRabbitmqServer, X_OK) == 0 && access(kEpmd, X_OK) == 0,
                          "rabbitmq-server is missing (scripts/setup.sh --tests)") ||
      !gcoreOrSkipped())
    return;

  const std::vector<std::string> jpegs = {"photo_baseline.jpg", "photo_gray.jpg",
                                          "photo_progressive.jpg"};
  std::vector<std::vector<uint8_t>> bodies;
  std::vector<std::string> args = {client};
  const std::string dir = scratchDir("amqp_client");
  const std::string core = dir + "/node.core";
  nlohmann::json manifest;
  {
    Broker broker(dir);
    args.push_back(std::to_string(broker.port()));
    args.push_back(std::to_string(kCopies));
    for (const std::string &name : jpegs) {
      args.push_back(sourceDir() + "/fixtures/content/" + name);
      bodies.push_back(readFileBytes(args.back()));
    }
    LiveProcess node(kNode, args);
    REQUIRE(node.manifest().size() == 1);
    manifest = node.manifest().front();
    node.gcore(core);
  }
  INFO("the client printed " << manifest.dump());
  CHECK(manifest.at("blocked").get<bool>()); // the broker said connection.blocked
  const size_t published = manifest.at("published").get<size_t>();
  REQUIRE(published == kCopies * jpegs.size());

  const CommandResult run =
      runTool(dir, "analyze node.core --min-size 4K --quiet --report report.json");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::ifstream report_file(dir + "/report.json");
  const nlohmann::json report = nlohmann::json::parse(report_file);
  std::map<uint64_t, const nlohmann::json *> buffers; // by address
  for (const nlohmann::json &b : report.at("buffers"))
    buffers[*parseHexAddress(b.at("address").get<std::string>())] = &b;

  std::vector<FoundFrame> frames;
  std::vector<uint64_t> publishes;
  {
    const MappedFile mapped(core);
    frames = bodyFramesIn(mapped.bytes(), bodies, 1);
    publishes = publishFramesIn(mapped.bytes(), 1, manifest.at("routing_key").get<std::string>());
  }
  std::filesystem::remove(core);
  // The kernel's socket buffers take at most about a third of what was published; node holds
  // the rest (in this machine's runs, every one of the 750 frames was still in node's memory).
  INFO(frames.size() << " body frames of " << published << " messages found in the core");
  REQUIRE(frames.size() >= published / 2);
  REQUIRE(frames.size() <= published);
  // Each frame starts a buffer reported amqp: node's calloc'd block (V8's array buffers), or, for
  // a stale copy in memory no walker claims (one CI run had one), the region scan's, which knows a
  // body frame by the JPEG it carries.
  for (const FoundFrame &frame : frames) {
    INFO("body frame at 0x" << std::hex << frame.address << std::dec << " (" << frame.body_size
                            << " bytes of jpeg)");
    INFO("the report's heaps: " << report.at("heaps").dump());
    const nlohmann::json *held_by = bufferHolding(buffers, frame.address);
    REQUIRE(held_by != nullptr);
    const nlohmann::json &b = *held_by;
    INFO("reported buffer " << b.dump());
    CHECK(*parseHexAddress(b.at("address").get<std::string>()) == frame.address);
    CHECK(b.at("kind") == "amqp");
    if (b.at("allocator") == "region-scan")
      CHECK(inUnclaimedRange(report, frame.address));
    else
      CHECK(b.at("allocator") == "glibc");
    CHECK(b.at("content_length") == frame.body_size + 8);
    const nlohmann::json &details = b.at("details");
    CHECK(details.value("first_frame", "") == "body");
    CHECK(details.value("payload_kind", "") == "jpeg");
    CHECK(details.value("channel", 0) == 1);
    CHECK(details.value("body_bytes", 0u) == frame.body_size);
  }

  // Each message's basic.publish and content header frames, 70 bytes, are in node's 8 KiB
  // Buffer pool, 8-byte aligned: every one must lie inside the content of an amqp buffer that
  // counts each pair in it (a slab's malloc'd memory may hold an older slab's stale frames after
  // its live ones: one run had one such frame). A stale pair in memory no walker claims is 70
  // bytes, under the region scan's threshold: at most 1 in 20 may lie there.
  INFO(publishes.size() << " basic.publish frames found in the core");
  REQUIRE(publishes.size() >= published / 2);
  REQUIRE(publishes.size() <= published);
  std::map<uint64_t, size_t> pairs_in; // buffer address -> publish frames inside its content
  size_t unclaimed_publishes = 0;
  for (const uint64_t frame : publishes) {
    INFO("basic.publish frame at 0x" << std::hex << frame);
    const nlohmann::json *held_by = bufferHolding(buffers, frame);
    if (!held_by) {
      REQUIRE(inUnclaimedRange(report, frame));
      ++unclaimed_publishes;
      continue;
    }
    const nlohmann::json &b = *held_by;
    INFO("reported buffer " << b.dump());
    const uint64_t address = *parseHexAddress(b.at("address").get<std::string>());
    const uint64_t content = address + b.value("offset", uint64_t(0));
    REQUIRE(b.at("kind") == "amqp");
    REQUIRE(frame >= content);
    REQUIRE(frame < content + b.at("content_length").get<uint64_t>());
    ++pairs_in[address];
  }
  INFO(unclaimed_publishes << " basic.publish frames lie in unclaimed memory");
  CHECK(unclaimed_publishes * 20 <= publishes.size());
  for (const auto &[address, pairs] : pairs_in) {
    const nlohmann::json &details = buffers.at(address)->at("details");
    INFO("reported buffer " << buffers.at(address)->dump());
    CHECK(details.at("frame_count").get<size_t>() >= 2 * pairs);
    CHECK(details.value("method", "") == "basic.publish");
    CHECK(details.at("method_frames").get<size_t>() >= pairs);
    CHECK(details.value("content_type", "") == "image/jpeg");
    if (pairs > 1)
      CHECK(details.value("padding_bytes", 0u) >= (pairs - 1) * 2); // 70 bytes, then 72 on
  }
}
