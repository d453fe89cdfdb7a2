//! SVG line charts (plotters, SVG backend only — text is emitted as `<text>`, no fonts needed).
//!
//! Colour encodes the arm, solid/dashed encodes seed parity. plotters has no dashed strokes for
//! polylines, so each series is drawn as one solid `<polyline>` whose opacity carries a sentinel
//! value that is rewritten into an SVG `stroke-dasharray` after rendering. This keeps exactly one
//! `<polyline>` per series and gives real dashes in any SVG viewer.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::load::{RunData, StepRow};
use super::ReportError;

/// Window (in steps) of the trailing moving average applied to reward and ZRF.
pub const SMOOTH_WINDOW: usize = 5;

const SIZE: (u32, u32) = (960, 560);
const MARKER_COLOR: RGBColor = RGBColor(120, 120, 120);
const OTHER_PALETTE: [(u8, u8, u8); 6] =
    [(23, 190, 207), (214, 39, 40), (140, 86, 75), (227, 119, 194), (188, 189, 34), (0, 90, 90)];

/// Stroke pattern of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stroke {
    Solid,
    Dashed,
    Dotted,
    DashDot,
}

impl Stroke {
    const PATTERNED: [Stroke; 3] = [Stroke::Dashed, Stroke::Dotted, Stroke::DashDot];

    /// Opacity written by plotters for this pattern; rewritten by [`apply_dashes`].
    fn sentinel(self) -> f64 {
        match self {
            Stroke::Solid => 1.0,
            Stroke::Dashed => 0.9991,
            Stroke::Dotted => 0.9992,
            Stroke::DashDot => 0.9993,
        }
    }

    fn dasharray(self) -> &'static str {
        match self {
            Stroke::Solid => "none",
            Stroke::Dashed => "8 5",
            Stroke::Dotted => "2 4",
            Stroke::DashDot => "8 4 2 4",
        }
    }
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub label: String,
    pub color: RGBColor,
    pub dash: Stroke,
    pub width: u32,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    fn style(&self) -> ShapeStyle {
        ShapeStyle { color: self.color.mix(self.dash.sentinel()), filled: false, stroke_width: self.width }
    }
}

/// A chart to render into one SVG file.
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    pub file_name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// x positions of vertical `jump_step` markers.
    pub markers: Vec<u64>,
    /// y range that is always shown (data may extend it).
    pub y_base: (f64, f64),
    pub legend: SeriesLabelPosition,
}

/// Colour of an arm as RGB: vanilla grey, static_hints orange, mentor blue, dapo green,
/// refinement purple; other arms get a stable colour from a fixed palette.
pub fn arm_color(arm: &str) -> (u8, u8, u8) {
    match arm {
        "vanilla" => (64, 64, 64),
        "static_hints" => (255, 127, 14),
        "mentor" => (31, 119, 180),
        "dapo" => (44, 160, 44),
        "refinement" => (148, 103, 189),
        other => {
            // FNV-1a: stable across runs and platforms.
            let hash = other
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
            OTHER_PALETTE[(hash % OTHER_PALETTE.len() as u64) as usize]
        }
    }
}

fn run_color(run: &RunData) -> RGBColor {
    let (r, g, b) = arm_color(&run.arm);
    RGBColor(r, g, b)
}

fn seed_dash(seed: u64) -> Stroke {
    if seed.is_multiple_of(2) {
        Stroke::Solid
    } else {
        Stroke::Dashed
    }
}

