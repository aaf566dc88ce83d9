// _core binding of check_partition (verify.hpp) over explicit per-rank lists.
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "distsampler/verify.hpp"

namespace distsampler_python {

void register_verify(py::module_& m) {
  m.def(
      "check_partition",
      [](std::uint64_t n, const std::vector<std::vector<std::uint64_t>>& ranks, const std::string& tail,
         const std::vector<std::vector<bool>>& padding) {
        ds::PartitionReport r;
        {
          py::gil_scoped_release release;
          r = ds::check_partition(n, ranks, tail_of(tail), padding);
        }
        py::dict d;
        d["ok"] = r.ok();
        d["summary"] = r.summary();
        d["failures"] = r.failures;
        d["counts"] = r.counts;
        d["padding"] = r.padding;
        d["duplicates"] = r.duplicates;
        d["missing"] = r.missing;
        d["out_of_range"] = r.out_of_range;
        d["duplicate_examples"] = r.duplicate_examples;
        d["missing_examples"] = r.missing_examples;
        return d;
      },
      py::arg("dataset_size"), py::arg("ranks"), py::arg("tail"), py::arg("padding") = std::vector<std::vector<bool>>{},
      "verify.hpp's check_partition over explicit per-rank lists.");
}

}  // namespace distsampler_python
