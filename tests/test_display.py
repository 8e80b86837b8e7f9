"""How an item reads to a person: pages of a long field end between words."""

from __future__ import annotations

from calibrate.display import PAGE_CHARS, page_of


def test_pages_of_a_long_field_break_between_words_and_lose_nothing():
    words = [f"word{k}" for k in range(3000)]  # lengths 5 to 8: no page boundary falls between words by luck
    text = " ".join(words)
    first, pages = page_of(text, 0)
    shown = [page_of(text, k)[0] for k in range(pages)]
    assert "".join(shown) == text and all(len(page) <= PAGE_CHARS for page in shown)
    assert all(page.split()[0] in words and page.split()[-1] in words for page in shown), "no page starts mid-word"
    assert first.endswith(" ") and pages == len(shown) and page_of(text, 99) == (shown[-1], pages)


def test_text_without_spaces_is_cut_at_the_page_size():
    text = "中文" * 6000
    assert [len(page_of(text, k)[0]) for k in range(3)] == [PAGE_CHARS, PAGE_CHARS, 2000]
