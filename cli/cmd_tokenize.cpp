#include <algorithm>
#include <climits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_common.hpp"
#include "weightloader/error.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl::cli {

namespace {

std::vector<int32_t> parse_ids(const std::string& list) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    if (item.empty() || used != item.size() || id < 0 || id > INT32_MAX)
      throw Error(ErrorCode::InvalidArgument, fmt::format("--ids: '{}' is not a token id", item));
    ids.push_back(static_cast<int32_t>(id));
    pos = comma + 1;
  }
  return ids;
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tokenize", "encode text into token ids (--text), or decode ids into text (--ids)");
  struct Args {
    std::string tokenizer, text, ids;
    bool no_bos = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--tokenizer", a->tokenizer, "llama2.c tokenizer.bin, SentencePiece tokenizer.model, Hugging Face tokenizer.json (byte-level BPE), or a GGUF file")
      ->required();
  auto* text = cmd->add_option("--text", a->text, "text to encode: prints the ids, comma-separated");
  auto* ids = cmd->add_option("--ids", a->ids, "comma-separated ids to decode: prints the text (a leading BOS is not printed)");
  text->excludes(ids);
  cmd->add_flag("--no-bos", a->no_bos, "--text: no BOS id first (nor what a tokenizer.json's post-processor adds)");
  cmd->callback([a, text, ids] {
    if (!*text && !*ids) throw Error(ErrorCode::InvalidArgument, "give --text or --ids");
    const auto tok = open_tokenizer(a->tokenizer, *program_context().files());
    if (*text) {
      fmt::print("{}\n", fmt::join(tok->encode(a->text, !a->no_bos), ","));
      return;
    }
    // As run.c prints a generation: every token after the one before it, starting after BOS.
    const std::vector<int32_t> list = parse_ids(a->ids);
    int32_t prev = tok->bos_id();
    std::string out;
    for (size_t i = 0; i < list.size(); ++i) {
      if (i == 0 && list[i] == tok->bos_id()) continue;
      out += tok->decode(prev, list[i]);
      prev = list[i];
    }
    fmt::print("{}\n", out);
  });
}

}  // namespace wl::cli
