// Names: operator families (what downstream stages group by), phases from step names, and the
// payload truffld's hooks write into comm range names. Pure functions.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "truffld/merge/classify.h"

namespace truffld::merge {
namespace {

// The demangler only looks at a name's first 4 KiB (as the rules do).
constexpr size_t kMaxDemangledNameBytes = 4096;

std::string_view CutAt(std::string_view s, std::string_view seps) {
  size_t p = s.find_first_of(seps);
  return p == std::string_view::npos ? s : s.substr(0, p);
}

// "_ZN2at6native29vectorized_elementwise_kernelLi4E..." (possibly truncated) -> "at::native::..."
std::string NestedNameFromMangled(std::string_view m) {
  size_t i = 2;
  bool nested = i < m.size() && m[i] == 'N';
  if (nested) ++i;
  std::string out;
  while (i < m.size()) {
    while (i < m.size() && (m[i] == 'K' || m[i] == 'V' || m[i] == 'L')) ++i;
    if (i >= m.size() || m[i] < '0' || m[i] > '9') break;
    size_t n = 0;
    while (i < m.size() && m[i] >= '0' && m[i] <= '9') n = n * 10 + size_t(m[i++] - '0');
    if (n == 0 || i + n > m.size()) break;
    if (!out.empty()) out += "::";
    out.append(m.substr(i, n));
    i += n;
    if (!nested) break;
  }
  return out.empty() ? std::string(m) : out;
}

std::string KernelFamily(std::string_view name) {
  std::string demangled;
  if (name.size() > 2 && name[0] == '_' && name[1] == 'Z' && name.size() <= kMaxDemangledNameBytes) {
    int st = 0;
    std::string z(name);
    char* d = abi::__cxa_demangle(z.c_str(), nullptr, nullptr, &st);
    if (st == 0 && d) demangled = d;
    std::free(d);
    if (demangled.empty()) return NestedNameFromMangled(name);
    name = demangled;
  }
  if (name.substr(0, 5) == "void ") name.remove_prefix(5);
  // Cut at the first '<' or '(' that is not part of "(anonymous namespace)".
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, 21, "(anonymous namespace)") == 0) { out.append("(anonymous namespace)"); i += 20; continue; }
    char c = name[i];
    if (c == '<' || c == '(') break;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? std::string(name) : out;
}

}  // namespace

std::string NormaliseFamily(Layer layer, std::string_view name) {
  switch (layer) {
    case Layer::kStep: return "step";
    case Layer::kFrontend: return std::string(CutAt(name, " "));
    case Layer::kBackend: {
      size_t p = name.find(", ");
      return std::string(p == std::string_view::npos ? name : name.substr(0, p));
    }
    case Layer::kComm: return std::string(CutAt(name, " ,"));
    case Layer::kRuntime:
    case Layer::kDriver: {
      // cudaDeviceSynchronize_v3020 -> cudaDeviceSynchronize (CUPTI's version suffix).
      size_t p = name.rfind("_v");
      if (p != std::string_view::npos && p + 2 < name.size() &&
          name.substr(p + 2).find_first_not_of("0123456789") == std::string_view::npos)
        return std::string(name.substr(0, p));
      return std::string(name);
    }
    case Layer::kKernel: return KernelFamily(name);
    case Layer::kMemcpy:
    case Layer::kMemset: {
      size_t p = name.find(" (");
      return std::string(p == std::string_view::npos ? name : name.substr(0, p));
    }
    case Layer::kOther:
    case Layer::kSync: {
      size_t p = name.find(", ");
      return std::string(p == std::string_view::npos ? name : name.substr(0, p));
    }
  }
  return std::string(name);
}

namespace {

// The decimal number right after `key` in `name` (-1: none; saturated at 10^12).
int64_t NumberAfter(std::string_view name, std::string_view key) {
  const size_t at = name.find(key);
  if (at == std::string_view::npos) return -1;
  int64_t n = -1;
  for (size_t i = at + key.size(); i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i)
    n = std::min<int64_t>((n < 0 ? 0 : n) * 10 + (name[i] - '0'), 1000000000000);
  return n;
}

}  // namespace

