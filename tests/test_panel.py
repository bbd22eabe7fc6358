"""The sampling panel: its plain logic, and its widgets driven by setting .value (no browser)."""
import pytest
import torch

from course_lib.toys.five_token import FIVE_TOKEN, INPUT_IDS
from course_lib.model import GPT, GPTConfig
from course_lib.ui.panel import PanelSettings, SamplingPanel, describe, panel_view, render_html
from course_lib import decoding as S
from course_lib.decoding import SamplingRule, sample_interval
from course_lib.tokens.vocab import FIVE_TOKEN_VOCAB, LAB_VOCAB


@pytest.fixture(scope="module")
def five():
    return FIVE_TOKEN.load()


@pytest.fixture
def panel(five):
    return SamplingPanel(five, FIVE_TOKEN_VOCAB.piece, INPUT_IDS)


def test_off_values_switch_filters_off():
    rule = PanelSettings().rule()
    assert (rule.top_k, rule.top_p, rule.min_p, rule.greedy) == (None, None, None, False)
    rule = PanelSettings(top_k=3, top_p=0.8, min_p=0.1, greedy=True).rule()
    assert (rule.top_k, rule.top_p, rule.min_p, rule.greedy) == (3, 0.8, 0.1, True)


@pytest.mark.parametrize("bad, name", [(dict(temperature=0.0), "temperature"), (dict(top_k=-1), "top_k"),
                                       (dict(top_p=0.0), "top_p"), (dict(min_p=1.5), "min_p"),
                                       (dict(u=1.0), "u")])
def test_bad_settings_raise(five, bad, name):
    logits = FIVE_TOKEN.last_row_logits(five, INPUT_IDS)
    with pytest.raises(ValueError, match=f"^{name}"):
        panel_view(logits, PanelSettings(**bad))


def test_view_is_the_rule_and_the_interval_draw(five):
    logits = FIVE_TOKEN.last_row_logits(five, INPUT_IDS)
    for settings in [PanelSettings(), PanelSettings(top_k=2, u=0.1), PanelSettings(temperature=0.5, top_p=0.9, u=0.95),
                     PanelSettings(min_p=0.05, u=0.99), PanelSettings(greedy=True, u=0.0)]:
        view = panel_view(logits, settings)
        step = settings.rule().apply(logits)
        assert view.step == step
        assert view.chosen == sample_interval(step.final, settings.u)
        start, end = view.interval
        assert start <= settings.u < end
        text = describe(view, FIVE_TOKEN_VOCAB.piece)
        assert text.splitlines()[0] == settings.label()
        assert f"kept {len(step.kept)} of 5" in text
        assert text.endswith(f"(id {view.chosen})")
        page = render_html(view, FIVE_TOKEN_VOCAB.piece)
        assert f"left:{100 * settings.u:.2f}%" in page and "◀ chosen" in page


def test_ranked_strip_order_walks_the_most_likely_first(five):
    logits = FIVE_TOKEN.last_row_logits(five, INPUT_IDS)
    by_id = panel_view(logits, PanelSettings(u=0.1))
    ranked = panel_view(logits, PanelSettings(u=0.1, order="ranked"))
    assert by_id.chosen == 0                                 # a's interval [0, 0.2203) comes first
    assert ranked.chosen == 1 and ranked.layout[0] == 1      # b's interval [0, 0.6903) comes first
    assert ranked.interval == (0.0, pytest.approx(ranked.step.final[1]))
    assert ranked.chosen == S.sample_interval_ranked(ranked.step.final, 0.1)
    assert "strip in ranked order" in describe(ranked, FIVE_TOKEN_VOCAB.piece)
    with pytest.raises(ValueError, match="^order"):
        panel_view(logits, PanelSettings(order="random"))


def test_moving_a_control_updates_the_panel(panel):
    before = panel.summary()
    assert "kept 5 of 5" in before
    panel.top_k.value = 2
    assert "kept 2 of 5" in panel.summary() and panel.view.step.kept == [1, 0]
    panel.u.value = 0.1                                    # [0, p'_a) belongs to a (id 0)
    assert panel.view.chosen == 0 and "→ a (id 0)" in panel.view_html.value
    panel.top_k.value = 0
    panel.top_p.value = 0.92
    assert panel.view.step.kept == SamplingRule(top_p=0.92).apply(panel.logits).kept
    panel.order.value = "ranked"
    assert panel.view.layout == S.ranked_ids(panel.view.step.final)
    panel.greedy.value = True
    assert panel.temperature.disabled and panel.view.step.kept == [1]
    assert panel.summary() != before


def test_append_runs_the_model_one_more_step(panel, five):
    panel.set(top_k=2, u=0.1)
    chosen = panel.view.chosen
    panel.append_button.click()
    assert panel.ids == INPUT_IDS + [chosen]
    assert panel.logits == FIVE_TOKEN.last_row_logits(five, panel.ids).tolist()
    assert f"ids {panel.ids}" in panel.context.value
    while not panel.stopped:
        panel.append()
    assert len(panel.ids) == five.config.n_positions and panel.append_button.disabled
    panel.reset_button.click()
    assert panel.ids == INPUT_IDS and not panel.stopped


def test_end_id_stops_the_panel():
    torch.manual_seed(1)
    model = GPT(GPTConfig(vocab_size=12, n_positions=16, n_embd=8, n_head=2)).eval()
    panel = SamplingPanel(model, LAB_VOCAB.piece, [0, 2], end_id=None, settings=PanelSettings(greedy=True))
    panel.end_id = panel.view.chosen                       # whatever greedy picks next ends the text
    panel.append()
    assert panel.stopped.startswith("stopped: the end id") and len(panel.ids) == 3
    panel.append()
    assert len(panel.ids) == 3


