// mcp_load: a small load generator for any MCP Streamable HTTP endpoint. It initializes
// --sessions sessions (JSON or SSE answers, Mcp-Session-Id when the server issues one), then keeps
// --concurrency requests in flight in total (one per keep-alive connection, connections spread
// round-robin over the sessions), each a `tools/call` of --tool with --args, for --duration
// seconds after --warmup seconds. Optionally holds --idle-conns idle keep-alive connections and
// --sse-streams open GET streams (one extra session each) during the measurement.
// With --branch-pairs each operation is a contextd branch_create + branch_return pair instead;
// with --calls-per-op N it is N calls of --tool one after the other on the same connection
// (N = 2 is the same round trips as a pair, for a server without the branch tools).
// With --rate R the connections start R operations per second in total (each on its own
// schedule) instead of as many as they can, and latency runs from each operation's scheduled
// start, so that a server falling behind shows in the percentiles (no coordinated omission).
// Prints throughput and latency percentiles, and one machine-readable RESULT line.
// Single process, epoll, --threads client threads. Linux only.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string host = "127.0.0.1";
  int port = 9090;
  std::string path = "/mcp";
  int sessions = 16;
  int concurrency = 32;  // total requests in flight
  double duration = 10;
  double warmup = 2;
  int threads = 1;
  std::string tool = "echo";
  std::string args = R"({"message":"hello"})";
  int idle_conns = 0;
  int sse_streams = 0;
  std::string label = "server";
  std::string protocol_version = "2025-11-25";
  // --branch-pairs: each operation is branch_create then branch_return of that branch (the
  // contextd folding round trip); latency and throughput are per pair.
  bool branch_pairs = false;
  // --calls-per-op: calls of `tool` in each operation, one after the other (without
  // --branch-pairs).
  int calls_per_op = 1;
  // --rate: operations per second in total (0 = as fast as answers come back).
  double rate = 0;
};

bool ParseUrl(const std::string& url, Config* c) {
  const std::string prefix = "http://";
  if (url.rfind(prefix, 0) != 0) return false;
  std::string rest = url.substr(prefix.size());
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  c->path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) return false;
  c->host = hostport.substr(0, colon);
  if (c->host == "localhost") c->host = "127.0.0.1";
  c->port = std::atoi(hostport.c_str() + colon + 1);
  return true;
}

int Connect(const Config& c, bool nonblocking) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(c.port));
  if (inet_pton(AF_INET, c.host.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (nonblocking) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

bool SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string LowerCopy(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// One parsed HTTP response.
struct HttpResponse {
  int status = 0;
  std::string session_id;
  std::string content_type;
  std::string body;  // de-chunked
};

// Tries to parse one complete response at the start of `buf`. Returns the bytes it used, or 0
// when more data is needed.
size_t TryParse(const std::string& buf, HttpResponse* out) {
  size_t head_end = buf.find("\r\n\r\n");
  if (head_end == std::string::npos) return 0;
  if (buf.size() < 12) return 0;
  out->status = std::atoi(buf.c_str() + 9);
  out->session_id.clear();
  out->content_type.clear();
  out->body.clear();
  long content_length = -1;
  bool chunked = false;
  size_t pos = buf.find("\r\n") + 2;
  while (pos < head_end) {
    size_t e = buf.find("\r\n", pos);
    std::string line = buf.substr(pos, e - pos);
    size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = LowerCopy(line.substr(0, colon));
      size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      std::string value = line.substr(v);
      if (name == "content-length") content_length = std::atol(value.c_str());
      if (name == "transfer-encoding" && LowerCopy(value).find("chunked") != std::string::npos) {
        chunked = true;
      }
      if (name == "mcp-session-id") out->session_id = value;
      if (name == "content-type") out->content_type = value;
    }
    pos = e + 2;
  }
  size_t body_start = head_end + 4;
  if (chunked) {
    size_t p = body_start;
    for (;;) {
      size_t e = buf.find("\r\n", p);
      if (e == std::string::npos) return 0;
      size_t len = std::strtoul(buf.c_str() + p, nullptr, 16);
      p = e + 2;
      if (len == 0) {
        if (buf.size() < p + 2) return 0;
        return p + 2;  // no trailers
      }
      if (buf.size() < p + len + 2) return 0;
      out->body.append(buf, p, len);
      p += len + 2;
    }
  }
  size_t len = content_length < 0 ? 0 : static_cast<size_t>(content_length);
  if (buf.size() < body_start + len) return 0;
  out->body.assign(buf, body_start, len);
  return body_start + len;
}

std::string BuildPost(const Config& c, const std::string& sid, const std::string& body) {
  std::string r = "POST " + c.path + " HTTP/1.1\r\nHost: " + c.host + ":" + std::to_string(c.port) +
                  "\r\nContent-Type: application/json\r\nAccept: application/json, "
                  "text/event-stream\r\n";
  if (!sid.empty()) {
    r += "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: " + c.protocol_version + "\r\n";
  }
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return r;
}

// Blocking request/response on `fd` (for setup).
bool Roundtrip(int fd, const std::string& req, HttpResponse* resp) {
  if (!SendAll(fd, req)) return false;
  std::string buf;
  char tmp[65536];
  for (;;) {
    if (TryParse(buf, resp) > 0) return true;
    ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
}

// Initializes one session; returns its id ("" for a server without sessions), or "!" on error.
std::string InitSession(const Config& c) {
  int fd = Connect(c, false);
  if (fd < 0) return "!";
  const std::string init =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")" +
      c.protocol_version +
      R"(","capabilities":{},"clientInfo":{"name":"mcp_load","version":"1"}}})";
  HttpResponse r;
  std::string sid = "!";
  if (Roundtrip(fd, BuildPost(c, "", init), &r) && r.status == 200 &&
      r.body.find("\"result\"") != std::string::npos) {
    sid = r.session_id;
    HttpResponse n;
    Roundtrip(fd, BuildPost(c, sid, R"({"jsonrpc":"2.0","method":"notifications/initialized"})"),
              &n);
  } else {
    std::fprintf(stderr, "initialize failed: status %d body %s\n", r.status, r.body.c_str());
  }
  close(fd);
  return sid;
}

