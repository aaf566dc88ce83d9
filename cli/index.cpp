// The `distsampler index` command: builds (or with --verify checks) the cached index of each shard file and prints its size.
// SPDX-License-Identifier: MIT
#include <distsampler/error.hpp>
#include <distsampler/files/index_builder.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace cli {
namespace {

namespace ds = distsampler;

std::string index_help() {
  return fmt::format(
      "usage: {}\n\n"
      "index each shard file: count its records and save the byte range of every record in an index\n"
      "file (FILE.dsidx beside it, or in --cache-dir), rebuilding indexes that exist; with --verify\n"
      "check instead that each file has an index that is current and matches the file, writing nothing;\n"
      "with --strict keep the current indexes, build the missing ones and refuse a stale one.\n"
      "Prints one line per file (path, format, records, bytes of the data file) and a total.\n\n"
      "flags:\n"
      "  --format jsonl|tar|megatron|npy|raw\n"
      "                                   the format of every file (default: from each extension:\n"
      "                                   .jsonl .ndjson, .tar, .idx .bin, .npy; raw is never assumed)\n"
      "  --dtype T                        raw only: the token type (uint8, uint16, uint32, uint64,\n"
      "                                   int32, int64; little-endian, no header)\n"
      "  --eos ID                         raw only: the end-of-document token id\n"
      "  --cache-dir DIR                  keep the indexes in DIR instead of beside the files\n"
      "  --verify                         check the indexes, write nothing; exit 2 at the first that\n"
      "                                   is missing, stale or different\n"
      "  --strict                         reuse current indexes, build missing ones, exit 2 at the\n"
      "                                   first stale one (its shard changed since it was indexed)\n"
      "  --threads N                      index N files at a time (default 1)\n"
      "  --help, -h                       this help\n\n"
      "records: jsonl a non-empty line, tar a sample (members sharing a key), megatron a sequence,\n"
      "npy a row along axis 0, raw a document (its tokens up to and including the --eos token).\n"
      "exit status: 0 ok, 2 bad usage, a missing, malformed or changed file\n",
      index_synopsis);
}

struct IndexArgs {
  ds::IndexOptions options;
  std::vector<std::string> files;
  bool help = false;
};

IndexArgs parse_index_args(const std::vector<std::string_view>& args) {
  IndexArgs out;
  out.options.cache = ds::CacheMode::rebuild;
  bool seen_format = false, seen_cache = false, seen_verify = false, seen_threads = false, files_only = false;
  bool seen_dtype = false, seen_eos = false, seen_strict = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (files_only || arg.empty() || arg[0] != '-' || arg == "-") {
      out.files.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      files_only = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      out.help = true;
      return out;
    }
    const std::size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    const bool takes_value = name == "--format" || name == "--cache-dir" || name == "--threads" ||
                             name == "--dtype" || name == "--eos";
    if (!takes_value && name != "--verify" && name != "--strict") {
      throw UsageError(fmt::format(
          "unknown flag {} (index takes --format, --dtype, --eos, --cache-dir, --verify, --strict and --threads)",
          shown(name)));
    }
    bool& seen = name == "--format"      ? seen_format
                 : name == "--cache-dir" ? seen_cache
                 : name == "--verify"    ? seen_verify
                 : name == "--strict"    ? seen_strict
                 : name == "--dtype"     ? seen_dtype
                 : name == "--eos"       ? seen_eos
                                         : seen_threads;
    if (seen) throw UsageError(fmt::format("{} given twice (give each flag at most once)", name));
    seen = true;
    if (!takes_value) {
      if (eq != std::string_view::npos) throw UsageError(fmt::format("{} takes no value (got {})", name, shown(arg)));
      if (name == "--verify") out.options.cache = ds::CacheMode::verify;
      else out.options.strict = true;
      continue;
    }
    std::string_view value;
    if (eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size() && args[i + 1].substr(0, 2) != "--") {
      value = args[++i];
    } else {
      throw UsageError(fmt::format("{} needs a value", name));
    }
    if (name == "--format") {
      static const ds::ShardFormat formats[] = {ds::ShardFormat::jsonl, ds::ShardFormat::tar,
                                                ds::ShardFormat::megatron, ds::ShardFormat::npy, ds::ShardFormat::raw};
      out.options.format = formats[parse_choice("--format", value, {"jsonl", "tar", "megatron", "npy", "raw"})];
    } else if (name == "--dtype") {
      const std::size_t which =
          parse_choice("--dtype", value, {"uint8", "uint16", "uint32", "uint64", "int32", "int64"});
      out.options.dtype = std::string(ds::raw_dtypes[which].name);
    } else if (name == "--eos") {
      out.options.eos = parse_number("--eos", value);
    } else if (name == "--cache-dir") {
      if (value.empty()) throw UsageError("--cache-dir \"\" is empty (expected a folder)");
      out.options.cache_dir = std::string(value);
    } else {
      out.options.threads = parse_number("--threads", value);
      if (out.options.threads == 0) throw UsageError("--threads 0 is too small (expected at least 1)");
      if (out.options.threads > 256) {
        throw UsageError(fmt::format("--threads {} is too large (expected at most 256)", out.options.threads));
      }
    }
  }
  if (out.files.empty()) throw UsageError("no FILES given (expected one or more shard files)");
  const bool raw = out.options.format == ds::ShardFormat::raw;
  if (!raw && (seen_dtype || seen_eos)) {
    throw UsageError(fmt::format("{} is for --format raw only (expected --format raw, or no {})",
                                 seen_dtype ? "--dtype" : "--eos", seen_dtype ? "--dtype" : "--eos"));
  }
  if (raw && !seen_dtype) {
    throw UsageError("--format raw needs --dtype, the token type (uint8, uint16, uint32, uint64, int32 or int64)");
  }
  if (raw && !seen_eos) throw UsageError("--format raw needs --eos, the end-of-document token id");
  if (raw) {
    const ds::RawDtype& d = *ds::find_raw_dtype(out.options.dtype);
    if (*out.options.eos > d.max) {
      throw UsageError(fmt::format("--eos {} is out of range for --dtype {} (expected 0 to {})", *out.options.eos,
                                   d.name, d.max));
    }
  }
  if (seen_strict) {
    if (seen_verify) throw UsageError("--strict with --verify (--verify already refuses a stale index; give one)");
    out.options.cache = ds::CacheMode::use;
  }
  return out;
}

}  // namespace

