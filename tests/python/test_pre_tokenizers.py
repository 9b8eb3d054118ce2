"""The byte-level BPE pre-tokenizers of the model families against Hugging Face's tokenizers (the
pinned release): for each, a tokenizer.json that tokenizers itself writes (the family's
pre_tokenizer and normalizer, as its published tokenizer.json has them, and a BPE model that
tokenizers' BpeTrainer learns from a small multilingual text), then `weightloader tokenize` on that
file, and on the GGUF `weightloader convert --to gguf` makes of it, gives tokenizers' ids on
llama.cpp's tokenizer test texts (convert_hf_to_gguf_update.py) and more."""
import concurrent.futures
import json
import os
import pathlib
import subprocess

import pytest

tokenizers = pytest.importorskip("tokenizers")
gguf = pytest.importorskip("gguf")

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = pathlib.Path(os.environ.get("WL_CLI", ROOT / "build" / "weightloader"))
VOCAB = 512  # the vocabulary of `weightloader synth --preset tiny`, which the GGUF files hold


@pytest.fixture(scope="module", autouse=True)
def cli():
    if not CLI.is_file():
        pytest.skip(f"the CLI is not built at {CLI}")


def split(regex, behavior="Isolated"):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": behavior, "invert": False}


def byte_level(use_regex=False):
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def sequence(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


DIGITS = {"type": "Digits", "individual_digits": True}
NO_NORMALIZER = {"type": "Sequence", "normalizers": []}  # DeepSeek's files
NFC = {"type": "NFC"}

# The families' regexes as their tokenizer.json files spell them (llama.cpp's src/llama-vocab.cpp
# quotes them; o200k is tiktoken's o200k_base).
LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
O200K = "|".join([
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", r"\s*[\r\n]+", r"\s+(?!\S)", r"\s+"])
DEEPSEEK_LLM_LETTERS = "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+"
DEEPSEEK_LLM_PUNCTUATION = "\\s?[!-/:-~！-／：-～‘-‟　-。]+"
DEEPSEEK_CJK = "[一-龥ࠀ-一가-퟿]+"
DEEPSEEK_V3_CJK = "[一-龥぀-ゟ゠-ヿ]+"
DEEPSEEK_V3 = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"

# tokenizer.ggml.pre (llama.cpp's name): the families that ship it, pre_tokenizer, normalizer, ignore_merges.
FAMILIES = {
    "gpt-2": ("GPT-2", byte_level(use_regex=True), None, False),
    "llama-bpe": ("Llama 3, SmolLM3", sequence(split(LLAMA3), byte_level()), None, True),
    "qwen2": ("Qwen2, Qwen3", sequence(split(QWEN2), byte_level()), NFC, False),
    "dbrx": ("GLM-4, OLMo 2", sequence(split(LLAMA3), byte_level()), None, False),
    "gpt-4o": ("gpt-oss, Llama 4", sequence(split(O200K), byte_level()), None, False),
    "deepseek-llm": ("DeepSeek LLM, V2", sequence(split("[\r\n]"), split(DEEPSEEK_LLM_LETTERS), split(DEEPSEEK_LLM_PUNCTUATION),
                                                  split("\\s+$"), split(DEEPSEEK_CJK), DIGITS, byte_level()), NO_NORMALIZER, False),
    "deepseek-coder": ("DeepSeek Coder", sequence(split("[\r\n]"), split("\\s?\\p{L}+"), split("\\s?\\p{P}+"), split(DEEPSEEK_CJK),
                                                  DIGITS, byte_level()), NO_NORMALIZER, False),
    "deepseek-v3": ("DeepSeek-V3, R1", sequence(split("\\p{N}{1,3}"), split(DEEPSEEK_V3_CJK), split(DEEPSEEK_V3), byte_level()),
                    NO_NORMALIZER, False),
    "falcon": ("Falcon", sequence({"type": "Punctuation", "behavior": "Contiguous"}, byte_level(use_regex=True),
                                  {"type": "Digits", "individual_digits": False}, split("[0-9][0-9][0-9]")), None, False),
    "starcoder": ("StarCoder, Granite 3", sequence(DIGITS, byte_level(use_regex=True)), None, False),
}

CHK_TXT = ("\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 "
           "33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български "
           "''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some "
           "tea? We'Ve a'lL")
# llama.cpp's test-tokenizer-0 texts (convert_hf_to_gguf_update.py), then what they leave out: letter
# case changes (o200k), decomposed accents (NFC), kana, Hangul, full-width forms, other digits, the
# byte-alphabet digits ² ³ ¹ ¼ ½ ¾ (falcon), code, line and space runs, vertical tab and NEL.
TEXTS = [
    "ied 4 ½ months", "Führer", "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\t\n", "Hello world", " Hello world",
    "Hello World", " Hello World", " Hello World!", "Hello, world!", " Hello, world!", " this is 🦙.cpp", "w048 7tuijk dsdfhu",
    "нещо на Български", "កាន់តែពិសេសអាចខលចេញ",
    "🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ (only emoji that has its own token)", "Hello", " Hello", "  Hello",
    "   Hello", "    Hello", "    Hello\n    Hello", " (", "\n =", "' era", "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～",
    "!!!!!!", "3", "33", "333", "3333", "33333", "333333", "3333333", "33333333", "333333333", "Cửa Việt", " discards", CHK_TXT,
    "HelloWorld camelCase XMLHttpRequest iPhone DON'T don't 's 're 'S 'RE", "Cafe\u0301 nai\u0308ve re\u0301sume\u0301 Åström",
    "こんにちは、世界！カタカナ。安녕하세요 한국어", "！？（ＡＢＣ）１２３ ‘quoted’ “double” — …", "٣٤٥ ४२ 3.14159 1,000,000 ²³ ¹ ¼½¾ x²",
    "def f(x):\n\treturn x**2  # ok\r\n\r\n    if a != b: print(a[0:3])", "a \x0b b \x85 c\u2028d\u3000e  \t \n  f   ",
]
CORPUS = [t for t in TEXTS if t] + [
    "The quick brown fox jumps over the lazy dog. It's 12:45 and we've 3 cats, they're 100% sure.",
    "Über café naïve façade résumé coöperate — “quotes” and ‘single’ ones… 1234567890 0.5 42",
    "東京は日本の首都です。我喜欢学习中文和编程。한국어도 배우고 있어요. ひらがなとカタカナ",
    "Привет, как дела? Γειά σου κόσμε! مرحبا بالعالم שלום עולם नमस्ते दुनिया",
    "🙂🙃😀 🎉🎉🎉 👍🏽 ❤️ 🇫🇷 emoji mixed with text 😂 lol",
    "for (int i = 0; i < n; ++i) {\n    sum += a[i] * b[i];\n}\n\nreturn sum;  // 2024-06-01",
    "    indented\n\t\ttabbed\n\n\n   spaces   between   words   \r\n windows line",
    "I'm you're he'll she'd we've THEY'RE It'S numbers 3 33 333 3333 33333 and 2²+3³=½",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny Llama checkpoint whose embedding has VOCAB rows, for `convert --to gguf`."""
    d = tmp_path_factory.mktemp("model")
    done = subprocess.run([str(CLI), "synth", str(d / "m"), "--preset", "tiny"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return d / "m"


def trained(pre_tokenizer, normalizer, ignore_merges):
    """tokenizers' own tokenizer.json text: this pre_tokenizer and normalizer, a BPE of VOCAB tokens
    (the 256 bytes, <|endoftext|>, merges) that BpeTrainer learns from CORPUS through them."""
    skeleton = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer, "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {}, "merges": []},
    }
    tok = tokenizers.Tokenizer.from_str(json.dumps(skeleton))
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"], show_progress=False,
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 3, trainer)
    written = json.loads(tok.to_str())
    written["model"]["ignore_merges"] = ignore_merges
    assert tok.get_vocab_size() == VOCAB, "the corpus gave BpeTrainer too few merges"
    return json.dumps(written, ensure_ascii=False)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request, tmp_path_factory):
    name = request.param
    _, pre_tokenizer, normalizer, ignore_merges = FAMILIES[name]
    d = tmp_path_factory.mktemp(name)
    text = trained(pre_tokenizer, normalizer, ignore_merges)
    (d / "tokenizer.json").write_text(text, encoding="utf-8")
    peer = tokenizers.Tokenizer.from_str(text)
    return name, d, peer


def ours(tokenizer, texts):
    """`weightloader tokenize --no-bos` ids of each text (a few processes at a time)."""
    def one(text):
        done = subprocess.run([str(CLI), "tokenize", "--tokenizer", str(tokenizer), "--no-bos",
                               *(["--text=" + text] if text else ["--text", ""])], capture_output=True, text=True)
        assert done.returncode == 0, f"{text!r}: {done.stderr}"
        return [int(i) for i in done.stdout.strip().split(",")] if done.stdout.strip() else []
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, texts))


def expect_peer_ids(tokenizer, peer):
    want = [peer.encode(t, add_special_tokens=False).ids for t in TEXTS]
    wrong = [(t, g, w) for t, g, w in zip(TEXTS, ours(tokenizer, TEXTS), want) if g != w]
    assert not wrong, "\n".join(f"{t!r}: {g} instead of {w}" for t, g, w in wrong)


def test_tokenizer_json_gives_the_ids_of_tokenizers(family):
    name, d, peer = family
    expect_peer_ids(d / "tokenizer.json", peer)


def test_through_gguf_the_same_ids_and_llama_cpp_s_name(family, model_dir):
    """convert --to gguf names the pre-tokenizer as llama.cpp does, and the GGUF, which holds that
    name and not the steps, tokenizes as the tokenizer.json did."""
    name, d, peer = family
    out = d / "model.gguf"
    done = subprocess.run([str(CLI), "convert", str(model_dir), str(out), "--to", "gguf", "--gguf-type", "f32", "-q",
                           "--tokenizer", str(d / "tokenizer.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    field = gguf.GGUFReader(out).fields["tokenizer.ggml.pre"]
    assert bytes(field.parts[field.data[0]]).decode() == name
    expect_peer_ids(out, peer)


def test_the_wrong_pre_tokenizer_gives_other_ids(family):
    """The control: the family's model under a pre-tokenizer that does not cut words (ByteLevel alone)
    gives ids other than tokenizers' for some of the texts. (Another family's would not always do:
    a model that learned its merges within one digit never merges digits, however they are cut.)"""
    name, d, peer = family
    j = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
    j["pre_tokenizer"] = byte_level()
    (d / "wrong.json").write_text(json.dumps(j, ensure_ascii=False), encoding="utf-8")
    got = ours(d / "wrong.json", TEXTS)
    assert any(g != peer.encode(t, add_special_tokens=False).ids for t, g in zip(TEXTS, got))
