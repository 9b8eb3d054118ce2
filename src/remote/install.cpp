#include <mutex>

#include "remote/http_client.hpp"
#include "remote/hub_download.hpp"
#include "remote/openers.hpp"
#include "weightloader/hf_cache.hpp"
#include "weightloader/remote.hpp"

namespace wl {

void add_remote_openers(SchemeOpener& opener) {
  const auto http = remote::http_opener();
  opener.add("http", http);
  opener.add("https", http);
  opener.add("s3", remote::s3_opener());
}

void install_remote_openers() {
  static std::once_flag once;
  std::call_once(once, [] {
    add_remote_openers(*SchemeOpener::global());
    set_hf_downloader(remote::download_from_hub);  // model ids missing from the cache come from the hub
  });
}

}  // namespace wl
