// The `distsampler blend` command: a blend of packed sources from a JSON config, per rank and step, states and a summary.
// SPDX-License-Identifier: MIT
#include <distsampler/blend/blend_sampler.hpp>
#include <distsampler/files/megatron.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cli.hpp"
#include "samplers.hpp"

namespace cli {
namespace {

namespace ds = distsampler;

// A JSON value of the config: exactly what the config's shape needs (objects, arrays, strings
// without escapes other than \" \\ \/, numbers kept as their text, true, false). Read strictly:
// no duplicate keys, no trailing text, at most 16 levels deep.
struct Json {
  enum Kind { object, array, string, number, boolean } kind = object;
  std::string text;  // string: its value; number: its digits as written
  bool flag = false;
  std::vector<std::pair<std::string, Json>> members;
  std::vector<Json> items;

  [[nodiscard]] const Json* find(std::string_view key) const {
    for (const auto& m : members) {
      if (m.first == key) return &m.second;
    }
    return nullptr;
  }
};

class JsonReader {
 public:
  JsonReader(std::string_view text, std::string where) : s_(text), where_(std::move(where)) {}

  Json document() {
    Json v = value(0);
    space();
    if (i_ != s_.size()) fail("text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw UsageError(fmt::format("{}: is not the config's JSON at byte {}: {} (expected a JSON object as "
                                 "docs/BLENDING.md shows)",
                                 where_, i_, what));
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::string string_value() {
    if (!eat('"')) fail("a string was expected");
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
      if (c == '\\') {
        if (i_ == s_.size()) break;
        c = s_[i_++];
        if (c != '"' && c != '\\' && c != '/') fail("an escape other than \\\" \\\\ \\/ in a string");
      }
      out += c;
    }
    if (i_ == s_.size()) fail("an unterminated string");
    ++i_;
    return out;
  }
  Json value(int depth) {
    if (depth > 16) fail("more than 16 levels of nesting");
    space();
    if (i_ == s_.size()) fail("the text ends where a value was expected");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.kind = Json::object;
      if (eat('}')) return v;
      do {
        std::string key = string_value();
        if (v.find(key) != nullptr) fail(fmt::format("the key {} twice in one object", shown(key)));
        if (!eat(':')) fail("':' was expected after a key");
        v.members.emplace_back(std::move(key), value(depth + 1));
      } while (eat(','));
      if (!eat('}')) fail("',' or '}' was expected in an object");
    } else if (c == '[') {
      ++i_;
      v.kind = Json::array;
      if (eat(']')) return v;
      do {
        v.items.push_back(value(depth + 1));
      } while (eat(','));
      if (!eat(']')) fail("',' or ']' was expected in an array");
    } else if (c == '"') {
      v.kind = Json::string;
      v.text = string_value();
    } else if (s_.substr(i_, 4) == "true" || s_.substr(i_, 5) == "false") {
      v.kind = Json::boolean;
      v.flag = s_[i_] == 't';
      i_ += v.flag ? 4 : 5;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = Json::number;
      const std::size_t b = i_;
      while (i_ < s_.size() && std::strchr("-+.eE0123456789", s_[i_]) != nullptr) ++i_;
      v.text = std::string(s_.substr(b, i_ - b));
    } else {
      fail(fmt::format("an unexpected character {}", shown(s_.substr(i_, 1))));
    }
    return v;
  }

  std::string_view s_;
  std::string where_;
  std::size_t i_ = 0;
};

const char* kind_name(const Json& v) {
  switch (v.kind) {
    case Json::object:
      return "an object";
    case Json::array:
      return "an array";
    case Json::string:
      return "a string";
    case Json::number:
      return "a number";
    case Json::boolean:
      return "a boolean";
  }
  return "a value";
}

// The config, checked field by field; errors name "--config FILE: FIELD".
struct BlendConfig {
  ds::BlendOptions options;
  std::vector<std::string> names;
  std::vector<std::vector<std::uint32_t>> lengths;
  std::vector<double> weights;
};

class ConfigReader {
 public:
  explicit ConfigReader(std::string path) : path_(std::move(path)) {}

