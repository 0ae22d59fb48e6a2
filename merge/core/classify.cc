// Rules (built-in and user) and request-id parsing: the classification a range gets.
#include "truffld/merge/classify.h"

#include <cctype>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "truffld/json_get.h"
#include <sstream>

namespace truffld::merge {
namespace {

// Rules, request regexes and the demangler only look at a name's first 4 KiB: RE2's time is
// linear in the text, and the cap keeps it small per name and rule on 1 MB names.
constexpr size_t kMaxMatchedNameBytes = 4096;

// Default request-id pattern: the text after "request_ids:" up to an unescaped ']'.
constexpr const char* kDefaultRequestRegex = R"(request_ids:((?:[^\]\\]|\\.)*))";

// kDefaultRequestRegex by hand, for names of any length: the text after the first
// "request_ids:" up to an unescaped ']' (a '\' at the end or before a line break is not taken,
// as the regex's "\\." does not take it: RE2's '.' matches no line break).
// *closed: a ']' ended it. Empty (and closed) without "request_ids:".
std::string_view DefaultRequestBody(std::string_view name, bool* closed) {
  constexpr std::string_view kKey = "request_ids:";
  *closed = true;
  const size_t at = name.find(kKey);
  if (at == std::string_view::npos) return {};
  const size_t begin = at + kKey.size();
  size_t i = begin;
  while (i < name.size() && name[i] != ']') {
    if (name[i] == '\\') {
      if (i + 1 >= name.size() || name[i + 1] == '\n') break;
      ++i;
    }
    ++i;
  }
  *closed = i < name.size() && name[i] == ']';
  return name.substr(begin, i - begin);
}

// Splits a request list at unescaped '_' and unescapes each id; empty ids are dropped.
std::vector<std::string> SplitRequestIds(std::string_view body) {
  std::vector<std::string> ids;
  std::string cur;
  bool any = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == '\\' && i + 1 < body.size()) { cur += body[++i]; any = true; continue; }
    if (c == '_') { ids.push_back(std::move(cur)); cur.clear(); any = false; continue; }
    cur += c;
    any = true;
  }
  if (any || !ids.empty()) ids.push_back(std::move(cur));
  std::erase_if(ids, [](const std::string& s) { return s.empty(); });
  return ids;
}

// Hand-written equivalents of the two identifier-class built-in regexes: realistic operator
// names ("_C::rms_norm, op_id = 269", numbered, so never in the class cache) reach the last rule,
// where a regex engine takes thousands of instructions a name. The differential test
// (regex_prefilter_test) checks them against the regexes.
inline bool IdentStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
inline bool IdentChar(char c) { return IdentStart(c) || (c >= '0' && c <= '9'); }
// The end of the identifier at the start of `s` (0: none). The regexes' [A-Za-z0-9_]* is greedy
// and the byte after it (':' or '.') is not an identifier byte, so the longest run is the only
// one that can match.
inline size_t IdentEnd(std::string_view s) {
  if (s.empty() || !IdentStart(s[0])) return 0;
  size_t i = 1;
  while (i < s.size() && IdentChar(s[i])) ++i;
  return i;
}
// ^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_]
bool ScopedIdentifier(std::string_view s) {
  const size_t i = IdentEnd(s);
  return i && i + 2 < s.size() && s[i] == ':' && s[i + 1] == ':' && IdentStart(s[i + 2]);
}
// ^[A-Za-z_][A-Za-z0-9_]*\.(forward|backward|step|_call_impl)\b
bool ModuleMethod(std::string_view s) {
  const size_t i = IdentEnd(s);
  if (!i || i >= s.size() || s[i] != '.') return false;
  const std::string_view rest = s.substr(i + 1);
  for (std::string_view w : {"forward", "backward", "step", "_call_impl"})
    if (rest.substr(0, w.size()) == w) return rest.size() == w.size() || !IdentChar(rest[w.size()]);
  return false;
}

