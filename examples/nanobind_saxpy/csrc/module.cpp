// module.cpp - the nanobind_saxpy._core extension: nanobind bindings for the CUDA code in
// saxpy.cu (compiled by nvcc; this file and nanobind's own sources by the host compiler).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "saxpy.h"

namespace nb = nanobind;
using namespace nb::literals;

static std::vector<float> saxpy(float a, const std::vector<float> &x, const std::vector<float> &y)
{
    if (x.size() != y.size())
        throw nb::value_error(("x and y must have the same length (" + std::to_string(x.size()) +
                               " != " + std::to_string(y.size()) + ")").c_str());
    std::vector<float> out(x.size());
    char err[512] = {0};
    int rc;
    {
        nb::gil_scoped_release release;  // the kernel runs without the GIL
        rc = saxpy_run(a, x.data(), y.data(), out.data(), x.size(), err, sizeof err);
    }
    if (rc != 0)
        throw std::runtime_error(std::string("CUDA error: ") + err);
    return out;
}

static int device_count()
{
    int count = 0;
    char err[512] = {0};
    if (saxpy_device_count(&count, err, sizeof err) != 0)
        throw std::runtime_error(std::string("CUDA error: ") + err);
    return count;
}

NB_MODULE(_core, m)
{
    m.doc() = "SAXPY on the GPU (nanobind bindings)";
    m.def("saxpy", &saxpy, "a"_a, "x"_a, "y"_a,
          "saxpy(a, x, y) -> list[float]: a * x[i] + y[i], computed by a CUDA kernel");
    m.def("device_count", &device_count, "Number of CUDA devices (RuntimeError without one)");
    m.def("runtime_version", &saxpy_runtime_version, "CUDA runtime version, e.g. 13000");
    m.def("driver_version", &saxpy_driver_version, "CUDA version of the driver; 0 without one");
}