  BlendConfig read() {
    std::ifstream f(path_, std::ios::binary);
    if (!f) throw UsageError(fmt::format("--config {}: cannot be read ({})", shown(path_), std::strerror(errno)));
    std::ostringstream content;
    content << f.rdbuf();
    if (content.str().size() > limits::file_bytes) {
      throw UsageError(fmt::format("--config {}: is larger than {} bytes (expected a config)", shown(path_),
                                   limits::file_bytes));
    }
    const Json root = JsonReader(content.str(), "--config " + shown(path_)).document();
    if (root.kind != Json::object) bad("the config", root, "a JSON object");
    static const std::vector<std::string_view> keys = {
        "seq_len", "mode", "mix", "seed", "labels", "micro_batch_size", "accumulation_steps", "global_batch_size",
        "global_batch_schedule", "sources", "weight_schedule", "end", "shuffle", "window", "chunk", "split_long",
        "mixing_block"};
    for (const auto& m : root.members) {
      if (std::find(keys.begin(), keys.end(), m.first) == keys.end()) {
        fail(fmt::format("key {} is unknown (expected seq_len, mode, mix, seed, labels, micro_batch_size, "
                         "accumulation_steps, global_batch_size, global_batch_schedule, sources, weight_schedule, "
                         "end, shuffle, window, chunk, split_long or mixing_block)",
                         shown(m.first)));
      }
    }
    BlendConfig c;
    ds::BlendOptions& o = c.options;
    o.with_seq_len(integer("seq_len", required(root, "seq_len")));
    o.with_micro_batch_size(integer("micro_batch_size", required(root, "micro_batch_size")));
    if (const Json* v = root.find("mode")) {
      const std::string m = text("mode", *v);
      if (m != "concat" && m != "best-fit") bad("mode", *v, "\"concat\" or \"best-fit\"");
      o.with_mode(m == "concat" ? ds::PackMode::concat : ds::PackMode::best_fit);
    }
    if (const Json* v = root.find("mix")) {
      if (text("mix", *v) != "sequences") bad("mix", *v, "\"sequences\"; \"documents\" is not implemented yet");
    }
    if (const Json* v = root.find("labels")) {
      if (boolean("labels", *v)) bad("labels", *v, "false; labels are not implemented yet");
    }
    if (const Json* v = root.find("seed")) {
      if (v->kind != Json::number) bad("seed", *v, "an integer");
      o.with_seed(parse_seed("--config seed", v->text));
    }
    if (const Json* v = root.find("shuffle")) o.with_shuffle(boolean("shuffle", *v));
    if (const Json* v = root.find("split_long")) o.with_split_long(boolean("split_long", *v));
    if (const Json* v = root.find("window")) {
      const std::uint64_t w = integer("window", *v);
      o.with_window(w);
    }
    if (const Json* v = root.find("chunk")) o.with_window(o.window, integer("chunk", *v));
    if (const Json* v = root.find("mixing_block")) o.with_mixing_block(integer("mixing_block", *v));
    const bool accumulation = root.find("accumulation_steps") != nullptr;
    if (accumulation) o.with_accumulation_steps(integer("accumulation_steps", *root.find("accumulation_steps")));
    if (const Json* v = root.find("global_batch_size")) {
      if (accumulation) fail("accumulation_steps and global_batch_size were both given (expected one of them)");
      o.with_global_batch_size(integer("global_batch_size", *v));
    }
    if (const Json* v = root.find("global_batch_schedule")) {
      if (accumulation || root.find("global_batch_size") != nullptr) {
        fail("global_batch_schedule and accumulation_steps or global_batch_size were both given (expected one)");
      }
      if (v->kind != Json::array || v->items.size() != 1 || v->items[0].kind != Json::array ||
          v->items[0].items.size() != 2 || integer("global_batch_schedule[0][0]", v->items[0].items[0]) != 0) {
        fail("global_batch_schedule is not supported (expected one entry [0, G]; batch-size changes are not "
             "implemented yet)");
      }
      o.with_global_batch_size(integer("global_batch_schedule[0][1]", v->items[0].items[1]));
    }
    const Json& sources = required(root, "sources");
    if (sources.kind != Json::array || sources.items.empty()) bad("sources", sources, "a non-empty array");
    for (std::size_t i = 0; i < sources.items.size(); ++i) source(c, i, sources.items[i]);
    if (const Json* v = root.find("weight_schedule")) {
      if (v->kind != Json::array) bad("weight_schedule", *v, "an array of [step, {name: weight, ...}]");
      for (std::size_t j = 0; j < v->items.size(); ++j) change(c, j, v->items[j]);
    }
    const Json& end = required(root, "end");
    if (end.kind != Json::object || end.members.size() != 1 || end.members[0].first != "steps") {
      bad("end", end, "{\"steps\": n}");
    }
    o.with_end_steps(integer("end.steps", end.members[0].second));
    return c;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError(fmt::format("--config {}: {}", shown(path_), what));
  }
  [[noreturn]] void bad(std::string_view field, const Json& v, std::string_view expected) const {
    const std::string got = v.kind == Json::string ? shown(v.text)
                            : v.kind == Json::number ? v.text
                            : v.kind == Json::boolean ? (v.flag ? "true" : "false")
                                                      : kind_name(v);
    fail(fmt::format("{} is {} (expected {})", field, got, expected));
  }
  const Json& required(const Json& object, std::string_view key) const {
    const Json* v = object.find(key);
    if (v == nullptr) fail(fmt::format("{} is missing (expected seq_len, micro_batch_size, sources and end)", key));
    return *v;
  }
  std::uint64_t integer(std::string_view field, const Json& v) const {
    if (v.kind != Json::number || v.text.find_first_not_of("0123456789") != std::string::npos) {
      bad(field, v, "an integer >= 0");
    }
    return parse_number(fmt::format("--config {}", field), v.text);
  }
  std::string text(std::string_view field, const Json& v) const {
    if (v.kind != Json::string) bad(field, v, "a string");
    return v.text;
  }
  bool boolean(std::string_view field, const Json& v) const {
    if (v.kind != Json::boolean) bad(field, v, "true or false");
    return v.flag;
  }
  double weight(std::string_view field, const Json& v) const {
    if (v.kind != Json::number) bad(field, v, "a decimal weight >= 0");
    return parse_weights(fmt::format("--config {}", field), v.text)[0];
  }

