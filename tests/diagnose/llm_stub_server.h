// A tiny OpenAI-compatible HTTP/1.1 server for the Stage II client tests: plain POSIX sockets on
// 127.0.0.1 with an ephemeral port, one thread per connection, and a scripted handler deciding
// each reply (status, body, headers, or "hang until the client gives up").
//
// It records every request (path, lower-cased headers, body) and the largest number of requests
// in flight at once, so tests can prove concurrency by counting instead of timing.
// Thread-safety: all public methods may be called from any thread; the handler runs on the
// connection threads and must be thread-safe itself.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace truffld::testing {

struct StubRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
  size_t index = 0;  // arrival order, from 0
};

struct StubReply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool hang = false;  // send nothing; wait until the client disconnects or the server stops
};

// A chat-completions response whose message content is `content`.
inline std::string ChatBody(const std::string& content, int prompt_tokens = 100,
                            int completion_tokens = 20) {
  nlohmann::json j = {
      {"id", "chatcmpl-stub"},
      {"object", "chat.completion"},
      {"choices", {{{"index", 0}, {"finish_reason", "stop"},
                    {"message", {{"role", "assistant"}, {"content", content}}}}}},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
                 {"total_tokens", prompt_tokens + completion_tokens}}}};
  return j.dump();
}

inline std::string Answer(bool anomaly, const std::vector<std::string>& names,
                          const std::string& rationale = "stub") {
  return nlohmann::json{{"step_anomaly", anomaly}, {"op_error_names", names}, {"rationale", rationale}}.dump();
}

class StubServer {
 public:
  using Handler = std::function<StubReply(const StubRequest&)>;

  explicit StubServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd_ < 0) throw std::runtime_error("stub: socket failed");
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 64) != 0) {
      ::close(listen_fd_);
      throw std::runtime_error("stub: bind/listen failed");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~StubServer() {
    stop_.store(true);
    cv_.notify_all();
    acceptor_.join();
    std::vector<std::thread> conns;
    {
      std::lock_guard<std::mutex> lock(mu_);
      conns.swap(connections_);
    }
    for (std::thread& t : conns) t.join();
    ::close(listen_fd_);
  }

  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<StubRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  size_t request_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }
  int max_in_flight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return max_in_flight_;
  }

  // For handlers: block until at least `n` requests have arrived in total (counting the caller),
  // or `bound` elapses. Returns whether that many arrived.
  bool WaitForArrivals(size_t n, std::chrono::milliseconds bound) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, bound, [&] { return requests_.size() >= n || stop_.load(); }) &&
           requests_.size() >= n;
  }

 private:
  void AcceptLoop() {
    while (!stop_.load()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      connections_.emplace_back([this, fd] { Serve(fd); ::close(fd); });
    }
  }

  // Reads into `buf` until `pred(buf)` holds; false on EOF, error or stop.
  template <typename Pred>
  bool ReadUntil(int fd, std::string& buf, Pred pred) {
    char chunk[65536];
    while (!pred(buf)) {
      pollfd p{fd, POLLIN, 0};
      const int r = ::poll(&p, 1, 20);
      if (stop_.load()) return false;
      if (r <= 0) continue;
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return false;
      buf.append(chunk, static_cast<size_t>(n));
    }
    return true;
  }

  static void SendAll(int fd, const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }

  void Serve(int fd) {
    std::string buf;
    if (!ReadUntil(fd, buf, [](const std::string& b) { return b.find("\r\n\r\n") != std::string::npos; })) return;
    const size_t head_end = buf.find("\r\n\r\n");
    StubRequest req;
    size_t line_end = buf.find("\r\n");
    const std::string first = buf.substr(0, line_end);
    const size_t sp1 = first.find(' '), sp2 = first.find(' ', sp1 + 1);
    req.method = first.substr(0, sp1);
    req.path = first.substr(sp1 + 1, sp2 - sp1 - 1);
    for (size_t pos = line_end + 2; pos < head_end;) {
      const size_t eol = buf.find("\r\n", pos);
      const std::string line = buf.substr(pos, eol - pos);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        size_t v = colon + 1;
        while (v < line.size() && line[v] == ' ') ++v;
        req.headers[name] = line.substr(v);
      }
      pos = eol + 2;
    }
    const size_t length = req.headers.count("content-length") ? std::stoul(req.headers["content-length"]) : 0;
    if (req.headers.count("expect")) SendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    std::string rest = buf.substr(head_end + 4);
    if (!ReadUntil(fd, rest, [&](const std::string& b) { return b.size() >= length; })) return;
    req.body = rest.substr(0, length);
    {
      std::lock_guard<std::mutex> lock(mu_);
      req.index = requests_.size();
      requests_.push_back(req);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    }
    cv_.notify_all();
    const StubReply reply = handler_(req);
    {
      // A request stops being "in flight" before its reply leaves: the client cannot start its
      // next request before reading this reply, so the count never over-reports overlap.
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
    }
    if (reply.hang) {
      std::string ignored;
      ReadUntil(fd, ignored, [](const std::string&) { return false; });  // until EOF or stop
    } else {
      std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " Stub\r\n"
                        "Content-Type: application/json\r\nConnection: close\r\n"
                        "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
      for (const auto& [k, v] : reply.headers) out += k + ": " + v + "\r\n";
      SendAll(fd, out + "\r\n" + reply.body);
      ::shutdown(fd, SHUT_WR);
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> connections_;
  std::vector<StubRequest> requests_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
};

}  // namespace truffld::testing
