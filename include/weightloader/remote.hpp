// HTTP(S) and S3 objects as byte sources (the optional `weightloader_remote` component, libcurl).
// Through a context made by with_remote(), "http://", "https://" and "s3://" names work wherever
// a path does: loaders, safe_open, load_into, the CLI. Reads are ranged GETs straight into the destination, pinned to
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

#include "weightloader/context.hpp"
#include "weightloader/export.hpp"

namespace wl {

// `base` whose opener also opens http://, https:// and s3:// names (its own opener still serves
// every other name), with the hub downloader for model ids missing from the Hugging Face cache
// (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE).
WL_API Context with_remote(Context base);

}  // namespace wl
