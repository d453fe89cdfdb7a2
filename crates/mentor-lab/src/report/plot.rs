//! SVG line charts (plotters, SVG backend only — text is emitted as `<text>`, no fonts needed).
//!
//! Colour encodes the arm, solid/dashed encodes seed parity. plotters has no dashed strokes for
//! polylines, so each series is drawn as one solid `<polyline>` whose opacity carries a sentinel
//! value that is rewritten into an SVG `stroke-dasharray` after rendering. This keeps exactly one
//! `<polyline>` per series and gives real dashes in any SVG viewer.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::aggregate::{StepMetric, DYNAMICS, REWARD, ZRF};
use super::load::RunData;
use super::ReportError;
use mentor_trainer::config::Arm;
use mentor_trainer::train::StepRecord;

/// Window (in steps) of the trailing moving average applied to the per-step numbers (reward,
/// ZRF, training dynamics).
pub const SMOOTH_WINDOW: usize = 5;

const SIZE: (u32, u32) = (960, 560);
const MARKER_COLOR: RGBColor = RGBColor(120, 120, 120);
/// Colours of arms this build does not know: none of them is a known arm's (red and brown
/// went to `random_prefix` and `full_solution`).
const OTHER_PALETTE: [(u8, u8, u8); 6] =
    [(23, 190, 207), (0, 0, 0), (90, 0, 90), (227, 119, 194), (188, 189, 34), (0, 90, 90)];

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

/// Colour of a known arm, as RGB and in words (for the report's notes).
pub(crate) fn known_arm_color(arm: Arm) -> ((u8, u8, u8), &'static str) {
    match arm {
        Arm::Vanilla => ((64, 64, 64), "grey"),
        Arm::StaticHints => ((255, 127, 14), "orange"),
        Arm::RandomPrefix => ((214, 39, 40), "red"),
        Arm::FullSolution => ((140, 86, 75), "brown"),
        Arm::FullSolutionLearner => ((196, 156, 148), "light brown"),
        Arm::WrongAnswers => ((128, 128, 0), "olive"),
        Arm::WhereOnly => ((0, 128, 255), "azure"),
        Arm::Mentor => ((31, 119, 180), "blue"),
        Arm::Dapo => ((44, 160, 44), "green"),
        Arm::Refinement => ((148, 103, 189), "purple"),
        Arm::RandomStep => ((255, 105, 180), "hot pink"),
        Arm::Retry => ((160, 160, 160), "light grey"),
    }
}

/// Colour of an arm as RGB: a fixed colour for each of the arms of [`Arm`]; an arm this build
/// does not know (a run directory from elsewhere) gets a stable colour from a fixed palette.
pub fn arm_color(arm: &str) -> (u8, u8, u8) {
    match Arm::parse(arm) {
        Some(known) => known_arm_color(known).0,
        None => {
            // FNV-1a: stable across runs and platforms.
            let hash = mentor_trainer::seed::str_key(arm);
            OTHER_PALETTE[(hash % OTHER_PALETTE.len() as u64) as usize]
        }
    }
}

fn run_color(run: &RunData) -> RGBColor {
    let (r, g, b) = arm_color(&run.info.arm);
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
    let mut m: Vec<u64> = runs.iter().filter_map(|r| r.info.jump_step).map(|s| s as u64).collect();
    m.sort_unstable();
    m.dedup();
    m
}

/// All charts of a report, in link order: reward, ZRF, interventions, the training dynamics
/// ([`DYNAMICS`]) some run recorded, then one per eval level.
pub(crate) fn all_charts(runs: &[&RunData]) -> Vec<Chart> {
    let mut charts = vec![step_chart(runs, &REWARD), step_chart(runs, &ZRF), interventions_chart(runs)];
    charts.extend(
        DYNAMICS
            .iter()
            .map(|m| step_chart(runs, m))
            .filter(|c| c.series.iter().any(|s| s.points.iter().any(plottable))),
    );
    // One chart per evaluation set: a curriculum level, `data.eval`, or a named set.
    let mut sets: Vec<(u32, Option<&str>)> =
        runs.iter().flat_map(|r| r.evals.iter().map(|e| (e.level, e.set.as_deref()))).collect();
    // Levels (and `data.eval`) first, then the named sets by name.
    sets.sort_unstable_by_key(|&(level, set)| (set.is_some(), level, set));
    sets.dedup();
    charts.extend(sets.into_iter().map(|(level, set)| eval_chart(runs, level, set)));
    charts
}

/// One line per run of `metric` over the training steps, smoothed.
fn step_chart(runs: &[&RunData], metric: &StepMetric) -> Chart {
    let series = runs
        .iter()
        .map(|r| {
            let raw: Vec<(f64, f64)> =
                r.steps.iter().filter_map(|s| Some((s.step as f64, (metric.value)(s)?))).collect();
            Series {
                label: clean_label(&r.info.name),
                color: run_color(r),
                dash: seed_dash(r.info.seed),
                width: 2,
                points: smooth(&raw, SMOOTH_WINDOW),
            }
        })
        .collect();
    Chart {
        file_name: format!("{}.svg", metric.key),
        title: format!("{} (trailing {SMOOTH_WINDOW}-step moving average)", metric.title),
        x_label: "training step".to_string(),
        y_label: format!("{} (MA {SMOOTH_WINDOW})", metric.label),
        series,
        markers: markers(runs),
        y_base: metric.y_base,
        legend: SeriesLabelPosition::UpperRight,
    }
}