  std::vector<std::uint32_t> lengths_of(std::string_view field, const Json& v) const {
    if (v.kind == Json::array) {
      std::vector<std::uint32_t> out;
      for (std::size_t d = 0; d < v.items.size(); ++d) {
        const std::uint64_t n = integer(fmt::format("{}[{}]", field, d), v.items[d]);
        if (n > UINT32_MAX) bad(fmt::format("{}[{}]", field, d), v.items[d], "a token count below 2^32");
        out.push_back(static_cast<std::uint32_t>(n));
      }
      return out;
    }
    if (v.kind != Json::string) bad(field, v, "a list of token counts, a file of one count per line or a .idx");
    std::string file = v.text;
    const std::size_t slash = path_.rfind('/');
    if (!file.empty() && file[0] != '/' && slash != std::string::npos) file = path_.substr(0, slash + 1) + file;
    const std::string flag = fmt::format("--config {}", field);
    if (file.size() > 4 && file.compare(file.size() - 4, 4, ".idx") == 0) {
      const ds::ShardIndex index = library(flag, [&] { return ds::index_megatron(file); });
      std::uint64_t itemsize = 1;
      for (std::uint64_t code = 1; code <= 8; ++code) {
        if (ds::megatron_dtype(code).name == index.dtype) itemsize = ds::megatron_dtype(code).itemsize;
      }
      std::vector<std::uint32_t> out(index.records.size());
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint32_t>(index.records[i].size / itemsize);
      return out;
    }
    if (file.find_first_not_of("0123456789,") == std::string::npos) file = "./" + file;  // a file, never a list
    return parse_lengths(flag, file);
  }

