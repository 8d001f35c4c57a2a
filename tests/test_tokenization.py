"""Tests for ``course_lib.tokenization``: spaCy rule-based tokenizers, detokenize and ``Vocab``.

Checked: fixed special ids, reproducible build order, min_freq/max_size, encode/decode round trip,
JSON save/load (and its error messages), punctuation splitting and lowercasing.
"""

import json

import pytest
import torch

from course_lib.tokenization import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIALS,
    UNK_ID,
    Tokenizer,
    Vocab,
    detokenize,
    whitespace_tokenize,
)

SENTENCES = [
    ["der", "hund", "läuft", "."],
    ["die", "katze", "schläft", "."],
    ["der", "hund", "schläft", "."],
    ["ein", "vogel", "singt", "!"],
]


def test_specials_are_fixed_at_0_to_3():
    vocab = Vocab.build(SENTENCES)
    assert SPECIALS == ("<pad>", "<bos>", "<eos>", "<unk>")
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert vocab.itos[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert [vocab.token_to_id(s) for s in SPECIALS] == [0, 1, 2, 3]
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2, 3)
    assert Vocab().itos == list(SPECIALS)  # an empty vocab still has the specials


def test_build_order_frequency_desc_then_alphabetical():
    vocab = Vocab.build(SENTENCES)
    # counts: "." 3; der 2, hund 2, schläft 2; the rest 1 (ties alphabetical)
    expected = [".", "der", "hund", "schläft", "!", "die", "ein", "katze", "läuft", "singt", "vogel"]
    assert vocab.itos[4:] == expected
    assert len(vocab) == 4 + len(expected)


def test_build_order_independent_of_input_order():
    torch.manual_seed(0)
    reference = Vocab.build(SENTENCES)
    for _ in range(5):
        order = torch.randperm(len(SENTENCES)).tolist()
        shuffled = [list(reversed(SENTENCES[i])) for i in order]  # also reverse tokens inside sentences
        assert Vocab.build(shuffled) == reference
        assert Vocab.build(shuffled).itos == reference.itos


def test_build_ignores_special_tokens_in_the_corpus():
    vocab = Vocab.build([["<pad>", "a", "<unk>", "<eos>"], ["<bos>", "a"]])
    assert vocab.itos == [*SPECIALS, "a"]


def test_min_freq_and_max_size():
    vocab = Vocab.build(SENTENCES, min_freq=2)
    assert vocab.itos[4:] == [".", "der", "hund", "schläft"]
    assert vocab.encode(["katze"]) == [UNK_ID]  # rarer tokens become <unk>
    vocab = Vocab.build(SENTENCES, max_size=2)
    assert vocab.itos[4:] == [".", "der"]
    vocab = Vocab.build(SENTENCES, min_freq=2, max_size=10)
    assert len(vocab) == 8
    assert Vocab.build(SENTENCES, max_size=0).itos == list(SPECIALS)


def test_build_rejects_bad_arguments():
    with pytest.raises(ValueError, match="min_freq must be >= 1"):
        Vocab.build(SENTENCES, min_freq=0)
    with pytest.raises(ValueError, match="max_size must be >= 0"):
        Vocab.build(SENTENCES, max_size=-1)
    with pytest.raises(TypeError, match="token_streams must yield lists of tokens"):
        Vocab.build(["der hund läuft"])


def test_constructor_rejects_duplicates_and_empty_tokens():
    with pytest.raises(ValueError, match="twice"):
        Vocab(["a", "b", "a"])
    with pytest.raises(ValueError, match="twice"):
        Vocab(["<unk>"])
    with pytest.raises(ValueError, match="non-empty strings"):
        Vocab(["a", ""])


def test_encode_decode_round_trip():
    vocab = Vocab.build(SENTENCES)
    for sentence in SENTENCES:
        ids = vocab.encode(sentence, add_bos=True, add_eos=True)
        assert ids[0] == BOS_ID and ids[-1] == EOS_ID
        assert all(i >= 4 for i in ids[1:-1])
        assert vocab.decode(ids) == sentence
        assert vocab.decode(torch.tensor(ids)) == sentence  # tensors of ids work too
    assert vocab.encode(["der", "zebra"]) == [vocab.token_to_id("der"), UNK_ID]


