#include "remote/hub_download/hub_download.hpp"
#include "remote/openers.hpp"
#include "weightloader/remote.hpp"

namespace wl {

Context with_remote(Context base) {
  auto opener = std::make_shared<SchemeOpener>(base.files());
  const auto http = remote::http_opener();
  opener->add("http", http);
  opener->add("https", http);
  opener->add("s3", remote::s3_opener());
  base.opener = std::move(opener);
  base.downloader = remote::download_from_hub;  // model ids missing from the cache come from the hub
  return base;
}

}  // namespace wl