struct Conn {
  int fd = -1;
  std::string sid;
  std::string in;
  long next_id = 1;
  Clock::time_point sent;
  std::string branch_id;  // --branch-pairs: the branch created, to return next ("" = create next)
  int calls_done = 0;     // calls of the current operation answered so far
  Clock::time_point due;  // --rate: when the next operation is scheduled to start
  bool parked = false;    // --rate: waiting for `due`
};

struct ThreadResult {
  std::vector<uint32_t> latencies_us;
  uint64_t ok = 0;
  uint64_t errors = 0;
};

std::string ToolCall(const Config& c, long id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + c.tool + R"(","arguments":)" + c.args +
         "}}";
}

void RunThread(const Config& c, std::vector<Conn>& conns, Clock::time_point measure_from,
               Clock::time_point stop_at, ThreadResult* res) {
  int ep = epoll_create1(0);
  for (size_t i = 0; i < conns.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
  }
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
      c.rate > 0 ? static_cast<double>(c.concurrency) / c.rate : 0.0));
  for (size_t i = 0; i < conns.size(); ++i) {
    // Spread the connections' schedules over one interval.
    conns[i].due = Clock::now() + interval * static_cast<long>(i) / static_cast<long>(conns.size());
  }
  // Starts the connection's next operation: now, or at its scheduled time with --rate (false:
  // not due yet). Sets k.sent, the time latency is measured from.
  auto start_op = [&](Conn& k) -> bool {
    if (c.rate <= 0) {
      k.sent = Clock::now();
      return true;
    }
    if (Clock::now() < k.due) {
      k.parked = true;
      return false;
    }
    k.parked = false;
    k.sent = k.due;
    k.due += interval;
    return true;
  };
  auto send_next = [&](Conn& k) {
    std::string body;
    if (!c.branch_pairs) {
      if (k.calls_done == 0 && !start_op(k)) return;
      body = ToolCall(c, k.next_id++);
    } else if (k.branch_id.empty()) {
      // A pair's latency runs from its create to its return's answer.
      if (!start_op(k)) return;
      body = R"({"jsonrpc":"2.0","id":)" + std::to_string(k.next_id++) +
             R"(,"method":"tools/call","params":{"name":"branch_create","arguments":)"
             R"({"description":"bench","prompt":"explore the parser","budget":1000,)"
             R"("parent_branch_id":""}}})";
    } else {
      body = R"({"jsonrpc":"2.0","id":)" + std::to_string(k.next_id++) +
             R"(,"method":"tools/call","params":{"name":"branch_return","arguments":)"
             R"({"branch_id":")" +
             k.branch_id + R"(","message":"the parser is in src/parse.c"}}})";
    }
    if (!SendAll(k.fd, BuildPost(c, k.sid, body))) ++res->errors;
  };
  for (auto& k : conns) send_next(k);
  std::vector<epoll_event> events(256);
  char tmp[65536];
  HttpResponse resp;
  size_t open = conns.size();
  while (open > 0) {
    const auto now = Clock::now();
    if (now >= stop_at + std::chrono::seconds(5)) break;  // stragglers
    auto timeout = std::chrono::nanoseconds(std::chrono::milliseconds(100));
    if (c.rate > 0) {
      for (Conn& k : conns) {
        if (!k.parked) continue;
        if (k.due <= now) {
          if (now < stop_at) {
            send_next(k);
          } else {
            k.parked = false;
            epoll_ctl(ep, EPOLL_CTL_DEL, k.fd, nullptr);
            --open;
          }
          continue;
        }
        timeout =
            std::min(timeout, std::chrono::duration_cast<std::chrono::nanoseconds>(k.due - now));
      }
    }
    // Nanosecond timeout: a paced send must not wait for the next whole millisecond.
    timespec ts{static_cast<time_t>(timeout.count() / 1'000'000'000),
                static_cast<long>(timeout.count() % 1'000'000'000)};
    int n = epoll_pwait2(ep, events.data(), static_cast<int>(events.size()), &ts, nullptr);
    for (int e = 0; e < n; ++e) {
      Conn& k = conns[events[e].data.u64];
      ssize_t got = recv(k.fd, tmp, sizeof(tmp), 0);
      if (got <= 0) {
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        ++res->errors;
        epoll_ctl(ep, EPOLL_CTL_DEL, k.fd, nullptr);
        --open;
        continue;
      }
      k.in.append(tmp, static_cast<size_t>(got));
      size_t used;
      while ((used = TryParse(k.in, &resp)) > 0) {
        k.in.erase(0, used);
        const auto done = Clock::now();
        bool good = resp.status == 200 && resp.body.find("\"result\"") != std::string::npos &&
                    resp.body.find("\"isError\":true") == std::string::npos;
        if (c.branch_pairs && good && k.branch_id.empty()) {
          // First half of a pair: remember the branch and send its return.
          size_t at = resp.body.find("\"branch_id\":\"br_");
          if (at != std::string::npos) {
            size_t start = at + 13;
            k.branch_id = resp.body.substr(start, resp.body.find('"', start) - start);
            send_next(k);
            continue;
          }
          good = false;
        }
        k.branch_id.clear();
        if (!c.branch_pairs && good && ++k.calls_done < c.calls_per_op) {
          send_next(k);  // the operation's next call
          continue;
        }
        k.calls_done = 0;
        // Counted by when the operation started (was scheduled to start), not when it ended:
        // the slow ones still in flight at the end must not drop out of the percentiles.
        if (k.sent >= measure_from && k.sent < stop_at) {
          if (good) {
            ++res->ok;
            res->latencies_us.push_back(static_cast<uint32_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(done - k.sent).count()));
          } else {
            ++res->errors;
            if (res->errors < 3) {
              std::fprintf(stderr, "bad response %d: %.200s\n", resp.status, resp.body.c_str());
            }
          }
        }
        if (done < stop_at) {
          send_next(k);
        } else {
          epoll_ctl(ep, EPOLL_CTL_DEL, k.fd, nullptr);
          --open;
        }
      }
    }
  }
  close(ep);
}

double Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1));
  return sorted[i] / 1000.0;
}