def test_text_representation_is_the_summary_and_stable(five):
    a = SamplingPanel(five, FIVE_TOKEN_VOCAB.piece, INPUT_IDS, settings=PanelSettings(top_p=0.9))
    b = SamplingPanel(five, FIVE_TOKEN_VOCAB.piece, INPUT_IDS, settings=PanelSettings(top_p=0.9))
    bundle_a, bundle_b = a._repr_mimebundle_(), b._repr_mimebundle_()
    assert bundle_a["text/plain"] == bundle_b["text/plain"] == a.summary()
    assert "application/vnd.jupyter.widget-view+json" in bundle_a


def test_a_gpt2_sized_vocabulary_plugs_in():
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=50_257, n_positions=8, n_embd=8, n_head=2, mlp_hidden=16)).eval()
    panel = SamplingPanel(model, lambda i: f"<{i}>", [1, 5], settings=PanelSettings(top_p=0.5))
    assert len(panel.view.step.final) == 50_257
    assert "… and" in panel.summary()                      # long kept sets are cut for display
    panel.top_k.value = 5
    assert len(panel.view.step.kept) <= 5


def test_the_chinese_panel_labels_every_control_in_chinese_and_keeps_the_values(five):
    """Every control's visible text is Chinese in zh (the strip-order buttons too), its label
    column is wider (the browser test checks nothing is cut off), and the values are the same."""
    from course_lib.ui.language import set_language
    from course_lib.ui.panel import DESCRIPTION_WIDTH

    set_language("zh")
    try:
        panel = SamplingPanel(five, FIVE_TOKEN_VOCAB.piece, INPUT_IDS, settings=PanelSettings(order="ranked"))
    finally:
        set_language("en")
    assert panel.order.options == (("按 id", "id"), ("按概率", "ranked")) and panel.order.value == "ranked"
    assert panel.order.label == "按概率"
    assert [c.description for c in (panel.temperature, panel.greedy, panel.top_k, panel.top_p, panel.min_p,
                                     panel.order, panel.append_button, panel.reset_button)] == [
        "温度", "贪心（argmax）", "top-k（0=关）", "top-p（1=关）", "min-p（0=关）", "区间条顺序", "追加选中的词元", "重置"]
    assert panel.top_k.style.description_width == DESCRIPTION_WIDTH["zh"] == "120px"
    english = SamplingPanel(five, FIVE_TOKEN_VOCAB.piece, INPUT_IDS)
    assert english.order.options == (("id", "id"), ("ranked", "ranked"))
    assert english.top_k.style.description_width == "90px" and english.top_k.layout.width == "420px"


def test_the_context_line_speaks_the_panel_language(five):
    """The line above the controls: the title, the text so far and its ids ("ids" in English,
    "词元 id" in Chinese, the title followed by a full-width colon)."""
    from course_lib.ui.language import set_language

    english = SamplingPanel(five, FIVE_TOKEN_VOCAB.piece, INPUT_IDS, title="five-token model")
    assert english.context_text() == "five-token model: 'aba'  ids [0, 1, 0]"
    assert english.context.value == "<pre style='font-size:13px'>five-token model: &#x27;aba&#x27;  ids [0, 1, 0]</pre>"
    set_language("zh")
    try:
        chinese = SamplingPanel(five, FIVE_TOKEN_VOCAB.piece, INPUT_IDS, title="五词元模型")
        assert chinese.context_text() == "五词元模型：'aba'  词元 id [0, 1, 0]"
        assert "ids" not in chinese.context.value
    finally:
        set_language("en")


def strip_parts(page: str):
    """(name shown, interval width in px) per interval of the strip, and the u line's top in px."""
    import re
    names = [(re.search(r"<span class='sampling-strip-label'>(.*?)</span>", seg).group(1),
              float(re.search(r"width:([\d.]+)%", seg).group(1)) / 100 * 560)
             for seg in re.findall(r"<div title='.*?</div>", page)]
    u_top = float(re.search(r"class='sampling-strip-u' style='[^']*top:(\d+)px", page).group(1))
    return names, u_top


def test_the_strip_names_only_intervals_its_whole_name_fits_and_the_u_line_stays_below_the_names():
    """Notebook 07's lab panel (T = 0.7, top-p 0.9, u = 0.8, ranked): ␣floor, ␣cat and ␣dog are
    too narrow for their names (they were cut to "␣floo", "␣ca", "␣do"): named by tooltip only;
    the u line, inside ␣sofa's interval, runs below the names' 18 px line."""
    import html as html_module

    from course_lib.toys.lab import LAB, LAB_PROMPT_IDS
    model = LAB.load()
    with torch.no_grad():
        logits = model(torch.tensor([LAB_PROMPT_IDS]))[0, -1]
    view = panel_view(logits, PanelSettings(temperature=0.7, top_p=0.9, u=0.8, order="ranked"))
    names, u_top = strip_parts(render_html(view, LAB_VOCAB.piece))
    shown = [html_module.unescape(name) for name, _ in names if name]
    assert shown == ["␣roof", "␣wall", "␣sofa"], names
    for name, width in names:
        if name:
            assert len(html_module.unescape(name)) * 7.2 + 2 <= width, (name, width)
    assert u_top >= 18
