// Example of a user-defined loader: `npy_dir`, a directory of NumPy .npy files, one tensor per file.
// The tensor name is the file's path below the directory without `.npy`, '/' becoming '.':
// `layers/0/w.npy` is `layers.0.w`. A program registers it in the registry it owns:
//   auto registry = wl::WeightLoaderRegistry::with_builtins();
//   npy_example::register_npy_dir_loader(*registry);
//   registry->create("npy_dir")->get_weights("weights/");
#pragma once

#include <cstdint>
#include <string>

#include "weightloader/dtype.hpp"
#include "weightloader/format.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/tensor.hpp"

namespace npy_example {

// What a .npy header says about its array.
struct NpyHeader {
  wl::DType dtype = wl::DType::F32;
  wl::Shape shape;
  bool fortran_order = false;  // column-major data
  uint64_t data_offset = 0;    // where the array's bytes begin in the file
};

// Reads and checks the header of one .npy file (format versions 1.0, 2.0 and 3.0). Accepted
// dtypes: <f2 <f4 <f8, <i2 <i4 <i8, <u2 <u4 <u8, and the one-byte |i1 |u1 |b1. Big-endian,
// object, structured and other dtypes are UnsupportedDType; a malformed header is
// InvalidHeaderDeserialization; a file shorter or longer than header + data is Truncated or
// MetadataIncompleteBuffer. Every error names the file.
NpyHeader read_npy_header(const std::string& path);

// Every *.npy file below `dir`, sorted by tensor name. Fortran-order arrays are described with
// column-major strides, so they load like any other. NoMatchingFiles if there are none;
// DuplicateTensorName if two files give one name (`a.b.npy` and `a/b.npy`).
wl::Catalogue read_npy_dir(const std::string& dir);

// Registers the loader as "npy_dir" (LoaderExists if the name is taken).
void register_npy_dir_loader(wl::WeightLoaderRegistry& registry);

}  // namespace npy_example
