// OpenAiEmbedder against FakeOpenAiServer over real HTTP on 127.0.0.1: the request it sends, the
// vectors in index order (and similar texts as neighbours in an HnswIndex), the base URL rule,
// every kind of malformed answer (InvalidArgument), HTTP error statuses, a closed port
// (Unavailable, at once) and a server that never answers (DeadlineExceeded).
#include "endpoints/openai_embedder.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "endpoints/testing/fake_openai_server.h"
#include "gtest/gtest.h"
#include "memory/hnsw_index.h"
#include "nlohmann/json.hpp"

namespace contextd::endpoints {
namespace {

using testing::FakeOpenAiServer;
using namespace std::chrono_literals;

constexpr char kKeyEnv[] = "CONTEXTD_TEST_EMBEDDINGS_KEY";

double Cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

// A port on 127.0.0.1 that nothing listens on: bound, then closed.
uint16_t ClosedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class OpenAiEmbedderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fake = FakeOpenAiServer::Start();
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = std::move(*fake);
    auto client = transport::HttpClient::Create({});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    ::setenv(kKeyEnv, "sk-test-123", 1);
  }
  void TearDown() override { ::unsetenv(kKeyEnv); }

  OpenAiEndpointOptions Options() const {
    OpenAiEndpointOptions o;
    o.base_url = fake_->base_url();
    o.model = "test-embed";
    o.api_key_env = kKeyEnv;
    o.timeout_ms = 10'000;
    return o;
  }

  std::unique_ptr<FakeOpenAiServer> fake_;
  std::unique_ptr<transport::HttpClient> client_;
};

TEST_F(OpenAiEmbedderTest, EmbedsInIndexOrderWithTheModelAndTheBearerKey) {
  OpenAiEmbedder embedder(Options(), *client_);
  EXPECT_EQ(embedder.model(), "test-embed");
  EXPECT_EQ(embedder.dimension(), 0u);
  const std::vector<std::string> texts = {"retry the flaky network test with a fixed seed",
                                          "bump the cmake minimum version", "héllo \xff bad utf8"};
  auto vectors = embedder.Embed(texts);
  ASSERT_TRUE(vectors.ok()) << vectors.status();
  ASSERT_EQ(vectors->size(), 3u);
  // The server lists the vectors in reverse; they come back in the texts' order.
  EXPECT_EQ((*vectors)[0], FakeOpenAiServer::BagOfWords(texts[0]));
  EXPECT_EQ((*vectors)[1], FakeOpenAiServer::BagOfWords(texts[1]));
  EXPECT_EQ(embedder.dimension(), FakeOpenAiServer::kDimension);

  auto requests = fake_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/embeddings");
  EXPECT_EQ(requests[0].authorization, "Bearer sk-test-123");
  EXPECT_EQ(requests[0].content_type, "application/json");
  nlohmann::json body = nlohmann::json::parse(requests[0].body);
  EXPECT_EQ(body["model"], "test-embed");
  ASSERT_EQ(body["input"].size(), 3u);
  EXPECT_EQ(body["input"][0], texts[0]);
  EXPECT_EQ(body["input"][2], "héllo \xef\xbf\xbd bad utf8");  // invalid UTF-8 replaced
  EXPECT_EQ(body.size(), 2u);  // {"model", "input"} and nothing else
}

TEST_F(OpenAiEmbedderTest, EmptyInputMakesNoRequest) {
  OpenAiEmbedder embedder(Options(), *client_);
  auto vectors = embedder.Embed({});
  ASSERT_TRUE(vectors.ok());
  EXPECT_TRUE(vectors->empty());
  EXPECT_TRUE(fake_->requests().empty());
}

TEST_F(OpenAiEmbedderTest, SimilarTextsAreNeighboursInTheIndex) {
  OpenAiEmbedder embedder(Options(), *client_);
  const std::vector<std::string> items = {
      "run the database migration before starting the server",
      "quote shell arguments that contain spaces",
      "pin the compiler version in the continuous integration image",
      "read the failing test output before changing code",
  };
  auto vectors = embedder.Embed(items);
  ASSERT_TRUE(vectors.ok()) << vectors.status();
  memory::HnswIndex index;
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_TRUE(index.Add("mem_" + std::to_string(i), (*vectors)[i]).ok());
  }
  auto query = embedder.Embed({"start the server only after the database migration ran"});
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_GT(Cosine((*query)[0], (*vectors)[0]), Cosine((*query)[0], (*vectors)[1]));
  auto hits = index.Nearest((*query)[0], 2);
  ASSERT_TRUE(hits.ok()) << hits.status();
  ASSERT_FALSE(hits->empty());
  EXPECT_EQ((*hits)[0].id, "mem_0");
}

