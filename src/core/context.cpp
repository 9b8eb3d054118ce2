#include "weightloader/context.hpp"

#include "weightloader/format.hpp"

namespace wl {

std::shared_ptr<const Opener> Context::files() const { return opener ? opener : local_opener(); }

const FormatList& Context::detected_formats() const { return formats ? *formats : FormatList::global(); }

}  // namespace wl
