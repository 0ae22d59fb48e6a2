// libcurl implementation of LlmTransport (see llm_http.h).
#include "stage2/llm_http.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>
#include <string_view>

#include <curl/curl.h>

#include "stage2/llm_config.h"

namespace truffld::diagnose {
namespace {

constexpr size_t kMaxResponseBytes = 8u << 20;  // a chat answer is small; refuse runaway bodies

struct Sink {
  std::string body;
  std::optional<int64_t> retry_after_ms;
  bool overflow = false;
};

size_t OnBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * nmemb;
  if (sink->body.size() + n > kMaxResponseBytes) {
    sink->overflow = true;
    return 0;  // makes curl abort with CURLE_WRITE_ERROR
  }
  sink->body.append(data, n);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t n = size * nmemb;
  std::string line(data, n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) {
      match = static_cast<char>(std::tolower(static_cast<unsigned char>(line[i]))) == kName[i];
    }
    if (match) {
      std::string value = line.substr(kName.size());
      while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
      sink->retry_after_ms = ParseRetryAfterSeconds(value);
      if (!sink->retry_after_ms.has_value()) {
        const time_t when = curl_getdate(value.c_str(), nullptr);  // HTTP-date form
        if (when > 0) {
          const int64_t delta = static_cast<int64_t>(when) - static_cast<int64_t>(std::time(nullptr));
          sink->retry_after_ms = delta > 0 ? delta * 1000 : 0;
        }
      }
    }
  }
  return n;
}

const std::string& NoProxyList() {
  static const std::string kList = [] {
    std::string list = "localhost,127.0.0.1,::1";
    for (const char* name : {"no_proxy", "NO_PROXY"}) {
      const char* v = std::getenv(name);
      if (v != nullptr && std::string_view(v) == "*") return std::string("*");  // no proxy at all
      if (v != nullptr && *v != '\0') return std::string(v) + "," + list;
    }
    return list;
  }();
  return kList;
}

class CurlTransport final : public LlmTransport {
 public:
  CurlTransport() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  Result<HttpReply> Post(const HttpRequest& request) override {
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return Unavailable("libcurl: cannot create a handle");
    Sink sink;
    char error[CURL_ERROR_SIZE] = {0};
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: application/json");
    if (!request.bearer_token.empty()) {
      const std::string auth = "Authorization: Bearer " + request.bearer_token;
      headers = curl_slist_append(headers, auth.c_str());  // copied by curl
    }
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ms));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::min<int64_t>(request.timeout_ms, 10'000)));
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // required for multi-threaded use
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &sink);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "truffld-diagnose");
    // Honour the usual proxy variables, but never send loopback traffic (a local vLLM or
    // llama.cpp server, the test stub) through a proxy. CURLOPT_NOPROXY replaces no_proxy, so
    // the user's list is kept and loopback appended.
    curl_easy_setopt(curl, CURLOPT_NOPROXY, NoProxyList().c_str());
    // Never follow redirects: a redirect to another host would carry the bearer token along.
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);

    const CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);

    if (rc != CURLE_OK) {
      if (sink.overflow) return LimitExceeded("LLM response larger than 8 MiB");
      if (rc == CURLE_OPERATION_TIMEDOUT) {
        return Unavailable("request timed out after " + std::to_string(request.timeout_ms) + " ms");
      }
      std::string what = error[0] != '\0' ? error : curl_easy_strerror(rc);
      return Unavailable("HTTP request failed: " + what);
    }
    HttpReply reply;
    reply.status = status;
    reply.body = std::move(sink.body);
    reply.retry_after_ms = sink.retry_after_ms;
    return reply;
  }
};

}  // namespace

std::shared_ptr<LlmTransport> MakeCurlTransport() { return std::make_shared<CurlTransport>(); }

}  // namespace truffld::diagnose