TEST_F(OpenAiEmbedderTest, BaseUrlWithOrWithoutV1ReachesTheSamePath) {
  for (const char* suffix : {"", "/", "/v1", "/v1/"}) {
    OpenAiEndpointOptions o = Options();
    o.base_url += suffix;
    OpenAiEmbedder embedder(o, *client_);
    auto vectors = embedder.Embed({"one"});
    ASSERT_TRUE(vectors.ok()) << suffix << ": " << vectors.status();
  }
  for (const auto& r : fake_->requests()) EXPECT_EQ(r.path, "/v1/embeddings");
  EXPECT_EQ(EndpointUrl("https://h/openai/v1", "/embeddings"), "https://h/openai/v1/embeddings");
  EXPECT_EQ(EndpointUrl("https://h/openai", "/embeddings"), "https://h/openai/v1/embeddings");
  EXPECT_EQ(EndpointUrl("http://h:8080/", "/chat/completions"),
            "http://h:8080/v1/chat/completions");
}

TEST_F(OpenAiEmbedderTest, EveryKindOfMalformedAnswerIsInvalidArgument) {
  const std::vector<std::pair<std::string, std::string>> answers = {
      {"not JSON", "<html>oops</html>"},
      {"not an object", "[1, 2]"},
      {"no data", R"({"object":"list"})"},
      {"data not a list", R"({"data":{"embedding":[1,2]}})"},
      {"wrong count", R"({"data":[{"index":0,"embedding":[1,2]}]})"},
      {"ragged", R"({"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1,2,3]}]})"},
      {"string component",
       R"({"data":[{"index":0,"embedding":[1,"2"]},{"index":1,"embedding":[1,2]}]})"},
      {"null component",
       R"({"data":[{"index":0,"embedding":[1,null]},{"index":1,"embedding":[1,2]}]})"},
      {"base64 embedding",
       R"({"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]})"},
      {"empty vector", R"({"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]})"},
      {"missing embedding", R"({"data":[{"index":0},{"index":1,"embedding":[1,2]}]})"},
      {"element not object", R"({"data":[[1,2],[3,4]]})"},
      {"index out of range",
       R"({"data":[{"index":0,"embedding":[1,2]},{"index":2,"embedding":[1,2]}]})"},
      {"negative index",
       R"({"data":[{"index":-1,"embedding":[1,2]},{"index":0,"embedding":[1,2]}]})"},
      {"index twice", R"({"data":[{"index":1,"embedding":[1,2]},{"index":1,"embedding":[1,2]}]})"},
      {"index not integer",
       R"({"data":[{"index":"0","embedding":[1,2]},{"index":1,"embedding":[1,2]}]})"},
      {"some indexed", R"({"data":[{"index":0,"embedding":[1,2]},{"embedding":[1,2]}]})"},
      {"float overflow",
       R"({"data":[{"index":0,"embedding":[1,1e39]},{"index":1,"embedding":[1,2]}]})"},
      {"empty body", ""},
  };
  OpenAiEmbedder embedder(Options(), *client_);
  for (const auto& [what, body] : answers) {
    fake_->QueueRaw(FakeOpenAiServer::kEmbeddingsPath, {200, body});
    auto vectors = embedder.Embed({"a", "b"});
    EXPECT_EQ(vectors.status().code(), absl::StatusCode::kInvalidArgument)
        << what << ": " << vectors.status();
  }
  // Unindexed elements are taken in order.
  fake_->QueueRaw(FakeOpenAiServer::kEmbeddingsPath,
                  {200, R"({"data":[{"embedding":[1,0]},{"embedding":[0,1]}]})"});
  auto vectors = embedder.Embed({"a", "b"});
  ASSERT_TRUE(vectors.ok()) << vectors.status();
  EXPECT_EQ((*vectors)[1], (std::vector<float>{0, 1}));
}

