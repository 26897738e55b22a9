"""The charts in Chromium, at desktop and phone size: readable ticks, log scale, zoom and reset,
hover values, a legend that hides series, the x-axis choice without counters among the
metrics, the profiler's charts, the hyperparameter views (parallel coordinates, heat map) and
the trial comparison, the experiment page's sections, constant hyperparameters left out of the
views, brushing the parallel coordinates, and the comparison across experiments. Every page:
no console or page errors, no horizontal overflow outside scroll containers, and a screenshot
in test-output/web/."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from seed_charts import HPARAMS, OTHER_HPARAMS, OWNER, PROFILING_NAMES, seed_search
from sqlalchemy.orm import Session

SIZES = ["desktop", "phone"]


class Tab:
    """A page signed in as the seeded owner that records console errors and exceptions."""

    def __init__(self, context: Any, url: str) -> None:
        context.add_cookies([{"name": "hpcdet_user", "value": OWNER, "url": url}])
        self.page = context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda msg: self.errors.append(f"console: {msg.text}")
                     if msg.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(f"exception: {exc}"))

    def check_layout(self) -> None:
        """No errors and no horizontal overflow of the document."""
        assert self.errors == []
        overflow = self.page.evaluate(
            "document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is {overflow}px wider than the window"

    def number(self, selector: str, attribute: str) -> int:
        return int(self.page.locator(selector).first.get_attribute(attribute) or "-1")

    def ticks(self, selector: str) -> list[str]:
        return list(self.page.locator(f"{selector} svg text.tick").all_text_contents())

    def drag(self, selector: str, start: float, end: float) -> None:
        """Drag across the plot of the chart in ``selector`` from/to a share of its width."""
        hit = self.page.locator(f"{selector} svg rect.hit")
        hit.scroll_into_view_if_needed()
        box = hit.bounding_box()
        assert box
        y = box["y"] + box["height"] / 2
        self.page.mouse.move(box["x"] + box["width"] * start, y)
        self.page.mouse.down()
        self.page.mouse.move(box["x"] + box["width"] * (start + end) / 2, y, steps=4)
        self.page.mouse.move(box["x"] + box["width"] * end, y, steps=4)
        self.page.mouse.up()


def brush_axis(page: Any, axis: str, start: float, end: float) -> int:
    """Drag along a parallel-coordinates axis from/to a share of its height; the number of
    trials then in the picked ranges. The page redraws the chart on its polls: a redraw
    between finding the axis and pressing the button replaces it, so that is tried again
    (a drag under way holds the redraw off: hparam_views.js)."""
    for _ in range(5):
        hit = page.locator(f'#parallel-chart rect.brush-hit[data-brush-axis="{axis}"]')
        try:
            hit.scroll_into_view_if_needed()
            box = hit.bounding_box()
        except PlaywrightError:
            continue
        if not box:
            continue
        x = box["x"] + box["width"] / 2
        page.mouse.move(x, box["y"] + box["height"] * start)
        page.mouse.down()
        page.mouse.move(x, box["y"] + box["height"] * end, steps=4)
        page.mouse.up()
        brushed = page.locator("[data-brush-count]").first.get_attribute("data-brushed")
        if brushed and brushed != "0":
            return int(brushed)
    return 0


def open_tab(request: pytest.FixtureRequest, size: str, url: str) -> Tab:
    return Tab(request.getfixturevalue(size), url)


@pytest.mark.parametrize("size", SIZES)
def test_trial_page_charts_read_well_and_respond(request: pytest.FixtureRequest, size: str,
                                                 web_master: Any,
                                                 web_db: Callable[[], Session],
                                                 shots: Path) -> None:
    seeded = seed_search(web_db)
    tab = open_tab(request, size, web_master.url)
    page = tab.page
    page.goto(f"{web_master.url}/trials/{seeded.long_trial_id}")
    chart = "#training-chart"
    page.wait_for_selector(f"{chart} svg.chart")
    # Counters are x axes, never metrics.
    options = page.locator("#training-metric option").all_inner_texts()
    assert options == ["loss"]
    axes = page.locator(f"{chart} select[data-chart-x] option").all_inner_texts()
    assert axes == ["batches (steps completed)", "epochs", "records", "time"]
    # Ticks are readable: at least 10 CSS px tall whatever the screen.
    heights = page.eval_on_selector_all(f"{chart} svg text.tick",
                                        "nodes => nodes.map(n => n.getBoundingClientRect().height)")
    assert heights and min(heights) >= 10, heights
    # The range covers the data from 0 and the server sent at most max_points of 3,000 steps.
    assert "0" in tab.ticks(chart)
    assert 100 < tab.number(f"{chart} svg", "data-points") <= 500
    # Log scale changes the y axis.
    linear = tab.ticks(chart)
    page.locator(f"{chart} input[data-chart-log]").check()
    assert tab.ticks(chart) != linear
    assert "(log)" in page.locator(f"{chart} svg text.label").all_text_contents()[-1]
    page.locator(f"{chart} input[data-chart-log]").uncheck()
    # Zoom into a range, then reset it by double-clicking.
    before = tab.ticks(chart)
    tab.drag(chart, 0.6, 0.8)
    page.wait_for_selector(f"{chart} button[data-chart-reset]:visible")
    zoomed = tab.ticks(chart)
    assert zoomed != before
    page.locator(f"{chart} svg rect.hit").dblclick()
    assert tab.ticks(chart) == before
    assert page.locator(f"{chart} button[data-chart-reset]").is_hidden()
    # Hover shows the nearest point's values in a box, not a title.
    page.locator(f"{chart} svg rect.hit").scroll_into_view_if_needed()
    box = page.locator(f"{chart} svg rect.hit").bounding_box()
    assert box
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    tip = page.locator(f"{chart} .chart-tip")
    assert tip.is_visible() and "loss:" in tip.inner_text() and "batches" in tip.inner_text()
    assert page.locator(f"{chart} svg title").count() == 0
    # Smoothing adds the faint raw line under the smoothed one; another x axis relabels it.
    page.locator(f"{chart} input[data-chart-smoothing]").fill("0.9")
    assert page.locator(f"{chart} svg path.raw").count() == 1
    page.locator(f"{chart} select[data-chart-x]").select_option("epochs")
    assert "epochs" in page.locator(f"{chart} svg text.label").all_text_contents()[0]
    # Throughput from the training series' batches and times (the seed: 2 batches/s).
    assert tab.number("#throughput-chart svg", "data-points") > 100
    assert "2" in tab.ticks("#throughput-chart")
    # The profiler: a chart per family, a series per name (two ranks' timings).
    page.wait_for_selector('[data-profiler-chart="timings"] svg.chart')
    assert page.locator("[data-profiler-chart] svg.chart").count() == 4  # cpu, mem, gpu, timings
    assert tab.number('[data-profiler-chart="timings"] svg', "data-series") == sum(
        name.startswith("timing.") for name in PROFILING_NAMES)
    page.mouse.move(0, 0)
    tab.check_layout()
    page.screenshot(path=str(shots / f"trial-charts-{size}.png"), full_page=True)


@pytest.mark.parametrize("size", SIZES)
def test_experiment_page_hparam_views_and_comparison(request: pytest.FixtureRequest, size: str,
                                                     web_master: Any,
                                                     web_db: Callable[[], Session],
                                                     shots: Path) -> None:
    seeded = seed_search(web_db)
    other = seed_search(web_db, OTHER_HPARAMS, training=False)
    tab = open_tab(request, size, web_master.url)
    page = tab.page
    page.goto(f"{web_master.url}/experiments/{seeded.experiment_id}")
    page.wait_for_selector("#parallel-chart svg")
    # Sections with a nav to each; the validation chart first, above the fold on a laptop.
    targets = page.eval_on_selector_all(
        "nav[data-section-nav] a", "links => links.map(a => !!document.querySelector("
        "a.getAttribute('href')))")
    assert len(targets) == 8 and all(targets)
    if size == "desktop":
        chart_box = page.locator("#validation-chart svg.chart").bounding_box()
        assert chart_box and chart_box["y"] + chart_box["height"] / 2 < 900
    # The constant batch size: listed once, in no view.
    assert page.locator('[data-constant="batch_size"]').inner_text() == "batch_size=64"
    assert "batch_size" not in (page.locator("#parallel-chart svg").get_attribute(
        "aria-label") or "batch_size")
    assert "batch_size" not in page.locator("#heatmap-y option").all_inner_texts()
    assert page.locator('.hparam-chart[data-hparam="batch_size"]').count() == 0
    # Brushing: a drag along the lr axis keeps some rows; "Clear" brings all back.
    rows = page.locator("#trials tr[data-trial-id]:visible")
    assert rows.count() == len(HPARAMS)
    brushed = brush_axis(page, "lr", 0.1, 0.6)
    assert 0 < brushed < len(HPARAMS) and rows.count() == brushed
    # The table says so above it, with its own Clear.
    assert page.locator("[data-brush-note]").is_visible()
    page.locator("[data-brush-note] [data-brush-clear]").click()
    assert rows.count() == len(HPARAMS)
    # The keyboard's way: a minimum typed for hidden keeps the trials of 128, 200 and 256.
    page.locator("details.brush-ranges summary").click()
    page.locator('input[data-brush-min="hidden"]').fill("100")
    page.locator('input[data-brush-min="hidden"]').press("Enter")
    page.wait_for_function("document.querySelectorAll('#trials tr[data-trial-id]:not([hidden])')"
                           ".length === 3")
    page.locator(".brush-bar:not([data-brush-note]) [data-brush-clear]").click()
    assert rows.count() == len(HPARAMS) and page.locator("[data-brush-note]").is_hidden()
    trials = len(HPARAMS)
    # One line per trial across the hyperparameters and the metric; one dot per trial.
    assert tab.number("#parallel-chart svg", "data-lines") == trials
    assert page.locator("#parallel-chart path.trial-line").count() == trials
    assert tab.number("#heatmap-chart svg", "data-points") == trials
    assert tab.number("#heatmap-chart svg", "data-cells") >= 3
    page.locator("#heatmap-x").select_option("optimizer")  # a categorical axis
    assert tab.number("#heatmap-chart svg", "data-points") == trials
    assert "sgd" in tab.ticks("#heatmap-chart")
    # The validation chart: a series per trial; the legend hides one.
    validation = "#validation-chart"
    assert tab.number(f"{validation} svg", "data-series") == trials
    page.locator(f'{validation} button[data-legend="trial {seeded.trial_ids[1]}"]').click()
    assert tab.number(f"{validation} svg", "data-series") == trials - 1
    assert page.locator(f'{validation} g.series[data-series="trial {seeded.trial_ids[1]}"]'
                        ).count() == 0
    # The comparison: the three best picked at first, a fourth added: one series each.
    page.wait_for_selector("#compare-chart svg.chart")
    assert tab.number("#compare-chart svg", "data-series") == 3
    page.locator(f'input[data-compare-trial="{seeded.trial_ids[5]}"]').check()
    page.wait_for_function("document.querySelector('#compare-chart svg')"
                           ".getAttribute('data-series') === '4'")
    names = page.locator("#compare-chart ul.legend button").all_inner_texts()
    assert f"trial {seeded.trial_ids[5]}" in names and len(names) == 4
    # Training loss of the picked trials: only the long trial reported it.
    page.locator("#compare-group").select_option("training")
    page.wait_for_function("document.querySelector('#compare-metric').value === 'loss'")
    assert page.locator("#compare-metric option").all_inner_texts() == ["loss"]
    page.wait_for_function("document.querySelector('#compare-chart svg')"
                           ".getAttribute('data-series') === '1'")
    tab.check_layout()
    page.screenshot(path=str(shots / f"experiment-charts-{size}.png"), full_page=True)
    # Across experiments: the picked four on their own page, then a trial of the other
    # search added by id; one series each, the differing hyperparameters first.
    page.locator("[data-compare-across]").click()
    page.wait_for_selector("#compare-page-chart svg.chart")
    assert tab.number("#compare-page-chart svg", "data-series") == 4
    ids = page.locator("input[data-compare-ids]")
    ids.fill(f"{seeded.trial_ids[0]},{other.trial_ids[1]}")
    ids.press("Enter")
    page.wait_for_function("document.querySelector('#compare-page-chart svg.chart') &&"
                           " document.querySelector('#compare-page-chart svg')"
                           ".getAttribute('data-series') === '2'")
    legend = page.locator("#compare-page-chart ul.legend button").all_inner_texts()
    assert legend == [f"trial {seeded.trial_ids[0]} (exp {seeded.experiment_id})",
                      f"trial {other.trial_ids[1]} (exp {other.experiment_id})"]
    differing = page.locator("tr[data-differs]").evaluate_all(
        "rows => rows.map(r => r.dataset.hparam)")
    assert differing == ["dropout", "hidden", "lr", "optimizer"]
    assert page.locator("table[data-compare-hparams] tbody tr").last.get_attribute(
        "data-hparam") == "batch_size"
    tab.check_layout()
    page.screenshot(path=str(shots / f"compare-across-{size}.png"), full_page=True)
    # From the experiments list: two experiments picked, their best trials compared.
    page.goto(f"{web_master.url}/")
    for exp_id in (seeded.experiment_id, other.experiment_id):
        page.locator(f'input[data-pick="{exp_id}"]').check()
    page.locator("a[data-compare-selected]").click()
    page.wait_for_function("document.querySelector('#compare-page-chart svg.chart') &&"
                           " document.querySelector('#compare-page-chart svg')"
                           ".getAttribute('data-series') === '2'")
    assert page.locator("tr[data-trial-id]").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.trialId))") == [seeded.trial_ids[0],
                                                                other.trial_ids[0]]