/// Removes control characters, which are not allowed in XML text.
fn clean_label(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// Trailing moving average over the last `window` points; non-finite values are skipped and
/// points whose window holds no finite value are dropped.
pub(crate) fn smooth(points: &[(f64, f64)], window: usize) -> Vec<(f64, f64)> {
    let window = window.max(1);
    (0..points.len())
        .filter_map(|i| {
            let slice = &points[(i + 1).saturating_sub(window)..=i];
            let finite: Vec<f64> = slice.iter().map(|p| p.1).filter(|y| y.is_finite()).collect();
            let x = points[i].0;
            (x.is_finite() && !finite.is_empty())
                .then(|| (x, finite.iter().sum::<f64>() / finite.len() as f64))
        })
        .collect()
}

fn finite_points(points: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    points.filter(|(x, y)| x.is_finite() && y.is_finite()).collect()
}

fn markers(runs: &[&RunData]) -> Vec<u64> {
    let mut m: Vec<u64> = runs.iter().filter_map(|r| r.jump_step).collect();
    m.sort_unstable();
    m.dedup();
    m
}

/// All charts of a report, in link order: reward, ZRF, interventions, then one per eval level.
pub(crate) fn all_charts(runs: &[&RunData]) -> Vec<Chart> {
    let mut charts = vec![
        training_chart(runs, "reward.svg", "Mean unhinted training reward", "mean reward", |s| s.reward),
        training_chart(runs, "zrf.svg", "Zero-reward fraction (ZRF)", "ZRF", |s| s.zrf),
        interventions_chart(runs),
    ];
    let mut levels: Vec<u32> = runs.iter().flat_map(|r| r.evals.iter().map(|e| e.level)).collect();
    levels.sort_unstable();
    levels.dedup();
    charts.extend(levels.into_iter().map(|level| eval_chart(runs, level)));
    charts
}

fn training_chart(runs: &[&RunData], file: &str, title: &str, y: &str, f: fn(&StepRow) -> f64) -> Chart {
    let series = runs
        .iter()
        .map(|r| {
            let raw: Vec<(f64, f64)> = r.steps.iter().map(|s| (s.step as f64, f(s))).collect();
            Series {
                label: clean_label(&r.name),
                color: run_color(r),
                dash: seed_dash(r.seed),
                width: 2,
                points: smooth(&raw, SMOOTH_WINDOW),
            }
        })
        .collect();
    Chart {
        file_name: file.to_string(),
        title: format!("{title} (trailing {SMOOTH_WINDOW}-step moving average)"),
        x_label: "training step".to_string(),
        y_label: format!("{y} (MA {SMOOTH_WINDOW})"),
        series,
        markers: markers(runs),
        y_base: (0.0, 1.0),
        legend: SeriesLabelPosition::UpperRight,
    }
}

fn interventions_chart(runs: &[&RunData]) -> Chart {
    let mut series = Vec::new();
    for r in runs {
        let pts = |f: fn(&StepRow) -> u64| r.steps.iter().map(|s| (s.step as f64, f(s) as f64)).collect();
        let rescue_dash = if r.seed.is_multiple_of(2) { Stroke::Dotted } else { Stroke::DashDot };
        let name = clean_label(&r.name);
        series.push(Series {
            label: format!("{name} interventions"),
            color: run_color(r),
            dash: seed_dash(r.seed),
            width: 2,
            points: pts(|s| s.intervened),
        });
        series.push(Series {
            label: format!("{name} rescues"),
            color: run_color(r),
            dash: rescue_dash,
            width: 1,
            points: pts(|s| s.rescued),
        });
    }
    Chart {
        file_name: "interventions.svg".to_string(),
        title: "Mentor interventions and rescues per step".to_string(),
        x_label: "training step".to_string(),
        y_label: "groups per step".to_string(),
        series,
        markers: markers(runs),
        y_base: (0.0, 1.0),
        legend: SeriesLabelPosition::UpperLeft,
    }
}

fn eval_chart(runs: &[&RunData], level: u32) -> Chart {
    let series = runs
        .iter()
        .filter(|r| r.evals.iter().any(|e| e.level == level))
        .map(|r| {
            let mut rows: Vec<(f64, f64)> =
                finite_points(r.evals.iter().filter(|e| e.level == level).map(|e| (e.step as f64, e.pass1)));
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: clean_label(&r.name),
                color: run_color(r),
                dash: seed_dash(r.seed),
                width: 2,
                points: rows,
            }
        })
        .collect();
    Chart {
        file_name: format!("eval_level_{level}.svg"),
        title: format!("Unhinted greedy pass@1, level {level}"),
        x_label: "training step".to_string(),
        y_label: "pass@1 (unhinted, greedy)".to_string(),
        series,
        markers: markers(runs),
        y_base: (0.0, 1.0),
        legend: SeriesLabelPosition::UpperLeft,
    }
}

