"""Notes size in tokens of a real tokenizer (o200k_base), against the arm's cap."""

from __future__ import annotations

from sdcs_bench.scoring.notes import count_tokens, notes_size


def test_o200k_counts_like_tiktoken():
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    assert count_tokens("<|endoftext|>") > 1  # special tokens in notes are plain text


def test_cap_and_whether_it_was_exceeded(tmp_path):
    (tmp_path / "state.md").write_text(" ".join(["word"] * 600))
    size = notes_size(tmp_path, "state.md", 500)
    assert size["tokenizer"] == "o200k_base" and size["tokens"] == 600 and size["cap_exceeded"]
    assert not notes_size(tmp_path, "state.md", 1200)["cap_exceeded"]
    assert notes_size(tmp_path, None, 500) is None
    missing = notes_size(tmp_path, "gone.md", 500)
    assert missing["exists"] is False and missing["tokens"] == 0
