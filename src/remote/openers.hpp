// The remote openers, added to a context's SchemeOpener by with_remote() (weightloader/remote.hpp).
#pragma once

#include <memory>

#include "weightloader/byte_source.hpp"

namespace wl::remote {

std::shared_ptr<const Opener> http_opener();  // http:// and https://
std::shared_ptr<const Opener> s3_opener();    // s3://bucket/key

}  // namespace wl::remote