/// Largest magnitude drawn; plotters overflows its integer pixel maths on far larger values.
const MAX_ABS: f64 = 1e12;

fn plottable(p: &(f64, f64)) -> bool {
    p.0.is_finite() && p.1.is_finite() && p.0.abs() <= MAX_ABS && p.1.abs() <= MAX_ABS
}

fn plottable_points(s: &Series) -> impl Iterator<Item = (f64, f64)> + '_ {
    s.points.iter().copied().filter(plottable)
}

fn plottable_markers(chart: &Chart) -> impl Iterator<Item = f64> + '_ {
    chart.markers.iter().map(|m| *m as f64).filter(|x| *x <= MAX_ABS)
}

fn x_range(chart: &Chart) -> (f64, f64) {
    let xs = chart.series.iter().flat_map(|s| plottable_points(s).map(|p| p.0));
    let max = xs.chain(plottable_markers(chart)).fold(1.0_f64, f64::max);
    (0.0, max)
}

fn y_range(chart: &Chart) -> (f64, f64) {
    let ys: Vec<f64> = chart.series.iter().flat_map(|s| plottable_points(s).map(|p| p.1)).collect();
    let lo = ys.iter().copied().fold(chart.y_base.0, f64::min);
    let hi = ys.iter().copied().fold(chart.y_base.1, f64::max);
    let pad = ((hi - lo) * 0.05).max(1e-6);
    (lo, hi + pad)
}

fn plot_err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Plot(e.to_string())
}

/// Renders a chart to an SVG document.
pub(crate) fn render_svg(chart: &Chart) -> Result<String, ReportError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(chart, &root)?;
        root.present().map_err(plot_err)?;
    }
    Ok(apply_dashes(&svg))
}

fn draw<DB: DrawingBackend>(chart: &Chart, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(plot_err)?;
    let (x0, x1) = x_range(chart);
    let (y0, y1) = y_range(chart);
    let mut ctx = ChartBuilder::on(root)
        .caption(clean_label(&chart.title), ("sans-serif", 24))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(plot_err)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .light_line_style(RGBColor(236, 236, 236))
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.2}"))
        .draw()
        .map_err(plot_err)?;
    let marker_style =
        ShapeStyle { color: MARKER_COLOR.mix(Stroke::Dashed.sentinel()), filled: false, stroke_width: 1 };
    for x in plottable_markers(chart) {
        ctx.draw_series(std::iter::once(PathElement::new(vec![(x, y0), (x, y1)], marker_style)))
            .map_err(plot_err)?;
        let font = ("sans-serif", 16).into_font().color(&MARKER_COLOR);
        ctx.draw_series(std::iter::once(Text::new(format!(" jump @ {x:.0}"), (x, y1), font)))
            .map_err(plot_err)?;
    }
    let drawn = draw_series(&mut ctx, &chart.series)?;
    if drawn == 0 {
        let font = ("sans-serif", 22).into_font().color(&MARKER_COLOR);
        let at = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
        ctx.draw_series(std::iter::once(Text::new("no data", at, font))).map_err(plot_err)?;
        return Ok(());
    }
    ctx.configure_series_labels()
        .position(chart.legend.clone())
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(plot_err)
}

type Ctx<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Draws the non-empty series with legend entries; returns how many were drawn.
fn draw_series<DB: DrawingBackend>(ctx: &mut Ctx<'_, DB>, series: &[Series]) -> Result<usize, ReportError>
where
    DB::ErrorType: 'static,
{
    let mut drawn = 0;
    for s in series.iter().filter(|s| plottable_points(s).next().is_some()) {
        let style = s.style();
        ctx.draw_series(LineSeries::new(plottable_points(s), style))
            .map_err(plot_err)?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 28, y)], style));
        drawn += 1;
    }
    Ok(drawn)
}