EngineStepCounts CountsFromStepName(std::string_view name) {
  EngineStepCounts c;
  if (name.rfind("execute_", 0) == 0) {
    const int64_t ctx = NumberAfter(name, "context_"), gen = NumberAfter(name, "_generation_");
    if (ctx >= 0 && gen >= 0) c.batch = ctx + gen;
  } else if (name.rfind("step[", 0) == 0) {
    const std::string_view inside = name.substr(0, name.find(']'));
    c.batch = NumberAfter(inside, " bs=");
    c.tokens = NumberAfter(inside, " toks=");
  }
  return c;
}

const char* PhaseFromStepName(std::string_view name) {
  // truffld's hooks and truffld-synth write an explicit tag after the request ids:
  // step_execute_model[request_ids:a_b][phase:decode]. It wins over words elsewhere in the name
  // (a request id may well contain "decode"). Other engines' names: words anywhere.
  for (size_t at = name.rfind("[phase:"); at != std::string_view::npos;) {
    std::string_view v = name.substr(at + 7);
    v = v.substr(0, v.find(']'));
    if (v == "prefill") return "prefill";
    if (v == "decode") return "decode";
    if (v == "mixed") return "mixed";
    break;  // an unknown value: fall back to words
  }
  // vLLM's "execute_N_context_C(...)_generation_G(...)": C requests in prefill, G in decode.
  if (name.rfind("execute_", 0) == 0) {
    auto count_after = [&](std::string_view key) -> long {
      size_t at = name.find(key);
      if (at == std::string_view::npos) return -1;
      long n = 0;
      bool digits = false;
      for (size_t i = at + key.size(); i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
        n = n * 10 + (name[i] - '0');
        digits = true;
        if (n > 1000000000L) break;
      }
      return digits ? n : -1;
    };
    long ctx = count_after("context_"), gen = count_after("_generation_");
    if (ctx >= 0 && gen >= 0) return ctx > 0 && gen > 0 ? "mixed" : ctx > 0 ? "prefill" : gen > 0 ? "decode" : "unknown";
  }
  // SGLang's "step[EXTEND ...]" / "step[DECODE ...]" / "step[MIXED ...]".
  if (name.rfind("step[", 0) == 0) {
    std::string_view mode = name.substr(5);
    mode = mode.substr(0, mode.find_first_of(" ]"));
    if (mode == "EXTEND" || mode == "PREFILL") return "prefill";
    if (mode == "DECODE") return "decode";
    if (mode == "MIXED") return "mixed";
  }
  auto has = [&](std::string_view w) { return name.find(w) != std::string_view::npos; };
  if (has("mixed") || (has("prefill") && has("decode"))) return "mixed";
  if (has("prefill")) return "prefill";
  if (has("decode")) return "decode";
  return "unknown";
}


std::string CommPayloadFromName(std::string_view name) {
  // "nccl:all_reduce, bytes=1048576, world_size=8, impl=pynccl" (truffld's Python hooks).
  size_t comma = name.find(", ");
  if (comma == std::string_view::npos) return {};
  std::string_view family = name.substr(0, comma);
  std::string out = "{";
  size_t colon = family.find(':');
  auto add_string = [&out](std::string_view key, std::string_view v) {
    out += out.size() > 1 ? ",\"" : "\"";
    out.append(key);
    out += "\":\"";
    for (char c : v) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;  // control characters are dropped
      out += c;
    }
    out += '"';
  };
  if (colon != std::string_view::npos) add_string("op", family.substr(colon + 1));
  size_t pos = comma + 2;
  bool any = false;
  while (pos <= name.size()) {
    size_t next = name.find(", ", pos);
    std::string_view kv = name.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) return {};  // not the key=value form
    std::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
    for (char c : key)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return {};
    bool integer = !value.empty() && value.size() < 19;
    for (size_t i = 0; i < value.size() && integer; ++i)
      integer = std::isdigit(static_cast<unsigned char>(value[i])) || (i == 0 && value[i] == '-' && value.size() > 1);
    if (integer) {
      out += out.size() > 1 ? ",\"" : "\"";
      out.append(key);
      out += "\":";
      out.append(value);
    } else {
      add_string(key, value);
    }
    any = true;
    if (next == std::string_view::npos) break;
    pos = next + 2;
  }
  if (!any) return {};
  out += '}';
  return out;
}

}  // namespace truffld::merge