def test_decode_stops_at_eos_drops_pad_bos_keeps_unk():
    vocab = Vocab.build(SENTENCES)
    der, hund = vocab.token_to_id("der"), vocab.token_to_id("hund")
    ids = [BOS_ID, der, PAD_ID, UNK_ID, hund, EOS_ID, der, PAD_ID]
    assert vocab.decode(ids) == ["der", "<unk>", "hund"]
    assert vocab.decode(ids, strip_specials=False) == [
        "<bos>", "der", "<pad>", "<unk>", "hund", "<eos>", "der", "<pad>"
    ]
    assert vocab.decode([EOS_ID, der]) == []


def test_encode_rejects_a_string_and_id_to_token_range():
    vocab = Vocab.build(SENTENCES)
    with pytest.raises(TypeError, match="tokens must be a list of tokens"):
        vocab.encode("der hund")
    with pytest.raises(IndexError, match=r"index must be in \[0, 15\)"):
        vocab.id_to_token(len(vocab))
    with pytest.raises(IndexError, match="index must be in"):
        vocab.decode([4, -1])


def test_save_load_round_trip(tmp_path):
    vocab = Vocab.build(SENTENCES)
    path = tmp_path / "vocab.json"
    vocab.save(path)
    loaded = Vocab.load(path)
    assert loaded == vocab and loaded.itos == vocab.itos and loaded.stoi == vocab.stoi
    assert "schläft" in path.read_text(encoding="utf-8")  # UTF-8, not \u escapes
    assert Vocab.load(str(path)) == vocab  # str paths work too


def test_load_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="vocab file not found"):
        Vocab.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="is not valid JSON"):
        Vocab.load(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"itos": ["a", "b"]}), encoding="utf-8")
    with pytest.raises(ValueError, match="needs 'itos' starting with"):
        Vocab.load(wrong)
    with pytest.raises(ValueError, match="needs 'itos'"):
        Vocab.from_dict(["<pad>"])


def test_tokenizer_splits_punctuation_german():
    tok = Tokenizer("de")
    assert tok("Der Hund.") == ["Der", "Hund", "."]
    assert tok("Hallo, Welt!") == ["Hallo", ",", "Welt", "!"]
    assert whitespace_tokenize("Der Hund.") == ["Der", "Hund."]  # the naive baseline keeps "Hund."
    assert tok("Zwei   Katzen\n schlafen") == ["Zwei", "Katzen", "schlafen"]  # whitespace dropped


def test_tokenizer_lowercase_and_many():
    tok = Tokenizer("de", lowercase=True)
    assert tok("Der Hund LÄUFT.") == ["der", "hund", "läuft", "."]
    assert Tokenizer("de")("Der Hund")[0] == "Der"  # no lowercasing by default
    texts = ["Ein Hund.", "Zwei Katzen!"]
    assert tok.tokenize_many(texts) == [tok(t) for t in texts]
    assert repr(tok) == "Tokenizer(lang='de', lowercase=True)"


def test_tokenizer_errors():
    with pytest.raises(ValueError, match="not a language spaCy knows"):
        Tokenizer("zz")
    with pytest.raises(ValueError, match="lang must be a language code"):
        Tokenizer("")
    with pytest.raises(TypeError, match="text must be a str"):
        Tokenizer("de")(["Der", "Hund"])


def test_detokenize():
    assert detokenize(["Der", "Hund", "läuft", "."]) == "Der Hund läuft."
    assert detokenize(["Ja", ",", "(", "wirklich", ")", "!"]) == "Ja, (wirklich)!"
    assert detokenize(["It", "'s", "fine"]) == "It's fine"
    assert detokenize([]) == ""
    tok = Tokenizer("de")
    text = "Der Hund läuft schnell, die Katze nicht."
    assert detokenize(tok(text)) == text