// `needs`: for a regex too complex for RegexPrefilter to analyse, '|'-separated lowercase words
// of which any match must contain one.
struct DefaultRule {
  Layer layer; const char* re; const char* domain; const char* category; bool icase;
  const char* needs = "";
  bool (*matcher)(std::string_view) = nullptr;  // decides the regex by hand (see above)
};
// Order matters: the first match wins.
constexpr DefaultRule kDefaults[] = {
    // Kineto's GPU-side copies of user annotations (on a device/stream track) are not a second
    // step or operator: the host-side annotation is.
    {Layer::kOther, "", "", "gpu_user_annotation", false},
    {Layer::kStep, "^step_execute_model", "", "", false},
    {Layer::kStep, "^execute_model", "", "", false},
    {Layer::kStep, "^ProfilerStep#", "", "", false},
    {Layer::kStep, "^run_batch", "", "", false},
    // vLLM's own step annotation (GPU model runner, record_function):
    // "execute_32_context_0(...)_generation_32(...)" and older "execute_context_1(...)_generation_0(0)".
    {Layer::kStep, "^execute_([0-9]+_)?context_[0-9]+", "", "", false},
    // SGLang's scheduler: "step[EXTEND bs=15 toks=15360]", "step[DECODE bs=32 ...]".
    {Layer::kStep, "^step\\[[A-Z_]+\\b", "", "", false},
    // Engines' own PyTorch-profiler traces recorded with Python stacks carry no step annotation:
    // the step is a python_function, "path.py(line): function". vLLM V0/V1: execute_model of the
    // model runner (and of the worker, whose range encloses it and wins: a step inside a step is
    // `other`); SGLang: the scheduler's run_batch / _run_batch_inner and the TP worker's
    // forward_batch_generation.
    {Layer::kStep, "(^|/)vllm/[^()]*\\.py\\([0-9]+\\): execute_model$", "", "python_function", false,
     "execute_model"},
    {Layer::kStep,
     "(^|/)sglang/[^()]*(scheduler|tp_worker)\\.py\\([0-9]+\\): "
     "(run_batch|_run_batch_inner|forward_batch_generation)$",
     "", "python_function", false, "run_batch|forward_batch_generation"},
    // truffld's Python hooks: frontend ranges live in NVTX domain "PyTorch" (whatever the name,
    // so a call site such as ".../all_reduce.py:3" never reads as a collective), comm in
    // "truffld.comm".
    {Layer::kFrontend, "", "PyTorch", "", false},
    {Layer::kComm, "", "truffld.comm", "", false},
    {Layer::kComm, "", "NCCL", "", false},
    {Layer::kComm, "^nccl", "", "", true},
    {Layer::kComm, "^c10d::|^record_param_comms|^gloo:", "", "", false},
    // ATen ops are backend ops whatever words they contain (aten::broadcast_tensors is not a
    // collective); collectives reach ATen as c10d:: ops, matched above.
    {Layer::kBackend, "^aten::", "", "", false},
    // Collective names as words ("torch.distributed.all_reduce", "tensor_model_parallel_all_reduce",
    // "_all_gather_base"), not as parts of longer identifiers ("broadcast_tensors").
    {Layer::kComm,
     "(^|[^a-z0-9])(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast)"
     "(_?(coalesced|base|into_tensor|tensor|single|async|object|object_list))?([^a-z0-9_]|$)|^(send|recv|barrier)\\b",
     "", "", true, "reduce|gather|scatter|alltoall|all_toall|allto_all|all_to_all|broadcast|send|recv|barrier"},
    {Layer::kFrontend, "^torch\\.nn\\.functional\\.", "", "", false},
    {Layer::kFrontend, "^torch\\.nn\\.modules\\.|^torch\\.optim\\.|^nn\\.Module:", "", "", false},
    {Layer::kFrontend, "^torch\\.", "", "", false},
    {Layer::kFrontend, "^[A-Za-z_][A-Za-z0-9_]*\\.(forward|backward|step|_call_impl)\\b", "", "", false,
     ".forward|.backward|.step|._call_impl", ModuleMethod},
    {Layer::kBackend, "", "", "cpu_op", false},
    {Layer::kBackend, "^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_]", "", "", false, "::", ScopedIdentifier},
};

std::vector<std::string> SplitWords(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const size_t bar = s.find('|');
    out.emplace_back(s.substr(0, bar));
    if (bar == std::string_view::npos) break;
    s.remove_prefix(bar + 1);
  }
  return out;
}

Status CompileRule(Rule* r, bool icase, std::string_view origin, std::string_view needs = "") {
  Result<Pattern> p = Pattern::Compile(r->name_regex, icase);
  if (!p.ok()) return InvalidArgument(std::string(origin) + ": name_regex: " + p.status().message());
  r->compiled = std::move(*p);
  r->prefilter = RegexPrefilter::Analyse(r->name_regex, icase, SplitWords(needs));
  return Status::Ok();
}

}  // namespace

Rules Rules::Defaults() {
  Rules r;
  for (const DefaultRule& d : kDefaults) {
    Rule rule;
    rule.layer = d.layer;
    rule.name_regex = d.re;
    rule.domain = d.domain;
    rule.category = d.category;
    rule.matcher = d.matcher;
    (void)CompileRule(&rule, d.icase, "built-in rules", d.needs);
    r.rules_.push_back(std::move(rule));
  }
  (void)r.SetRequestRegex(kDefaultRequestRegex);
  return r;
}

Status Rules::SetRequestRegex(const std::string& re) {
  Result<Pattern> p = Pattern::Compile(re);
  if (!p.ok()) return InvalidArgument("request regex: " + p.status().message());
  if (p->groups() < 1) return InvalidArgument("request regex '" + re + "' needs one capture group holding the ids");
  request_re_ = std::move(*p);
  request_regex_ = re;
  request_filter_ = RegexPrefilter::Analyse(re, false);
  return Status::Ok();
}

