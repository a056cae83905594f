// The parsed request behind HttpRequest (Boost.Beast), shared by the listener and
// http_route.cc. Not thread-safe: owned by one HttpRequest.
#pragma once

#include "boost/beast/http.hpp"

namespace contextd::transport::internal {

struct RawRequest {
  boost::beast::http::request<boost::beast::http::string_body> msg;
};

}  // namespace contextd::transport::internal
