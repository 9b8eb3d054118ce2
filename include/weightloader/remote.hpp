// HTTP(S) and S3 objects as byte sources (the optional `weightloader_remote` component, libcurl).
// Once installed, "http://", "https://" and "s3://" names work wherever a path does: loaders,
// safe_open, load_into, the CLI. Reads are ranged GETs straight into the destination, pinned to
// the object's ETag (a change mid-load is an error, never mixed data), retried with backoff on
// 5xx, 429, timeouts and dropped connections, resuming from the last byte received.
//
// S3: path-style requests to AWS_ENDPOINT_URL (else https://s3.AWS_REGION.amazonaws.com), signed
// with libcurl's AWS Signature V4 from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
// AWS_SESSION_TOKEN (unsigned without them); "s3://bucket/prefix/" is a directory, listed with
// ListObjectsV2. HTTP has no listing: a directory URL ("http://host/model/") opens through its
// index (model.safetensors.index.json). WL_HTTP_RETRIES (default 5 attempts) and
// WL_HTTP_BACKOFF_MS (default 200, doubling) tune the retries.
#pragma once

#include <cstdint>

#include "weightloader/byte_source.hpp"
#include "weightloader/export.hpp"

namespace wl {

// Adds the http, https and s3 openers to `opener`.
WL_API void add_remote_openers(SchemeOpener& opener);
// add_remote_openers(*SchemeOpener::global()) and the hub downloader (set_hf_downloader in
// weightloader/hf_cache.hpp: HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE), once per process (later calls
// do nothing).
WL_API void install_remote_openers();

}  // namespace wl