TEST_F(OpenAiEmbedderTest, ADimensionChangeBetweenAnswersIsInvalidArgument) {
  OpenAiEmbedder embedder(Options(), *client_);
  ASSERT_TRUE(embedder.Embed({"a"}).ok());
  fake_->QueueRaw(FakeOpenAiServer::kEmbeddingsPath, {200, R"({"data":[{"embedding":[1,2,3]}]})"});
  auto vectors = embedder.Embed({"a"});
  EXPECT_EQ(vectors.status().code(), absl::StatusCode::kInvalidArgument) << vectors.status();
  EXPECT_EQ(embedder.dimension(), FakeOpenAiServer::kDimension);
}

TEST_F(OpenAiEmbedderTest, HttpErrorStatusesMapToCodes) {
  const std::vector<std::pair<int, absl::StatusCode>> cases = {
      {500, absl::StatusCode::kUnavailable},        {503, absl::StatusCode::kUnavailable},
      {429, absl::StatusCode::kUnavailable},        {401, absl::StatusCode::kPermissionDenied},
      {403, absl::StatusCode::kPermissionDenied},   {404, absl::StatusCode::kFailedPrecondition},
      {400, absl::StatusCode::kFailedPrecondition},
  };
  OpenAiEmbedder embedder(Options(), *client_);
  for (const auto& [status, code] : cases) {
    fake_->QueueRaw(FakeOpenAiServer::kEmbeddingsPath,
                    {status, R"({"error":{"message":"no such model"}})"});
    auto vectors = embedder.Embed({"a"});
    EXPECT_EQ(vectors.status().code(), code) << status << ": " << vectors.status();
    EXPECT_NE(vectors.status().message().find("no such model"), absl::string_view::npos);
    EXPECT_EQ(vectors.status().message().find("sk-test-123"), absl::string_view::npos);
  }
}

TEST_F(OpenAiEmbedderTest, ConfigurationFaultsAreFailedPrecondition) {
  OpenAiEndpointOptions o = Options();
  o.api_key_env = "CONTEXTD_TEST_UNSET_VARIABLE";
  ::unsetenv(o.api_key_env.c_str());
  auto vectors = OpenAiEmbedder(o, *client_).Embed({"a"});
  EXPECT_EQ(vectors.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(vectors.status().message().find("CONTEXTD_TEST_UNSET_VARIABLE"),
            absl::string_view::npos);
  o = Options();
  o.base_url = "ftp://example";
  EXPECT_EQ(OpenAiEmbedder(o, *client_).Embed({"a"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ValidateEndpointOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = Options();
  o.model = "";
  EXPECT_EQ(ValidateEndpointOptions(o).code(), absl::StatusCode::kInvalidArgument);
  o = Options();
  o.base_url += "/v1?key=1";
  EXPECT_EQ(ValidateEndpointOptions(o).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateEndpointOptions(Options()).ok());
  EXPECT_TRUE(fake_->requests().empty());
}

TEST_F(OpenAiEmbedderTest, AClosedPortIsUnavailableAtOnce) {
  OpenAiEndpointOptions o = Options();
  o.base_url = "http://127.0.0.1:" + std::to_string(ClosedPort());
  o.timeout_ms = 30'000;
  OpenAiEmbedder embedder(o, *client_);
  const auto start = std::chrono::steady_clock::now();
  auto vectors = embedder.Embed({"a"});
  EXPECT_EQ(vectors.status().code(), absl::StatusCode::kUnavailable) << vectors.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // not the 30 s timeout
}

TEST_F(OpenAiEmbedderTest, AServerThatNeverAnswersIsDeadlineExceeded) {
  fake_->set_hold(true);
  OpenAiEndpointOptions o = Options();
  o.timeout_ms = 300;
  OpenAiEmbedder embedder(o, *client_);
  const auto start = std::chrono::steady_clock::now();
  auto vectors = embedder.Embed({"a"});
  EXPECT_EQ(vectors.status().code(), absl::StatusCode::kDeadlineExceeded) << vectors.status();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(fake_->requests().size(), 1u);
}

TEST_F(OpenAiEmbedderTest, AnAnswerOverTheLimitIsInvalidArgument) {
  OpenAiEndpoint endpoint(Options(), *client_, "/embeddings", 1000);
  fake_->QueueRaw(FakeOpenAiServer::kEmbeddingsPath, {200, std::string(5000, ' ')});
  auto answer = endpoint.PostJson("{}");
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument) << answer.status();
  // The endpoint still works afterwards.
  fake_->QueueRaw(FakeOpenAiServer::kEmbeddingsPath, {200, "{}"});
  answer = endpoint.PostJson("{}");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, "{}");
}

}  // namespace
}  // namespace contextd::endpoints