namespace {

// One element of a rules file's "rules" array. Members of the wrong type are errors (the
// typed getters of truffld/json_get.h never throw).
Result<Rule> RuleFromJson(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("layer") || !j["layer"].is_string())
    return ParseError(where + ": needs a string \"layer\"");
  Rule r;
  if (!ParseLayerName(j["layer"].get<std::string>(), &r.layer) || r.layer == Layer::kRuntime || r.layer > Layer::kOther)
    return ParseError(where + ": layer must be step, frontend_op, backend_op, comm or other");
  for (auto [key, dst] : {std::pair{"name_regex", &r.name_regex}, {"domain", &r.domain}, {"category", &r.category}}) {
    if (j.contains(key) && !j[key].is_string()) return ParseError(where + ": \"" + key + "\" must be a string");
    Result<std::string> v = json::GetString(j, key, "", where);
    if (!v.ok()) return v.status();
    *dst = std::move(*v);
  }
  Result<bool> icase = json::GetBool(j, "ignore_case", false, where);
  if (!icase.ok()) return icase.status();
  TRUFFLD_RETURN_IF_ERROR(CompileRule(&r, *icase, where));
  return r;
}

}  // namespace

Result<Rules> Rules::FromJson(std::string_view text, std::string_view origin) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return ParseError(std::string(origin) + ": not a JSON object (see schemas/rules.schema.json)");
  const std::string where(origin);
  Rules out = Defaults();
  Result<bool> replace = json::GetBool(doc, "replace_defaults", false, where);
  if (!replace.ok()) return replace.status();
  const auto& arr = doc.contains("rules") ? doc["rules"] : nlohmann::json::array();
  if (!arr.is_array()) return ParseError(where + ": \"rules\" must be an array");
  std::vector<Rule> user;
  for (size_t i = 0; i < arr.size(); ++i) {
    Result<Rule> r = RuleFromJson(arr[i], where + ": rules[" + std::to_string(i) + "]");
    if (!r.ok()) return r.status();
    user.push_back(std::move(*r));
  }
  if (*replace) out.rules_.clear();
  out.rules_.insert(out.rules_.begin(), std::make_move_iterator(user.begin()), std::make_move_iterator(user.end()));
  if (doc.contains("request_regex")) {
    if (!doc["request_regex"].is_string()) return ParseError(where + ": \"request_regex\" must be a string");
    Status st = out.SetRequestRegex(doc["request_regex"].get<std::string>());
    if (!st.ok()) return InvalidArgument(where + ": " + st.message());
  }
  return out;
}

Result<Rules> Rules::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open rules file");
  std::stringstream ss;
  ss << in.rdbuf();
  return FromJson(ss.str(), path);
}

Layer Rules::Classify(std::string_view name, std::string_view domain, std::string_view category) const {
  name = name.substr(0, kMaxMatchedNameBytes);  // bounds the regexes' (linear) time
  for (const Rule& r : rules_) {
    if (!r.domain.empty() && r.domain != domain) continue;
    if (!r.category.empty() && r.category != category) continue;
    if (r.name_regex.empty()) return r.layer;
    const bool match = !prefilter_ ? r.compiled.Search(name)
                       : r.matcher ? r.matcher(name)
                                   : r.prefilter.Search(name, r.compiled);
    if (!match) continue;
    return r.layer;
  }
  return Layer::kOther;
}

bool Rules::NumberBlind() const {
  for (const Rule& r : rules_)
    if (!RegexNumberBlind(r.name_regex)) return false;
  return RegexNumberBlind(request_regex_);
}

std::vector<std::string> Rules::ParseRequests(std::string_view step_name) const {
  if (request_regex_.empty()) return {};
  if (request_regex_ == kDefaultRequestRegex) {
    bool closed;
    return SplitRequestIds(DefaultRequestBody(step_name, &closed));
  }
  step_name = step_name.substr(0, kMaxMatchedNameBytes);
  bool at_start = false;
  if (prefilter_) {
    if (request_filter_.Check(step_name) == RegexPrefilter::Verdict::kNo) return {};
    at_start = request_filter_.anchored;
  }
  std::string_view ids;
  if (!request_re_.SearchGroup1(step_name, at_start, &ids)) return {};
  return SplitRequestIds(ids);
}

bool Rules::RequestsCut(std::string_view step_name) const {
  if (request_regex_.empty()) return false;
  if (request_regex_ != kDefaultRequestRegex) return step_name.size() > kMaxMatchedNameBytes;
  bool closed;
  const std::string_view body = DefaultRequestBody(step_name, &closed);
  if (!closed) return true;
  if (body.data() == nullptr) return false;  // no request list at all
  // The list is whole; a tag after it that never closes (`...][phase:dec`) was cut too. Text
  // after the tags (`exec[request_ids:a_b] graph`) is not a cut.
  const size_t list_end = size_t(body.data() - step_name.data()) + body.size();
  const size_t open = step_name.rfind('[');
  return open != std::string_view::npos && open > list_end && step_name.find(']', open) == std::string_view::npos;
}

}  // namespace truffld::merge
