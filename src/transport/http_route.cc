#include "transport/http_route.h"

#include "transport/internal/raw_request.h"

namespace contextd::transport {

namespace beast = boost::beast;

HttpRequest::HttpRequest(std::unique_ptr<internal::RawRequest> raw, std::string tenant)
    : raw_(std::move(raw)), tenant_(std::move(tenant)) {}
HttpRequest::HttpRequest(HttpRequest&&) noexcept = default;
HttpRequest& HttpRequest::operator=(HttpRequest&&) noexcept = default;
HttpRequest::~HttpRequest() = default;

std::string_view HttpRequest::method() const {
  auto m = raw_->msg.method_string();
  return {m.data(), m.size()};
}

std::string_view HttpRequest::target() const {
  auto t = raw_->msg.target();
  return {t.data(), t.size()};
}

std::string_view HttpRequest::path() const {
  std::string_view t = target();
  return t.substr(0, t.find('?'));
}

std::string_view HttpRequest::query() const {
  std::string_view t = target();
  size_t q = t.find('?');
  return q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
}

std::string_view HttpRequest::Header(std::string_view name) const {
  auto it = raw_->msg.find(beast::string_view(name.data(), name.size()));
  if (it == raw_->msg.end()) return {};
  return {it->value().data(), it->value().size()};
}

bool HttpRequest::HasHeader(std::string_view name) const {
  return raw_->msg.find(beast::string_view(name.data(), name.size())) != raw_->msg.end();
}

std::vector<std::pair<std::string_view, std::string_view>> HttpRequest::Headers() const {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  for (const auto& f : raw_->msg) {
    out.emplace_back(std::string_view(f.name_string().data(), f.name_string().size()),
                     std::string_view(f.value().data(), f.value().size()));
  }
  return out;
}

const std::string& HttpRequest::body() const { return raw_->msg.body(); }

std::string HttpRequest::TakeBody() { return std::move(raw_->msg.body()); }

int HttpRequest::version() const { return static_cast<int>(raw_->msg.version()); }

}  // namespace contextd::transport