  void source(BlendConfig& c, std::size_t i, const Json& s) const {
    const std::string at = fmt::format("sources[{}]", i);
    if (s.kind != Json::object) bad(at, s, "an object with name, lengths and weight");
    for (const auto& m : s.members) {
      if (m.first != "name" && m.first != "lengths" && m.first != "weight") {
        fail(fmt::format("{} key {} is unknown (expected name, lengths and weight)", at, shown(m.first)));
      }
    }
    for (const char* key : {"name", "lengths", "weight"}) {
      if (s.find(key) == nullptr) fail(fmt::format("{}.{} is missing (expected name, lengths and weight)", at, key));
    }
    const std::string name = text(at + ".name", *s.find("name"));
    if (name.empty() || name.find_first_of("/ \t\n:[]") != std::string::npos) {
      bad(at + ".name", *s.find("name"), "a non-empty name without '/', ':', brackets or spaces");
    }
    const auto same = std::find(c.names.begin(), c.names.end(), name);
    if (same != c.names.end()) {
      fail(fmt::format("{}.name {} is also sources[{}]'s (expected unique names)", at, shown(name),
                       same - c.names.begin()));
    }
    c.names.push_back(name);
    c.lengths.push_back(lengths_of(at + ".lengths", *s.find("lengths")));
    c.weights.push_back(weight(at + ".weight", *s.find("weight")));
  }

  void change(BlendConfig& c, std::size_t j, const Json& e) const {
    const std::string at = fmt::format("weight_schedule[{}]", j);
    if (e.kind != Json::array || e.items.size() != 2 || e.items[1].kind != Json::object) {
      bad(at, e, "[step, {name: weight, ...}]");
    }
    ds::WeightChange w;
    w.step = integer(at + " step", e.items[0]);
    for (const auto& m : e.items[1].members) {
      if (std::find(c.names.begin(), c.names.end(), m.first) == c.names.end()) {
        fail(fmt::format("{} names source {}, which is not a source", at, shown(m.first)));
      }
    }
    for (const std::string& name : c.names) {
      const Json* v = e.items[1].find(name);
      if (v == nullptr) fail(fmt::format("{} has no weight for source {} (expected one per source)", at, shown(name)));
      w.weights.push_back(weight(fmt::format("{} weight of {}", at, name), *v));
    }
    c.options.schedule.push_back(std::move(w));
  }

  std::string path_;
};

