// FakeOpenAiServer: a scripted OpenAI-compatible server on 127.0.0.1 port 0 (transport::HttpServer
// with two routes) for the ReasoningBank endpoint tests. POST /v1/embeddings answers deterministic
// vectors, a hashed bag of words (texts that share words get close vectors), listed in reverse
// order with their index; POST /v1/chat/completions answers the queued assistant text. Either can
// instead answer a queued raw status and body, or hold requests unanswered (for timeouts). Every
// request is recorded. Thread-safe; test-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "transport/http_route.h"
#include "transport/http_server.h"

namespace contextd::endpoints::testing {

class FakeOpenAiServer {
 public:
  // Dimension of the bag-of-words vectors.
  static constexpr size_t kDimension = 64;
  static constexpr char kEmbeddingsPath[] = "/v1/embeddings";
  static constexpr char kChatPath[] = "/v1/chat/completions";

  // A raw answer: status and body as sent.
  struct Raw {
    int status = 200;
    std::string body;
  };
  // One request as received.
  struct Received {
    std::string path;
    std::string authorization;
    std::string content_type;
    std::string body;
  };

  // Listens on 127.0.0.1 port 0; the status of HttpServer::Start otherwise.
  static absl::StatusOr<std::unique_ptr<FakeOpenAiServer>> Start();
  ~FakeOpenAiServer();

  // "http://127.0.0.1:<port>".
  std::string base_url() const;

  // The next request on `path` gets `raw` instead of the computed answer (in queue order).
  void QueueRaw(const std::string& path, Raw raw);
  // The next chat request gets a completion whose assistant content is `content`. A chat request
  // with nothing queued gets 500.
  void QueueChatContent(const std::string& content);
  // While set, requests are recorded and left unanswered until Stop.
  void set_hold(bool hold);
  std::vector<Received> requests();

  // Stops the listener and drops held requests (their clients see the connection close).
  void Stop();

  // The vector answered for `text`: each lowercase word (letters and digits) adds +-1 to one of
  // kDimension components chosen by its FNV-1a hash.
  static std::vector<float> BagOfWords(std::string_view text);

 private:
  FakeOpenAiServer() = default;
  void Handle(transport::HttpRequest request, std::shared_ptr<transport::HttpResponder> responder);
  transport::HttpResponse Embeddings(const std::string& body);

  std::unique_ptr<transport::HttpServer> server_;
  std::mutex mu_;  // guards the members below
  std::map<std::string, std::deque<Raw>> raw_;
  std::deque<std::string> chat_contents_;
  bool hold_ = false;
  std::vector<std::shared_ptr<transport::HttpResponder>> held_;
  std::vector<Received> requests_;
};

}  // namespace contextd::endpoints::testing
