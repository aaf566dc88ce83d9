// distsampler Python extension, files family: binds index_shards (shard files' record counts and byte ranges).
// SPDX-License-Identifier: MIT
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distsampler/files/index_builder.hpp"

namespace py = pybind11;
namespace ds = distsampler;

namespace {

ds::CacheMode cache_mode(const std::string& mode) {
  if (mode == "use") return ds::CacheMode::use;
  if (mode == "rebuild") return ds::CacheMode::rebuild;
  if (mode == "verify") return ds::CacheMode::verify;
  if (mode == "off") return ds::CacheMode::off;
  throw ds::config_error("index_shards: cache \"" + mode + "\" is unknown (expected use, rebuild, verify or off)");
}

py::array_t<std::uint64_t> column(const std::vector<ds::RecordSpan>& records, bool offsets) {
  py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(records.size()));
  auto view = out.mutable_unchecked<1>();
  for (std::size_t i = 0; i < records.size(); ++i) {
    view(static_cast<py::ssize_t>(i)) = offsets ? records[i].offset : records[i].size;
  }
  return out;
}

// A tar member's key or suffix as Python's tarfile (and so WebDataset) names it: UTF-8, the bytes
// of anything else as lone surrogates ("caf\xe9" -> 'caf\udce9'), as os.fsdecode does.
py::str member_name(const std::string& name) {
  PyObject* text = PyUnicode_DecodeUTF8(name.data(), static_cast<Py_ssize_t>(name.size()), "surrogateescape");
  if (text == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(text);
}

// One index as a dict of plain values and NumPy arrays (the record columns can be millions long).
py::dict to_dict(const ds::ShardIndex& x) {
  py::dict d;
  d["path"] = x.path;
  d["format"] = std::string(ds::format_name(x.format));
  d["data_path"] = x.data_path;
  d["data_size"] = x.data_size;
  d["records"] = x.num_records();
  d["offsets"] = column(x.records, true);
  d["sizes"] = column(x.records, false);
  d["dtype"] = x.dtype;
  d["eos"] = x.eos;
  d["rebuilt_stale"] = x.rebuilt_stale;
  d["row_shape"] = x.row_shape;
  py::list keys;
  for (const std::string& key : x.keys) keys.append(member_name(key));
  d["keys"] = keys;
  d["member_begin"] = x.member_begin;
  py::list members;
  for (const ds::TarMember& m : x.members) members.append(py::make_tuple(member_name(m.suffix), m.offset, m.size));
  d["members"] = members;
  d["cache_path"] = x.cache_path;
  d["from_cache"] = x.from_cache;
  return d;
}

}  // namespace

namespace distsampler_python {

void register_files(py::module_& m) {
  m.def(
      "index_shards",
      [](const std::vector<std::string>& paths, const std::optional<std::string>& format, const std::string& cache_dir,
         const std::string& cache, std::uint64_t threads, const std::string& dtype,
         const std::optional<std::uint64_t>& eos, bool strict) {
        ds::IndexOptions o;
        if (format) {
          o.format = ds::parse_format(*format);
          if (!o.format) {
            throw ds::config_error("index_shards: format \"" + *format +
                                   "\" is unknown (expected jsonl, tar, megatron, npy or raw)");
          }
        }
        o.cache_dir = cache_dir;
        o.cache = cache_mode(cache);
        o.threads = threads;
        o.dtype = dtype;
        o.eos = eos;
        o.strict = strict;
        std::vector<ds::ShardIndex> built;
        {
          py::gil_scoped_release release;
          built = ds::index_shards(paths, o);
        }
        py::list out;
        for (const ds::ShardIndex& x : built) out.append(to_dict(x));
        return out;
      },
      py::arg("paths"), py::arg("format") = py::none(), py::arg("cache_dir") = "", py::arg("cache") = "use",
      py::arg("threads") = 1, py::arg("dtype") = "", py::arg("eos") = py::none(), py::arg("strict") = false,
      "Indexes shard files (C++ index_shards): a list of dicts with each file's record count, the records' byte "
      "offsets and sizes (NumPy uint64 arrays), what decoding needs, and rebuilt_stale: \"\" unless a stale cached "
      "index was rebuilt (then which shard changed; strict=True refuses it instead). dtype and eos are format "
      "raw's.");
}

}  // namespace distsampler_python
