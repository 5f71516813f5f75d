"""Keyboard use, the dark theme and text contrast, in a real browser."""

from __future__ import annotations

from playwright.sync_api import expect

from .test_transaction_graph import linked_pair, row

CONTRAST = """() => {
  const probe = document.createElement("span");
  document.body.append(probe);
  const rgb = (value) => { probe.style.color = value; return getComputedStyle(probe).color.match(/[\\d.]+/g).slice(0, 3).map(Number); };
  const lum = (c) => { const [r, g, b] = c.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(rgb(a)), lum(rgb(b))].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const out = {};
  for (const fg of ["--fg", "--muted", "--link", "--active", "--held", "--committed", "--rolled_back"])
    for (const bg of ["--bg", "--panel"]) out[`${fg} on ${bg}`] = ratio(`var(${fg})`, `var(${bg})`);
  probe.remove();
  return out;
}"""


def test_text_contrast_in_both_themes_and_the_choice_is_remembered(admin_page, site):
    page = admin_page
    page.goto(f"{site.url}/")
    for theme in ("light", "dark"):
        if page.evaluate("document.documentElement.dataset.theme") != theme:
            page.click("#theme-toggle")
        expect(page.locator("html")).to_have_attribute("data-theme", theme)
        low = {pair: round(r, 2) for pair, r in page.evaluate(CONTRAST).items() if r < 4.5}
        assert low == {}, f"{theme} theme: text below 4.5:1 — {low}"
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.locator("#theme-toggle")).to_have_attribute("aria-pressed", "true")
    page.click("#theme-toggle")
    expect(page.locator("html")).to_have_attribute("data-theme", "light")


def test_keyboard_skip_link_and_the_transaction_table(admin_page, site, api, fresh_broker):
    producer, consumer = linked_pair(api, fresh_broker)
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/")
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
    page.keyboard.press("Tab")
    expect(page.locator("a.skip")).to_be_focused()
    row(page, producer).focus()
    page.keyboard.press("Enter")
    expect(page.locator('#detail [data-f="id"]')).to_have_text(producer)
    expect(page.locator('#detail [data-f="cascade"]')).to_contain_text(consumer[:8])
    page.keyboard.press("ArrowDown")
    expect(row(page, consumer)).to_be_focused()
    page.keyboard.press(" ")
    expect(page.locator('#detail [data-f="id"]')).to_have_text(consumer)
    assert page.url.endswith(f"#{consumer}")
    api.post(f"/api/transactions/{producer}/rollback/", json={})
    assert page.console.errors == []