int run_blend(const Invocation& in) {
  const BlendConfig c = ConfigReader(std::string(in.text("--config"))).read();
  const std::uint64_t world_size = in.required_number("--world");
  if (world_size == 0) throw UsageError("--world 0 is too small (expected at least 1)");
  if (world_size > limits::ranks) {
    throw UsageError(fmt::format("--world {} is too large for blend (at most {}: every rank's micro-batches are "
                                 "printed)",
                                 world_size, limits::ranks));
  }
  std::optional<std::uint64_t> rank;
  if (in.has("--rank")) {
    rank = in.number("--rank");
    if (*rank >= world_size) {
      throw UsageError(fmt::format("--rank {} is out of range for --world {} (expected 0..{})", *rank, world_size,
                                   world_size - 1));
    }
  }
  std::vector<ds::LengthView> views;
  for (const auto& l : c.lengths) views.emplace_back(l);
  const ds::World world(rank.value_or(0), world_size);
  std::optional<ds::BlendSampler> made;
  std::uint64_t offset = 0;  // global number of the first step printed
  if (in.has("--resume")) {
    const ds::SamplerState state = parse_state("--resume", in.text("--resume"));
    library("--resume", [&] { made.emplace(views, c.weights, world, c.options, state); });
    offset = made->start() / made->global_batch_size();
  } else {
    library("--config/--world", [&] { made.emplace(views, c.weights, world, c.options); });
  }
  const ds::BlendSampler& s = *made;
  std::uint64_t steps = std::min(in.number("--steps").value_or(UINT64_MAX), s.num_steps());
  std::optional<std::uint64_t> state_after;
  if (in.has("--state-after")) {
    const std::uint64_t at = in.required_number("--state-after");
    if (at < offset || at - offset > s.num_steps()) {
      throw UsageError(fmt::format("--state-after {} is out of range (expected {}..{}, the steps of this run)", at,
                                   offset, offset + s.num_steps()));
    }
    state_after = at - offset;
    steps = std::min(steps, at - offset);
  }
  const std::uint64_t first = rank.value_or(0), last = rank ? first + 1 : world_size;
  const std::size_t k_sources = c.names.size();
  std::vector<std::uint64_t> sequences(k_sources, 0), tokens(k_sources, 0);
  std::uint64_t padded = 0;
  std::string line;
  ds::BlendCache cache;
  for (std::uint64_t step = 0; step < steps; ++step) {
    for (std::uint64_t r = first; r < last; ++r) {
      for (std::uint64_t k = 0; k < s.micro_batches_in_step(step); ++k) {
        const ds::BlendMicroBatch b = s.micro_batch_of(step, k, r, cache);
        fmt::format_to(std::back_inserter(line), "step {} rank {}:", offset + step, r);
        for (std::uint64_t i = 0; i < b.sequences(); ++i) {
          const auto src = static_cast<std::size_t>(b.sources[i]);
          line += " [";
          for (std::uint64_t p = b.sequence_begin[i]; p < b.sequence_begin[i + 1]; ++p) {
            const ds::PackPiece& piece = b.pieces[p];
            fmt::format_to(std::back_inserter(line), "{}{}/{}:{}+{}", p == b.sequence_begin[i] ? "" : " ",
                           c.names[src], piece.document, piece.offset, piece.length);
          }
          line += ']';
          ++sequences[src];
          tokens[src] += b.tokens(i);
          padded += s.seq_len() - b.tokens(i);
        }
        for (std::uint64_t i = b.sequences(); i < s.micro_batch_size(); ++i) line += " []";
        line += '\n';
        write_buffered(line, false);
      }
    }
  }
  if (state_after) {
    fmt::format_to(std::back_inserter(line), "state: {}\n", s.state(*state_after).to_text());
    write_buffered(line, true);
    return 0;
  }
  // The largest prefix error of each source over the order's positions up to the last printed step.
  const std::uint64_t end = std::min(
      {s.layout().consumed(steps, 0, "blend"), s.dataset_size(), s.start() + limits::prefix_positions});
  std::vector<double> error(k_sources, 0), ideal(k_sources, 0);
  const ds::MixtureSchedule& sched = s.schedule();
  for (std::uint64_t p = 0; p < end; ++p) {
    const std::size_t seg = sched.segment_of(p);
    for (std::size_t i = 0; i < k_sources; ++i) {
      ideal[i] += static_cast<double>(sched.units(seg, i)) / static_cast<double>(ds::MixtureSchedule::weight_units);
      const double e = std::fabs(static_cast<double>(s.source_sequences(i, p + 1)) - ideal[i]);
      error[i] = std::max(error[i], e);
    }
  }
  fmt::format_to(std::back_inserter(line),
                 "summary: mix sequences, mode {}, seq_len {}, {} steps x world_size {} x accumulation {} x "
                 "micro-batch {}\n",
                 ds::to_string(s.mode()), s.seq_len(), steps, world_size, s.accumulation_steps(),
                 s.micro_batch_size());
  for (std::size_t i = 0; i < k_sources; ++i) {
    fmt::format_to(std::back_inserter(line), "source {}: {} sequences, {} tokens read; max prefix error {:.3f}\n",
                   c.names[i], sequences[i], tokens[i], error[i]);
  }
  fmt::format_to(std::back_inserter(line), "tokens: {} padded (best-fit); prefix errors over {} positions\n", padded,
                 end);
  write_buffered(line, true);
  return 0;
}

}  // namespace

std::vector<CommandSpec> blend_commands() {
  return {{"blend", "distsampler blend --config FILE.json --world W [--rank R] [--steps S] [flags]",
           "print a blend of packed sources per rank and step, from a JSON config",
           "print each step's micro-batches of a blend (docs/BLENDING.md), one line each: step S rank R:\n"
           "[src/d:o+n ...] [...], a bracket group per sequence (M of them), each piece\n"
           "source-name/document:offset+length, [] an empty slot; of rank R only with --rank. Each source is packed\n"
           "on its own, pass after pass, and the blend takes whole sequences by weight. --state-after S stops before\n"
           "step S and prints the state; --resume continues it on the config and --world given, numbering steps\n"
           "globally. Then a summary: sequences and tokens per source read by the printed micro-batches, padded\n"
           "tokens, each source's largest prefix error. A bad config exits 2 naming the field.",
           {"--config", "--world"},
           {"--rank", "--steps", "--state-after", "--resume"},
           fmt::format("limits: --world at most {}; the config at most {} bytes, a lengths file as --lengths.\n",
                       limits::ranks, limits::file_bytes),
           run_blend}};
}

}  // namespace cli
