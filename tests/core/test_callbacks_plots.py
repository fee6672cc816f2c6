"""curves.png reads: metrics only, grouped by scale, the main indicator emphasised (CurvesPlot's helpers)."""

from __future__ import annotations

import math

from oarkit.core.engine.callbacks import curve_panels, curves_figure, plot_curves


def clas_history(epochs: int = 6) -> list[dict]:
    """Rows as the Trainer writes them for the clas kit: top-k in percent, a sample count and per-class lists."""
    rows = []
    for e in range(1, epochs + 1):
        top1 = 100 * (1 - math.exp(-e / 2)) - (10.0 if e == epochs else 0.0)  # the last epoch dips
        rows.append({"epoch": e, "iter": 45 * e, "train_loss": 2.0 / e, "train_ce": 1.8 / e, "lr": 0.05 / e,
                     "val_top1": top1, "val_top5": min(100.0, top1 + 8), "val_per_class_acc": [top1, None, 50.0],
                     "val_mean_class_acc": top1 - 1, "val_num_samples": 360, "epoch_time_s": 2.5})
    return rows


def test_counts_lists_and_bookkeeping_are_not_curves():
    panels = curve_panels(clas_history(), "top1")
    assert [(p.title, p.keys) for p in panels] == [
        ("loss", ["train_loss", "train_ce"]),
        ("metrics in [0, 100]", ["val_top1", "val_top5", "val_mean_class_acc"]),
    ]


def test_the_metric_panel_is_not_scaled_by_the_sample_count():
    history = clas_history()
    fig = curves_figure(history, "top1")
    loss_ax, metric_ax = fig.axes
    low, high = metric_ax.get_ylim()
    assert 90 < high <= 105 and low > 0  # 360 samples would have pushed the top to 360+
    plotted = {line.get_label(): line for line in metric_ax.get_lines()}
    assert "num_samples" not in " ".join(plotted) and "per_class_acc" not in " ".join(plotted)
    main = plotted["top1 (main)"]
    assert main.get_linewidth() > 2 * plotted["top5"].get_linewidth()
    best_top1 = max(r["val_top1"] for r in history)
    best = next(line for label, line in plotted.items() if label.startswith("best"))
    assert best.get_marker() == "*" and list(best.get_xdata()) == [5.0] and list(best.get_ydata()) == [best_top1]
    assert fig._suptitle.get_text().startswith(f"main indicator: top1 — best {best_top1:.4g} at epoch 5")
    assert loss_ax.get_ylim()[1] < 3


def test_metrics_are_grouped_by_scale():
    """Fractions (mIoU, a kappa below zero) apart from percentages; an unbounded metric alone; val loss with the
    losses; the main indicator's panel right after the losses; integer metrics kept unless they are counts."""
    history = [{"epoch": e, "train_loss": 1.0 / e, "val_loss": 1.2 / e, "val_miou": 0.1 * e, "val_kappa": 0.2 * e - 0.3,
                "val_accuracy": 40.0 + 10 * e, "val_hits": 10 * e, "val_perplexity": 900.0 / e,
                "val_num_pixels": 65_536, "val_boxes_count": 17}
               for e in range(1, 5)]
    panels = {p.title: p.keys for p in curve_panels(history, "miou")}
    assert panels == {"loss": ["train_loss", "val_loss"], "metrics in [0, 1]": ["val_miou", "val_kappa"],
                      "metrics in [0, 100]": ["val_accuracy", "val_hits"], "perplexity": ["val_perplexity"]}
    assert [p.title for p in curve_panels(history, "perplexity")][:2] == ["loss", "perplexity"]
    fig = curves_figure(history, "miou")
    assert len(fig.axes) == 4 and fig.axes[1].get_ylim()[1] <= 1.1


def test_lower_is_better_marks_the_minimum_and_sparse_evaluations_plot_where_they_exist():
    history = [{"epoch": e, "train_loss": 1.0 / e, **({"val_mae": abs(e - 3) + 0.5} if e % 2 else {})}
               for e in range(1, 7)]
    fig = curves_figure(history, "mae", higher_is_better=False)
    lines = {line.get_label(): line for line in fig.axes[1].get_lines()}
    assert list(lines["mae (main)"].get_xdata()) == [1.0, 3.0, 5.0]
    best = next(line for label, line in lines.items() if label.startswith("best"))
    assert list(best.get_xdata()) == [3.0] and list(best.get_ydata()) == [0.5]


def test_nothing_to_draw_writes_nothing(tmp_path):
    assert plot_curves([], tmp_path / "a.png") is None
    assert plot_curves([{"epoch": 1, "lr": 0.1, "val_num_samples": 9}], tmp_path / "b.png") is None
    assert not any(tmp_path.iterdir())
    only_losses = plot_curves([{"epoch": 1, "train_loss": 0.5}], tmp_path / "c.png", "acc")
    assert only_losses is not None and only_losses.stat().st_size > 5_000


def test_a_run_counted_in_iterations_plots_against_iterations():
    history = [{"epoch": 1 + i // 2, "iter": 4 * (i + 1), "train_loss": 1.0 / (i + 1), "val_acc": 50.0 + 5 * i,
                "interval_time_s": 0.4} for i in range(6)]
    fig = curves_figure(history, "acc")
    assert [ax.get_xlabel() for ax in fig.axes] == ["iteration", "iteration"]
    main = next(line for line in fig.axes[1].get_lines() if line.get_label() == "acc (main)")
    assert list(main.get_xdata()) == [4.0, 8.0, 12.0, 16.0, 20.0, 24.0]
    assert fig._suptitle.get_text() == "main indicator: acc — best 75 at iteration 24, last 75"
