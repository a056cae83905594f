// Test-only HTTP/1.1 client on a real socket (127.0.0.1) for the HTTP server's tests: raw
// requests, responses (Content-Length or chunked), SSE events, and MCP request bodies. Reads
// time out after 5 s, so a test that waits for bytes that never come fails instead of hanging.
// Not thread-safe: one client per thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <map>
#include <string>

#include "protocol/jsonrpc.h"

namespace contextd::transport::testing {

using protocol::Json;

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lowercase names
  std::string body;                            // de-chunked
  bool ok = false;                             // a complete response was read
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// A blocking HTTP/1.1 client on a raw socket, with a receive timeout so that a failing test
// cannot hang.
class RawClient {
 public:
  explicit RawClient(uint16_t port) : port_(port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawClient() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  bool connected() const { return connected_; }

  void Send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  std::string Request(const std::string& method, const std::string& body,
                      const std::string& extra_headers = "",
                      const std::string& accept = "application/json, text/event-stream") {
    std::string r = method + " /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n";
    if (!accept.empty()) r += "Accept: " + accept + "\r\n";
    if (method == "POST") r += "Content-Type: application/json\r\n";
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
    return r;
  }

  Response Post(const std::string& body, const std::string& extra = "",
                const std::string& accept = "application/json, text/event-stream") {
    Send(Request("POST", body, extra, accept));
    return ReadResponse();
  }

  // Reads status line and headers only.
  Response ReadHead() {
    Response r;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return r;
    }
    std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    std::string status_line = head.substr(0, line_end);
    if (status_line.size() < 12) return r;
    r.status = std::stoi(status_line.substr(9, 3));
    size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t v = colon + 1;
        while (v < line.size() && line[v] == ' ') ++v;
        r.headers[name] = line.substr(v);
      }
      pos = e + 2;
    }
    r.ok = true;
    return r;
  }

  // Reads one whole response (Content-Length or chunked).
  Response ReadResponse() {
    Response r = ReadHead();
    if (!r.ok) return r;
    r.ok = false;
    if (r.header("transfer-encoding") == "chunked") {
      for (;;) {
        std::string chunk;
        if (!ReadChunk(&chunk)) return r;
        if (chunk.empty()) break;
        r.body += chunk;
      }
    } else {
      size_t len = r.header("content-length").empty() ? 0 : std::stoul(r.header("content-length"));
      while (buf_.size() < len) {
        if (!Fill()) return r;
      }
      r.body = buf_.substr(0, len);
      buf_.erase(0, len);
    }
    r.ok = true;
    return r;
  }

  // Next SSE event of a chunked stream whose head was read ("" at the end of the stream).
  std::string ReadEvent() {
    for (;;) {
      size_t end = sse_.find("\n\n");
      if (end != std::string::npos) {
        std::string ev = sse_.substr(0, end);
        sse_.erase(0, end + 2);
        return ev;
      }
      std::string chunk;
      if (!ReadChunk(&chunk) || chunk.empty()) return "";
      sse_ += chunk;
    }
  }

  // True if nothing (no byte, no close) arrives within `ms` and nothing is buffered.
  bool QuietFor(int ms) {
    if (!buf_.empty()) return false;
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, ms) == 0;
  }

  // True when the server closed the connection (read returns 0 or an error other than timeout).
  bool WaitClosed() {
    char c;
    for (;;) {
      ssize_t n = recv(fd_, &c, 1, 0);
      if (n == 0) return true;
      if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
    }
  }

 private:
  bool Fill() {
    char tmp[16384];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  bool ReadChunk(std::string* out) {
    size_t e;
    while ((e = buf_.find("\r\n")) == std::string::npos) {
      if (!Fill()) return false;
    }
    size_t len = std::stoul(buf_.substr(0, e), nullptr, 16);
    buf_.erase(0, e + 2);
    while (buf_.size() < len + 2) {
      if (!Fill()) return false;
    }
    *out = buf_.substr(0, len);
    buf_.erase(0, len + 2);
    return true;
  }

  uint16_t port_;
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
  std::string sse_;
};

inline std::string Req(const Json& id, const std::string& method,
                       const Json& params = Json::object()) {
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
}

inline std::string InitBody(const std::string& version = "2025-11-25") {
  return Req(1, "initialize",
             {{"protocolVersion", version},
              {"capabilities", Json::object()},
              {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
}

// Data of an SSE event block ("id: 1\nevent: message\ndata: {...}").
inline Json EventData(const std::string& ev) {
  size_t d = ev.find("data: ");
  if (d == std::string::npos) return nullptr;
  size_t e = ev.find('\n', d);
  return Json::parse(ev.substr(d + 6, e == std::string::npos ? std::string::npos : e - d - 6));
}

}  // namespace contextd::transport::testing