/// One run's line in [`curves_chart`]: its arm, its seed and its `(step, value)` points.
pub(crate) struct Curve<'a> {
    pub arm: &'a str,
    pub seed: u64,
    pub points: Vec<(f64, f64)>,
}

/// A chart of one number over the training steps, one line per (arm, seed) — smoothed as
/// the report's step charts are, coloured by arm, its stroke by seed — for an experiment's
/// pooled result files, whose run directories may be gone.
pub(crate) fn curves_chart(
    file_name: &str,
    title: &str,
    y_label: &str,
    y_base: (f64, f64),
    lines: &[Curve<'_>],
) -> Chart {
    const STROKES: [Stroke; 4] = [Stroke::Solid, Stroke::Dashed, Stroke::Dotted, Stroke::DashDot];
    let series = lines
        .iter()
        .map(|c| {
            let (r, g, b) = arm_color(c.arm);
            Series {
                label: clean_label(&format!("{}-s{}", c.arm, c.seed)),
                color: RGBColor(r, g, b),
                dash: STROKES[(c.seed % 4) as usize],
                width: 2,
                points: smooth(&c.points, SMOOTH_WINDOW),
            }
        })
        .collect();
    Chart {
        file_name: file_name.to_string(),
        title: format!("{title} (trailing {SMOOTH_WINDOW}-step moving average)"),
        x_label: "training step".to_string(),
        y_label: format!("{y_label} (MA {SMOOTH_WINDOW})"),
        series,
        markers: Vec::new(),
        y_base,
        legend: SeriesLabelPosition::UpperRight,
    }
}

fn interventions_chart(runs: &[&RunData]) -> Chart {
    let mut series = Vec::new();
    for r in runs {
        let pts =
            |f: fn(&StepRecord) -> usize| r.steps.iter().map(|s| (s.step as f64, f(s) as f64)).collect();
        let rescue_dash = if r.info.seed.is_multiple_of(2) { Stroke::Dotted } else { Stroke::DashDot };
        let name = clean_label(&r.info.name);
        series.push(Series {
            label: format!("{name} interventions"),
            color: run_color(r),
            dash: seed_dash(r.info.seed),
            width: 2,
            points: pts(|s| s.strategy.intervened),
        });
        series.push(Series {
            label: format!("{name} rescues"),
            color: run_color(r),
            dash: rescue_dash,
            width: 1,
            points: pts(|s| s.strategy.rescued),
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

fn eval_chart(runs: &[&RunData], level: u32, set: Option<&str>) -> Chart {
    let of_set = |e: &&mentor_trainer::eval::EvalRow| e.level == level && e.set.as_deref() == set;
    let series = runs
        .iter()
        .filter(|r| r.evals.iter().any(|e| of_set(&e)))
        .map(|r| {
            let mut rows: Vec<(f64, f64)> =
                finite_points(r.evals.iter().filter(of_set).map(|e| (e.step as f64, e.pass1)));
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: clean_label(&r.info.name),
                color: run_color(r),
                dash: seed_dash(r.info.seed),
                width: 2,
                points: rows,
            }
        })
        .collect();
    Chart {
        file_name: match set {
            Some(name) => format!("eval_{}.svg", file_safe(name)),
            None => format!("eval_level_{level}.svg"),
        },
        title: match set {
            Some(name) => format!("Unhinted greedy pass@1, {name}"),
            None => format!("Unhinted greedy pass@1, level {level}"),
        },
        x_label: "training step".to_string(),
        y_label: "pass@1 (unhinted, greedy)".to_string(),
        series,
        markers: markers(runs),
        y_base: (0.0, 1.0),
        legend: SeriesLabelPosition::UpperLeft,
    }
}

/// A set name as a file name: letters, digits, `-` and `_`; anything else becomes `_`.
fn file_safe(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
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
    let mut hi = ys.iter().copied().fold(chart.y_base.1, f64::max);
    if hi - lo < 1e-12 {
        hi = lo + 1.0; // a flat line (all zero clip ratios, say) on a readable axis
    }
    let pad = ((hi - lo) * 0.05).max(1e-6);
    (lo, hi + pad)
}

/// Decimals of the y-axis labels for an axis spanning `span`: two for a span of about 1,
/// more for small numbers (KL, clip ratios), none for large ones (lengths in tokens).
fn y_decimals(span: f64) -> usize {
    (2.0 - span.log10().ceil()).clamp(0.0, 8.0) as usize
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
        .y_label_formatter(&|y| format!("{y:.d$}", d = y_decimals(y1 - y0)))
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
    use crate::report::fixtures::{eval, mentor, step, vanilla};

    fn run(name: &str, arm: &str, seed: u64, n: usize) -> RunData {
        let mut r = crate::report::fixtures::run(
            arm,
            seed,
            Some(3),
            (0..n).map(|i| step(i, i as f64 / 10.0, 1.0 - i as f64 / 10.0, i % 3, i % 2)).collect(),
            vec![eval(0, 4, 0.0, Some(0.1)), eval(5, 4, f64::NAN, Some(0.1)), eval(9, 4, 0.3, Some(0.5))],
        );
        r.info.name = name.into();
        r
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
            run("mentor-s0 & <co>", mentor(), 0, 10),
            run("mentor-s1", mentor(), 1, 10),
            run("vanilla-s0", vanilla(), 0, 10),
            run("empty", Arm::Dapo.name(), 2, 0),
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
        let chart = charts.last().unwrap();
        assert_eq!(chart.series.len(), 3);
        assert_eq!(chart.series[0].points, vec![(0.0, 0.0), (9.0, 0.3)]);
        let doc = render_svg(chart).unwrap();
        assert!(roxmltree::Document::parse(&doc).is_ok());
    }

    #[test]
    fn all_empty_chart_still_renders_valid_svg() {
        let runs = [run("e", mentor(), 0, 0)];
        let refs: Vec<&RunData> = runs.iter().collect();
        let svg = render_svg(&all_charts(&refs)[0]).unwrap();
        assert!(data_polylines(&svg).is_empty());
        assert!(svg.contains("no data"));
    }

    #[test]
    fn extreme_values_are_skipped_without_panicking() {
        let mut r = run("huge", mentor(), 0, 0);
        r.steps = vec![
            step(0, 1e308, f64::NAN, 0, 0),
            step(1, -1e308, f64::NAN, 0, 0),
            step(2, 1e308, f64::NAN, 0, 0),
        ];
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
        assert_eq!(arm_color(mentor()), (31, 119, 180));
        assert_eq!(arm_color(Arm::StaticHints.name()), (255, 127, 14));
        let known: Vec<(u8, u8, u8)> = Arm::ALL.iter().map(|a| arm_color(a.name())).collect();
        for (i, c) in known.iter().enumerate() {
            assert!(!known[..i].contains(c), "two arms share {c:?}");
            assert!(!OTHER_PALETTE.contains(c), "an arm's colour is also a stranger's: {c:?}");
        }
        assert_eq!(arm_color("my-arm"), arm_color("my-arm"));
        assert!(OTHER_PALETTE.contains(&arm_color("my-arm")));
    }

    #[test]
    fn dynamics_are_plotted_when_recorded() {
        let mut runs = sample_runs();
        let names = |runs: &[RunData]| {
            let refs: Vec<&RunData> = runs.iter().collect();
            all_charts(&refs).into_iter().map(|c| c.file_name).collect::<Vec<_>>()
        };
        // The fixture's updates carry entropy but no KL (no KL penalty).
        assert_eq!(
            names(&runs),
            [
                "reward.svg",
                "zrf.svg",
                "interventions.svg",
                "zero_std.svg",
                "entropy.svg",
                "grad_norm.svg",
                "clip_ratio.svg",
                "completion_length.svg",
                "eval_level_4.svg"
            ]
        );
        runs[0].steps.iter_mut().for_each(|s| s.update.as_mut().unwrap().kl = Some(0.001));
        assert!(names(&runs).contains(&"kl.svg".to_string()));
        // Nothing trained: no update metrics, no plots of them.
        runs.iter_mut().flat_map(|r| r.steps.iter_mut()).for_each(|s| s.update = None);
        assert_eq!(
            names(&runs),
            ["reward.svg", "zrf.svg", "interventions.svg", "zero_std.svg", "eval_level_4.svg"]
        );
        // Named evaluation sets get a chart each, apart from the level's.
        for r in &mut runs {
            let named: Vec<mentor_trainer::eval::EvalRow> = r
                .evals
                .iter()
                .flat_map(|e| {
                    ["new templates", "same"].map(|n| mentor_trainer::eval::EvalRow {
                        level: 0,
                        set: Some(n.into()),
                        ..e.clone()
                    })
                })
                .collect();
            r.evals.extend(named);
        }
        let all = names(&runs);
        assert_eq!(&all[all.len() - 3..], ["eval_level_4.svg", "eval_new_templates.svg", "eval_same.svg"]);
    }

    #[test]
    fn small_and_large_numbers_get_readable_axis_labels() {
        assert_eq!(y_decimals(1.05), 1);
        assert_eq!(y_decimals(0.9), 2);
        assert_eq!(y_decimals(0.002), 4);
        assert_eq!(y_decimals(250.0), 0);
        let runs = sample_runs();
        let refs: Vec<&RunData> = runs.iter().collect();
        let chart = all_charts(&refs).into_iter().find(|c| c.file_name == "completion_length.svg").unwrap();
        let svg = render_svg(&chart).unwrap();
        assert!(svg.contains("\n20\n</text>"), "an axis label in whole tokens: {svg}");
        assert!(!svg.contains("\n20.0"), "{svg}");
    }
}