/// Rewrites sentinel opacities into `stroke-dasharray` attributes.
fn apply_dashes(svg: &str) -> String {
    Stroke::PATTERNED.iter().fold(svg.to_string(), |acc, d| {
        acc.replace(
            &format!("opacity=\"{}\"", d.sentinel()),
            &format!("opacity=\"1\" stroke-dasharray=\"{}\"", d.dasharray()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::load::EvalRow;
    use std::path::PathBuf;

    fn step(step: u64, reward: f64, intervened: u64, rescued: u64) -> StepRow {
        StepRow {
            step,
            level: Some(4),
            reward,
            zrf: 1.0 - reward,
            groups: 8,
            collapsed: intervened,
            intervened,
            rescued,
            extra_rollouts: 0,
            guard_rejections: 0,
            loss: 0.0,
            grad_norm: 0.0,
            seconds: 1.0,
            levels_used: Default::default(),
        }
    }

    fn run(name: &str, arm: &str, seed: u64, n: u64) -> RunData {
        RunData {
            dir: PathBuf::new(),
            name: name.into(),
            arm: arm.into(),
            seed,
            preset: None,
            jump_step: Some(3),
            hard_level: Some(4),
            steps: (0..n).map(|i| step(i, i as f64 / 10.0, i % 3, i % 2)).collect(),
            evals: vec![
                EvalRow { step: 0, level: 4, n: 10, pass1: 0.0, k: Some(4), passk: 0.1 },
                EvalRow { step: 5, level: 4, n: 10, pass1: f64::NAN, k: Some(4), passk: 0.1 },
                EvalRow { step: 9, level: 4, n: 10, pass1: 0.3, k: Some(4), passk: 0.5 },
            ],
        }
    }

    /// Polylines with at least 3 points: data lines (legend samples and markers have 2 points).
    fn data_polylines(svg: &str) -> Vec<(String, Option<String>)> {
        let doc = roxmltree::Document::parse(svg).expect("SVG must be well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        doc.descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .filter(|n| n.attribute("points").unwrap_or("").split_whitespace().count() >= 3)
            .map(|n| {
                let stroke = n.attribute("stroke").unwrap_or("").to_string();
                (stroke, n.attribute("stroke-dasharray").map(str::to_string))
            })
            .collect()
    }

    fn sample_runs() -> Vec<RunData> {
        vec![
            run("mentor-s0 & <co>", "mentor", 0, 10),
            run("mentor-s1", "mentor", 1, 10),
            run("vanilla-s0", "vanilla", 0, 10),
            run("empty", "dapo", 2, 0),
        ]
    }

    #[test]
    fn reward_svg_has_one_line_per_run_with_arm_colours_and_dashes() {
        let runs = sample_runs();
        let refs: Vec<&RunData> = runs.iter().collect();
        let charts = all_charts(&refs);
        let svg = render_svg(&charts[0]).unwrap();
        let lines = data_polylines(&svg);
        // The run with zero steps draws nothing; the other three draw exactly one line each.
        assert_eq!(lines.len(), 3, "{lines:?}");
        let mentor = "#1F77B4".to_string();
        assert!(lines.contains(&(mentor.clone(), None)));
        assert!(lines.contains(&(mentor, Some("8 5".to_string()))));
        assert!(lines.contains(&("#404040".to_string(), None)));
        assert!(svg.contains("<text"), "axis/legend text must be emitted as <text>");
        assert!(svg.contains("mentor-s0 &amp; &lt;co&gt;"));
        assert!(svg.contains("moving average"));
        assert!(svg.contains("jump @ 3"));
        assert!(!svg.contains("0.999"), "all sentinels must be rewritten");
    }

    #[test]
    fn interventions_svg_has_two_styles_per_run() {
        let runs = sample_runs();
        let refs: Vec<&RunData> = runs.iter().collect();
        let chart = all_charts(&refs).into_iter().find(|c| c.file_name == "interventions.svg").unwrap();
        let lines = data_polylines(&render_svg(&chart).unwrap());
        assert_eq!(lines.len(), 6);
        let dotted = lines.iter().filter(|l| l.1.as_deref() == Some("2 4")).count();
        let dash_dot = lines.iter().filter(|l| l.1.as_deref() == Some("8 4 2 4")).count();
        assert_eq!((dotted, dash_dot), (2, 1));
    }

    #[test]
    fn eval_chart_skips_nan_points_and_runs_without_level() {
        let mut runs = sample_runs();
        runs[3].evals.clear();
        let refs: Vec<&RunData> = runs.iter().collect();
        let charts = all_charts(&refs);
        assert_eq!(
            charts.iter().map(|c| c.file_name.as_str()).collect::<Vec<_>>().last(),
            Some(&"eval_level_4.svg")
        );
        let chart = &charts[3];
        assert_eq!(chart.series.len(), 3);
        assert_eq!(chart.series[0].points, vec![(0.0, 0.0), (9.0, 0.3)]);
        let doc = render_svg(chart).unwrap();
        assert!(roxmltree::Document::parse(&doc).is_ok());
    }

    #[test]
    fn all_empty_chart_still_renders_valid_svg() {
        let runs = [run("e", "mentor", 0, 0)];
        let refs: Vec<&RunData> = runs.iter().collect();
        let svg = render_svg(&all_charts(&refs)[0]).unwrap();
        assert!(data_polylines(&svg).is_empty());
        assert!(svg.contains("no data"));
    }

    #[test]
    fn extreme_values_are_skipped_without_panicking() {
        let mut r = run("huge", "mentor", 0, 0);
        r.steps = vec![step(0, 1e308, 0, 0), step(1, -1e308, 0, 0), step(2, 1e308, 0, 0)];
        r.steps.iter_mut().for_each(|s| s.zrf = f64::NAN);
        let refs = [&r];
        let mut chart = all_charts(&refs).remove(0);
        chart.series[0].points = vec![(0.0, 1e308), (1.0, -1e308), (2.0, 0.5), (3.0, 0.25), (4.0, 0.5)];
        chart.markers.push(u64::MAX);
        assert_eq!(y_range(&chart), (0.0, 1.05), "unplottable values must not stretch the axis");
        assert_eq!(x_range(&chart), (0.0, 4.0));
        let svg = render_svg(&chart).unwrap();
        assert_eq!(data_polylines(&svg).len(), 1);
    }

    #[test]
    fn trailing_moving_average() {
        let pts: Vec<(f64, f64)> = [1.0, 2.0, f64::NAN, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .enumerate()
            .map(|(i, y)| (i as f64, *y))
            .collect();
        let s = smooth(&pts, 5);
        let ys: Vec<f64> = s.iter().map(|p| p.1).collect();
        // window ends at i: [1]→1, [1,2]→1.5, [1,2,NaN]→1.5, [1,2,NaN,3]→2, [1,2,NaN,3,4]→2.5,
        // [2,NaN,3,4,5]→3.5, [NaN,3,4,5,6]→4.5
        assert_eq!(ys, vec![1.0, 1.5, 1.5, 2.0, 2.5, 3.5, 4.5]);
        assert!(smooth(&[(0.0, f64::NAN)], 5).is_empty());
    }

    #[test]
    fn palette_is_fixed_and_stable() {
        assert_eq!(arm_color("mentor"), (31, 119, 180));
        assert_eq!(arm_color("static_hints"), (255, 127, 14));
        assert_eq!(arm_color("my-arm"), arm_color("my-arm"));
        assert!(OTHER_PALETTE.contains(&arm_color("my-arm")));
    }
}
