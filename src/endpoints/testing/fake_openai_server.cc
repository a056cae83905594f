#include "endpoints/testing/fake_openai_server.h"

#include <cctype>
#include <utility>

#include "base/str_cat.h"
#include "nlohmann/json.hpp"
#include "transport/testing/echo_session.h"

namespace contextd::endpoints::testing {
namespace {

using Json = nlohmann::json;

transport::HttpResponse JsonResponse(int status, const Json& body) {
  return {status, "application/json", {}, body.dump()};
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeOpenAiServer>> FakeOpenAiServer::Start() {
  std::unique_ptr<FakeOpenAiServer> fake(new FakeOpenAiServer());
  transport::HttpServerOptions o;
  o.io_threads = 1;
  for (const char* path : {kEmbeddingsPath, kChatPath}) {
    transport::HttpRoute r;
    r.methods = {"POST"};
    r.path = path;
    r.auth = transport::RouteAuth::kNone;
    r.check_host_and_origin = false;
    r.handler = [raw = fake.get()](transport::HttpRequest request,
                                   std::shared_ptr<transport::HttpResponder> responder) {
      raw->Handle(std::move(request), std::move(responder));
    };
    o.routes.push_back(std::move(r));
  }
  auto server =
      transport::HttpServer::Start(o, std::make_shared<transport::testing::EchoSessionFactory>());
  if (!server.ok()) return server.status();
  fake->server_ = std::move(*server);
  return fake;
}

FakeOpenAiServer::~FakeOpenAiServer() { Stop(); }

std::string FakeOpenAiServer::base_url() const {
  return base::StrCat("http://127.0.0.1:", server_->port());
}

void FakeOpenAiServer::QueueRaw(const std::string& path, Raw raw) {
  std::lock_guard<std::mutex> lock(mu_);
  raw_[path].push_back(std::move(raw));
}

void FakeOpenAiServer::QueueChatContent(const std::string& content) {
  std::lock_guard<std::mutex> lock(mu_);
  chat_contents_.push_back(content);
}

void FakeOpenAiServer::set_hold(bool hold) {
  std::lock_guard<std::mutex> lock(mu_);
  hold_ = hold;
}

std::vector<FakeOpenAiServer::Received> FakeOpenAiServer::requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void FakeOpenAiServer::Stop() {
  if (server_) server_->Stop();
  std::vector<std::shared_ptr<transport::HttpResponder>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held.swap(held_);
  }
}

std::vector<float> FakeOpenAiServer::BagOfWords(std::string_view text) {
  std::vector<float> v(kDimension, 0.0f);
  std::string word;
  auto add = [&] {
    if (word.empty()) return;
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : word) h = (h ^ c) * 1099511628211ull;
    v[h % kDimension] += (h >> 63) ? 1.0f : -1.0f;
    word.clear();
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      add();
    }
  }
  add();
  return v;
}

void FakeOpenAiServer::Handle(transport::HttpRequest request,
                              std::shared_ptr<transport::HttpResponder> responder) {
  const std::string path(request.path());
  std::optional<Raw> raw;
  std::optional<std::string> content;
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back({path, std::string(request.Header("authorization")),
                         std::string(request.Header("content-type")), request.body()});
    if (hold_) {
      held_.push_back(std::move(responder));
      return;
    }
    auto& queue = raw_[path];
    if (!queue.empty()) {
      raw = std::move(queue.front());
      queue.pop_front();
    } else if (path == kChatPath && !chat_contents_.empty()) {
      content = std::move(chat_contents_.front());
      chat_contents_.pop_front();
    }
  }
  if (raw) {
    responder->Respond({raw->status, "application/json", {}, std::move(raw->body)});
  } else if (path == kEmbeddingsPath) {
    responder->Respond(Embeddings(request.body()));
  } else if (content) {
    Json answer = {
        {"id", "chatcmpl-test"},
        {"object", "chat.completion"},
        {"choices", Json::array({{{"index", 0},
                                  {"message", {{"role", "assistant"}, {"content", *content}}},
                                  {"finish_reason", "stop"}}})}};
    responder->Respond(JsonResponse(200, answer));
  } else {
    responder->Respond(JsonResponse(500, {{"error", {{"message", "nothing scripted"}}}}));
  }
}

transport::HttpResponse FakeOpenAiServer::Embeddings(const std::string& body) {
  Json request = Json::parse(body, nullptr, false);
  if (request.is_discarded() || !request.is_object() || !request.contains("input") ||
      !request["input"].is_array()) {
    return JsonResponse(400, {{"error", {{"message", "input must be a list of strings"}}}});
  }
  const Json& input = request["input"];
  Json data = Json::array();
  // Reverse order, with explicit indexes: the client must sort by index.
  for (size_t i = input.size(); i-- > 0;) {
    if (!input[i].is_string()) {
      return JsonResponse(400, {{"error", {{"message", "input must be a list of strings"}}}});
    }
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", BagOfWords(input[i].get<std::string>())}});
  }
  return JsonResponse(200, {{"object", "list"},
                            {"data", data},
                            {"model", request.value("model", "")},
                            {"usage", {{"prompt_tokens", 0}, {"total_tokens", 0}}}});
}

}  // namespace contextd::endpoints::testing