void Usage() {
  std::fprintf(stderr,
               "usage: mcp_load --url http://127.0.0.1:9090/mcp [--sessions 16] "
               "[--concurrency 32] [--duration 10] [--warmup 2] [--threads 1] [--tool echo] "
               "[--args JSON] [--idle-conns N] [--sse-streams N] [--label NAME] "
               "[--protocol-version V] [--branch-pairs | --calls-per-op N] [--rate OPS_PER_S]\n");
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        Usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--url") {
      if (!ParseUrl(next(), &c)) {
        std::fprintf(stderr, "bad --url (http://IPv4:PORT/path expected)\n");
        return 2;
      }
    } else if (a == "--branch-pairs") {
      c.branch_pairs = true;
    } else if (a == "--calls-per-op") {
      c.calls_per_op = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--rate") {
      c.rate = std::atof(next().c_str());
    } else if (a == "--sessions") {
      c.sessions = std::atoi(next().c_str());
    } else if (a == "--concurrency") {
      c.concurrency = std::atoi(next().c_str());
    } else if (a == "--duration") {
      c.duration = std::atof(next().c_str());
    } else if (a == "--warmup") {
      c.warmup = std::atof(next().c_str());
    } else if (a == "--threads") {
      c.threads = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--tool") {
      c.tool = next();
    } else if (a == "--args") {
      c.args = next();
    } else if (a == "--idle-conns") {
      c.idle_conns = std::atoi(next().c_str());
    } else if (a == "--sse-streams") {
      c.sse_streams = std::atoi(next().c_str());
    } else if (a == "--label") {
      c.label = next();
    } else if (a == "--protocol-version") {
      c.protocol_version = next();
    } else {
      Usage();
      return 2;
    }
  }
  if (c.sessions < 1 || c.concurrency < 1) {
    Usage();
    return 2;
  }

  std::vector<std::string> sids;
  for (int s = 0; s < c.sessions; ++s) {
    std::string sid = InitSession(c);
    if (sid == "!") return 1;
    sids.push_back(sid);
  }

  // Background load: idle keep-alive connections (one request each, then silence) and GET
  // streams, each on its own session.
  std::vector<int> held;
  for (int i = 0; i < c.idle_conns; ++i) {
    int fd = Connect(c, false);
    if (fd < 0) {
      std::fprintf(stderr, "idle connection %d failed\n", i);
      return 1;
    }
    HttpResponse r;
    std::string req =
        "GET /healthz HTTP/1.1\r\nHost: " + c.host + ":" + std::to_string(c.port) + "\r\n\r\n";
    if (!Roundtrip(fd, req, &r)) {
      std::fprintf(stderr, "idle connection %d: no response\n", i);
      return 1;
    }
    held.push_back(fd);
  }
  int streams_ok = 0;
  for (int i = 0; i < c.sse_streams; ++i) {
    std::string sid = InitSession(c);
    if (sid == "!") return 1;
    int fd = Connect(c, false);
    std::string req = "GET " + c.path + " HTTP/1.1\r\nHost: " + c.host + ":" +
                      std::to_string(c.port) + "\r\nAccept: text/event-stream\r\n" +
                      "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: " + c.protocol_version +
                      "\r\n\r\n";
    SendAll(fd, req);
    char head[1024];
    ssize_t n = recv(fd, head, sizeof(head) - 1, 0);
    if (n > 12 && std::strncmp(head + 9, "200", 3) == 0) ++streams_ok;
    held.push_back(fd);
  }

  // Load connections, round-robin over sessions, split over threads.
  std::vector<std::vector<Conn>> per_thread(c.threads);
  for (int i = 0; i < c.concurrency; ++i) {
    Conn k;
    k.fd = Connect(c, true);
    if (k.fd < 0) {
      std::fprintf(stderr, "connect failed\n");
      return 1;
    }
    k.sid = sids[i % sids.size()];
    k.next_id = 1 + static_cast<long>(i) * 100'000'000L;
    per_thread[i % c.threads].push_back(std::move(k));
  }
  const auto start = Clock::now();
  const auto measure_from =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c.warmup));
  const auto stop_at = measure_from + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(c.duration));
  std::vector<ThreadResult> results(c.threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < c.threads; ++t) {
    threads.emplace_back(
        [&, t] { RunThread(c, per_thread[t], measure_from, stop_at, &results[t]); });
  }
  for (auto& th : threads) th.join();

  std::vector<uint32_t> all;
  uint64_t ok = 0, errors = 0;
  for (auto& r : results) {
    ok += r.ok;
    errors += r.errors;
    all.insert(all.end(), r.latencies_us.begin(), r.latencies_us.end());
  }
  std::sort(all.begin(), all.end());
  const double rps = static_cast<double>(ok) / c.duration;
  std::printf(
      "%s: %d sessions, %d in flight, %.0fs: %.0f req/s, p50 %.3f ms, p90 %.3f ms, p99 %.3f "
      "ms, max %.3f ms, errors %llu, idle conns %d, sse streams %d/%d\n",
      c.label.c_str(), c.sessions, c.concurrency, c.duration, rps, Percentile(all, 0.5),
      Percentile(all, 0.9), Percentile(all, 0.99), all.empty() ? 0.0 : all.back() / 1000.0,
      static_cast<unsigned long long>(errors), c.idle_conns, streams_ok, c.sse_streams);
  std::printf("RESULT label=%s rps=%.0f p50_ms=%.3f p99_ms=%.3f errors=%llu\n", c.label.c_str(),
              rps, Percentile(all, 0.5), Percentile(all, 0.99),
              static_cast<unsigned long long>(errors));
  for (int fd : held) close(fd);
  for (auto& v : per_thread) {
    for (auto& k : v) close(k.fd);
  }
  return errors == 0 ? 0 : 3;
}
