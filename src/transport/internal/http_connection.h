// Connection: one TCP connection of the Listener: reads requests one at a time within the
// limits, checks Host/Origin and the bearer token, hands each request to its route, and writes
// what the route's HttpResponder sends (whole or chunked), then keeps alive, closes, or drains the
// rest of a refused request before closing (lingering close). Confined to its strand; ConnLink is
// the only part shared with other threads.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "boost/asio/io_context.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/asio/strand.hpp"

namespace contextd::transport::internal {

class Listener;
class Connection;

// Shared by a connection and the responders of its requests. `conn` is set while an exchange is
// open (from dispatch until its response ended or the connection closed) and cut by Finish():
// responders reach their connection only through it, and post to it only under `mu`, so nothing
// posts to the io_context or holds a connection once Finish has cut the links.
struct ConnLink {
  std::mutex mu;
  std::shared_ptr<Connection> conn;
  uint64_t gen = 0;  // the open exchange's request generation
};

// Creates a connection for an accepted socket (bound to `strand`) and starts it on its strand.
void StartConnection(Listener* srv, boost::asio::ip::tcp::socket socket,
                     boost::asio::strand<boost::asio::io_context::executor_type> strand);

}  // namespace contextd::transport::internal