int run_index(const std::vector<std::string_view>& args) {
  const auto fail = [](std::string_view message) {
    std::fflush(stdout);
    fmt::print(stderr, "distsampler index: {}\n", message);
    return 2;
  };
  try {
    const IndexArgs parsed = parse_index_args(args);
    if (parsed.help) {
      const std::string text = index_help();
      std::fwrite(text.data(), 1, text.size(), stdout);
      return std::fflush(stdout) == 0 ? 0 : 2;
    }
    // Every file is indexed before the first line is printed: a refusal prints nothing on stdout.
    const std::vector<ds::ShardIndex> indexes = ds::index_shards(parsed.files, parsed.options);
    std::string out;
    std::uint64_t records = 0, bytes = 0;
    for (const ds::ShardIndex& x : indexes) {
      out += fmt::format("{} {} {} records {} bytes\n", x.path, ds::format_name(x.format), x.num_records(),
                         x.data_size);
      records += x.num_records();
      bytes += x.data_size;
    }
    out += fmt::format("total {} files {} records {} bytes{}\n", indexes.size(), records, bytes,
                       parsed.options.cache == ds::CacheMode::verify ? " verified" : "");
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
      return fail("cannot write to standard output");
    }
    return 0;
  } catch (const UsageError& e) {
    fail(e.what());
    fmt::print(stderr, "usage: {}   (distsampler index --help for every flag)\n", index_synopsis);
    return 2;
  } catch (const ds::config_error& e) {
    return fail(e.what());
  } catch (const std::bad_alloc&) {
    return fail("out of memory while indexing (index fewer files at a time)");
  } catch (const std::exception& e) {
    return fail(fmt::format("internal error: {}", e.what()));
  }
}

}  // namespace cli
